// variants: f32 f64
// The large gemm pipeline: a 128x64 output tile per workgroup, register-blocked
// 8x8 outputs per invocation, BK-deep k slices through shared memory (12 KiB: fits the 16 KiB
// floor). Interior tiles of float32, float16 or bfloat16 operands whose rows (or columns) are
// contiguous and aligned for 4 elements (lower_gemm.cpp's GEMM_A_* / GEMM_B_* flags) load 4
// elements at once (16 or 8 bytes); everything else loads element by element with any strides.
// Each output sums k in order: deterministic.
#version 460
#extension GL_EXT_control_flow_attributes : require
#define PC_GEMM
#include "common.glsl"
#include "gemm_common.glsl"

#define BM 128u
#define BN 64u
#if defined(CT_F64)
#define BK 8u
#define V4 dvec4
#else
#define BK 16u
#define V4 vec4
#endif
layout(local_size_x = 128) in;

// [k][m / 4] and [k][n / 4]: an invocation reads its 8 rows and 8 columns as 4 vec4s per k.
shared V4 As[BK][BM / 4u];
shared V4 Bs[BK][BN / 4u];

layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer F4 { vec4 v; };

#if defined(CT_F32)
// 4 consecutive elements of a float32 (16-byte aligned), float16 or bfloat16 (8-byte aligned)
// operand: lower_gemm.cpp sets the GEMM_A_* / GEMM_B_* flags only for those, so aligned.
vec4 ld4(uint64_t a, uint dt) {
  if (dt == DT_F32) return F4(a).v;
  uvec2 u = Pair(a).p;
  return vec4(bits_to_T(u.x & 0xffffu, dt), bits_to_T(u.x >> 16, dt), bits_to_T(u.y & 0xffffu, dt),
              bits_to_T(u.y >> 16, dt));
}
#endif

void main() {
  uint tiles_n = (pc.N + BN - 1u) / BN, tiles_m = (pc.M + BM - 1u) / BM;
  uint64_t tile = group_index();
  uint64_t z = tile / (uint64_t(tiles_n) * uint64_t(tiles_m));
  if (z >= uint64_t(pc.batch) * uint64_t(gemm_parts())) return;  // whole group: uniform
  uint tid = gl_LocalInvocationID.x;
  uint tx = tid % 8u, ty = tid / 8u;  // rows 4ty+i and 64+4ty+i, columns 4tx+j and 32+4tx+j
  uint n0 = uint(tile % uint64_t(tiles_n)) * BN, m0 = uint((tile / uint64_t(tiles_n)) % uint64_t(tiles_m)) * BM;
  int64_t bt = int64_t(z / uint64_t(gemm_parts()));
  uint k_lo, k_hi;
  gemm_k_range(z, k_lo, k_hi);
  uint dta = (DTYPES >> 8) & 0xffu, dtb = (DTYPES >> 16) & 0xffu;
  uint64_t abase = pc.a + uint64_t(bt * int64_t(pc.sa[0]) * int64_t(dsize(dta)));
  uint64_t bbase = pc.b + uint64_t(bt * int64_t(pc.sb[0]) * int64_t(dsize(dtb)));
  uint flags = gemm_flags();
  bool a_full = m0 + BM <= pc.M, b_full = n0 + BN <= pc.N;
  T acc[8][8];
  [[unroll]] for (uint i = 0u; i < 8u; ++i)
    [[unroll]] for (uint j = 0u; j < 8u; ++j) acc[i][j] = T(0);

  for (uint k0 = k_lo; k0 < k_hi; k0 += BK) {
    bool k_full = k0 + BK <= k_hi;
#if defined(CT_F32)
    if ((flags & GEMM_A_K) != 0u && a_full && k_full) {  // 4 consecutive k of one row
      [[unroll]] for (uint l = 0u; l < BM * BK / 512u; ++l) {
        uint idx = tid + 128u * l, mm = idx / (BK / 4u), kq = idx % (BK / 4u);
        vec4 v = ld4(abase + uint64_t((int64_t(m0 + mm) * pc.sa[1] + int64_t(k0 + 4u * kq)) * int64_t(dsize(dta))), dta);
        [[unroll]] for (uint e = 0u; e < 4u; ++e) As[4u * kq + e][mm / 4u][mm % 4u] = v[e];
      }
    } else if ((flags & GEMM_A_M) != 0u && a_full && k_full) {  // 4 consecutive m of one k
      [[unroll]] for (uint l = 0u; l < BM * BK / 512u; ++l) {
        uint idx = tid + 128u * l, kk = idx / (BM / 4u), mq = idx % (BM / 4u);
        As[kk][mq] = ld4(abase + uint64_t((int64_t(m0 + 4u * mq) + int64_t(k0 + kk) * pc.sa[2]) * int64_t(dsize(dta))), dta);
      }
    } else
#endif
    {
      [[unroll]] for (uint l = 0u; l < BM * BK / 128u; ++l) {
        uint idx = tid + 128u * l, mm = idx / BK, kk = idx % BK;  // k fastest
        uint gm = m0 + mm, gk = k0 + kk;
        T v = T(0);
        if (gm < pc.M && gk < k_hi) v = gemm_ld(abase, int64_t(gm), int64_t(gk), pc.sa[1], pc.sa[2], dta);
        As[kk][mm / 4u][mm % 4u] = v;
      }
    }
#if defined(CT_F32)
    if ((flags & GEMM_B_N) != 0u && b_full && k_full) {  // 4 consecutive n of one k
      [[unroll]] for (uint l = 0u; l < BN * BK / 512u; ++l) {
        uint idx = tid + 128u * l, kk = idx / (BN / 4u), nq = idx % (BN / 4u);
        Bs[kk][nq] = ld4(bbase + uint64_t((int64_t(k0 + kk) * pc.sb[1] + int64_t(n0 + 4u * nq)) * int64_t(dsize(dtb))), dtb);
      }
    } else if ((flags & GEMM_B_K) != 0u && b_full && k_full) {  // 4 consecutive k of one column
      [[unroll]] for (uint l = 0u; l < BN * BK / 512u; ++l) {
        uint idx = tid + 128u * l, nn = idx / (BK / 4u), kq = idx % (BK / 4u);
        vec4 v = ld4(bbase + uint64_t((int64_t(k0 + 4u * kq) + int64_t(n0 + nn) * pc.sb[2]) * int64_t(dsize(dtb))), dtb);
        [[unroll]] for (uint e = 0u; e < 4u; ++e) Bs[4u * kq + e][nn / 4u][nn % 4u] = v[e];
      }
    } else
#endif
    {
      [[unroll]] for (uint l = 0u; l < BN * BK / 128u; ++l) {
        uint idx = tid + 128u * l, kk = idx / BN, nn = idx % BN;  // n fastest
        uint gk = k0 + kk, gn = n0 + nn;
        T w = T(0);
        if (gk < k_hi && gn < pc.N) w = gemm_ld(bbase, int64_t(gk), int64_t(gn), pc.sb[1], pc.sb[2], dtb);
        Bs[kk][nn / 4u][nn % 4u] = w;
      }
    }
    barrier();
    [[unroll]] for (uint kk = 0u; kk < BK; ++kk) {
      V4 a0 = As[kk][ty], a1 = As[kk][16u + ty], b0 = Bs[kk][tx], b1 = Bs[kk][8u + tx];
      T ar[8] = T[8](a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w);
      T br[8] = T[8](b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w);
      [[unroll]] for (uint i = 0u; i < 8u; ++i)
        [[unroll]] for (uint j = 0u; j < 8u; ++j) acc[i][j] = fma(ar[i], br[j], acc[i][j]);
    }
    barrier();
  }

  [[unroll]] for (uint i = 0u; i < 8u; ++i) {
    uint gm = m0 + (i < 4u ? 4u * ty + i : 64u + 4u * ty + i - 4u);
    if (gm >= pc.M) continue;
    [[unroll]] for (uint j = 0u; j < 8u; ++j) {
      uint gn = n0 + (j < 4u ? 4u * tx + j : 32u + 4u * tx + j - 4u);
      if (gn < pc.N) gemm_out(z, gm, gn, acc[i][j]);
    }
  }
}
