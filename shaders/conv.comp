// variants: f32 f64 i64
// Direct convolution, one invocation per result element (roles as in shaders/conv.h):
//   OP_CONV_SMALL  S[n,a,o] = bias[a] + sum over b in a's group, k of B[n, b, o*stride - pad + k*dil] * W[a, b%C1, k]
//                  (every k: B is 0 in the padding)
//   OP_CONV_BIG    B[n,b,i] = bias[b] + sum over a in b's group, k with i = o*stride - pad + k*dil of S[n,a,o] * W[a, b%C1, k]
// Each sum runs in a fixed order (channels, then kernel positions), so results are deterministic.
// acc is `precise`: no product is fused into an fma, so a float32 product past float32's range is
// an infinity on every driver, as in torch CPU and the oracle (-1e30 * 4.5e15 then meets +inf: NaN;
// NVIDIA's contracted fma gave +inf).
// The i64 variant (integer dtypes, forward only) wraps, exact modulo the result's width.
#version 460
#include "common.glsl"
#include "conv.h"

layout(local_size_x = 128) in;

// Strides of a role: (n, c) and the spatial three.
struct Str { ivec2 nc; ivec3 sp; };
int64_t at5(Str st, int n, int c, ivec3 p) {
  return int64_t(n) * st.nc.x + int64_t(c) * st.nc.y + int64_t(p.x) * st.sp.x + int64_t(p.y) * st.sp.y + int64_t(p.z) * st.sp.z;
}

// e as an index over [n, c, p0, p1, p2] (innermost last); 32-bit division when the count allows
// (64-bit division is several times slower on some devices).
void split(uint64_t e, int c, ivec3 sp, out int n, out int ch, out ivec3 p) {
  if (pc.count <= 0xffffffffUL) {
    uint u = uint(e);
    p.z = int(u % uint(sp.z)); u /= uint(sp.z);
    p.y = int(u % uint(sp.y)); u /= uint(sp.y);
    p.x = int(u % uint(sp.x)); u /= uint(sp.x);
    ch = int(u % uint(c));
    n = int(u / uint(c));
    return;
  }
  p.z = int(e % uint64_t(sp.z)); e /= uint64_t(sp.z);
  p.y = int(e % uint64_t(sp.y)); e /= uint64_t(sp.y);
  p.x = int(e % uint64_t(sp.x)); e /= uint64_t(sp.x);
  ch = int(e % uint64_t(c));
  n = int(e / uint64_t(c));
}

void main() {
  uint64_t e = global_index();
  if (e >= pc.count) return;
  ConvGeom g = ConvGeom(pc.params);
  const int c0 = g.c0, c1 = g.c1, groups = g.groups;
  const ivec3 ps = ivec3(g.ps[0], g.ps[1], g.ps[2]), pb = ivec3(g.pb[0], g.pb[1], g.pb[2]);
  const ivec3 ks = ivec3(g.k[0], g.k[1], g.k[2]);
  const ivec3 st = ivec3(g.stride[0], g.stride[1], g.stride[2]);
  const ivec3 pad = ivec3(g.pad[0], g.pad[1], g.pad[2]), dil = ivec3(g.dil[0], g.dil[1], g.dil[2]);
  const Str sts = Str(ivec2(g.st_s[0], g.st_s[1]), ivec3(g.st_s[2], g.st_s[3], g.st_s[4]));
  const Str stb = Str(ivec2(g.st_b[0], g.st_b[1]), ivec3(g.st_b[2], g.st_b[3], g.st_b[4]));
  const Str stw = Str(ivec2(g.st_w[0], g.st_w[1]), ivec3(g.st_w[2], g.st_w[3], g.st_w[4]));
  const uint dts = g.dtypes & 0xffu, dtb = (g.dtypes >> 8) & 0xffu, dtw = (g.dtypes >> 16) & 0xffu;
  const uint dtbias = g.dtypes >> 24;
  const uint64_t es = uint64_t(dsize(dts)), eb = uint64_t(dsize(dtb)), ew = uint64_t(dsize(dtw));
  const int cg0 = c0 / groups;
  precise T acc = T(0);

  if (OP == OP_CONV_SMALL) {
    ivec3 o;  // e over [N, C0, Ps]
    int n, a;
    split(e, c0, ps, n, a, o);
    const int grp = a / cg0;
    const ivec3 i0 = o * st - pad;  // B position of k = 0
    // A tap in the padding reads a zero and still multiplies it (0 * inf = NaN), as torch CPU's
    // im2col does (docs/convolution.md, "Padding").
    for (int bl = 0; bl < c1; ++bl) {
      const int b = grp * c1 + bl;
      for (int k0 = 0; k0 < ks.x; ++k0) {
        const int ix = i0.x + k0 * dil.x;
        const bool inx = uint(ix) < uint(pb.x);
        for (int k1 = 0; k1 < ks.y; ++k1) {
          const int iy = i0.y + k1 * dil.y;
          const bool iny = inx && uint(iy) < uint(pb.y);
          for (int k2 = 0; k2 < ks.z; ++k2) {
            const int iz = i0.z + k2 * dil.z;
            T x = T(0);
            if (iny && uint(iz) < uint(pb.z)) x = load_T(pc.b + uint64_t(at5(stb, n, b, ivec3(ix, iy, iz))) * eb, dtb);
            T w = load_T(pc.w + uint64_t(at5(stw, a, bl, ivec3(k0, k1, k2))) * ew, dtw);
            acc += x * w;
          }
        }
      }
    }
    if (pc.bias != 0UL) acc += load_T(pc.bias + uint64_t(int64_t(a) * g.st_bias) * uint64_t(dsize(dtbias)), dtbias);
    store_T(pc.s + uint64_t(at5(sts, n, a, o)) * es, dts, acc);
  } else {  // OP_CONV_BIG
    ivec3 i;  // e over [N, C1 * groups, Pb]
    int n, b;
    split(e, c1 * groups, pb, n, b, i);
    const int grp = b / c1, bl = b % c1;
    const ivec3 t0 = i + pad;  // o * stride = t0 - k * dil
    for (int aa = 0; aa < cg0; ++aa) {
      const int a = grp * cg0 + aa;
      for (int k0 = 0; k0 < ks.x; ++k0) {
        const int tx = t0.x - k0 * dil.x;
        if (tx < 0 || tx % st.x != 0 || tx / st.x >= ps.x) continue;
        for (int k1 = 0; k1 < ks.y; ++k1) {
          const int ty = t0.y - k1 * dil.y;
          if (ty < 0 || ty % st.y != 0 || ty / st.y >= ps.y) continue;
          for (int k2 = 0; k2 < ks.z; ++k2) {
            const int tz = t0.z - k2 * dil.z;
            if (tz < 0 || tz % st.z != 0 || tz / st.z >= ps.z) continue;
            T x = load_T(pc.s + uint64_t(at5(sts, n, a, ivec3(tx, ty, tz) / st)) * es, dts);
            T w = load_T(pc.w + uint64_t(at5(stw, a, bl, ivec3(k0, k1, k2))) * ew, dtw);
            acc += x * w;
          }
        }
      }
    }
    if (pc.bias != 0UL) acc += load_T(pc.bias + uint64_t(int64_t(b) * g.st_bias) * uint64_t(dsize(dtbias)), dtbias);
    store_T(pc.b + uint64_t(at5(stb, n, b, i)) * eb, dtb, acc);
  }
}
