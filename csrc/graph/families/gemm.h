// The gemm family: c = beta * bias + alpha * (a @ b), every operand viewed as [B, rows, cols]
// (2-D operands have batch stride 0; bias is broadcast to c).
#pragma once
#include "graph/families/args.h"

namespace vkml {

// On a device that ends long-running loops (core/limits.h max_loop_trips: llvmpipe), K over
// kGemmChunk is split: each chunk's products go into `partials` (device scratch that aten
// allocates, gemm_partial_bytes), then each output sums its chunks in order. Elsewhere K runs
// in one pass.
constexpr int64_t kGemmChunk = 65536;  // 4096 slices of 16: about 25,000 loop trips on llvmpipe
inline int64_t gemm_parts(int64_t K, uint32_t max_loop_trips) {
  return max_loop_trips && K > kGemmChunk ? (K + kGemmChunk - 1) / kGemmChunk : 1;
}
inline int64_t gemm_partial_bytes(int64_t B, int64_t M, int64_t N, int64_t K, uint32_t max_loop_trips) {
  const int64_t p = gemm_parts(K, max_loop_trips);
  return p > 1 ? B * M * N * p * 8 : 0;  // one 8-byte value per output and chunk
}

struct GemmArgs {
  enum Operand : uint8_t { c, a, b, bias };  // bias absent (addr 0) when beta == 0
  Scalar alpha{1.0, 1}, beta{0.0, 0};
  uint64_t partials = 0;  // scratch for a split K (not an operand: check mode ignores it)
};

}  // namespace vkml
