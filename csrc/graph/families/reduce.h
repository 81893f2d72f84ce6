// The reduce family: out[k] = REDUCE over r of in[k, r]. `in` lists the kept dims first, then the
// reduced dims; out is contiguous over the kept dims. argmax/argmin write int64 indices.
#pragma once
#include "graph/families/args.h"

namespace vkml {

// Rows longer than kReduceChunk are reduced in two passes: each chunk of a row to a partial (in
// `partials`, device scratch that aten allocates: reduce_partial_bytes), then each row's partials
// in order. The split depends on the row length only, so results are the same on every device.
// (llvmpipe ends an invocation after 65535 loop trips in all; one workgroup per long row also
// leaves most of a GPU idle.)
constexpr int64_t kReduceChunk = 65536;
inline int64_t reduce_parts(int64_t n_red) { return n_red > kReduceChunk ? (n_red + kReduceChunk - 1) / kReduceChunk : 1; }
inline int64_t reduce_partial_bytes(int64_t n_out, int64_t n_red) {
  const int64_t p = reduce_parts(n_red);
  return p > 1 ? n_out * p * 12 : 0;  // an 8-byte value and a 4-byte index per partial
}

struct ReduceArgs {
  enum Operand : uint8_t { out, in };
  int kept = 0;  // how many leading dims of `in` are kept
  uint64_t partials = 0;  // scratch for a two-pass reduction (not an operand: check mode ignores it)
};

}  // namespace vkml
