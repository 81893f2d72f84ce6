// variants: f32 f64
// Tiled forward convolution (OP_CONV_SMALL only; roles as in shaders/conv.h): an implicit GEMM.
// Rows m are the result's positions (n, o) flattened, columns are the output channels of one
// group, and the summed index k is (b in the group, kernel position) flattened in conv.comp's
// order: channel outermost, then k0, k1, k2. A workgroup computes 128 positions x 64 channels,
// 8 x 8 per invocation, through BK-deep slices in shared memory: the input slice is gathered
// (im2col on the fly; a tap in the padding is a zero that is still multiplied), the weight slice
// read as it lies. Every result sums its terms one after the other in k order, in a `precise`
// accumulator (no fma), then adds the bias: the same operations in the same order as conv.comp,
// so the same bytes (test_conv.py compares the two bit for bit). lower_conv.cpp picks this kernel
// for groups of at least 16 output channels and at least 16 terms (docs/convolution.md).
#version 460
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "conv.h"

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

shared V4 As[BK][BM / 4u];  // [k][m / 4]: the gathered input
shared V4 Bs[BK][BN / 4u];  // [k][channel / 4]: the weights

// k as (channel in the group, k0, k1, k2).
ivec4 k_split(uint k, ivec3 ks) {
  ivec4 r;
  r.w = int(k % uint(ks.z)); k /= uint(ks.z);
  r.z = int(k % uint(ks.y)); k /= uint(ks.y);
  r.y = int(k % uint(ks.x));
  r.x = int(k / uint(ks.x));
  return r;
}

// m as (n, spatial position).
ivec4 m_split(uint m, ivec3 ps) {
  ivec4 r;
  r.w = int(m % uint(ps.z)); m /= uint(ps.z);
  r.z = int(m % uint(ps.y)); m /= uint(ps.y);
  r.y = int(m % uint(ps.x));
  r.x = int(m / uint(ps.x));
  return r;
}

void main() {
  ConvGeom g = ConvGeom(pc.params);
  const ivec3 ps = ivec3(g.ps[0], g.ps[1], g.ps[2]), pb = ivec3(g.pb[0], g.pb[1], g.pb[2]);
  const ivec3 ks = ivec3(g.k[0], g.k[1], g.k[2]);
  const ivec3 st = ivec3(g.stride[0], g.stride[1], g.stride[2]);
  const ivec3 pad = ivec3(g.pad[0], g.pad[1], g.pad[2]), dil = ivec3(g.dil[0], g.dil[1], g.dil[2]);
  const int cg0 = g.c0 / g.groups, c1 = g.c1;
  // The lowering checked that M, the term count and every tile index fit in 31 bits.
  const uint M = uint(g.n) * uint(ps.x * ps.y * ps.z), K = uint(c1 * ks.x * ks.y * ks.z);
  const uint tiles_per_group = (uint(cg0) + BN - 1u) / BN, tiles_n = tiles_per_group * uint(g.groups);
  const uint tile = uint(group_index());
  if (tile >= tiles_n * ((M + BM - 1u) / BM)) return;  // the whole workgroup: uniform
  const uint grp = (tile % tiles_n) / tiles_per_group, a0 = (tile % tiles_n) % tiles_per_group * BN;
  const uint m0 = tile / tiles_n * BM;
  const uint tid = gl_LocalInvocationID.x, tx = tid % 8u, ty = tid / 8u;
  const uint dts = g.dtypes & 0xffu, dtb = (g.dtypes >> 8) & 0xffu, dtw = (g.dtypes >> 16) & 0xffu;
  const uint dtbias = g.dtypes >> 24;
  const int64_t es = int64_t(dsize(dts)), eb = int64_t(dsize(dtb)), ew = int64_t(dsize(dtw));

  // The input slice: this invocation gathers position m0 + tid for every k of a slice.
  const uint lm = m0 + tid;
  const bool m_in = lm < M;
  const ivec4 mp = m_split(m_in ? lm : 0u, ps);
  const ivec3 i0 = mp.yzw * st - pad;  // the input position of kernel position 0
  const int64_t b_base = int64_t(mp.x) * g.st_b[0] + int64_t(grp) * c1 * g.st_b[1];
  // The weight slice: this invocation reads k = (its slice's start) + tid % BK for channels
  // a0 + tid / BK + 8 l.
  const uint wk = tid % BK, wa = tid / BK;
  const int64_t w_base = int64_t(grp * uint(cg0) + a0) * g.st_w[0];

  precise T acc[8][8];
  [[unroll]] for (uint i = 0u; i < 8u; ++i)
    [[unroll]] for (uint j = 0u; j < 8u; ++j) acc[i][j] = T(0);

  for (uint k0 = 0u; k0 < K; k0 += BK) {
    // Gather: k0 .. k0 + BK - 1 at position lm, the kernel position stepped like an odometer.
    ivec4 kc = k_split(k0, ks);
    [[unroll]] for (uint kk = 0u; kk < BK; ++kk) {
      T x = T(0);
      const ivec3 ip = i0 + kc.yzw * dil;
      if (m_in && k0 + kk < K && all(lessThan(uvec3(ip), uvec3(pb))))
        x = load_T(pc.b + uint64_t((b_base + int64_t(kc.x) * g.st_b[1] + int64_t(ip.x) * g.st_b[2] +
                                    int64_t(ip.y) * g.st_b[3] + int64_t(ip.z) * g.st_b[4]) * eb), dtb);
      As[kk][tid / 4u][tid % 4u] = x;
      if (++kc.w == ks.z) {
        kc.w = 0;
        if (++kc.z == ks.y) {
          kc.z = 0;
          if (++kc.y == ks.x) { kc.y = 0; ++kc.x; }
        }
      }
    }
    {
      const uint k = k0 + wk;
      const ivec4 kw = k_split(k, ks);
      const int64_t off = w_base + int64_t(kw.x) * g.st_w[1] + int64_t(kw.y) * g.st_w[2] +
                          int64_t(kw.z) * g.st_w[3] + int64_t(kw.w) * g.st_w[4];
      [[unroll]] for (uint l = 0u; l < BN * BK / 128u; ++l) {
        const uint a = wa + (128u / BK) * l;
        T w = T(0);
        if (k < K && a0 + a < uint(cg0)) w = load_T(pc.w + uint64_t((off + int64_t(a) * g.st_w[0]) * ew), dtw);
        Bs[wk][a / 4u][a % 4u] = w;
      }
    }
    barrier();
    const uint kn = min(BK, K - k0);  // a slice past K adds no terms (0 + 0 would turn -0 into +0)
    [[unroll]] for (uint kk = 0u; kk < BK; ++kk) {
      if (kk >= kn) break;
      V4 x0 = As[kk][ty], x1 = As[kk][16u + ty], w0 = Bs[kk][tx], w1 = Bs[kk][8u + tx];
      T xr[8] = T[8](x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w);
      T wr[8] = T[8](w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w);
      [[unroll]] for (uint i = 0u; i < 8u; ++i)
        [[unroll]] for (uint j = 0u; j < 8u; ++j) acc[i][j] += xr[i] * wr[j];
    }
    barrier();
  }

  [[unroll]] for (uint i = 0u; i < 8u; ++i) {
    const uint m = m0 + (i < 4u ? 4u * ty + i : 64u + 4u * ty + i - 4u);
    if (m >= M) continue;
    const ivec4 p = m_split(m, ps);
    const int64_t s_base = int64_t(p.x) * g.st_s[0] + int64_t(p.y) * g.st_s[2] + int64_t(p.z) * g.st_s[3] +
                           int64_t(p.w) * g.st_s[4];
    [[unroll]] for (uint j = 0u; j < 8u; ++j) {
      const uint al = a0 + (j < 4u ? 4u * tx + j : 32u + 4u * tx + j - 4u);
      if (al >= uint(cg0)) continue;
      const int a = int(grp) * cg0 + int(al);
      precise T r = acc[i][j];
      if (pc.bias != 0UL) r += load_T(pc.bias + uint64_t(int64_t(a) * g.st_bias) * uint64_t(dsize(dtbias)), dtbias);
      store_T(pc.s + uint64_t((s_base + int64_t(a) * g.st_s[1]) * es), dts, r);
    }
  }
}
