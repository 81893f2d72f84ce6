// variants: f32 f64
// Tiled convolution, an implicit GEMM (roles as in shaders/conv.h), for two passes:
//   OP_CONV_SMALL  S = B * W: rows are S's positions (n, o), columns S's channels in one group,
//                  terms (b in the group, kernel position k);
//   OP_CONV_BIG    B = S * W with stride 1 (a strided one runs as stride-1 phases, lower_conv.cpp
//                  phases()): rows are B's positions (n, i),
//                  columns B's channels in one group, terms (a in the group, k).
// Terms are flattened in conv.comp's order: channel outermost, then k0, k1, k2. A workgroup
// computes 128 positions x 64 channels, 8 x 8 per invocation, through BK-deep slices in shared
// memory: the operand slice is gathered (im2col on the fly), the weight slice read as it lies.
// Every result sums its terms one after the other in that order, in a `precise` accumulator (no
// fma), then adds the bias: the same operations in the same order as conv.comp, so the same bytes
// (test_conv_tile.py compares the two bit for bit).
// Taps: for SMALL a tap in the padding reads a zero that is still multiplied (0 * inf = NaN, as
// torch's im2col). For BIG a tap that reaches no S position is no term at all (torch's col2im
// drops it); the slice stores a zero for it, and adding that zero's product changes no sum unless
// the weight is infinite or NaN (the accumulator starts at +0 and never becomes -0, so
// acc + (+-0) == acc). So a slice whose weights are all finite runs unmasked; one with a
// non-finite weight (uniform for the workgroup) tests each term's bit in Tap. lower_conv.cpp picks
// this kernel for results of at least 32 positions, 16 channels a group and 16 terms (docs/convolution.md).
// spirv: NoContraction everywhere  (glslc -O's unroller drops it from precise sums: scripts/shaders.py)
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

shared V4 As[BK][BM / 4u];  // [k][m / 4]: the gathered operand
shared V4 Bs[BK][BN / 4u];  // [k][channel / 4]: the weights
shared uint Tap[BK][BM / 32u];  // BIG: bit m % 32 of [k][m / 32] set where the term exists
shared uint Nonfinite[2];       // BIG: slice parity -> some weight of the slice is infinite or NaN

// i over [outer, sz.x, sz.y, sz.z] (innermost last) as (outer, three indices): a term k as
// (channel in the group, kernel position), a row m as (n, spatial position).
ivec4 split3(uint i, ivec3 sz) {
  ivec4 r;
  r.w = int(i % uint(sz.z)); i /= uint(sz.z);
  r.z = int(i % uint(sz.y)); i /= uint(sz.y);
  r.y = int(i % uint(sz.x));
  r.x = int(i / uint(sz.x));
  return r;
}

void main() {
  ConvGeom g = ConvGeom(pc.params);
  const bool big = OP == OP_CONV_BIG;
  const ivec3 ps = ivec3(g.ps[0], g.ps[1], g.ps[2]), pb = ivec3(g.pb[0], g.pb[1], g.pb[2]);
  const ivec3 ks = ivec3(g.k[0], g.k[1], g.k[2]);
  const ivec3 st = ivec3(g.stride[0], g.stride[1], g.stride[2]);
  const ivec3 pad = ivec3(g.pad[0], g.pad[1], g.pad[2]), dil = ivec3(g.dil[0], g.dil[1], g.dil[2]);
  const int cg0 = g.c0 / g.groups, c1 = g.c1;
  // The result (rows, columns) and the gathered operand, by role.
  const ivec3 rsp = big ? pb : ps, gsp = big ? ps : pb;  // result's and gathered operand's space
  const int cols = big ? c1 : cg0, tch = big ? cg0 : c1;  // result channels and term channels a group
  const uint64_t ra = big ? pc.b : pc.s, ga = big ? pc.s : pc.b;
  const ivec4 rst = big ? ivec4(g.st_b[0], g.st_b[2], g.st_b[3], g.st_b[4]) : ivec4(g.st_s[0], g.st_s[2], g.st_s[3], g.st_s[4]);
  const int rstc = big ? g.st_b[1] : g.st_s[1];
  const ivec4 gst = big ? ivec4(g.st_s[0], g.st_s[2], g.st_s[3], g.st_s[4]) : ivec4(g.st_b[0], g.st_b[2], g.st_b[3], g.st_b[4]);
  const int gstc = big ? g.st_s[1] : g.st_b[1];
  const int wst_col = big ? g.st_w[1] : g.st_w[0], wst_ch = big ? g.st_w[0] : g.st_w[1];
  // The lowering checked that M, the term count and every tile index fit in 31 bits.
  const uint M = uint(g.n) * uint(rsp.x * rsp.y * rsp.z), K = uint(tch * ks.x * ks.y * ks.z);
  const uint tiles_per_group = (uint(cols) + BN - 1u) / BN, tiles_n = tiles_per_group * uint(g.groups);
  const uint tile = uint(group_index());
  if (tile >= tiles_n * ((M + BM - 1u) / BM)) return;  // the whole workgroup: uniform
  const uint grp = (tile % tiles_n) / tiles_per_group, a0 = (tile % tiles_n) % tiles_per_group * BN;
  const uint m0 = tile / tiles_n * BM;
  const uint tid = gl_LocalInvocationID.x, tx = tid % 8u, ty = tid / 8u;
  const uint dts = g.dtypes & 0xffu, dtb = (g.dtypes >> 8) & 0xffu, dtw = (g.dtypes >> 16) & 0xffu;
  const uint dtbias = g.dtypes >> 24, dtr = big ? dtb : dts, dtg = big ? dts : dtb;
  const int64_t er = int64_t(dsize(dtr)), eg = int64_t(dsize(dtg)), ew = int64_t(dsize(dtw));

  // The operand slice: this invocation gathers position m0 + tid for every term of a slice.
  const uint lm = m0 + tid;
  const bool m_in = lm < M;
  const ivec4 mp = split3(m_in ? lm : 0u, rsp);
  // The gathered position of kernel position 0: SMALL o * stride - pad, BIG (stride 1) i + pad;
  // kernel position k moves it by +k * dil (SMALL) or -k * dil (BIG).
  const ivec3 i0 = big ? mp.yzw + pad : mp.yzw * st - pad;
  const ivec3 kdir = big ? -dil : dil;
  const int64_t g_base = int64_t(mp.x) * gst.x + int64_t(grp) * tch * gstc;
  // The weight slice: this invocation reads term (its slice's start) + tid % BK for result
  // channels a0 + tid / BK + 8 l.
  const uint wk = tid % BK, wa = tid / BK;
  const int64_t w_base = big ? int64_t(grp) * cg0 * g.st_w[0] + int64_t(a0) * g.st_w[1]  // W[grp cg0 + a, a0 + col, k]
                            : int64_t(grp * uint(cg0) + a0) * g.st_w[0];              // W[grp cg0 + a0 + col, b, k]
  if (big && tid < 2u) Nonfinite[tid] = 0u;
  if (big) barrier();

  precise T acc[8][8];
  [[unroll]] for (uint i = 0u; i < 8u; ++i)
    [[unroll]] for (uint j = 0u; j < 8u; ++j) acc[i][j] = T(0);

  uint slice = 0u;
  for (uint k0 = 0u; k0 < K; k0 += BK, ++slice) {
    // Gather: terms k0 .. k0 + BK - 1 at position lm, the kernel position stepped like an odometer.
    ivec4 kc = split3(k0, ks);
    uint taps = 0u;  // BIG: bit kk set where term k0 + kk exists at position lm
    [[unroll]] for (uint kk = 0u; kk < BK; ++kk) {  // every load issued before the first is used
      T x = T(0);
      const ivec3 ip = i0 + kc.yzw * kdir;
      const bool tap = m_in && k0 + kk < K && all(lessThan(uvec3(ip), uvec3(gsp)));
      if (tap) {
        x = load_T(ga + uint64_t((g_base + int64_t(kc.x) * gstc + int64_t(ip.x) * gst.y +
                                  int64_t(ip.y) * gst.z + int64_t(ip.z) * gst.w) * eg), dtg);
        taps |= 1u << kk;
      }
      As[kk][tid / 4u][tid % 4u] = x;
      if (big && tid % 32u == 0u) Tap[kk][tid / 32u] = 0u;
      if (++kc.w == ks.z) {
        kc.w = 0;
        if (++kc.z == ks.y) {
          kc.z = 0;
          if (++kc.y == ks.x) { kc.y = 0; ++kc.x; }
        }
      }
    }
    bool nonfinite = false;
    {
      const uint k = k0 + wk;
      const ivec4 kw = split3(k, ks);
      const int64_t off = w_base + int64_t(kw.x) * wst_ch + int64_t(kw.y) * g.st_w[2] +
                          int64_t(kw.z) * g.st_w[3] + int64_t(kw.w) * g.st_w[4];
      [[unroll]] for (uint l = 0u; l < BN * BK / 128u; ++l) {
        const uint a = wa + (128u / BK) * l;
        T w = T(0);
        if (k < K && a0 + a < uint(cols)) w = load_T(pc.w + uint64_t((off + int64_t(a) * wst_col) * ew), dtw);
        Bs[wk][a / 4u][a % 4u] = w;
        nonfinite = nonfinite || is_inf(w) || is_nan(w);
      }
    }
    if (big) {
      if (tid == 0u) Nonfinite[(slice + 1u) & 1u] = 0u;  // the next slice's flag (read two barriers ago)
      if (nonfinite) Nonfinite[slice & 1u] = 1u;
      barrier();  // the Tap words are cleared before any bit is set
      for (uint kk = 0u; kk < BK; ++kk)
        if ((taps & (1u << kk)) != 0u) atomicOr(Tap[kk][tid / 32u], 1u << (tid % 32u));
    }
    barrier();
    const uint kn = min(BK, K - k0);  // a slice past K adds no terms (0 + 0 would turn -0 into +0)
    // uniform: where a weight of the slice is not finite, a term's product is added only where its tap is
    const bool masked = big && Nonfinite[slice & 1u] != 0u;
    [[unroll]] for (uint kk = 0u; kk < BK; ++kk) {
      if (kk >= kn) break;
      V4 x0 = As[kk][ty], x1 = As[kk][16u + ty], w0 = Bs[kk][tx], w1 = Bs[kk][8u + tx];
      T xr[8] = T[8](x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w);
      T wr[8] = T[8](w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w);
      [[unroll]] for (uint i = 0u; i < 8u; ++i) {
        const uint m = i < 4u ? 4u * ty + i : 64u + 4u * ty + i - 4u;
        if (masked && ((Tap[kk][m / 32u] >> (m % 32u)) & 1u) == 0u) continue;
        [[unroll]] for (uint j = 0u; j < 8u; ++j) acc[i][j] += xr[i] * wr[j];
      }
    }
    barrier();
  }

  // The results leave the registers through res, so that store_T (a switch over the dtypes, with
  // a compare-and-swap loop for 1- and 2-byte ones) is in the shader once: unrolled 64 times (or 8),
  // it took lavapipe 20-36 s to compile each pipeline (1-3 s once).
  T res[64];
  [[unroll]] for (uint i = 0u; i < 8u; ++i)
    [[unroll]] for (uint j = 0u; j < 8u; ++j) res[8u * i + j] = acc[i][j];
  for (uint e = 0u; e < 64u; ++e) {
    const uint i = e / 8u, j = e % 8u;
    const uint m = m0 + (i < 4u ? 4u * ty + i : 64u + 4u * ty + i - 4u);
    const uint al = a0 + (j < 4u ? 4u * tx + j : 32u + 4u * tx + j - 4u);
    if (m >= M || al >= uint(cols)) continue;
    const ivec4 p = split3(m, rsp);
    const int a = int(grp) * cols + int(al);
    const int64_t off = int64_t(p.x) * rst.x + int64_t(a) * rstc + int64_t(p.y) * rst.y + int64_t(p.z) * rst.z +
                        int64_t(p.w) * rst.w;
    precise T r = res[e];
    if (pc.bias != 0UL) r += load_T(pc.bias + uint64_t(int64_t(a) * g.st_bias) * uint64_t(dsize(dtbias)), dtbias);
    store_T(ra + uint64_t(off * er), dtr, r);
  }
}
