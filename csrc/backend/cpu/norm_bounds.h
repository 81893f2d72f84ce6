// First-order bounds of shaders/norm.comp's rounding errors, in absolute terms, for the oracle's
// scales (test/norm_bounds.py mirrors them for the tests). `e` is the compute type's machine eps
// (2^-23, 2^-52); every correctly rounded operation is counted as one e (twice its true bound),
// OpFDiv as 2.5 e and inversesqrt as 2 e (Vulkan's 2.5 and 2 ulp). L = log2(n) for the n terms of
// a sum: an invocation's pairwise sum plus the 128-wide tree has depth <= L + 2.
// docs/normalization.md derives each line.
#pragma once
#include <cmath>
#include <limits>

namespace vkml::cpu::norm_bounds {

// The compute type's (eps 2^-23: float32, else float64) smallest normal, and its denormal spacing:
// a product that lands below the first is rounded to a multiple of the second.
inline double smallest_normal(double e) {
  return e > 1e-10 ? double(std::numeric_limits<float>::min()) : std::numeric_limits<double>::min();
}
inline double spacing(double e) {
  return e > 1e-10 ? double(std::numeric_limits<float>::denorm_min()) : std::numeric_limits<double>::denorm_min();
}

// Statistics of one group of n elements: mean mu, biased variance var, mean |x| mabs.
struct Group {
  long double n, mu, var, mabs;
  double L() const { return std::log2(double(n > 1 ? n : 1)); }
};

// The first pass's mean m0 = sum(x) / n: depth L + 2 sum, then 2.5 e for the division.
inline double delta(const Group& g, double e) { return (g.L() + 5) * e * double(g.mabs); }

// mean = m0 + sum(x - m0) / n (the correction, whose own error is first order in e * sd).
inline double e_mean(const Group& g, double e) {
  const double sd = std::sqrt(double(g.var)), d = delta(g, e);
  return e * (std::fabs(double(g.mu)) + (g.L() + 6) * (sd + d));
}

// var = (sum d^2 - (sum d)^2 / n) / n with d = x - m0: relative (L + 9) e, plus what is left of
// m0's error: (L + 9) e delta^2 and the cross term 2 (L + 3) e delta (sd + delta).
inline double e_var(const Group& g, double e) {
  const double sd = std::sqrt(double(g.var)), d = delta(g, e);
  return e * ((g.L() + 9) * (double(g.var) + d * d) + 2 * (g.L() + 3) * d * (sd + d));
}

// rstd = inversesqrt(var + eps): half var's relative error, + e (the add) + e (eps rounded to the
// compute type) + 2 e (inversesqrt), rounded up to 3 e.
inline double e_rstd(double rstd, double var_err, double v, double e) {
  return rstd * (var_err / (2 * v) + 3 * e);
}

// y = ((x - mean) * rstd) * w + b, with xh = (x - mu) * rstd exact.
inline double e_y(double w, double b, double xh, double rstd, double mean_err, double rstd_err, double e) {
  const double aw = std::fabs(w);
  return aw * rstd * mean_err + aw * std::fabs(xh) * (rstd_err / rstd + 3 * e) + e * (aw * std::fabs(xh) + std::fabs(b));
}

// The folded form's own rounding, on top of e_y: scale = rstd * w, bias = b - mean * scale,
// y = x * scale + bias (each product and sum rounded once, scale's error reaching x and mean).
inline double e_fold(double x, double mu, double w, double b, double rstd, double y, double e) {
  return e * ((2 * std::fabs(x) + 3 * std::fabs(mu)) * std::fabs(rstd * w) + std::fabs(b) + std::fabs(y));
}

// dx = rstd * w' * (a - mean(a) - xh * mean(a * xh)) over a group of n: ma = mean |a|,
// mb = mean |a * xh|; a = dy * w (per sample) or dy (per channel, then w' = w).
inline double e_dx(double rstd, double wp, double a, double xh, double ma, double mb, double L, double e) {
  // |rstd|: an rstd given to the backward may be negative (any tensor is a valid input)
  // the small factors meet the large ones first: rstd * w * e alone underflows for a tiny w
  return e * (std::fabs(rstd) * (std::fabs(wp) * ((L + 17) * (ma + std::fabs(xh) * mb) + 5 * std::fabs(a))));
}

}  // namespace vkml::cpu::norm_bounds
