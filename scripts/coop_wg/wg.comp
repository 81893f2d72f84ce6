#version 460
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(local_size_x = WG) in;
layout(buffer_reference, std430, buffer_reference_align = 16) buffer H { float16_t v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) buffer F { float v[]; };
layout(push_constant) uniform P { uint64_t a, b, c; uint M, N, K; } pc;
void main() {
  uint n0 = gl_WorkGroupID.x * BN, m0 = gl_WorkGroupID.y * BM;
  fcoopmatNV<32, gl_ScopeWorkgroup, BM, BN> acc = fcoopmatNV<32, gl_ScopeWorkgroup, BM, BN>(0.0);
  for (uint k = 0; k < pc.K; k += BK) {
    fcoopmatNV<16, gl_ScopeWorkgroup, BM, BK> a;
    fcoopmatNV<16, gl_ScopeWorkgroup, BK, BN> b;
    coopMatLoadNV(a, H(pc.a).v, m0 * pc.K + k, pc.K, false);
    coopMatLoadNV(b, H(pc.b).v, k * pc.N + n0, pc.N, false);
    acc = coopMatMulAddNV(a, b, acc);
  }
  coopMatStoreNV(acc, F(pc.c).v, m0 * pc.N + n0, pc.N, false);
}
