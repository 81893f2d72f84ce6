// The gemm family: c = beta * bias + alpha * (a @ b), every operand viewed as [B, rows, cols]
// (2-D operands have batch stride 0; bias is broadcast to c).
#pragma once
#include "graph/families/args.h"

namespace vkml {

struct GemmArgs {
  enum Operand : uint8_t { c, a, b, bias };  // bias absent (addr 0) when beta == 0
  Scalar alpha{1.0, 1}, beta{0.0, 0};
};

}  // namespace vkml
