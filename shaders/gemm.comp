// variants: f32 f64
// C[b,m,n] = beta*bias[b,m,n] + alpha * sum_k A[b,m,k]*B[b,k,n], any element strides (OP_GEMM).
// 32x32 output tile per workgroup (lower.cpp's kGemmTile), 16-deep k slices through shared memory;
// each invocation owns 2x4 outputs and sums k in order, so results are deterministic.
#version 460
#define PC_GEMM
#include "common.glsl"

#define BM 32u
#define BN 32u
#define BK 16u
layout(local_size_x = 128) in;

shared T As[BK][BM + 1u];
shared T Bs[BK][BN + 1u];

void main() {
  uint tid = gl_LocalInvocationID.x;
  uint tx = tid % 8u, ty = tid / 8u;  // outputs (ty + 16i, tx + 8j)
  uint n0 = gl_WorkGroupID.x * BN, m0 = gl_WorkGroupID.y * BM;
  int64_t bt = int64_t(gl_WorkGroupID.z);
  uint dtc = pc.dtypes & 0xffu, dta = (pc.dtypes >> 8) & 0xffu;
  uint dtb = (pc.dtypes >> 16) & 0xffu, dtbias = (pc.dtypes >> 24) & 0xffu;
  int64_t ea = int64_t(dsize(dta)), eb = int64_t(dsize(dtb));
  uint64_t abase = pc.a + uint64_t(bt * int64_t(pc.sa[0]) * ea);
  uint64_t bbase = pc.b + uint64_t(bt * int64_t(pc.sb[0]) * eb);
  T acc[2][4];
  for (uint i = 0u; i < 2u; ++i)
    for (uint j = 0u; j < 4u; ++j) acc[i][j] = T(0);

  for (uint k0 = 0u; k0 < pc.K; k0 += BK) {
    for (uint l = 0u; l < 4u; ++l) {
      uint idx = tid + 128u * l;
      uint mm = idx / BK, kk = idx % BK;  // A tile, k fastest
      uint gm = m0 + mm, gk = k0 + kk;
      T v = T(0);
      if (gm < pc.M && gk < pc.K)
        v = load_T(abase + uint64_t((int64_t(gm) * pc.sa[1] + int64_t(gk) * pc.sa[2]) * ea), dta);
      As[kk][mm] = v;
      uint kb = idx / BN, nn = idx % BN;  // B tile, n fastest
      uint gkb = k0 + kb, gn = n0 + nn;
      T w = T(0);
      if (gkb < pc.K && gn < pc.N)
        w = load_T(bbase + uint64_t((int64_t(gkb) * pc.sb[1] + int64_t(gn) * pc.sb[2]) * eb), dtb);
      Bs[kb][nn] = w;
    }
    barrier();
    for (uint kk = 0u; kk < BK; ++kk) {
      T ar[2], br[4];
      for (uint i = 0u; i < 2u; ++i) ar[i] = As[kk][ty + 16u * i];
      for (uint j = 0u; j < 4u; ++j) br[j] = Bs[kk][tx + 8u * j];
      for (uint i = 0u; i < 2u; ++i)
        for (uint j = 0u; j < 4u; ++j) acc[i][j] += ar[i] * br[j];
    }
    barrier();
  }

  T alpha = from_raw(pc.alpha), beta = from_raw(pc.beta);
  int64_t ec = int64_t(dsize(dtc)), ebias = int64_t(dsize(dtbias));
  for (uint i = 0u; i < 2u; ++i) {
    uint gm = m0 + ty + 16u * i;
    if (gm >= pc.M) continue;
    for (uint j = 0u; j < 4u; ++j) {
      uint gn = n0 + tx + 8u * j;
      if (gn >= pc.N) continue;
      T v = alpha * acc[i][j];
      if (pc.bias != 0UL) {  // no bias: C's old contents (maybe NaN) never enter
        int64_t o = bt * pc.sbias[0] + int64_t(gm) * pc.sbias[1] + int64_t(gn) * pc.sbias[2];
        v = beta * load_T(pc.bias + uint64_t(o * ebias), dtbias) + v;
      }
      int64_t oc = bt * pc.sc[0] + int64_t(gm) * pc.sc[1] + int64_t(gn) * pc.sc[2];
      store_T(pc.c + uint64_t(oc * ec), dtc, v);
    }
  }
}
