// Layer, group and batch norm: forward and backward over [A, C, S] views, computed in long double
// (two-pass statistics) and rounded once to each output's dtype; formulas as torch's CPU kernels
// (which they equal for any given mean and rstd, consistent with x or not):
//   forward   y = (x - mean) * rstd * w + b,  rstd = 1/sqrt(var + eps) (batch norm: 0 if both are 0)
//   running   new = momentum * batch + (1 - momentum) * old, the variance unbiased (n / (n - 1))
//   backward  dx = rstd * w' * (a - mean(a) - xh * mean(a * xh)),  a = dy * w (per sample) or dy,
//             eval batch norm dx = dy * w * rstd;  dw = sum(dy * xh),  db = sum(dy) per channel
#include <cmath>
#include <string>

#include "backend/cpu/access.h"
#include "backend/cpu/norm.h"
#include "backend/cpu/norm_bounds.h"

namespace vkml::cpu {
namespace {
using LD = long double;
using F = NormArgs::Fwd;
using B = NormArgs::Bwd;
namespace nb = norm_bounds;

struct Geo {
  int64_t A = 0, C = 0, S = 0, G = 1, K = 0;
  bool per_channel = false;
  int64_t groups() const { return per_channel ? C : A * G; }
  int64_t size() const { return per_channel ? A * S : K * S; }  // elements per group
  // Element r of group g.
  void locate(int64_t g, int64_t r, int64_t& a, int64_t& c, int64_t& s) const {
    s = r % S;
    if (per_channel) a = r / S, c = g;
    else a = g / G, c = (g % G) * K + r / S;
  }
  int64_t group_of(int64_t a, int64_t c) const { return per_channel ? c : a * G + c / K; }
};

LD get3(const TensorDesc& d, int64_t a, int64_t c, int64_t s) {
  return load<double>(at(d, a * d.strides[0] + c * d.strides[1] + s * d.strides[2]), d.dtype);
}
void put3(const TensorDesc& d, int64_t a, int64_t c, int64_t s, LD v) {
  store<double>(at(d, a * d.strides[0] + c * d.strides[1] + s * d.strides[2]), d.dtype, double(v));
}
LD get1(const TensorDesc& d, int64_t i, LD dflt) {
  return d.addr ? LD(load<double>(at(d, i * d.strides[0]), d.dtype)) : dflt;
}
void put1(const TensorDesc& d, int64_t i, LD v) {
  if (d.addr) store<double>(at(d, i * d.strides[0]), d.dtype, double(v));
}

// Per-output scale vectors (one per output slot, row-major), concatenated at the end.
struct Scales {
  std::vector<double> v[5];
  const Node& n;
  bool want;
  Scales(const Node& n, bool want) : n(n), want(want) {
    for (int o = 0; o < n.nout; ++o)
      if (want && n.t[o].addr) v[o].assign(size_t(n.t[o].numel()), 0.0);
  }
  void set3(int o, const Geo& g, int64_t a, int64_t c, int64_t s, double x) {
    if (want && n.t[o].addr) v[o][size_t((a * g.C + c) * g.S + s)] = x;
  }
  void set1(int o, int64_t i, double x) {
    if (want && n.t[o].addr) v[o][size_t(i)] = x;
  }
  void into(std::vector<double>* scale) {
    if (!want) return;
    scale->clear();
    for (int o = 0; o < n.nout; ++o) scale->insert(scale->end(), v[o].begin(), v[o].end());
  }
};

LD rsqrt_l(LD v) { return 1 / std::sqrt(v); }  // 0 -> inf, negative -> NaN

void forward(const Node& n, const Geo& g, double e, Scales& sc) {
  // where a result of the compute type rounds to infinity (the largest finite value plus half
  // its ulp): the GPU's sums and squares overflow there (see below)
  const LD top = e < 1e-10 ? std::ldexp(LD(1), 1024) - std::ldexp(LD(1), 970) : std::ldexp(LD(1), 128) - std::ldexp(LD(1), 103);
  const NormArgs& a = n.as<NormArgs>();
  const int64_t R = g.size();
  std::vector<LD> xs(static_cast<size_t>(R));
  for (int64_t grp = 0; grp < g.groups(); ++grp) {
    int64_t ai, ci, si;
    LD mu, rstd;
    nb::Group st{LD(R), 0, 0, 0};
    double mean_err = 0, rstd_err;
    if (g.per_channel && !a.training) {
      mu = get1(n.t[F::run_mean], grp, 0);
      rstd = rsqrt_l(get1(n.t[F::run_var], grp, 0) + LD(a.eps));
      rstd_err = 3 * e * double(rstd);
    } else {
      LD sum = 0, asum = 0;
      for (int64_t r = 0; r < R; ++r) {
        g.locate(grp, r, ai, ci, si);
        xs[size_t(r)] = get3(n.t[F::x], ai, ci, si);
        sum += xs[size_t(r)];
        asum += std::fabs(xs[size_t(r)]);
      }
      mu = sum / LD(R);
      // The GPU's first sum overflows where the total passes the compute type's range.
      if (std::fabs(sum) >= top) mu = sum > 0 ? LD(INFINITY) : LD(-INFINITY);
      // torch's layer / group norm (Welford) make the mean of a group holding an infinity NaN
      // (inf - inf); its batch norm keeps the plain sum's inf
      if (!g.per_channel && (!std::isfinite(double(asum)) || !std::isfinite(double(mu)))) mu = LD(NAN);
      // Squares past the compute type's range (one (x - mean)^2, or their sum) make the variance
      // infinite and rstd 0, as torch CPU's batch norm and the GPU have it (docs/normalization.md).
      LD ss = 0;
      bool over = false;
      for (LD x : xs) {
        const LD d2 = (x - mu) * (x - mu);
        over = over || d2 >= top;
        ss += d2;
      }
      if ((over || ss >= top) && !std::isnan(ss)) ss = LD(INFINITY);
      const LD var = ss / LD(R);
      st = nb::Group{LD(R), mu, var, asum / LD(R)};
      rstd = g.per_channel && var == 0 && a.eps == 0 ? LD(0) : rsqrt_l(var + LD(a.eps));
      // with the variance overflowed the GPU's mean is its first pass's, uncorrected
      mean_err = std::isinf(var) ? nb::delta(st, e) : nb::e_mean(st, e);
      const double var_err = nb::e_var(st, e);
      rstd_err = std::isinf(var) ? 0.0 : nb::e_rstd(double(rstd), var_err, double(var + LD(a.eps)), e);
      put1(n.t[F::mean], grp, mu);
      put1(n.t[F::rstd], grp, rstd);
      sc.set1(F::mean, grp, mean_err / e);
      sc.set1(F::rstd, grp, rstd_err / e);
      if (g.per_channel) {
        const LD m = LD(a.momentum), old_m = get1(n.t[F::run_mean], grp, 0), old_v = get1(n.t[F::run_var], grp, 0);
        const LD unbiased = R > 1 ? ss / LD(R - 1) : LD(NAN);
        const LD nm = m * mu + (1 - m) * old_m, nv = m * unbiased + (1 - m) * old_v;
        const double am = std::fabs(double(m)), a1 = std::fabs(double(1 - m));
        put1(n.t[F::new_mean], grp, nm);
        put1(n.t[F::new_var], grp, nv);
        sc.set1(F::new_mean, grp, (am * mean_err + 3 * e * (am * std::fabs(double(mu)) + (am + a1) * std::fabs(double(old_m)) +
                                                           std::fabs(double(nm)))) / e);
        const double ratio = R > 1 ? double(R) / double(R - 1) : 1.0;
        sc.set1(F::new_var, grp, (am * var_err * ratio + 4 * e * (am * std::fabs(double(unbiased)) +
                                                                  (am + a1) * std::fabs(double(old_v)) +
                                                                  std::fabs(double(nv)))) / e);
      }
    }
    for (int64_t r = 0; r < R; ++r) {
      g.locate(grp, r, ai, ci, si);
      const LD x = get3(n.t[F::x], ai, ci, si), w = get1(n.t[F::w], ci, 1), b = get1(n.t[F::b], ci, 0);
      const LD xh = (x - mu) * rstd;
      // group norm: torch's folded form x * (rstd * w) + (b - mean * rstd * w), as the shader
      const bool folded = !g.per_channel && !a.layer;
      const LD y = folded ? x * (rstd * w) + (-(rstd * w) * mu + b) : xh * w + b;
      put3(n.t[F::y], ai, ci, si, y);
      double ey = rstd == 0 ? e * std::fabs(double(b))
                            : nb::e_y(double(w), double(b), double(xh), double(rstd), mean_err, rstd_err, e);
      if (folded) ey += nb::e_fold(double(x), double(mu), double(w), double(b), double(rstd), double(y), e);
      sc.set3(F::y, g, ai, ci, si, ey / e);
    }
  }
}

// v rounded to the compute type (eps e: float32, else float64). torch's non-finite formulas are
// taken in its order with each operation rounded: long double's range would keep a product that
// underflows to 0 there (dy * x = 1e-78 times an infinite w: NaN in float32, -inf in long double).
LD rc(LD v, double e) { return e > 1e-10 ? LD(float(v)) : LD(double(v)); }

// The statistics the backward uses for group grp: (mean, rstd, relative error of the GPU's rstd).
void bwd_stats(const Node& n, int64_t grp, double e, LD& mu, LD& rstd, double& rel) {
  const NormArgs& a = n.as<NormArgs>();
  mu = get1(n.t[B::bmean], grp, 0);
  const LD s = get1(n.t[B::bstat], grp, 0);
  rstd = a.var_given ? rsqrt_l(s + LD(a.eps)) : s;
  rel = a.var_given ? 3 * e : 0;
}

void backward(const Node& n, const Geo& g, double e, Scales& sc) {
  const NormArgs& a = n.as<NormArgs>();
  const bool train = !g.per_channel || a.training;
  const int64_t R = g.size();
  const double L = std::log2(double(R > 1 ? R : 1));
  std::vector<LD> av(static_cast<size_t>(R)), xh(static_cast<size_t>(R));
  for (int64_t grp = 0; grp < g.groups(); ++grp) {
    LD mu, rstd;
    double rel;
    bwd_stats(n, grp, e, mu, rstd, rel);
    int64_t ai, ci, si;
    LD sa = 0, sb = 0, ma = 0, mb = 0;
    for (int64_t r = 0; r < R; ++r) {
      g.locate(grp, r, ai, ci, si);
      const LD dy = get3(n.t[B::dy], ai, ci, si);
      av[size_t(r)] = g.per_channel ? dy : dy * get1(n.t[B::bw], ci, 1);
      xh[size_t(r)] = (get3(n.t[B::bx], ai, ci, si) - mu) * rstd;
      sa += av[size_t(r)];
      sb += av[size_t(r)] * xh[size_t(r)];
      ma += std::fabs(av[size_t(r)]);
      mb += std::fabs(av[size_t(r)] * xh[size_t(r)]);
    }
    // batch norm given a non-finite invstd, or in training with sums non-finite in the compute
    // type (an infinity in dy): torch CPU's order, as the shader, dotp = sum(dy * (x - mean)), then
    // dw = dotp * invstd and dx = (dy - mean(dy) - (x - mean) * dotp * invstd^2 / N) * invstd * w
    const bool torch_bn = g.per_channel && (!std::isfinite(rstd) ||
                                            (train && !(std::isfinite(rc(sa, e)) && std::isfinite(rc(sb, e)))));
    if (torch_bn) {
      LD dotp = 0;
      for (int64_t r = 0; r < R; ++r) {
        g.locate(grp, r, ai, ci, si);
        dotp += av[size_t(r)] * (get3(n.t[B::bx], ai, ci, si) - mu);
      }
      sb = dotp * rstd;
      if (train && n.t[B::dx].addr) {
        const LD k = dotp * rstd * rstd / LD(R), w = get1(n.t[B::bw], grp, 1);
        for (int64_t r = 0; r < R; ++r) {
          g.locate(grp, r, ai, ci, si);
          const LD dx = (av[size_t(r)] - sa / LD(R) - (get3(n.t[B::bx], ai, ci, si) - mu) * k) * rstd * w;
          put3(n.t[B::dx], ai, ci, si, dx);
          sc.set3(B::dx, g, ai, ci, si, 6 * std::fabs(double(dx)));
        }
      }
    }
    if (g.per_channel) {  // a = dy here: the weight and bias gradients of channel grp
      put1(n.t[B::dw], grp, sb);
      put1(n.t[B::db], grp, sa);
      sc.set1(B::dw, grp, (L + 8) * double(mb));
      sc.set1(B::db, grp, (L + 3) * double(ma));
    }
    if (torch_bn && train) continue;
    ma /= LD(R);
    mb /= LD(R);
    const LD wp = g.per_channel ? get1(n.t[B::bw], grp, 1) : LD(1);
    // layer / group norm with an Inf or NaN among the sums or statistics: torch CPU's formula,
    // dx = rstd * a + b * x + c (NaN where b * x and c are opposite infinities), as the shader
    if (!g.per_channel && n.t[B::dx].addr &&
        !(std::isfinite(sa) && std::isfinite(sb) && std::isfinite(mu) && std::isfinite(rstd))) {
      LD ds = 0, db = sa;
      if (!a.layer) {  // group norm: torch's per-channel sums first, (sum_s dy * x) * w_c, as the shader
        std::vector<LD> dsc(size_t(g.K), 0), dbc(size_t(g.K), 0);
        const int64_t c0 = grp % g.G * g.K;
        for (int64_t r = 0; r < R; ++r) {
          g.locate(grp, r, ai, ci, si);
          const LD dy = get3(n.t[B::dy], ai, ci, si);
          dsc[size_t(ci - c0)] += rc(dy * get3(n.t[B::bx], ai, ci, si), e);
          dbc[size_t(ci - c0)] += dy;
        }
        db = 0;
        for (int64_t j = 0; j < g.K; ++j) {
          const LD wc = get1(n.t[B::bw], c0 + j, 1);
          ds += rc(rc(dsc[size_t(j)], e) * wc, e);
          db += rc(rc(dbc[size_t(j)], e) * wc, e);
        }
      } else {
        for (int64_t r = 0; r < R; ++r) {
          g.locate(grp, r, ai, ci, si);  // torch's order: (dy * x) * w
          ds += rc(rc(get3(n.t[B::dy], ai, ci, si) * get3(n.t[B::bx], ai, ci, si), e) * get1(n.t[B::bw], ci, 1), e);
        }
      }
      ds = rc(ds, e), db = rc(db, e);
      // torch's b = (db * mean - ds) * a * a * a * scale and c = -b * mean - db * a * scale, left to right
      const LD scale = rc(1 / LD(R), e);
      LD tb = rc(rc(rc(db * mu, e) - ds, e) * rstd, e);
      tb = rc(rc(rc(tb * rstd, e) * rstd, e) * scale, e);
      const LD tc = rc(rc(-tb * mu, e) - rc(rc(db * rstd, e) * scale, e), e);
      for (int64_t r = 0; r < R; ++r) {
        g.locate(grp, r, ai, ci, si);
        const LD dx = rc(rc(rstd * rc(av[size_t(r)], e), e) + rc(tb * get3(n.t[B::bx], ai, ci, si), e), e) + tc;
        put3(n.t[B::dx], ai, ci, si, dx);
        sc.set3(B::dx, g, ai, ci, si, 6 * std::fabs(double(dx)));
      }
      continue;
    }
    for (int64_t r = 0; r < R && n.t[B::dx].addr; ++r) {
      g.locate(grp, r, ai, ci, si);
      const size_t i = size_t(r);
      if (train) {
        put3(n.t[B::dx], ai, ci, si, rstd * wp * (av[i] - sa / LD(R) - xh[i] * (sb / LD(R))));
        sc.set3(B::dx, g, ai, ci, si,
                nb::e_dx(double(rstd), double(wp), double(av[i]), double(xh[i]), double(ma), double(mb), L, e) / e);
      } else {
        const LD dx = av[i] * wp * rstd;
        put3(n.t[B::dx], ai, ci, si, dx);
        // the shader's (dy * w) * rstd: a subnormal dy * w is rounded to the denormal spacing,
        // which rstd then scales (fuzz: w = -1.8e-40 and rstd = 316 gave a 1.5e-7 relative error)
        const double sub = std::fabs(double(av[i] * wp)) < nb::smallest_normal(e) ? nb::spacing(e) * std::fabs(double(rstd)) / e : 0;
        sc.set3(B::dx, g, ai, ci, si, 6 * std::fabs(double(dx)) + sub);
      }
    }
  }
  if (g.per_channel || (!n.t[B::dw].addr && !n.t[B::db].addr)) return;
  const int64_t Rc = g.A * g.S;  // per-sample mode: dw, db per channel over (a, s)
  const double Lc = std::log2(double(Rc > 1 ? Rc : 1));
  for (int64_t c = 0; c < g.C; ++c) {
    LD sdy = 0, sdx = 0, ady = 0, adx = 0;
    double sub = 0;  // denormal spacings the shader's dy * ((x - mean) * rstd) may lose, scaled
    const double tiny = nb::smallest_normal(e), spacing = nb::spacing(e);
    for (int64_t ai = 0; ai < g.A; ++ai)
      for (int64_t si = 0; si < g.S; ++si) {
        LD mu, rstd;
        double rel;
        bwd_stats(n, g.group_of(ai, c), e, mu, rstd, rel);
        const LD dy = get3(n.t[B::dy], ai, c, si), x = get3(n.t[B::bx], ai, c, si);
        const bool torch_form = a.layer && !(std::isfinite(mu) && std::isfinite(rstd));  // as the shader
        const LD t = dy * (torch_form ? rstd * x + (-rstd * mu) : (x - mu) * rstd);
        sdy += dy, sdx += t, ady += std::fabs(dy), adx += std::fabs(t);
        // below the normal range a rounding is absolute, up to one spacing, and the later factors
        // scale it (float64 dw of -5.2e-308: a norm-only fuzz run, 2026-12-02)
        const double xm = std::fabs(double(x - mu)), xh = xm * std::fabs(double(rstd)), ad = std::fabs(double(dy));
        sub += spacing * ((xm < tiny ? std::fabs(double(rstd)) * ad : 0) + (xh < tiny ? ad : 0) + (xh * ad < tiny ? 1 : 0));
      }
    if (!a.layer && !std::isfinite(sdx)) {  // group norm: torch CPU's per-sample form, as the shader
      sdx = 0;
      for (int64_t ai = 0; ai < g.A; ++ai) {
        LD mu, rstd;
        double rel;
        bwd_stats(n, g.group_of(ai, c), e, mu, rstd, rel);
        LD ds = 0, db = 0;
        for (int64_t si = 0; si < g.S; ++si) {
          const LD dy = get3(n.t[B::dy], ai, c, si);
          ds += dy * get3(n.t[B::bx], ai, c, si);
          db += dy;
        }
        sdx += (ds - db * mu) * rstd;
      }
    }
    put1(n.t[B::dw], c, sdx);
    put1(n.t[B::db], c, sdy);
    sc.set1(B::dw, c, (Lc + 8) * double(adx) + sub / e);
    sc.set1(B::db, c, (Lc + 3) * double(ady));
  }
}

}  // namespace

Result<void> or_norm(const Node& n, std::vector<double>* scale) {
  if (!std::holds_alternative<NormArgs>(n.args)) return node_error(Err::invalid, n, "not norm arguments");
  const NormArgs& a = n.as<NormArgs>();
  if (n.nout != (a.backward ? 3 : 5) || n.nin != 5) return node_error(Err::invalid, n, "unexpected operand counts");
  const TensorDesc& x = n.t[a.backward ? int(B::bx) : int(F::x)];
  if (x.ndim != 3) return node_error(Err::invalid, n, "the input must be [A, C, S]");
  Geo g;
  g.A = x.sizes[0], g.C = x.sizes[1], g.S = x.sizes[2], g.G = a.groups, g.per_channel = a.per_channel;
  if (g.G < 1 || g.C % g.G) return node_error(Err::invalid, n, "bad group count");
  g.K = g.C / g.G;
  for (int k = 0; k < n.nout + n.nin; ++k) {
    const TensorDesc& t = n.t[k];
    if (!t.addr) continue;
    if (!valid_dtype(t.dtype) || !is_float(t.dtype)) return node_error(Err::unsupported, n, "operands must be floating point");
    const bool three = a.backward ? (k == B::dx || k == B::dy || k == B::bx) : (k == F::y || k == F::x);
    const bool per_group = a.backward ? (k == B::bmean || k == B::bstat) : (k == F::mean || k == F::rstd);
    const int64_t len = per_group ? g.groups() : g.C;
    if (three ? (t.ndim != 3 || t.sizes[0] != g.A || t.sizes[1] != g.C || t.sizes[2] != g.S)
              : (t.ndim != 1 || t.sizes[0] != len))
      return node_error(Err::invalid, n, "operand " + std::to_string(k) + " has the wrong shape");
  }
  if (!(op_info(n.op).dtypes & bit(n.compute))) return node_error(Err::unsupported, n, "compute dtype not supported");
  const double e = compute_of(n.compute) == Compute::f64 ? std::ldexp(1.0, -52) : std::ldexp(1.0, -23);
  Scales sc(n, wants_scale(n, scale));
  if (g.A * g.C * g.S > 0) {
    if (a.backward) backward(n, g, e, sc);
    else forward(n, g, e, sc);
  }
  sc.into(scale);
  return {};
}

}  // namespace vkml::cpu
