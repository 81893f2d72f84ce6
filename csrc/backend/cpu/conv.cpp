// conv: every pass of the family as one enumeration of its relation (graph/families/conv.h). For
// each (n, a, o, bl, k), the product of the two given tensors' elements is added to the computed
// tensor's element (the bias gradient sums its operand per channel). The big-side position
// o * stride - padding + k * dilation may lie in the padding: B is zero there when it is read
// (to_small, to_weight: the zero is still multiplied, so 0 * inf is NaN, as in torch CPU's
// im2col), and no term when B is the result (to_big). This scatters where the shaders gather, so an
// index mistake on either side shows. Floats accumulate in double, rounded once to the result's
// dtype; the scale of the backward-error bound is the sum of the terms' magnitudes (bias
// included). Integers accumulate in wrapping 64-bit arithmetic, which is exact modulo the
// result's width, as torch's CPU kernels wrap.
#include <cmath>
#include <type_traits>

#include "backend/cpu/access.h"
#include "backend/cpu/conv.h"

namespace vkml::cpu {
namespace {

// A role's tensor as [n or c0, c or c1, d0, d1, d2]: spatial dims right-aligned, leading ones of
// size 1.
struct View {
  const TensorDesc* d = nullptr;
  int64_t n[5] = {1, 1, 1, 1, 1}, s[5] = {0, 0, 0, 0, 0};
  bool from(const TensorDesc& t, int dims) {
    if (t.ndim != dims + 2) return false;
    d = &t;
    for (int i = 0; i < t.ndim; ++i) {
      const int at = i < 2 ? i : i + 3 - dims;
      n[at] = t.sizes[i];
      s[at] = t.strides[i];
    }
    return true;
  }
  int64_t lin(int64_t i0, int64_t i1, const int64_t p[3]) const {  // row-major index
    return (((i0 * n[1] + i1) * n[2] + p[0]) * n[3] + p[1]) * n[4] + p[2];
  }
  template <class V>
  V get(int64_t i0, int64_t i1, const int64_t p[3]) const {
    return value<V>(*d, i0 * s[0] + i1 * s[1] + p[0] * s[2] + p[1] * s[3] + p[2] * s[4]);
  }
  template <class V>
  static V value(const TensorDesc& t, int64_t off) {  // V: double, or uint64_t for integers (wraps)
    if constexpr (std::is_same_v<V, double>) return load<double>(at(t, off), t.dtype);
    else return uint64_t(load<int64_t>(at(t, off), t.dtype));
  }
};

template <class V>
Result<void> run(const Node& n, std::vector<double>* scale) {
  using A = ConvArgs;
  constexpr bool kFloat = std::is_same_v<V, double>;
  const A& args = n.as<A>();
  const int dims = args.dims;
  const bool f32 = compute_of(n.compute) == Compute::f32;
  constexpr double kF32Inf = 0x1.ffffffp127;  // float32 rounds this and above to infinity
  const TensorDesc& res = n.t[A::out];
  const size_t count = size_t(res.numel());
  std::vector<V> acc(count, V(0));
  std::vector<double> mag(kFloat ? count : 0, 0.0);

  if (args.pass == A::to_bias) {
    View g;
    if (!g.from(n.t[A::small].ndim ? n.t[A::small] : n.t[A::big], dims) || res.ndim != 1 || res.sizes[0] != g.n[1])
      return node_error(Err::invalid, n, "bias gradient: [N, C, *space] -> [C]");
    int64_t p[3];
    for (int64_t b = 0; b < g.n[0]; ++b)
      for (int64_t c = 0; c < g.n[1]; ++c)
        for (p[0] = 0; p[0] < g.n[2]; ++p[0])
          for (p[1] = 0; p[1] < g.n[3]; ++p[1])
            for (p[2] = 0; p[2] < g.n[4]; ++p[2]) {
              const V v = g.get<V>(b, c, p);
              acc[size_t(c)] += v;
              if constexpr (kFloat) mag[size_t(c)] += std::fabs(v);
            }
  } else {
    View S, B, W;
    const bool ok = S.from(args.pass == A::to_small ? res : n.t[A::small], dims) &&
                    B.from(args.pass == A::to_big ? res : n.t[A::big], dims) &&
                    W.from(args.pass == A::to_weight ? res : n.t[A::weight], dims);
    const int64_t groups = args.groups, C0 = W.n[0], C1 = W.n[1];
    if (!ok || groups < 1 || C0 % groups || S.n[1] != C0 || B.n[1] != C1 * groups || S.n[0] != B.n[0])
      return node_error(Err::invalid, n, "conv shapes do not match S [N, C0, ..], B [N, C1 * groups, ..], W [C0, C1, ..]");
    int64_t st[3], pad[3], dil[3];
    for (int i = 0; i < 3; ++i) {
      const int src = i - (3 - dims);
      st[i] = src >= 0 ? args.stride[src] : 1;
      pad[i] = src >= 0 ? args.padding[src] : 0;
      dil[i] = src >= 0 ? args.dilation[src] : 1;
    }
    int64_t o[3], k[3], q[3];
    for (int64_t b = 0; b < S.n[0]; ++b)
      for (int64_t a = 0; a < C0; ++a)
        for (o[0] = 0; o[0] < S.n[2]; ++o[0])
          for (o[1] = 0; o[1] < S.n[3]; ++o[1])
            for (o[2] = 0; o[2] < S.n[4]; ++o[2])
              for (int64_t bl = 0; bl < C1; ++bl) {
                const int64_t c = a / (C0 / groups) * C1 + bl;
                for (k[0] = 0; k[0] < W.n[2]; ++k[0])
                  for (k[1] = 0; k[1] < W.n[3]; ++k[1])
                    for (k[2] = 0; k[2] < W.n[4]; ++k[2]) {
                      bool inside = true;
                      for (int i = 0; i < 3; ++i) {
                        q[i] = o[i] * st[i] - pad[i] + k[i] * dil[i];
                        inside = inside && q[i] >= 0 && q[i] < B.n[2 + i];
                      }
                      // B is written by to_big: a position outside it is no term. Read, it is
                      // zero in the padding, and the zero is multiplied (0 * inf = NaN)
                      if (!inside && args.pass == A::to_big) continue;
                      const V x = args.pass == A::to_big || !inside ? V(0) : B.get<V>(b, c, q);
                      V v;
                      int64_t e;
                      if (args.pass == A::to_small) v = x * W.get<V>(a, bl, k), e = S.lin(b, a, o);
                      else if (args.pass == A::to_big) v = S.get<V>(b, a, o) * W.get<V>(a, bl, k), e = B.lin(b, c, q);
                      else v = S.get<V>(b, a, o) * x, e = W.lin(a, bl, k);
                      // a float32 product past float32's range is an infinity on the GPU (its sums
                      // are `precise`: no fma), and so here (1e30 * 4.5e15 then meets +inf: NaN, as
                      // on the GPU and in torch CPU)
                      if constexpr (kFloat)
                        if (f32 && std::fabs(v) >= kF32Inf) v = std::copysign(double(INFINITY), v);
                      acc[size_t(e)] += v;
                      if constexpr (kFloat) mag[size_t(e)] += std::fabs(v);
                    }
              }
    const TensorDesc& bias = n.t[A::bias];
    if (bias.addr && args.pass != A::to_weight) {
      View R;
      R.from(res, dims);
      if (bias.ndim != 1 || bias.sizes[0] != R.n[1]) return node_error(Err::invalid, n, "bias must be [C]");
      for (size_t e = 0; e < count; ++e) {
        const int64_t c = int64_t(e) / (R.n[2] * R.n[3] * R.n[4]) % R.n[1];
        const V v = View::value<V>(bias, c * bias.strides[0]);
        acc[e] += v;
        if constexpr (kFloat) mag[e] += std::fabs(v);
      }
    }
  }
  for (size_t e = 0; e < count; ++e) {
    uint8_t* p = at(res, offset_of(res, int64_t(e)));
    if constexpr (kFloat) store<double>(p, res.dtype, acc[e]);
    else store<int64_t>(p, res.dtype, int64_t(acc[e]));
  }
  if (kFloat && wants_scale(n, scale)) *scale = std::move(mag);
  return {};
}

}  // namespace

Result<void> or_conv(const Node& n, std::vector<double>* scale) {
  if (!std::holds_alternative<ConvArgs>(n.args)) return node_error(Err::invalid, n, "not conv arguments");
  for (int i = 0; i < n.nout + n.nin; ++i)
    if (n.t[i].ndim && (!valid_dtype(n.t[i].dtype) || !(op_info(n.op).dtypes & bit(n.t[i].dtype))))
      return node_error(Err::unsupported, n, "an operand's dtype is not one of the row's");
  if (n.as<ConvArgs>().dims < 1 || n.as<ConvArgs>().dims > 3)
    return node_error(Err::invalid, n, "conv has 1 to 3 spatial dims");
  return compute_of(n.compute) == Compute::i64 ? run<uint64_t>(n, scale) : run<double>(n, scale);
}

}  // namespace vkml::cpu
