// variants: f32
// The coopmat gemm pipeline: float16 A and B, float32 accumulation, through VK_NV_cooperative_matrix
// (Debian 12's glslc knows GL_NV_cooperative_matrix, not GL_KHR_cooperative_matrix). Only where
// the device reports 16x16x16 float16 x float16 + float32 at subgroup scope with 32-wide
// subgroups (core/limits.h cooperative_matrix): a 64x64 output tile per workgroup, each of the 4
// subgroups owning a 32x32 quarter as 2x2 16x16 accumulators; 32-deep k slices of A and B go
// through shared memory as float16 (exact: the operands are float16). The k slices are added in
// order and each multiply-add covers a fixed 16-deep slice, so every output's sum has one order:
// deterministic. 13.5 KiB of shared memory: fits the 16 KiB floor.
#version 460
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define PC_GEMM
#include "common.glsl"
#include "gemm_common.glsl"

#define BM 64u
#define BN 64u
#define BK 32u
#define SA 40u  // row strides in shared memory, in elements: multiples of 8 (16 bytes)
#define SB 72u
layout(local_size_x = 128) in;

shared float16_t As[BM * SA];  // [m][k]
shared float16_t Bs[BK * SB];  // [k][n]
shared float Cs[4u * 256u];    // one 16x16 accumulator per subgroup, for the epilogue

#define FRAG16 fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define ACC32 fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>

float16_t ld_h(uint64_t a, uint dt) { return float16_t(load_T(a, dt)); }  // exact for float16 inputs

void main() {
  uint tiles_n = (pc.N + BN - 1u) / BN, tiles_m = (pc.M + BM - 1u) / BM;
  uint64_t tile = group_index();
  uint64_t z = tile / (uint64_t(tiles_n) * uint64_t(tiles_m));
  if (z >= uint64_t(pc.batch) * uint64_t(gemm_parts())) return;  // whole group: uniform
  uint tid = gl_LocalInvocationID.x, sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  uint n0 = uint(tile % uint64_t(tiles_n)) * BN, m0 = uint((tile / uint64_t(tiles_n)) % uint64_t(tiles_m)) * BM;
  uint sm = (sg / 2u) * 32u, sn = (sg % 2u) * 32u;  // this subgroup's quarter
  int64_t bt = int64_t(z / uint64_t(gemm_parts()));
  uint k_lo, k_hi;
  gemm_k_range(z, k_lo, k_hi);
  uint dta = (DTYPES >> 8) & 0xffu, dtb = (DTYPES >> 16) & 0xffu;
  uint64_t abase = pc.a + uint64_t(bt * int64_t(pc.sa[0]) * 2);
  uint64_t bbase = pc.b + uint64_t(bt * int64_t(pc.sb[0]) * 2);
  uint flags = gemm_flags();
  bool a_full = m0 + BM <= pc.M, b_full = n0 + BN <= pc.N;
  ACC32 acc[2][2];
  for (uint i = 0u; i < 2u; ++i)
    for (uint j = 0u; j < 2u; ++j) acc[i][j] = ACC32(0.0);

  for (uint k0 = k_lo; k0 < k_hi; k0 += BK) {
    bool k_full = k0 + BK <= k_hi;
    // A: 64x32 halves = 1024 words, 8 per invocation.
    if ((flags & GEMM_A_K) != 0u && a_full && k_full) {  // 2 consecutive k per word
      for (uint l = 0u; l < 8u; ++l) {
        uint w = tid + 128u * l, mm = w / 16u, kw = w % 16u;
        f16vec2 h = unpackFloat2x16(ld_word(abase + uint64_t((int64_t(m0 + mm) * pc.sa[1] + int64_t(k0 + 2u * kw)) * 2)));
        As[mm * SA + 2u * kw] = h.x;
        As[mm * SA + 2u * kw + 1u] = h.y;
      }
    } else if ((flags & GEMM_A_M) != 0u && a_full && k_full) {  // 2 consecutive m per word
      for (uint l = 0u; l < 8u; ++l) {
        uint w = tid + 128u * l, kk = w / 32u, mw = w % 32u;
        f16vec2 h = unpackFloat2x16(ld_word(abase + uint64_t((int64_t(m0 + 2u * mw) + int64_t(k0 + kk) * pc.sa[2]) * 2)));
        As[(2u * mw) * SA + kk] = h.x;
        As[(2u * mw + 1u) * SA + kk] = h.y;
      }
    } else {
      for (uint l = 0u; l < 16u; ++l) {
        uint e = tid + 128u * l, mm = e / BK, kk = e % BK;
        uint gm = m0 + mm, gk = k0 + kk;
        float16_t v = float16_t(0.0);
        if (gm < pc.M && gk < k_hi)
          v = ld_h(abase + uint64_t((int64_t(gm) * pc.sa[1] + int64_t(gk) * pc.sa[2]) * 2), dta);
        As[mm * SA + kk] = v;
      }
    }
    // B: 32x64 halves.
    if ((flags & GEMM_B_N) != 0u && b_full && k_full) {  // 2 consecutive n per word
      for (uint l = 0u; l < 8u; ++l) {
        uint w = tid + 128u * l, kk = w / 32u, nw = w % 32u;
        f16vec2 h = unpackFloat2x16(ld_word(bbase + uint64_t((int64_t(k0 + kk) * pc.sb[1] + int64_t(n0 + 2u * nw)) * 2)));
        Bs[kk * SB + 2u * nw] = h.x;
        Bs[kk * SB + 2u * nw + 1u] = h.y;
      }
    } else if ((flags & GEMM_B_K) != 0u && b_full && k_full) {  // 2 consecutive k per word
      for (uint l = 0u; l < 8u; ++l) {
        uint w = tid + 128u * l, nn = w / 16u, kw = w % 16u;
        f16vec2 h = unpackFloat2x16(ld_word(bbase + uint64_t((int64_t(k0 + 2u * kw) + int64_t(n0 + nn) * pc.sb[2]) * 2)));
        Bs[(2u * kw) * SB + nn] = h.x;
        Bs[(2u * kw + 1u) * SB + nn] = h.y;
      }
    } else {
      for (uint l = 0u; l < 16u; ++l) {
        uint e = tid + 128u * l, kk = e / BN, nn = e % BN;
        uint gk = k0 + kk, gn = n0 + nn;
        float16_t v = float16_t(0.0);
        if (gk < k_hi && gn < pc.N)
          v = ld_h(bbase + uint64_t((int64_t(gk) * pc.sb[1] + int64_t(gn) * pc.sb[2]) * 2), dtb);
        Bs[kk * SB + nn] = v;
      }
    }
    barrier();
    for (uint kk = 0u; kk < BK; kk += 16u) {
      FRAG16 fa[2], fb[2];
      for (uint i = 0u; i < 2u; ++i) coopMatLoadNV(fa[i], As, (sm + 16u * i) * SA + kk, SA, false);
      for (uint j = 0u; j < 2u; ++j) coopMatLoadNV(fb[j], Bs, kk * SB + sn + 16u * j, SB, false);
      for (uint i = 0u; i < 2u; ++i)
        for (uint j = 0u; j < 2u; ++j) acc[i][j] = coopMatMulAddNV(fa[i], fb[j], acc[i][j]);
    }
    barrier();
  }

  // Epilogue: each accumulator through this subgroup's 16x16 staging area, 8 outputs per lane.
  for (uint i = 0u; i < 2u; ++i)
    for (uint j = 0u; j < 2u; ++j) {
      coopMatStoreNV(acc[i][j], Cs, sg * 256u, 16u, false);
      subgroupMemoryBarrierShared();
      subgroupBarrier();
      for (uint q = 0u; q < 8u; ++q) {
        uint e = lane + 32u * q, r = e / 16u, c = e % 16u;
        uint gm = m0 + sm + 16u * i + r, gn = n0 + sn + 16u * j + c;
        if (gm < pc.M && gn < pc.N) gemm_out(z, gm, gn, Cs[sg * 256u + e]);
      }
      subgroupMemoryBarrierShared();
      subgroupBarrier();
    }
}
