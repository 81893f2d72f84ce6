// The reduce family: out[k] = REDUCE over r of in[k, r]. `in` lists the kept dims first, then the
// reduced dims; out is contiguous over the kept dims. argmax/argmin write int64 indices.
#pragma once
#include <algorithm>

#include "graph/families/args.h"

namespace vkml {

// Rows longer than kReduceChunk are reduced in two passes: each chunk of a row to a partial (in
// `partials`, device scratch that aten allocates: reduce_partial_bytes), then each row's partials
// in order. The split depends on the shape and strides only, so results are the same on every
// device. (llvmpipe ends an invocation after 65535 loop trips in all; one workgroup per long row
// also leaves most of a GPU idle.)
constexpr int64_t kReduceChunk = 65536;
constexpr int64_t kShortRow = 32;  // rows this short get one invocation per output (one pass)

// Column mode: the reduced dims' innermost is strided and the kept dims' innermost is dense, as in
// a sum over dim 0 of [rows, cols] (every bias gradient). One workgroup per row-walking output
// would read one element per row, rows apart; instead each invocation folds one output over a
// chunk of `rows` reduced indices in order, its neighbours fold the adjacent outputs (adjacent
// addresses), and a second pass folds each output's chunks in order. Chunks are at least
// kColumnRows long and at most kColumnParts per output until they reach kReduceChunk.
constexpr int64_t kColumnRows = 64, kColumnParts = 256;
// Row mode with few outputs: a row a workgroup leaves a GPU idle (on the H100 a full amin over
// 512K int64 took 90 us in 8 chunks of 65536), so rows of at least 4 x kMinChunk are cut into
// more chunks, down to kMinChunk, towards kFillGroups workgroups in all.
constexpr int64_t kMinChunk = 4096, kFillGroups = 1024;
struct ReduceSplit {
  int64_t parts = 1;  // partials per output (1: one pass)
  int64_t rows = 0;   // column mode: reduced indices per chunk; 0: row mode
  int64_t chunk = kReduceChunk;  // row mode: reduced indices per chunk (a multiple of kMinChunk)
};
inline ReduceSplit reduce_split(const TensorDesc& in, int kept) {
  int64_t n_out = 1, n_red = 1, kst = 0, rst = 1;
  for (int d = 0; d < in.ndim; ++d) {
    (d < kept ? n_out : n_red) *= in.sizes[d];
    if (in.sizes[d] != 1) (d < kept ? kst : rst) = in.strides[d];  // the innermost of each
  }
  ReduceSplit s;
  if (n_out > 1 && n_red > kShortRow && kst == 1 && rst != 1) {
    const int64_t per = std::max<int64_t>(kColumnRows, (n_red + kColumnParts - 1) / kColumnParts);
    s.rows = std::min<int64_t>(kReduceChunk, per);
    s.parts = (n_red + s.rows - 1) / s.rows;
  } else if (n_red > kReduceChunk || n_red >= 4 * kMinChunk) {
    const int64_t fill = std::min((kFillGroups + n_out - 1) / n_out, (n_red + kMinChunk - 1) / kMinChunk);
    const int64_t parts = std::max((n_red + kReduceChunk - 1) / kReduceChunk, fill >= 4 ? fill : 1);
    if (parts > 1) {
      s.chunk = ((n_red + parts - 1) / parts + kMinChunk - 1) / kMinChunk * kMinChunk;
      s.parts = (n_red + s.chunk - 1) / s.chunk;
    }
  }
  return s;
}
inline int64_t reduce_partial_bytes(const TensorDesc& in, int kept) {
  const ReduceSplit s = reduce_split(in, kept);
  if (s.parts == 1) return 0;
  int64_t outs = 1;
  for (int d = 0; d < kept; ++d) outs *= in.sizes[d];
  return outs * s.parts * 12;  // an 8-byte value and a 4-byte index per partial
}

struct ReduceArgs {
  enum Operand : uint8_t { out, in };
  int kept = 0;  // how many leading dims of `in` are kept
  uint64_t partials = 0;  // scratch for a two-pass reduction (not an operand: check mode ignores it)
};

}  // namespace vkml
