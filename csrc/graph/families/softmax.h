// The softmax family: softmax / log_softmax over D of [outer, D, inner] views, and their backward.
#pragma once
#include "graph/families/args.h"

namespace vkml {

struct SoftmaxArgs {
  // forward: out, in. backward: out = grad_input, in = grad_output, fwd_out = the forward's output.
  enum Operand : uint8_t { out, in, fwd_out };
  bool backward = false;
};

}  // namespace vkml
