// Shared helpers of the aten layer: at::Tensor <-> TensorDesc, errors to TORCH_CHECK, the device.
#pragma once
#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include <string>

#include "aten/call.h"  // into()
#include "core/desc.h"
#include "dispatch/device.h"
#include "graph/node.h"
#include "util/result.h"

namespace vkml::aten {

// The current device (aten/devices.h's OnDevice sets it), or a clear error saying why there is none.
Device& device();
// Device vkml:index (-1: the current one), or that error.
Device& device(int index);

// An index of a vkml device that exists (-1: the current one), else torch's kind of error:
// "invalid device ordinal" (as CUDA's) with torch_openreg's wording (aten/devices.cpp).
void check_device_index(int64_t index);

// Raise a Result's error as the matching torch exception (OutOfMemoryError, NotImplementedError...).
[[noreturn]] void raise(const Error& e);
inline void check(const Result<void>& r) {
  if (!r.ok()) raise(r.error());
}

// The DType of t, else an error naming op (complex and the rest). Every operand of every op passes
// here, so the mapping is inline: DType codes equal c10::ScalarType's (static_assert in common.cpp),
// and kToDtype has a bit for each one DType has.
constexpr uint64_t dtype_bit(c10::ScalarType t) { return uint64_t(1) << unsigned(t); }
constexpr uint64_t kToDtype = dtype_bit(c10::ScalarType::Byte) | dtype_bit(c10::ScalarType::Char) |
                              dtype_bit(c10::ScalarType::Short) | dtype_bit(c10::ScalarType::Int) |
                              dtype_bit(c10::ScalarType::Long) | dtype_bit(c10::ScalarType::Half) |
                              dtype_bit(c10::ScalarType::Float) | dtype_bit(c10::ScalarType::Double) |
                              dtype_bit(c10::ScalarType::Bool) | dtype_bit(c10::ScalarType::BFloat16);
[[noreturn]] void unsupported_dtype(c10::ScalarType t, const char* op);
inline DType to_dtype(c10::ScalarType t, const char* op) {
  if (C10_LIKELY(unsigned(t) < 64 && (kToDtype >> unsigned(t)) & 1)) return DType(int(t));
  unsupported_dtype(t, op);
}
c10::ScalarType to_scalar_type(DType t);

// Raises torch's same-device error for t, a tensor met where a vkml one must be (aten/devices.cpp).
[[noreturn]] void wrong_device(const at::TensorBase& t);

// The device address of t's data. Every operand address passes here, so a tensor of another
// device (a CPU pointer is no device address) raises instead of reaching a shader.
inline uint64_t addr_of(const at::TensorBase& t) {
  // Another vkml device's address would be valid there, not here: the index must match too.
  if (C10_UNLIKELY(t.device().type() != c10::DeviceType::PrivateUse1 || t.device().index() != Device::current()))
    wrong_device(t);
  return reinterpret_cast<uint64_t>(t.const_data_ptr());
}

// Descriptor of t as it is (sizes/strides in elements, outermost first). ndim must be <= kMaxDims.
TensorDesc desc_of(const at::TensorBase& t, const char* op);

// Records n (raising the device's error, if any).
void record(const Node& n);
// Records the node fill(Node&) writes in place in the pending graph (Device::record_in_place:
// fill only writes the node), raising the device's error, if any.
template <class F>
void record_in_place(F&& fill) {
  check(device().record_in_place(std::forward<F>(fill)));
}

// "add(float32[2, 3], int64[3])": for error messages.
std::string signature(const char* op, std::initializer_list<const at::TensorBase*> ts);


c10::Allocator* allocator();  // the caching device allocator (aten/device_impl.cpp)

// Checks the op supports the dtype per its table row; raises naming op and dtype.
void check_dtype(OpId id, DType t);

}  // namespace vkml::aten

