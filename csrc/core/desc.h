// A tensor as the layers below aten see it: a device address, an element type, sizes and strides
// (in elements). Addresses are Vulkan buffer-device addresses (the oracle sees host pointers).
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace vkml {

constexpr int kMaxDims = 8;

struct TensorDesc {
  uint64_t addr = 0;  // address of element [0,0,...]
  DType dtype = DType::f32;
  uint8_t ndim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};

  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < ndim; ++i) n *= sizes[i];
    return n;
  }
  // Bytes spanned from addr to one past the last element (strides are non-negative here).
  int64_t span_bytes() const {
    if (numel() == 0) return 0;
    int64_t last = 0;
    for (int i = 0; i < ndim; ++i) last += (sizes[i] - 1) * strides[i];
    return (last + 1) * int64_t(dtype_size(dtype));
  }
  bool contiguous() const {
    int64_t expect = 1;
    for (int i = ndim - 1; i >= 0; --i) {
      if (sizes[i] != 1 && strides[i] != expect) return false;
      expect *= sizes[i];
    }
    return true;
  }
};

}  // namespace vkml
