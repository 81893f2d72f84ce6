#version 460
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_control_flow_attributes : require
// Workgroup-scope matrices fed from shared memory: slices of A [BM][BK] and B [BK][BN] copied in
// 16-byte units, rows padded by PAD units.
layout(local_size_x = WG) in;
layout(buffer_reference, std430, buffer_reference_align = 16) buffer U4 { uvec4 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) buffer F { float v[]; };
layout(push_constant) uniform P { uint64_t a, b, c; uint M, N, K; } pc;
#define AU (BK / 8)       // units per A row
#define BU (BN / 8)       // units per B row
#define AS (AU + PAD)
#define BS (BU + PAD)
shared uvec4 As[BM * AS];
shared uvec4 Bs[BK * BS];
void main() {
  uint n0 = gl_WorkGroupID.x * BN, m0 = gl_WorkGroupID.y * BM, t = gl_LocalInvocationID.x;
  fcoopmatNV<32, gl_ScopeWorkgroup, BM, BN> acc = fcoopmatNV<32, gl_ScopeWorkgroup, BM, BN>(0.0);
  U4 A = U4(pc.a), B = U4(pc.b);
  uint ka = pc.K / 8, nb = pc.N / 8;
  const uint NA = BM * AU / WG, NB = BK * BU / WG;
  uvec4 ra[NA], rb[NB];
  [[unroll]] for (uint l = 0; l < NA; ++l) { uint u = t + WG * l; ra[l] = A.v[(m0 + u / AU) * ka + u % AU]; }
  [[unroll]] for (uint l = 0; l < NB; ++l) { uint u = t + WG * l; rb[l] = B.v[(u / BU) * nb + n0 / 8 + u % BU]; }
  for (uint k = 0; k < pc.K; k += BK) {
    [[unroll]] for (uint l = 0; l < NA; ++l) { uint u = t + WG * l; As[(u / AU) * AS + u % AU] = ra[l]; }
    [[unroll]] for (uint l = 0; l < NB; ++l) { uint u = t + WG * l; Bs[(u / BU) * BS + u % BU] = rb[l]; }
    barrier();
    if (k + BK < pc.K) {
      uint kn = (k + BK) / 8;
      [[unroll]] for (uint l = 0; l < NA; ++l) { uint u = t + WG * l; ra[l] = A.v[(m0 + u / AU) * ka + kn + u % AU]; }
      [[unroll]] for (uint l = 0; l < NB; ++l) { uint u = t + WG * l; rb[l] = B.v[(k + BK + u / BU) * nb + n0 / 8 + u % BU]; }
    }
    fcoopmatNV<16, gl_ScopeWorkgroup, BM, BK> a;
    fcoopmatNV<16, gl_ScopeWorkgroup, BK, BN> b;
    coopMatLoadNV(a, As, 0, AS, false);
    coopMatLoadNV(b, Bs, 0, BS, false);
    acc = coopMatMulAddNV(a, b, acc);
    barrier();
  }
  coopMatStoreNV(acc, F(pc.c).v, m0 * pc.N + n0, pc.N, false);
}
