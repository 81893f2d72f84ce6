// The coopmat gemm pipelines' body: 16-bit A and B, float32 accumulation. Three builds:
// - gemm_coop.comp: float16, subgroup scope;
// - gemm_coop_bf16.comp (COOP_BF16): bfloat16, subgroup scope;
// - gemm_coop_wg.comp (COOP_WG): float16, workgroup scope (VK_NV_cooperative_matrix2), whole
//   tiles of plain products only (below; not bfloat16: lower_gemm.cpp coop_wg_shader() says why).
// All are written with GL_NV_cooperative_matrix types (Debian 12's glslc knows no other) and
// rewritten by scripts/spv_khr.py to VK_KHR_cooperative_matrix, keeping workgroup scope, with
// bfloat16 matrices for COOP_BF16 (NV has no bfloat16). The KHR build of the subgroup kernel ran
// 17% faster than the NV one on the H100 (docs/performance.md), and KHR is every vendor's. Only
// where the device reports the matrices (core/limits.h cooperative_matrix*) and the shared memory
// (lower_gemm.cpp coop_sg_shader() / coop_wg_shader()).
//
// A 128x128 output tile per workgroup; at subgroup scope each of the 4 subgroups owns a 64x64
// quarter as 4x4 16x16 accumulators. 32-deep k slices of A and B go through shared memory in
// their 16-bit format (exact), 16 bytes (8 elements) at a time: a slice is held either row-major
// ([m][k] for A, [k][n] for B) or column-major ([k][m], [n][k]), whichever the operand's
// contiguous dimension gives (lower_gemm.cpp's GEMM_A_* / GEMM_B_* flags, 16-byte aligned
// interior tiles), and the cooperative loads read it in that order. Edge slices and other layouts
// load element by element into the row-major form. The next slice's global loads are issued
// before this slice's multiplies (held in registers), so memory and tensor cores overlap.
//
// The k slices are added in order and each multiply-add covers a fixed 16-deep slice, so every
// output's sum has one order whatever the layout: deterministic.
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : require
#define PC_GEMM
#include "common.glsl"
#include "gemm_common.glsl"

#define BM 128u
#define BN 128u
#define BK 32u
// Shared slices in 16-byte units (8 halves), each row padded by one unit against bank conflicts:
// RS for a [128][32] slice (A row-major, B column-major), CS for a [32][128] one.
#define RS 5u
#define CS 17u
#define SLICE 640u  // max(128 * RS, 32 * CS)
layout(local_size_x = 128) in;
// Specialization constant 2: the layout flags (gemm_flags()), set with constant 1 on GPUs
// (lower_gemm.cpp), so the driver folds the choice of loads and of the matrices' layouts (a
// run-time choice cost the workgroup-scope kernel 10% at 4096^3 on the H100).
layout(constant_id = 2) const uint SPEC_GEMM_FLAGS = 0u;

// One array for both slices (the A slice first), so that both scopes address them alike. (Two such
// pairs, one barrier a slice instead of two, ran 1.6x slower on the H100: branch exp/coop-next,
// docs/performance.md, fifteenth session.)
shared uvec4 S[2u * SLICE];
#define A_AT (sbase)
#define B_AT (sbase + SLICE)

#if defined(COOP_WG)
// Workgroup scope (VK_NV_cooperative_matrix2): the workgroup's matrices are one 128x128 float32
// accumulator, each slice's A as one 128x32 and B as one 32x128; the driver divides the work
// among the subgroups. The tile leaves as one 128x128 float16 matrix stored straight to C: so only
// for whole tiles of a float16 C with contiguous rows, alpha 1, no bias and K in one part
// (lower_gemm.cpp coop_wg_shader()).
#define A_SLICE fcoopmatNV<16, gl_ScopeWorkgroup, 128, 32>
#define B_SLICE fcoopmatNV<16, gl_ScopeWorkgroup, 32, 128>
#define ACC_TILE fcoopmatNV<32, gl_ScopeWorkgroup, 128, 128>
#define OUT_TILE fcoopmatNV<16, gl_ScopeWorkgroup, 128, 128>
layout(buffer_reference, std430, buffer_reference_align = 16) buffer H16 { float16_t v[]; };
#else
shared float Cs[4u * 256u];  // one 16x16 accumulator per subgroup, for the epilogue

#define FRAG16 fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define ACC32 fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>
#endif

layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer U4 { uvec4 v; };

// Two values of the operands' 16-bit format (they came from it: exact) as one word.
#if defined(COOP_BF16)
uint pack2(float a, float b) { return f32_to_bf16(a) | (f32_to_bf16(b) << 16); }
#else
uint pack2(float a, float b) { return packFloat2x16(f16vec2(float16_t(a), float16_t(b))); }
#endif

// Slice layouts (uniform over the workgroup): how the slice now in registers was loaded.
#define L_ROW 0u  // A [m][k] / B [k][n]
#define L_COL 1u  // A [k][m] / B [n][k]

uint tiles_n, tiles_m, m0, n0, k_lo, k_hi, dta, dtb, flags, tid;
uint64_t abase, bbase;
bool a_full, b_full;

// A slice into r, 4 units per invocation, in one of the two fast layouts: 16-byte units along the
// operand's contiguous dimension of an interior, aligned slice (lower_gemm.cpp's GEMM_* flags).
// The slice is 512 / per lines of `per` units (128 of 4: A and B along k; 32 of 16: A along m, B
// along n): line `outer0 + i` starts at element `inner0`, and lines are `ld` elements apart.
#define LOAD_LINES(base, per, outer0, inner0, ld)                                              \
  [[unroll]] for (uint l = 0u; l < 4u; ++l) {                                                   \
    uint u = tid + 128u * l;                                                                    \
    r[l] = U4(base + uint64_t((int64_t(outer0 + u / per) * ld + int64_t(inner0 + 8u * (u % per))) * 2)).v; \
  }
void load_a_rows(uint k0, out uvec4 r[4]) { LOAD_LINES(abase, 4u, m0, k0, pc.sa[1]) }
void load_a_cols(uint k0, out uvec4 r[4]) { LOAD_LINES(abase, 16u, k0, m0, pc.sa[2]) }
void load_b_rows(uint k0, out uvec4 r[4]) { LOAD_LINES(bbase, 16u, k0, n0, pc.sb[1]) }
void load_b_cols(uint k0, out uvec4 r[4]) { LOAD_LINES(bbase, 4u, n0, k0, pc.sb[2]) }

#if defined(COOP_WG)
// Workgroup scope: lower_gemm.cpp coop_wg_shader() sends only products whose every slice takes a
// fast layout (whole tiles, K % 32 == 0, aligned operands with a contiguous dimension), so only
// those loads are compiled in: the element-by-element path beside them cost 30% of the kernel's
// time at 4096^3 on the H100 (730 against 509 us; docs/performance.md, thirteenth session).
uint load_a(uint k0, out uvec4 r[4]) {
  if ((flags & GEMM_A_K) != 0u) {
    load_a_rows(k0, r);
    return L_ROW;
  }
  load_a_cols(k0, r);
  return L_COL;
}
uint load_b(uint k0, out uvec4 r[4]) {
  if ((flags & GEMM_B_N) != 0u) {
    load_b_rows(k0, r);
    return L_ROW;
  }
  load_b_cols(k0, r);
  return L_COL;
}
#else
// Slice k0 of A into r; returns its layout. Edge slices and other layouts load element by
// element into the row-major form.
uint load_a(uint k0, out uvec4 r[4]) {
  bool k_full = k0 + BK <= k_hi;
  if ((flags & GEMM_A_K) != 0u && a_full && k_full) {
    load_a_rows(k0, r);
    return L_ROW;
  }
  if ((flags & GEMM_A_M) != 0u && a_full && k_full) {
    load_a_cols(k0, r);
    return L_COL;
  }
  [[unroll]] for (uint l = 0u; l < 4u; ++l) {
    uint u = tid + 128u * l, gm = m0 + u / 4u, gk = k0 + 8u * (u % 4u);
    float h[8];
    [[unroll]] for (uint e = 0u; e < 8u; ++e)
      h[e] = gm < pc.M && gk + e < k_hi ? gemm_ld(abase, int64_t(gm), int64_t(gk + e), pc.sa[1], pc.sa[2], dta) : 0.0;
    r[l] = uvec4(pack2(h[0], h[1]), pack2(h[2], h[3]), pack2(h[4], h[5]), pack2(h[6], h[7]));
  }
  return L_ROW;
}

uint load_b(uint k0, out uvec4 r[4]) {
  bool k_full = k0 + BK <= k_hi;
  if ((flags & GEMM_B_N) != 0u && b_full && k_full) {
    load_b_rows(k0, r);
    return L_ROW;
  }
  if ((flags & GEMM_B_K) != 0u && b_full && k_full) {
    load_b_cols(k0, r);
    return L_COL;
  }
  [[unroll]] for (uint l = 0u; l < 4u; ++l) {
    uint u = tid + 128u * l, gk = k0 + u / 16u, gn = n0 + 8u * (u % 16u);
    float h[8];
    [[unroll]] for (uint e = 0u; e < 8u; ++e)
      h[e] = gk < k_hi && gn + e < pc.N ? gemm_ld(bbase, int64_t(gk), int64_t(gn + e), pc.sb[1], pc.sb[2], dtb) : 0.0;
    r[l] = uvec4(pack2(h[0], h[1]), pack2(h[2], h[3]), pack2(h[4], h[5]), pack2(h[6], h[7]));
  }
  return L_ROW;
}
#endif

// Outputs (gm, gn) and (gm, gn + 1) of layer z: one word where C is a 2-byte dtype with
// contiguous rows and the pair 4-byte aligned, K not split (a float16 C stored element by element
// takes two atomics per element: common.glsl st_bits); otherwise each on its own.
void out_pair(uint64_t z, uint gm, uint gn, float a0, float a1) {
  uint dtc = DTYPES & 0xffu;
  if (gemm_parts() == 1u && dsize(dtc) == 2u && pc.sc[2] == 1 && gn + 1u < pc.N) {
    int64_t oc = int64_t(z) * pc.sc[0] + int64_t(gm) * pc.sc[1] + int64_t(gn);
    uint64_t a = pc.c + uint64_t(oc * 2);
    if ((a & 3UL) == 0UL) {
      uint lo = uint(T_to_bits(c_value(int64_t(z), gm, gn, a0), dtc));
      uint hi = uint(T_to_bits(c_value(int64_t(z), gm, gn + 1u, a1), dtc));
      st_word(a, lo | (hi << 16));
      return;
    }
  }
  gemm_out(z, gm, gn, a0);
  if (gn + 1u < pc.N) gemm_out(z, gm, gn + 1u, a1);
}

// Unit u of a slice to its place in shared memory: [128][4] units with stride RS, or [32][16]
// with stride CS (A row-major and B column-major are the first; A column-major, B row-major the
// second).
uint at_rs(uint u) { return (u / 4u) * RS + u % 4u; }
uint at_cs(uint u) { return (u / 16u) * CS + u % 16u; }

// The slice in registers into the shared pair at base.
void stash(uint base, uint la, uint lb, uvec4 ra[4], uvec4 rb[4]) {
  [[unroll]] for (uint l = 0u; l < 4u; ++l) {
    uint u = tid + 128u * l;
    S[base + (la == L_ROW ? at_rs(u) : at_cs(u))] = ra[l];
    S[base + SLICE + (lb == L_ROW ? at_cs(u) : at_rs(u))] = rb[l];
  }
}

void main() {
  tiles_n = (pc.N + BN - 1u) / BN;
  tiles_m = (pc.M + BM - 1u) / BM;
  uint64_t tile = group_index();
  uint64_t z = tile / (uint64_t(tiles_n) * uint64_t(tiles_m));
  if (z >= uint64_t(pc.batch) * uint64_t(gemm_parts())) return;  // whole group: uniform
  tid = gl_LocalInvocationID.x;
  uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  n0 = uint(tile % uint64_t(tiles_n)) * BN;
  m0 = uint((tile / uint64_t(tiles_n)) % uint64_t(tiles_m)) * BM;
  uint sm = (sg / 2u) * 64u, sn = (sg % 2u) * 64u;  // this subgroup's quarter
  int64_t bt = int64_t(z / uint64_t(gemm_parts()));
  gemm_k_range(z, k_lo, k_hi);
  dta = (DTYPES >> 8) & 0xffu;
  dtb = (DTYPES >> 16) & 0xffu;
  abase = pc.a + uint64_t(bt * int64_t(pc.sa[0]) * 2);
  bbase = pc.b + uint64_t(bt * int64_t(pc.sb[0]) * 2);
  flags = SPEC ? SPEC_GEMM_FLAGS : gemm_flags();  // a constant where specialized: the layouts fold
  a_full = m0 + BM <= pc.M;
  b_full = n0 + BN <= pc.N;
#if defined(COOP_WG)
  ACC_TILE acc = ACC_TILE(0.0);
#else
  ACC32 acc[4][4];
  [[unroll]] for (uint i = 0u; i < 4u; ++i)
    [[unroll]] for (uint j = 0u; j < 4u; ++j) acc[i][j] = ACC32(0.0);
#endif

  uvec4 ra[4], rb[4];
  uint la = L_ROW, lb = L_ROW;
  if (k_lo < k_hi) {
    la = load_a(k_lo, ra);
    lb = load_b(k_lo, rb);
  }
  uint sbase = 0u;  // the shared pair's base (A_AT, B_AT): one pair, so 0
  for (uint k0 = k_lo; k0 < k_hi; k0 += BK) {
    stash(0u, la, lb, ra, rb);
    barrier();
    uint sa_layout = la, sb_layout = lb;
    if (k0 + BK < k_hi) {  // the next slice's loads, in flight during this slice's multiplies
      la = load_a(k0 + BK, ra);
      lb = load_b(k0 + BK, rb);
    }
#if defined(COOP_WG)
    A_SLICE a;
    B_SLICE b;
    if (sa_layout == L_ROW) coopMatLoadNV(a, S, A_AT, RS, false);
    else coopMatLoadNV(a, S, A_AT, CS, true);
    if (sb_layout == L_ROW) coopMatLoadNV(b, S, B_AT, CS, false);
    else coopMatLoadNV(b, S, B_AT, RS, true);
    acc = coopMatMulAddNV(a, b, acc);
#else
    [[unroll]] for (uint kk = 0u; kk < BK; kk += 16u) {
      FRAG16 fa[4], fb[4];
      [[unroll]] for (uint i = 0u; i < 4u; ++i) {
        uint r = sm + 16u * i;
        if (sa_layout == L_ROW) coopMatLoadNV(fa[i], S, A_AT + r * RS + kk / 8u, RS, false);
        else coopMatLoadNV(fa[i], S, A_AT + kk * CS + r / 8u, CS, true);
      }
      [[unroll]] for (uint j = 0u; j < 4u; ++j) {
        uint c = sn + 16u * j;
        if (sb_layout == L_ROW) coopMatLoadNV(fb[j], S, B_AT + kk * CS + c / 8u, CS, false);
        else coopMatLoadNV(fb[j], S, B_AT + c * RS + kk / 8u, RS, true);
      }
      [[unroll]] for (uint i = 0u; i < 4u; ++i)
        [[unroll]] for (uint j = 0u; j < 4u; ++j) acc[i][j] = coopMatMulAddNV(fa[i], fb[j], acc[i][j]);
    }
#endif
    barrier();
  }

#if defined(COOP_WG)
  // Epilogue: the tile rounded to float16 once (as out_pair rounds c_value's float32), stored whole.
  OUT_TILE o = OUT_TILE(acc);
  int64_t at = int64_t(z) * pc.sc[0] + int64_t(m0) * pc.sc[1] + int64_t(n0);
  coopMatStoreNV(o, H16(pc.c + uint64_t(at * 2)).v, 0u, uint(pc.sc[1]), false);
#else
  // Epilogue: each accumulator through this subgroup's 16x16 staging area, 4 pairs of adjacent
  // outputs per lane. Unrolled: an accumulator array indexed at run time was kept in memory by
  // NVIDIA's compiler, in the main loop too (30 TFLOP/s against 136 on the H100, 2026-12-06).
  [[unroll]] for (uint i = 0u; i < 4u; ++i)
    [[unroll]] for (uint j = 0u; j < 4u; ++j) {
      coopMatStoreNV(acc[i][j], Cs, sg * 256u, 16u, false);
      subgroupMemoryBarrierShared();
      subgroupBarrier();
      for (uint q = 0u; q < 4u; ++q) {
        uint e = 2u * (lane + 32u * q), r = e / 16u, c = e % 16u;
        uint gm = m0 + sm + 16u * i + r, gn = n0 + sn + 16u * j + c;
        if (gm < pc.M && gn < pc.N) out_pair(z, gm, gn, Cs[sg * 256u + e], Cs[sg * 256u + e + 1u]);
      }
      subgroupMemoryBarrierShared();
      subgroupBarrier();
    }
#endif
}
