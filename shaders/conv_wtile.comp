// variants: f32 f64
// Tiled weight gradient of a convolution with one group (roles as in shaders/conv.h), the first of
// two dispatches that give conv_wgrad.comp's bytes:
//   W[a, bl, k] = sum over terms j = (n, o) of S[n, a, o] * B[n, bl, o * stride - pad + k * dil]
// conv_wgrad.comp gives each result element a workgroup: invocation t sums the terms t, t + 128,
// t + 256, ... in order, then a fixed tree adds the 128 partial sums. Here lane t's partial sums
// are a GEMM of their own (rows: a, columns: (bl, k), terms: j = t + 128 i), computed for a tile
// of 64 x 64 results by a workgroup (4 x 8 per invocation, BK-deep slices of terms in shared
// memory), each sum in the same order with the same `precise` adds, and stored to the scratch
// `partials` [128][count]; conv_wgrad.comp (CONV_FROM_PARTIALS) then runs its tree on them.
// Workgroup z = ((lane * tiles_a) + tile_a) * tiles_c + tile_c. lower_conv.cpp picks it
// (docs/convolution.md).
// spirv: NoContraction everywhere  (glslc -O's unroller drops it from precise sums: scripts/shaders.py)
#version 460
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "conv.h"

#define BA 64u  // rows (output channels a) per tile
#define BC 64u  // columns (bl, k) per tile
#if defined(CT_F64)
#define BK 8u
#else
#define BK 16u
#endif
#include "conv_wgrad.glsl"
layout(local_size_x = 128) in;

shared T Ss[BK][BA];  // [term][a]
shared T Bs[BK][BC];  // [term][column]

void main() {
  ConvGeom g = ConvGeom(pc.params);
  const ivec3 ps = ivec3(g.ps[0], g.ps[1], g.ps[2]), pb = ivec3(g.pb[0], g.pb[1], g.pb[2]);
  const ivec3 ks = ivec3(g.k[0], g.k[1], g.k[2]);
  const ivec3 st = ivec3(g.stride[0], g.stride[1], g.stride[2]);
  const ivec3 pad = ivec3(g.pad[0], g.pad[1], g.pad[2]), dil = ivec3(g.dil[0], g.dil[1], g.dil[2]);
  int sts[8], stb[8];
  for (int i = 0; i < 5; ++i) sts[i] = g.st_s[i], stb[i] = g.st_b[i];
  const uint dts = g.dtypes & 0xffu, dtb = (g.dtypes >> 8) & 0xffu;
  const uint64_t es = uint64_t(dsize(dts)), eb = uint64_t(dsize(dtb));
  const uint kk_n = uint(ks.x * ks.y * ks.z);
  const uint rows = uint(g.c0), cols = uint(g.c1) * kk_n;
  const uint tiles_a = (rows + BA - 1u) / BA, tiles_c = (cols + BC - 1u) / BC;
  const uint64_t z = group_index();
  if (z >= 128UL * uint64_t(tiles_a) * uint64_t(tiles_c)) return;  // the whole workgroup: uniform
  const uint tc = uint(z % uint64_t(tiles_c)), ta = uint((z / uint64_t(tiles_c)) % uint64_t(tiles_a));
  const uint lane = uint(z / (uint64_t(tiles_c) * uint64_t(tiles_a)));
  const uint a0 = ta * BA, c0 = tc * BC;
  const uint per_n = uint(ps.x * ps.y * ps.z), terms = uint(g.n) * per_n;  // < 2^32 - 128 (lowering)
  const uint mine = lane < terms ? (terms - lane + 127u) / 128u : 0u;  // lane's terms
  const uint tid = gl_LocalInvocationID.x;
  const uint tr = tid / 8u, tcol = tid % 8u;  // rows tr + 16 i, columns tcol + 8 j
  precise T acc[4][8];
  [[unroll]] for (uint i = 0u; i < 4u; ++i)
    [[unroll]] for (uint j = 0u; j < 8u; ++j) acc[i][j] = T(0);

  for (uint i0 = 0u; i0 < mine; i0 += BK) {
    // The slice: terms j = lane + 128 (i0 + kk). S[n, a, o] for BA rows; B at the columns' taps,
    // a zero in the padding (it still multiplies: inf * 0 = NaN, as conv_wgrad.comp).
    [[unroll]] for (uint l = 0u; l < BA * BK / 128u; ++l) {
      const uint e = tid + 128u * l, kk = e / BA, r = e % BA;
      T v = T(0);
      if (i0 + kk < mine && a0 + r < rows) {
        ivec3 o;
        const int n = term_at(lane + 128u * (i0 + kk), per_n, ps, o);
        v = load_T(pc.s + uint64_t(at5(sts, n, int(a0 + r), o)) * es, dts);
      }
      Ss[kk][r] = v;
    }
    [[unroll]] for (uint l = 0u; l < BC * BK / 128u; ++l) {
      const uint e = tid + 128u * l, kk = e / BC, c = e % BC;
      T v = T(0);
      if (i0 + kk < mine && c0 + c < cols) {
        ivec3 o;
        const int n = term_at(lane + 128u * (i0 + kk), per_n, ps, o);
        uint q = c0 + c;
        ivec3 k;
        k.z = int(q % uint(ks.z)); q /= uint(ks.z);
        k.y = int(q % uint(ks.y)); q /= uint(ks.y);
        k.x = int(q % uint(ks.x));
        const int bl = int(q / uint(ks.x));
        const ivec3 p = o * st + k * dil - pad;
        if (uint(p.x) < uint(pb.x) && uint(p.y) < uint(pb.y) && uint(p.z) < uint(pb.z))
          v = load_T(pc.b + uint64_t(at5(stb, n, bl, p)) * eb, dtb);
      }
      Bs[kk][c] = v;
    }
    barrier();
    const uint nk = min(BK, mine - i0);  // uniform; past the lane's last term nothing is added
    for (uint kk = 0u; kk < nk; ++kk) {
      T y[4], x[8];
      [[unroll]] for (uint i = 0u; i < 4u; ++i) y[i] = Ss[kk][tr + 16u * i];
      [[unroll]] for (uint j = 0u; j < 8u; ++j) x[j] = Bs[kk][tcol + 8u * j];
      [[unroll]] for (uint i = 0u; i < 4u; ++i)
        [[unroll]] for (uint j = 0u; j < 8u; ++j) acc[i][j] += y[i] * x[j];
    }
    barrier();
  }

  // partials[lane][r], r = a * cols + column: conv_wgrad.comp's result index for OP_CONV_WEIGHT
  const uint64_t count = uint64_t(rows) * uint64_t(cols);
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    const uint a = a0 + tr + 16u * i;
    if (a >= rows) continue;
    [[unroll]] for (uint j = 0u; j < 8u; ++j) {
      const uint c = c0 + tcol + 8u * j;
      if (c < cols) store_T(pc.partials + (uint64_t(lane) * count + uint64_t(a) * cols + c) * PSIZE, DT_PARTIAL, acc[i][j]);
    }
  }
}
