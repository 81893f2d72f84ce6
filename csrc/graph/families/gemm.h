// The gemm family: c = beta * bias + alpha * (a @ b), every operand viewed as [B, rows, cols]
// (2-D operands have batch stride 0; bias is broadcast to c).
#pragma once
#include <algorithm>
#include <cstring>

#include "graph/families/args.h"
#include "util/env.h"

namespace vkml {

// The pipelines (backend/vulkan/lower_gemm.cpp, docs/performance.md). The shape picks gemv,
// small or large here; the lowering may run a large one as coopmat where the device has it.
// VKML_GEMM_PIPE forces one (tests); "split" is the small tile with K split into chunks.
enum class GemmPipe : uint8_t { gemv, small, large, coopmat };
// coopmat_sg: coopmat with the subgroup-scope kernels even where the device has workgroup scope
// (so that a GPU with both tests both).
enum class GemmForce : uint8_t { none, gemv, small, large, split, coopmat, coopmat_sg };

inline GemmForce gemm_forced() {
  const std::string& s = env().gemm_pipe;
  if (s.empty()) return GemmForce::none;
  static const char* kNames[] = {"gemv", "small", "large", "split", "coopmat", "coopmat_sg"};
  for (int i = 0; i < 6; ++i)
    if (s == kNames[i]) return GemmForce(i + 1);
  return GemmForce::none;  // an unknown name: the automatic choice
}

inline GemmPipe gemm_shape_pipe(int64_t M, int64_t N) {
  switch (gemm_forced()) {
    case GemmForce::gemv: return GemmPipe::gemv;
    case GemmForce::small: case GemmForce::split: return GemmPipe::small;
    case GemmForce::large: case GemmForce::coopmat: case GemmForce::coopmat_sg: return GemmPipe::large;
    case GemmForce::none: break;
  }
  if (M == 1 || N == 1) return GemmPipe::gemv;
  return M >= 128 && N >= 64 ? GemmPipe::large : GemmPipe::small;  // a large tile fills up
}

// K split into `parts` chunks of gemm_chunk() (a multiple of 32) each: chunk p's products go into
// `partials` (device scratch that aten allocates, gemm_partial_bytes), then OP_GEMM_SUM sums each
// output's chunks in order (deterministic, no atomics). Two reasons to split, both from the shape
// alone (aten sizes the scratch with the same call): few workgroups but a long K (a GPU would sit
// mostly idle), and llvmpipe, which ends long-running loops (core/limits.h max_loop_trips).
constexpr int64_t kGemmChunk = 16384;  // under llvmpipe's 65535 loop trips in every pipeline
inline int64_t gemm_parts(int64_t B, int64_t M, int64_t N, int64_t K, uint32_t max_loop_trips) {
  const GemmPipe pipe = gemm_shape_pipe(M, N);
  const int64_t per_group = pipe == GemmPipe::gemv ? 32 : pipe == GemmPipe::small ? 1024 : 8192;
  const int64_t groups = std::max<int64_t>(1, (B * M * N + per_group - 1) / per_group);
  int64_t p = 1;
  // (VKML_GEMM_SPLIT_GROUPS, 192 by default: the tile count below which K splits, towards twice
  // it. 384 workgroups are about one wave of the large tile on the H100, 3 a multiprocessor: a
  // transformer's weight gradients of 128 tiles, 2048x4096x512 and 512x4096x2048, took 471 and
  // 493 us unsplit, 242 and 251 in 3 parts, 356 and 343 in 4 (two waves), docs/performance.md)
  const int64_t few = env().gemm_split_groups;
  if (K >= 2048 && groups < few) p = std::min<int64_t>({32, K / 512, (2 * few + groups - 1) / groups});
  // gemv: one output per 4 (columns) or 32 (dot) invocations, so m = 1 against a [16384, 4096]
  // matrix was 128 groups of 4,096 steps each (H200: 161 GB/s); aim for 1,024 groups
  if (pipe == GemmPipe::gemv && K >= 2048 && groups < 1024)
    p = std::max<int64_t>(p, std::min<int64_t>({32, K / 512, (1024 + groups - 1) / groups}));
  if (gemm_forced() == GemmForce::split && K >= 64) p = std::max<int64_t>(p, std::min<int64_t>(4, K / 32));
  if (max_loop_trips) p = std::max<int64_t>(p, (K + kGemmChunk - 1) / kGemmChunk);
  return p;
}
inline int64_t gemm_chunk(int64_t K, int64_t parts) { return ((K + parts - 1) / parts + 31) / 32 * 32; }
// psize: a partial's bytes, the compute type's (shaders/gemm_common.glsl partial_at): 8 for float64,
// 4 for float32 (float16 and bfloat16 operands compute in float32).
inline int64_t gemm_partial_bytes(int64_t B, int64_t M, int64_t N, int64_t K, uint32_t max_loop_trips, int64_t psize) {
  const int64_t p = gemm_parts(B, M, N, K, max_loop_trips);
  return p > 1 ? B * M * N * p * psize : 0;  // one value per output and chunk
}

struct GemmArgs {
  enum Operand : uint8_t { c, a, b, bias };  // bias absent (addr 0) when beta == 0
  Scalar alpha{1.0, 1}, beta{0.0, 0};
  uint64_t partials = 0;  // scratch for a split K (not an operand: check mode ignores it)
};

}  // namespace vkml
