// variants: f32 f64
// C[b,m,n] = beta*bias[b,m,n] + alpha * sum_k A[b,m,k]*B[b,k,n], any element strides (OP_GEMM).
// The small pipeline: 32x32 output tile per workgroup, 16-deep k slices through shared memory;
// each invocation owns 2x4 outputs and sums k in order, so results are deterministic. A split K
// (graph/families/gemm.h) sums per chunk into partials, then OP_GEMM_SUM (here, for every
// pipeline) sums the chunks in order.
#version 460
#extension GL_EXT_control_flow_attributes : require
#define PC_GEMM
#include "common.glsl"
#include "gemm_common.glsl"

#define BM 32u
#define BN 32u
#define BK 16u
layout(local_size_x = 128) in;

shared T As[BK][BM + 1u];
shared T Bs[BK][BN + 1u];

// OP_GEMM_SUM: one invocation per output sums its K chunks in order, then the epilogue.
void sum_parts() {
  uint64_t i = global_index(), total = uint64_t(pc.batch) * uint64_t(pc.M) * uint64_t(pc.N);
  if (i >= total) return;
  uint gn, gm;
  uint64_t bt;
  if (total <= 0xffffffffUL) {  // 32-bit index arithmetic (a 64-bit division is a long routine on GPUs)
    uint j = uint(i), r = j / pc.N;
    gn = j - r * pc.N;
    gm = r % pc.M;
    bt = uint64_t(r / pc.M);
  } else {
    gn = uint(i % uint64_t(pc.N));
    gm = uint((i / uint64_t(pc.N)) % uint64_t(pc.M));
    bt = i / (uint64_t(pc.N) * uint64_t(pc.M));
  }
  T acc = T(0);
  uint parts = gemm_parts();
  for (uint p = 0u; p < parts; ++p) acc += load_T(partial_at(bt * uint64_t(parts) + p, gm, gn), DT_PARTIAL);
  store_c(int64_t(bt), gm, gn, acc);
}

void main() {
  if (OP == OP_GEMM_SUM) {
    sum_parts();
    return;
  }
  // The workgroup's tile: (column tile, row tile, layer z = batch * parts + K chunk), numbered
  // over the grid's x and y (lower_gemm.cpp).
  uint tiles_n = (pc.N + BN - 1u) / BN, tiles_m = (pc.M + BM - 1u) / BM;
  uint64_t tile = group_index();
  uint64_t z = tile / (uint64_t(tiles_n) * uint64_t(tiles_m));
  if (z >= uint64_t(pc.batch) * uint64_t(gemm_parts())) return;  // whole group: uniform
  uint tid = gl_LocalInvocationID.x;
  uint tx = tid % 8u, ty = tid / 8u;  // outputs (ty + 16i, tx + 8j)
  uint n0 = uint(tile % uint64_t(tiles_n)) * BN, m0 = uint((tile / uint64_t(tiles_n)) % uint64_t(tiles_m)) * BM;
  int64_t bt = int64_t(z / uint64_t(gemm_parts()));
  uint k_lo, k_hi;
  gemm_k_range(z, k_lo, k_hi);
  uint dta = (DTYPES >> 8) & 0xffu, dtb = (DTYPES >> 16) & 0xffu;
  int64_t ea = int64_t(dsize(dta)), eb = int64_t(dsize(dtb));
  uint64_t abase = pc.a + uint64_t(bt * int64_t(pc.sa[0]) * ea);
  uint64_t bbase = pc.b + uint64_t(bt * int64_t(pc.sb[0]) * eb);
  // acc is only indexed by unrolled loops, so it stays in registers: an array indexed at run time
  // anywhere (an epilogue loop the compiler does not unroll) is kept in memory, every += with it
  // (NVIDIA, gemm_coop.comp: 4.5x; docs/performance.md).
  T acc[2][4];
  [[unroll]] for (uint i = 0u; i < 2u; ++i)
    [[unroll]] for (uint j = 0u; j < 4u; ++j) acc[i][j] = T(0);

  for (uint k0 = k_lo; k0 < k_hi; k0 += BK) {
    [[unroll]] for (uint l = 0u; l < 4u; ++l) {
      uint idx = tid + 128u * l;
      uint mm = idx / BK, kk = idx % BK;  // A tile, k fastest
      uint gm = m0 + mm, gk = k0 + kk;
      T v = T(0);
      if (gm < pc.M && gk < k_hi)
        v = load_T(abase + uint64_t((int64_t(gm) * pc.sa[1] + int64_t(gk) * pc.sa[2]) * ea), dta);
      As[kk][mm] = v;
      uint kb = idx / BN, nn = idx % BN;  // B tile, n fastest
      uint gkb = k0 + kb, gn = n0 + nn;
      T w = T(0);
      if (gkb < k_hi && gn < pc.N)
        w = load_T(bbase + uint64_t((int64_t(gkb) * pc.sb[1] + int64_t(gn) * pc.sb[2]) * eb), dtb);
      Bs[kb][nn] = w;
    }
    barrier();
    [[unroll]] for (uint kk = 0u; kk < BK; ++kk) {
      T ar[2], br[4];
      [[unroll]] for (uint i = 0u; i < 2u; ++i) ar[i] = As[kk][ty + 16u * i];
      [[unroll]] for (uint j = 0u; j < 4u; ++j) br[j] = Bs[kk][tx + 8u * j];
      [[unroll]] for (uint i = 0u; i < 2u; ++i)
        [[unroll]] for (uint j = 0u; j < 4u; ++j) acc[i][j] += ar[i] * br[j];
    }
    barrier();
  }

  // The outputs leave through res, so that the stores (a switch over the dtypes) are in the
  // shader once (lavapipe compiles every pipeline in every process).
  T res[8];
  [[unroll]] for (uint i = 0u; i < 2u; ++i)
    [[unroll]] for (uint j = 0u; j < 4u; ++j) res[4u * i + j] = acc[i][j];
  for (uint e = 0u; e < 8u; ++e) {
    uint gm = m0 + ty + 16u * (e / 4u), gn = n0 + tx + 8u * (e % 4u);
    if (gm >= pc.M || gn >= pc.N) continue;
    if (gemm_parts() > 1u) store_T(partial_at(z, gm, gn), DT_PARTIAL, res[e]);
    else store_c(bt, gm, gn, res[e]);
  }
}
