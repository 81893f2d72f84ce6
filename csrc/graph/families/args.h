// What every family's argument struct may use. Included by each graph/families/<family>.h.
#pragma once
#include <cstdint>

#include "core/desc.h"

namespace vkml {

// Operand slots per node: enough for index_put with an index tensor per dim (self, values and
// kMaxDims indices) and for attention (q, k, v, mask, out, logsumexp).
constexpr int kMaxOperands = kMaxDims + 4;

struct Scalar {
  double f = 0;   // value for floating compute
  int64_t i = 0;  // value for integer compute (exact for int64)
};

}  // namespace vkml
