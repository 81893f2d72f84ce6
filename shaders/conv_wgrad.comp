// variants: f32 f64
// Convolution gradients that sum over batch and space, one workgroup per result element (roles as
// in shaders/conv.h):
//   OP_CONV_WEIGHT  W[a,bl,k] = sum over n, o of S[n,a,o] * B[n, grp(a)*C1 + bl, o*stride - pad + k*dil]
//                   (every o: B is 0 in the padding)
//   OP_CONV_BIAS    bias[c]   = sum over n, o of S[n,c,o]
// Invocation t takes terms t, t + 128, t + 256, ... in order; the 128 partial sums are then added
// by a fixed tree in shared memory. With few terms per element (CONV_SEQUENTIAL) one invocation
// sums an element's terms in order instead. No atomics: the same inputs give the same bits.
// CONV_FROM_PARTIALS: the 128 partial sums of a weight gradient were computed by
// conv_wtile.comp (tiled, the same sums); an invocation per element adds them as the tree does.
#version 460
#include "common.glsl"
#include "conv.h"
#include "conv_wgrad.glsl"

layout(local_size_x = 128) in;

shared T red[128];

// CONV_FROM_PARTIALS: result element r's 128 lane sums (conv_wtile.comp) added as the workgroup
// tree below adds them (red[t] += red[t + w], w = 64 .. 1), by one invocation: a left-first walk
// of that tree meets lane t at step bitreverse7(t), so a binary counter of partial sums, fed the
// lanes in that order, performs the same additions on the same operands, left operand first.
T tree_of_partials(uint64_t r) {
  precise T lvl[8];
  for (uint i = 0u; i < 128u; ++i) {
    const uint lane = bitfieldReverse(i) >> 25;
    precise T x = load_T(pc.partials + (uint64_t(lane) * pc.count + r) * PSIZE, DT_PARTIAL);
    uint l = 0u;
    for (; ((i >> l) & 1u) != 0u; ++l) x = lvl[l] + x;
    lvl[l] = x;
  }
  return lvl[7];
}

void main() {
  ConvGeom g = ConvGeom(pc.params);
  const bool from_partials = (g.flags & CONV_FROM_PARTIALS) != 0u;
  const bool seq = from_partials || (g.flags & CONV_SEQUENTIAL) != 0u;
  const uint64_t r = seq ? global_index() : group_index();
  if (r >= pc.count) return;  // a workgroup's tree sum: uniform over the workgroup
  const uint t = seq ? 0u : gl_LocalInvocationID.x, step = seq ? 1u : 128u;
  const int c0 = g.c0, c1 = g.c1, groups = g.groups, nb = g.n;
  const ivec3 ps = ivec3(g.ps[0], g.ps[1], g.ps[2]), pb = ivec3(g.pb[0], g.pb[1], g.pb[2]);
  const ivec3 ks = ivec3(g.k[0], g.k[1], g.k[2]);
  const ivec3 st = ivec3(g.stride[0], g.stride[1], g.stride[2]);
  const ivec3 pad = ivec3(g.pad[0], g.pad[1], g.pad[2]), dil = ivec3(g.dil[0], g.dil[1], g.dil[2]);
  int sts[8], stb[8], stw[8];
  for (int i = 0; i < 5; ++i) sts[i] = g.st_s[i], stb[i] = g.st_b[i], stw[i] = g.st_w[i];
  const uint dts = g.dtypes & 0xffu, dtb = (g.dtypes >> 8) & 0xffu, dtw = (g.dtypes >> 16) & 0xffu;
  const uint dtbias = g.dtypes >> 24;
  const uint64_t es = uint64_t(dsize(dts)), eb = uint64_t(dsize(dtb)), ew = uint64_t(dsize(dtw));
  // terms: (n, o) over [N, Ps], o innermost; the lowering keeps the count below 2^32 - 128
  uint terms = uint(nb) * uint(ps.x) * uint(ps.y) * uint(ps.z);
  const uint per_n = uint(ps.x) * uint(ps.y) * uint(ps.z);
  precise T acc = T(0);  // no fma contraction: products round, as in shaders/conv.comp

  // the result element: W[a, bl, k] (r over [C0, C1, K]) or bias[c] (c = r)
  ivec3 k = ivec3(0);
  int a = int(r), bl = 0;
  if (OP == OP_CONV_WEIGHT) {
    uint64_t q = r;
    k.z = int(q % uint64_t(ks.z)); q /= uint64_t(ks.z);
    k.y = int(q % uint64_t(ks.y)); q /= uint64_t(ks.y);
    k.x = int(q % uint64_t(ks.x)); q /= uint64_t(ks.x);
    bl = int(q % uint64_t(c1));
    a = int(q / uint64_t(c1));
  }
  const int b = (a / (c0 / groups)) * c1 + bl;
  const ivec3 koff = k * dil - pad;  // B position = o * stride + koff
  if (from_partials) acc = tree_of_partials(r);
  else for (uint j = t; j < terms; j += step) {
    ivec3 o;
    const int n = term_at(j, per_n, ps, o);
    T x = T(1);
    if (OP == OP_CONV_WEIGHT) {  // a position in the padding is a zero that still multiplies (inf * 0 = NaN)
      const ivec3 i = o * st + koff;
      x = T(0);
      if (uint(i.x) < uint(pb.x) && uint(i.y) < uint(pb.y) && uint(i.z) < uint(pb.z))
        x = load_T(pc.b + uint64_t(at5(stb, n, b, i)) * eb, dtb);
    }
    T y = load_T(pc.s + uint64_t(at5(sts, n, a, o)) * es, dts);
    acc += OP == OP_CONV_WEIGHT ? y * x : y;
  }

  if (!seq) {
    red[t] = acc;
    barrier();
    for (uint w = 64u; w > 0u; w >>= 1) {
      if (t < w) red[t] += red[t + w];
      barrier();
    }
    if (t != 0u) return;
    acc = red[0];
  }
  if (OP == OP_CONV_WEIGHT) store_T(pc.w + uint64_t(at5(stw, a, bl, k)) * ew, dtw, acc);
  else store_T(pc.bias + uint64_t(int64_t(a) * g.st_bias) * uint64_t(dsize(dtbias)), dtbias, acc);
}
