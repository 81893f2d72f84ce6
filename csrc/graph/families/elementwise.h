// The elementwise family: out[i] = OP(a[i], b[i], scalars), over one TensorIterator.
// All operands share out's sizes (broadcast = stride 0). Shader: shaders/elementwise.comp.
#pragma once
#include "graph/families/args.h"

namespace vkml {

struct ElementwiseArgs {
  enum Operand : uint8_t { out, a, b };
  static constexpr bool kOperandsOnly = true;  // graph/node.h operands_only()
  // s0: alpha (add/sub), the fill value, the threshold (threshold_backward), clamp's min, the
  // xor mask (bitwise_not), masked_fill's value; s1: clamp's max, or b's value when scalar_b.
  Scalar s0, s1;
  bool scalar_b = false;      // b is the scalar s1, not a tensor (a CPU scalar operand; clamp's max)
  bool round_scalars = false; // s0 and s1 are cast to the compute dtype first (torch: threshold.to<scalar_t>())
  bool reads_out = false;     // the row reads the output's old value too (where; addcmul, addcdiv, lerp: self)
};

}  // namespace vkml
