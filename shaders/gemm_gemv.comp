// variants: f32 f64
// The gemv gemm pipeline, for m == 1 or n == 1 (any shape when forced): each workgroup owns OUTS
// outputs and spreads each output's k over 128 / OUTS lanes; lane l sums k = lo + l, lo + l + lanes,
// ... in order, then one invocation per output adds the lanes' sums in lane order (shared memory,
// not subgroup operations: the order does not depend on the subgroup size). Deterministic.
// Dot layout (4 outputs x 32 lanes): consecutive invocations read consecutive k, for a matrix
// operand with k contiguous. Column layout (GEMM_GEMV_COLS, 32 outputs x 4 lanes): consecutive
// invocations read consecutive outputs, for a matrix operand contiguous along the outputs.
#version 460
#extension GL_EXT_control_flow_attributes : require
#define PC_GEMM
#include "common.glsl"
#include "gemm_common.glsl"

layout(local_size_x = 128) in;

shared T part[128];

void main() {
  bool cols = (gemm_flags() & GEMM_GEMV_COLS) != 0u;
  uint outs = cols ? 32u : 4u, lanes = 128u / outs;
  uint tid = gl_LocalInvocationID.x;
  uint slot = cols ? tid % 32u : tid / 32u, lane = cols ? tid / 32u : tid % 32u;
  // Outputs numbered (z, m, n), n fastest; z = batch * parts + chunk.
  uint64_t mn = uint64_t(pc.M) * uint64_t(pc.N);
  uint64_t o = group_index() * uint64_t(outs) + uint64_t(slot);
  bool live = o < uint64_t(pc.batch) * uint64_t(gemm_parts()) * mn;
  uint64_t z = live ? o / mn : 0UL;
  uint gm = uint((o % mn) / uint64_t(pc.N)), gn = uint(o % uint64_t(pc.N));
  T acc = T(0);
  if (live) {
    int64_t bt = int64_t(z / uint64_t(gemm_parts()));
    uint lo, hi;
    gemm_k_range(z, lo, hi);
    uint dta = (DTYPES >> 8) & 0xffu, dtb = (DTYPES >> 16) & 0xffu;
    uint64_t abase = pc.a + uint64_t(bt * int64_t(pc.sa[0]) * int64_t(dsize(dta)));
    uint64_t bbase = pc.b + uint64_t(bt * int64_t(pc.sb[0]) * int64_t(dsize(dtb)));
    // 8 steps' loads issued together, then added in order (the same sum as one step at a time)
    uint k = lo + lane;
    for (; k + 7u * lanes < hi; k += 8u * lanes) {
      T av[8], bv[8];
      [[unroll]] for (uint u = 0u; u < 8u; ++u) {
        av[u] = gemm_ld(abase, int64_t(gm), int64_t(k + u * lanes), pc.sa[1], pc.sa[2], dta);
        bv[u] = gemm_ld(bbase, int64_t(k + u * lanes), int64_t(gn), pc.sb[1], pc.sb[2], dtb);
      }
      [[unroll]] for (uint u = 0u; u < 8u; ++u) acc = fma(av[u], bv[u], acc);
    }
    for (; k < hi; k += lanes)
      acc = fma(gemm_ld(abase, int64_t(gm), int64_t(k), pc.sa[1], pc.sa[2], dta),
                gemm_ld(bbase, int64_t(k), int64_t(gn), pc.sb[1], pc.sb[2], dtb), acc);
  }
  part[tid] = acc;
  barrier();
  if (live && lane == 0u) {
    T s = T(0);
    for (uint l = 0u; l < lanes; ++l) s += part[cols ? slot + 32u * l : 32u * slot + l];
    gemm_out(z, gm, gn, s);
  }
}
