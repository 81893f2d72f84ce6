// The conv family -> shaders/conv_tile.comp (to_small, and to_big, in float32/float64 compute with
// at least 16 result channels per group and 16 terms: a tiled implicit GEMM; a strided to_big as
// one stride-1 dispatch per phase, phases() below), shaders/conv.comp (the rest of to_small and
// to_big: an invocation per result element) and shaders/conv_wgrad.comp (to_weight, to_bias: a
// workgroup per result element; a weight gradient with aten's scratch first runs
// shaders/conv_wtile.comp, the same sums tiled). The geometry (shaders/conv.h ConvGeom, 224 bytes)
// goes through the submission's parameter buffer.
// VKML_CONV_PIPE=tiled|direct forces the kernel where both can run it (tests compare the two bit
// for bit).
#include <numeric>
#include <string>

#include "backend/vulkan/lower.h"
#include "conv.h"
#include "op_codes.h"
#include "util/env.h"

namespace vkml::vk {
namespace {

// Copies a role's sizes/strides into the geometry: [n or c0, c or c1, d0, d1, d2], spatial dims
// right-aligned (a 1-d or 2-d convolution gets leading dims of size 1).
constexpr uint64_t kTileM = 128, kTileN = 64;  // shaders/conv_tile.comp's BM, BN
constexpr uint64_t kWTile = 64;                 // shaders/conv_wtile.comp's BA, BC
static_assert(CONV_TREE_MIN == kConvTreeMin, "graph/families/conv.h and shaders/conv.h agree");

constexpr int kMaxPhases = kMaxDispatchesPerNode;  // a strided to_big's phases, one dispatch each

int phase_count(const pc::ConvGeom& g) { return g.stride[0] * g.stride[1] * g.stride[2]; }

// Whether shaders/conv_tile.comp runs this node (to_small; to_big with at most kMaxPhases phases),
// and how many workgroups the whole result takes.
bool tiled(const pc::ConvGeom& g, bool big, Compute c, uint64_t& tiles) {
  if (c != Compute::f32 && c != Compute::f64) return false;
  if (big && phase_count(g) > kMaxPhases) return false;
  const int32_t* sp = big ? g.pb : g.ps;
  const uint64_t m = uint64_t(g.n) * uint64_t(sp[0]) * uint64_t(sp[1]) * uint64_t(sp[2]);
  const uint64_t cg0 = uint64_t(g.c0 / g.groups), c1 = uint64_t(g.c1);
  const uint64_t cols = big ? c1 : cg0;
  const uint64_t k = (big ? cg0 : c1) * uint64_t(g.k[0]) * uint64_t(g.k[1]) * uint64_t(g.k[2]);
  tiles = (m + kTileM - 1) / kTileM * ((cols + kTileN - 1) / kTileN) * uint64_t(g.groups);
  if (m >= (1ull << 31) || k >= (1ull << 31) || tiles >= (1ull << 31)) return false;  // its indices are 32-bit
  const std::string& force = env().conv_pipe;
  if (force == "tiled") return true;
  if (force == "direct") return false;
  // A tile at least a quarter used both ways (32 of 128 positions, 16 of 64 channels: every
  // workgroup does a whole tile's work), and at least one whole slice of terms.
  return m >= 32 && cols >= 16 && k >= 16;
}

// A strided to_big split into stride-1 passes. B position i receives the term (o, k) where
// o * s = i + pad - k * dil; so the positions of one phase p = i mod s (per dim) take their terms
// from the same taps, k = k0 + t * s / gcd(s, dil), those with k * dil = p + pad (mod s), and
// o = j + (p + pad - k0 * dil) / s - t * dil / gcd for i = p + j * s: a stride-1 pass whose
// result is B's positions p, p + s, ... and whose weight is W's taps k0, k0 + s / gcd, ..., with
// padding (p + pad - k0 * dil) / s (maybe negative) and dilation dil / gcd. The taps keep
// conv.comp's order, so the sums are its sums. A phase with no tap gets a pass with no terms (its
// results are +0, as conv.comp's). out: the phases with at least one position, each with the
// byte offsets of its B and W views; false where a stride does not fit 32 bits.
struct Phase {
  pc::ConvGeom g;
  int64_t b_off, w_off;  // elements
};
bool phases(const pc::ConvGeom& g, Phase* out, int& count) {
  count = 0;
  for (int q = 0; q < phase_count(g); ++q) {
    Phase ph{g, 0, 0};
    int rest = q;
    bool any = true;
    for (int d = 2; d >= 0; --d) {
      const int32_t s = g.stride[d], dil = g.dil[d], pad = g.pad[d], ks = g.k[d], pb = g.pb[d];
      const int32_t p = rest % s;
      rest /= s;
      if (p >= pb) any = false;  // no B position in this phase
      const int32_t gc = std::gcd(s, dil), step = s / gc;
      int32_t k0 = 0;
      while (k0 < ks && k0 < step && int64_t(k0) * dil % s != (p + pad) % s) ++k0;
      const bool taps = k0 < ks && k0 < step;
      const int64_t st_b = int64_t(g.st_b[2 + d]) * s, st_w = int64_t(g.st_w[2 + d]) * step;
      if (!fits_i32(st_b) || !fits_i32(st_w)) return false;
      ph.g.stride[d] = 1;
      ph.g.dil[d] = dil / gc;
      ph.g.pad[d] = taps ? int32_t((int64_t(p) + pad - int64_t(k0) * dil) / s) : 0;
      ph.g.k[d] = taps ? (ks - k0 + step - 1) / step : 0;
      ph.g.pb[d] = p < pb ? (pb - p + s - 1) / s : 0;
      ph.g.st_b[2 + d] = int32_t(st_b);
      ph.g.st_w[2 + d] = int32_t(st_w);
      ph.b_off += int64_t(p) * g.st_b[2 + d];
      if (taps) ph.w_off += int64_t(k0) * g.st_w[2 + d];
    }
    if (any) out[count++] = ph;
  }
  return true;
}

bool role(const TensorDesc& d, int dims, int32_t sp[4], int32_t st[8], std::string& why) {
  for (int i = 0; i < 8; ++i) st[i] = 0;
  for (int i = 0; i < 3; ++i) sp[i] = 1;
  sp[3] = 0;
  for (int i = 0; i < dims + 2; ++i) {
    if (!fits_i32(d.sizes[i]) || !fits_i32(d.strides[i])) return why = "a size or stride exceeds 2^31", false;
    const int at = i < 2 ? i : i + 3 - dims;
    st[at] = int32_t(d.strides[i]);
    if (i >= 2) sp[at - 2] = int32_t(d.sizes[i]);
  }
  return true;
}

}  // namespace

int lower_conv(const Node& n, const Limits& lim, Dispatch* out, std::string& why) {
  using A = ConvArgs;
  const A& args = n.as<A>();
  const bool reduce = args.pass == A::to_weight || args.pass == A::to_bias;
  const int dims = args.dims;
  if (dims < 1 || dims > 3) return why = "1 to 3 spatial dims", -1;
  const TensorDesc& res = n.t[A::out];
  if (res.numel() == 0) return 0;

  pc::ConvGeom g{};
  pc::ConvPc p{};
  // The three roles; the result stands in for its own (absent) slot. to_bias: the gradient in S.
  const TensorDesc* s = &n.t[A::small];
  const TensorDesc* b = &n.t[A::big];
  const TensorDesc* w = &n.t[A::weight];
  if (args.pass == A::to_small) s = &res;
  if (args.pass == A::to_big) b = &res;
  if (args.pass == A::to_weight) w = &res;
  if (args.pass == A::to_bias) {
    s = n.t[A::small].ndim ? &n.t[A::small] : &n.t[A::big];
    if (s->ndim != dims + 2 || res.ndim != 1 || res.sizes[0] != s->sizes[1])
      return why = "bias gradient shapes do not match", -1;
    if (!role(*s, dims, g.ps, g.st_s, why)) return -1;
    g.n = int32_t(s->sizes[0]);
    g.c0 = int32_t(s->sizes[1]);
    g.c1 = g.groups = 1;
    for (int i = 0; i < 3; ++i) g.k[i] = g.pb[i] = g.stride[i] = g.dil[i] = 1;
    if (!fits_i32(res.strides[0])) return why = "a stride exceeds 2^31", -1;
    g.st_bias = int32_t(res.strides[0]);
    g.dtypes = uint32_t(s->dtype) | uint32_t(res.dtype) << 24;
    p.s = s->addr;
    p.bias = res.addr;
  } else {
    if (s->ndim != dims + 2 || b->ndim != dims + 2 || w->ndim != dims + 2)
      return why = "operands must have 2 + dims dims", -1;
    const int64_t groups = args.groups, c0 = w->sizes[0], c1 = w->sizes[1];
    if (groups < 1 || c0 % groups != 0 || s->sizes[1] != c0 || b->sizes[1] != c1 * groups ||
        s->sizes[0] != b->sizes[0])
      return why = "operand shapes do not match the convolution", -1;
    if (!role(*s, dims, g.ps, g.st_s, why) || !role(*b, dims, g.pb, g.st_b, why) || !role(*w, dims, g.k, g.st_w, why))
      return -1;
    g.n = int32_t(s->sizes[0]);
    g.c0 = int32_t(c0);
    g.c1 = int32_t(c1);
    g.groups = int32_t(groups);
    for (int i = 0; i < 3; ++i) {
      const int src = i - (3 - dims);
      const bool real = src >= 0;
      const int64_t v[3] = {real ? args.stride[src] : 1, real ? args.padding[src] : 0, real ? args.dilation[src] : 1};
      if (v[0] < 1 || v[1] < 0 || v[2] < 1 || !fits_i32(v[0]) || !fits_i32(v[1]) || !fits_i32(v[2]))
        return why = "stride, padding or dilation out of range", -1;
      g.stride[i] = int32_t(v[0]);
      g.pad[i] = int32_t(v[1]);
      g.dil[i] = int32_t(v[2]);
    }
    const TensorDesc& bias = n.t[A::bias];
    const bool has_bias = bias.addr != 0 && args.pass != A::to_weight;
    if (has_bias) {
      if (bias.ndim != 1 || bias.sizes[0] != res.sizes[1] || !fits_i32(bias.strides[0]))
        return why = "bias must be [channels of the result]", -1;
      g.st_bias = int32_t(bias.strides[0]);
    }
    g.dtypes = uint32_t(s->dtype) | uint32_t(b->dtype) << 8 | uint32_t(w->dtype) << 16 |
               (has_bias ? uint32_t(bias.dtype) << 24 : 0u);
    p.s = s->addr;
    p.b = b->addr;
    p.w = w->addr;
    p.bias = has_bias ? bias.addr : 0;
  }

  const uint64_t count = uint64_t(res.numel());
  p.count = count;
  const Compute c = compute_of(n.compute);
  uint64_t tiles = 0;
  const bool big = args.pass == A::to_big;
  Phase ph[kMaxPhases];
  int nph = 1;
  if ((args.pass == A::to_small || big) && tiled(g, big, c, tiles) && (!big || phases(g, ph, nph))) {
    if (!big) ph[0] = Phase{g, 0, 0};
    const int64_t eb = int64_t(dtype_size(b->dtype)), ew = int64_t(dtype_size(w->dtype));
    for (int i = 0; i < nph; ++i) {
      const pc::ConvGeom& pg = ph[i].g;
      const uint64_t m = uint64_t(pg.n) * uint64_t(pg.pb[0]) * uint64_t(pg.pb[1]) * uint64_t(pg.pb[2]);
      if (big) tiles = (m + kTileM - 1) / kTileM * ((uint64_t(pg.c1) + kTileN - 1) / kTileN) * uint64_t(pg.groups);
      if (!set_shader(out[i], "conv_tile", c, lim, why)) return -1;
      if (!grid2(tiles, lim, out[i])) return why = "too many groups", -1;
      out[i].opcode = big ? OP_CONV_BIG : OP_CONV_SMALL;
      out[i].concurrent = i > 0;  // the phases write disjoint positions of B and only read S and W
      pc::ConvPc pp = p;
      pp.b += uint64_t(ph[i].b_off * eb);
      pp.w += uint64_t(ph[i].w_off * ew);
      put(out[i], pp);
      put_params(out[i], pg, offsetof(pc::ConvPc, params));
    }
    return nph;
  }
  bool per_group = false;  // a workgroup per result element, sharing its sum (shaders/conv_wgrad.comp)
  int nd = 0;
  if (reduce) {  // the summed terms per result element must count in 32 bits
    const uint64_t terms = uint64_t(g.n) * uint64_t(g.ps[0]) * uint64_t(g.ps[1]) * uint64_t(g.ps[2]);
    if (terms > UINT32_MAX - kGroup) return why = "more than 2^32 terms per gradient element", -1;
    per_group = terms >= CONV_TREE_MIN;
    if (!per_group) g.flags |= CONV_SEQUENTIAL;
    // The weight gradient's 128 lanes' sums as tiles (shaders/conv_wtile.comp) into the scratch
    // aten gave (conv_wgrad_partial_bytes), then conv_wgrad.comp's tree over them: its bytes.
    if (args.pass == A::to_weight && args.partials && per_group && g.groups == 1 &&
        (c == Compute::f32 || c == Compute::f64)) {
      const uint64_t cols = uint64_t(g.c1) * uint64_t(g.k[0]) * uint64_t(g.k[1]) * uint64_t(g.k[2]);
      const uint64_t tiles = 128 * ((uint64_t(g.c0) + kWTile - 1) / kWTile) * ((cols + kWTile - 1) / kWTile);
      if (!set_shader(out[0], "conv_wtile", c, lim, why)) return -1;
      if (!grid2(tiles, lim, out[0])) return why = "too many groups", -1;
      out[0].opcode = OP_CONV_WEIGHT;
      p.partials = args.partials;
      put(out[0], p);
      put_params(out[0], g, offsetof(pc::ConvPc, params));
      g.flags |= CONV_FROM_PARTIALS;  // then an invocation per element adds the lanes' sums
      per_group = false;
      nd = 1;
    }
  }
  if (!set_shader(out[nd], reduce ? "conv_wgrad" : "conv", c, lim, why)) return -1;
  const uint64_t groups = per_group ? count : (count + kGroup - 1) / kGroup;
  if (!grid2(groups, lim, out[nd])) return why = "too many groups", -1;
  out[nd].opcode = args.pass == A::to_small ? OP_CONV_SMALL
                   : args.pass == A::to_big ? OP_CONV_BIG
                   : args.pass == A::to_weight ? OP_CONV_WEIGHT
                                               : OP_CONV_BIAS;
  put(out[nd], p);
  put_params(out[nd], g, offsetof(pc::ConvPc, params));
  return nd + 1;
}

}  // namespace vkml::vk
