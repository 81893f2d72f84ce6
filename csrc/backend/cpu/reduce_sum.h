// A compensated (Neumaier) sum in double, for the oracles' float sums (reduce, softmax).
//
// Check mode's bound for a sum assumes the oracle is exact: |got - ref| <= 2 eps (log2 n + 1)
// sum |x| for the GPU's fixed tree. A plain sequential sum in double is off by up to
// (n - 1) * 2^-53 * sum |x|, which for float64 inputs exceeds that bound from a few dozen terms
// on (a float64 mean of 2070 terms was reported wrong although right). Neumaier's sum is off by
// at most 2^-53 |sum| + O(n 2^-106) sum |x|: exact as far as a float64 result can tell, for any n.
// long double would not do: x86's 64-bit significand leaves (n - 1) * 2^-64, past the bound from
// a few thousand terms on, and on other targets it is plain double. Non-finite terms: the
// compensation is meaningless once the sum is inf or NaN, so the plain sum is returned then
// (inf + -inf = NaN as in any order).
#pragma once
#include <cmath>

namespace vkml::cpu {

struct ExactSum {
  double s = 0, c = 0;  // running sum and its rounding errors
  void add(double x) {
    const double t = s + x;
    c += std::fabs(s) >= std::fabs(x) ? (s - t) + x : (x - t) + s;
    s = t;
  }
  double value() const { return std::isfinite(s) ? s + c : s; }
};

}  // namespace vkml::cpu
