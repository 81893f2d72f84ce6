// The softmax family: softmax / log_softmax over D of [outer, D, inner] views, and their backward.
#pragma once
#include "graph/families/args.h"

namespace vkml {

// Rows longer than kSoftmaxChunk take three passes: per chunk of a row its partial (max and sum
// of exp, or the backward's sum), per row the partials combined in order, then per chunk the
// outputs. `partials` is device scratch that aten allocates (softmax_partial_bytes). The split
// depends on the row length only. (llvmpipe ends an invocation after 65535 loop trips in all;
// one workgroup per long row also leaves most of a GPU idle.)
constexpr int64_t kSoftmaxChunk = 65536;
inline int64_t softmax_parts(int64_t D) { return D > kSoftmaxChunk ? (D + kSoftmaxChunk - 1) / kSoftmaxChunk : 1; }
inline int64_t softmax_partial_bytes(int64_t rows, int64_t D) {
  const int64_t p = softmax_parts(D);
  return p > 1 ? rows * (p + 1) * 16 : 0;  // two 8-byte values per chunk, and per row
}

struct SoftmaxArgs {
  // forward: out, in. backward: out = grad_input, in = grad_output, fwd_out = the forward's output.
  enum Operand : uint8_t { out, in, fwd_out };
  bool backward = false;
  uint64_t partials = 0;  // scratch for long rows (not an operand: check mode ignores it)
};

}  // namespace vkml
