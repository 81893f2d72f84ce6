// Device-side asserts. A kernel that finds bad input (an index out of range) must not read or
// write out of bounds, and its caller must not get a silently wrong answer: it skips the element
// and writes the first finding into the device's assert record (a small host-visible block whose
// device address nodes carry). The next synchronisation raises it (Device, dispatch/device.cpp),
// as CUDA's device asserts surface at the next synchronising call. docs/indexing.md.
#pragma once
#include <cstdint>
#include <string>

#include "util/result.h"

namespace vkml {

// The record, as the shaders write it (shaders/index.h declares the same layout).
struct DeviceAssert {
  uint32_t code = 0;  // AssertCode; 0: nothing found. Claimed by atomic compare-and-swap.
  uint32_t dim = 0;
  int64_t value = 0;
  int64_t size = 0;
};
static_assert(sizeof(DeviceAssert) == 24, "shaders/index.h declares the record as 24 bytes");

// What a finding raises: torch's exception type and message for the op that found it.
enum AssertCode : uint8_t {
  kAssertNone = 0,
  kIndexOutOfBounds = 1,    // IndexError: index V is out of bounds for dimension D with size S
  kRuntimeOutOfBounds = 2,  // RuntimeError, same text (gather, scatter, index_add_)
  kIndexOutOfRange = 3,     // IndexError: index out of range in self (index_select, embedding)
  kDataOutOfBounds = 4,     // RuntimeError: INDICES element is out of DATA bounds, id=V axis_dim=S
  kTargetOutOfBounds = 5,   // IndexError: Target V is out of bounds. (nll_loss; shaders/params.h NLL_TARGET_ASSERT)
};

inline Error assert_error(const DeviceAssert& a) {
  const std::string v = std::to_string(a.value), s = std::to_string(a.size), d = std::to_string(a.dim);
  switch (a.code) {
    case kIndexOutOfBounds: return fail(Err::index, "index " + v + " is out of bounds for dimension " + d + " with size " + s);
    case kRuntimeOutOfBounds: return fail(Err::runtime, "index " + v + " is out of bounds for dimension " + d + " with size " + s);
    case kIndexOutOfRange: return fail(Err::index, "index out of range in self");
    case kDataOutOfBounds: return fail(Err::runtime, "INDICES element is out of DATA bounds, id=" + v + " axis_dim=" + s);
    case kTargetOutOfBounds: return fail(Err::index, "Target " + v + " is out of bounds.");
  }
  return fail(Err::runtime, "vkml: a kernel reported unknown device assert " + std::to_string(a.code));
}

}  // namespace vkml
