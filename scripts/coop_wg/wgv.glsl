// Experiment: the workgroup-scope kernel stripped to wgs.comp's shape, in the project's push
// constants. Macros: IDX32 (uint indices into a uvec4 array, as wgs), LAYOUT_BRANCH (run-time
// choice of the coopMatLoad layouts, as the project), FULL_LOADS (the project's load_a/load_b).
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : require
#define PC_GEMM
#include "common.glsl"
#include "gemm_common.glsl"
#define RS 5u
#define CS 17u
#define SLICE 640u
layout(local_size_x = 128) in;
shared uvec4 S[2u * SLICE];
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer U4A { uvec4 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer U4 { uvec4 v; };
layout(buffer_reference, std430, buffer_reference_align = 16) buffer H16 { float16_t v[]; };
uint at_rs(uint u) { return (u / 4u) * RS + u % 4u; }
uint at_cs(uint u) { return (u / 16u) * CS + u % 16u; }
uint m0, n0, tid;
uint64_t abase, bbase;
void load_a(uint k0, out uvec4 r[4]) {
  [[unroll]] for (uint l = 0u; l < 4u; ++l) {
    uint u = tid + 128u * l;
#if defined(IDX32)
    r[l] = U4A(abase).v[(m0 + u / 4u) * (uint(pc.sa[1]) / 8u) + k0 / 8u + u % 4u];
#else
    r[l] = U4(abase + uint64_t((int64_t(m0 + u / 4u) * pc.sa[1] + int64_t(k0 + 8u * (u % 4u))) * 2)).v;
#endif
  }
}
void load_b(uint k0, out uvec4 r[4]) {
  [[unroll]] for (uint l = 0u; l < 4u; ++l) {
    uint u = tid + 128u * l;
#if defined(IDX32)
    r[l] = U4A(bbase).v[(k0 + u / 16u) * (uint(pc.sb[1]) / 8u) + n0 / 8u + u % 16u];
#else
    r[l] = U4(bbase + uint64_t((int64_t(k0 + u / 16u) * pc.sb[1] + int64_t(n0 + 8u * (u % 16u))) * 2)).v;
#endif
  }
}
void main() {
  uint tiles_n = (pc.N + 127u) / 128u, tiles_m = (pc.M + 127u) / 128u;
  uint64_t tile = group_index();
  uint64_t z = tile / (uint64_t(tiles_n) * uint64_t(tiles_m));
  if (z >= uint64_t(pc.batch)) return;
  tid = gl_LocalInvocationID.x;
  n0 = uint(tile % uint64_t(tiles_n)) * 128u;
  m0 = uint((tile / uint64_t(tiles_n)) % uint64_t(tiles_m)) * 128u;
  abase = pc.a + uint64_t(int64_t(z) * int64_t(pc.sa[0]) * 2);
  bbase = pc.b + uint64_t(int64_t(z) * int64_t(pc.sb[0]) * 2);
  uint flags = gemm_flags();
  fcoopmatNV<32, gl_ScopeWorkgroup, 128, 128> acc = fcoopmatNV<32, gl_ScopeWorkgroup, 128, 128>(0.0);
  uvec4 ra[4], rb[4];
  load_a(0u, ra);
  load_b(0u, rb);
  for (uint k0 = 0u; k0 < pc.K; k0 += 32u) {
    [[unroll]] for (uint l = 0u; l < 4u; ++l) {
      uint u = tid + 128u * l;
      S[at_rs(u)] = ra[l];
      S[SLICE + at_cs(u)] = rb[l];
    }
    barrier();
    if (k0 + 32u < pc.K) {
      load_a(k0 + 32u, ra);
      load_b(k0 + 32u, rb);
    }
    fcoopmatNV<16, gl_ScopeWorkgroup, 128, 32> a;
    fcoopmatNV<16, gl_ScopeWorkgroup, 32, 128> b;
#if defined(LAYOUT_BRANCH)
    if ((flags & GEMM_A_K) != 0u) coopMatLoadNV(a, S, 0u, RS, false);
    else coopMatLoadNV(a, S, 0u, CS, true);
    if ((flags & GEMM_B_N) != 0u) coopMatLoadNV(b, S, SLICE, CS, false);
    else coopMatLoadNV(b, S, SLICE, RS, true);
#else
    coopMatLoadNV(a, S, 0u, RS, false);
    coopMatLoadNV(b, S, SLICE, CS, false);
#endif
    acc = coopMatMulAddNV(a, b, acc);
    barrier();
  }
  fcoopmatNV<16, gl_ScopeWorkgroup, 128, 128> o = fcoopmatNV<16, gl_ScopeWorkgroup, 128, 128>(acc);
  int64_t at = int64_t(z) * pc.sc[0] + int64_t(m0) * pc.sc[1] + int64_t(n0);
  coopMatStoreNV(o, H16(pc.c + uint64_t(at * 2)).v, 0u, uint(pc.sc[1]), false);
}
