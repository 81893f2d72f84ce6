// Merging dims that walk memory as one: the single implementation for the aten layer (which
// describes reductions) and the Vulkan lowering (which fits nodes into a shader's dims).
#pragma once
#include <cstdint>

#include "core/desc.h"

namespace vkml {

// Dims (outermost first) of `nops` tensors sharing `sizes`, size-1 dims dropped and neighbours
// merged when every operand is dense across them. Writes osz / ost[k] and returns the count, or -1
// when more than `max` dims remain.
inline int coalesce(int ndim, const int64_t* sizes, const int64_t* const* strides, int nops, int max,
                    int64_t* osz, int64_t (*ost)[kMaxDims]) {
  int m = 0;
  for (int d = 0; d < ndim; ++d) {
    if (sizes[d] == 1) continue;
    bool merge = m > 0;
    for (int k = 0; k < nops && merge; ++k) merge = ost[k][m - 1] == strides[k][d] * sizes[d];
    if (merge) {
      osz[m - 1] *= sizes[d];
      for (int k = 0; k < nops; ++k) ost[k][m - 1] = strides[k][d];
      continue;
    }
    if (m == kMaxDims) return -1;
    osz[m] = sizes[d];
    for (int k = 0; k < nops; ++k) ost[k][m] = strides[k][d];
    ++m;
  }
  return m <= max ? m : -1;
}

}  // namespace vkml
