// Scalar functions named in the ORACLE column of graph/ops.def for elementwise kinds.
// One signature for all: T f(T a, T b, T s) with T in {float, double, int64_t} (the compute type;
// every function must compile for all three), or T f(T a, T b, T s, T old) for the rows that read
// the output's old value (ElementwiseArgs::reads_out: where, addcmul, addcdiv, lerp). Unary ops ignore b and s. s is alpha (add/sub), the
// fill value (fill) or the threshold (threshold_backward). Comparisons return 1 or 0.
// The formulas follow PyTorch's CPU kernels so that exact ops are bit-exact.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace vkml::cpu {

template <class T> constexpr bool is_int_v = std::is_integral_v<T>;

// Integer arithmetic wraps (two's complement), as the output narrowing does afterwards.
template <class T> T wrap_add(T a, T b) {
  if constexpr (is_int_v<T>) return T(uint64_t(a) + uint64_t(b));
  else return a + b;
}
template <class T> T wrap_mul(T a, T b) {
  if constexpr (is_int_v<T>) return T(uint64_t(a) * uint64_t(b));
  else return a * b;
}
template <class T> T wrap_neg(T a) {
  if constexpr (is_int_v<T>) return T(0 - uint64_t(a));
  else return -a;
}
// An intermediate result of a row of several operations, flushed to a zero of its sign where it
// is subnormal during the oracle's run for a flushing device (oracle.h flush_intermediates).
extern thread_local bool g_flush_intermediates;
template <class T> T ftz(T x) {
  if constexpr (is_int_v<T>) return x;
  else return g_flush_intermediates && x != T(0) && std::fabs(x) < std::numeric_limits<T>::min() ? std::copysign(T(0), x) : x;
}
template <class T> bool is_nan(T a) {
  if constexpr (is_int_v<T>) return false;
  else return a != a;
}

template <class T> T ew_fill(T, T, T s) { return s; }
template <class T> T ew_copy(T a, T, T) { return a; }
template <class T> T ew_neg(T a, T, T) { return wrap_neg(a); }
template <class T> T ew_abs(T a, T, T) {
  if constexpr (is_int_v<T>) return a < 0 ? wrap_neg(a) : a;
  else return std::fabs(a);
}
// relu = clamp_min(x, 0): keeps NaN and -0.0 (std::max(a, 0) returns a unless a < 0).
template <class T> T ew_relu(T a, T, T) { return a < T(0) ? T(0) : a; }
// Rounding and float-only ops: on integers the identity (ceil/floor, as torch), or never reached
// (aten promotes integers to float; the int64 instantiation only has to compile).
template <class T, class F> T float_fn(T a, F f) {
  if constexpr (is_int_v<T>) return a;
  else return f(a);
}
template <class T> T ew_ceil(T a, T, T) { return float_fn(a, [](T x) { return std::ceil(x); }); }
template <class T> T ew_floor(T a, T, T) { return float_fn(a, [](T x) { return std::floor(x); }); }
template <class T> T ew_exp(T a, T, T) { return float_fn(a, [](T x) { return std::exp(x); }); }
template <class T> T ew_log(T a, T, T) { return float_fn(a, [](T x) { return std::log(x); }); }
template <class T> T ew_sqrt(T a, T, T) { return float_fn(a, [](T x) { return std::sqrt(x); }); }
// PyTorch's CPU formula, so results agree where exp over/underflows.
template <class T> T ew_sigmoid(T a, T, T) {
  return float_fn(a, [](T x) { return T(1) / (T(1) + std::exp(-x)); });
}
// PyTorch's CPU formula x / (1 + exp(-x)), so results agree where exp overflows (silu(-100) = -0).
template <class T> T ew_silu(T a, T, T) {
  return float_fn(a, [](T x) { return x / (T(1) + std::exp(-x)); });
}
template <class T> T ew_tanh(T a, T, T) { return float_fn(a, [](T x) { return std::tanh(x); }); }
template <class T> T ew_erf(T a, T, T) { return float_fn(a, [](T x) { return std::erf(x); }); }
// grad_output * (1 - y * y) as torch CPU computes it: 1 - y * y fused (rounded once), then the
// product (a = grad_output, b = the forward's output).
template <class T> T ew_tanh_bwd(T a, T b, T) {
  if constexpr (is_int_v<T>) return a;  // never reached: float rows only
  else return a * std::fma(-b, b, T(1));
}
template <class T> T ew_reciprocal(T a, T, T) { return float_fn(a, [](T x) { return T(1) / x; }); }
template <class T> T ew_rsqrt(T a, T, T) { return float_fn(a, [](T x) { return T(1) / std::sqrt(x); }); }
// std::min(std::max(a, lo), hi) as torch's CPU kernel, NaN self kept (b = hi, s = lo)
template <class T> T ew_clamp(T a, T b, T s) {
  if (is_nan(a)) return a;
  T x = a < s ? s : a;
  return b < x ? b : x;
}
// condition ? self : the output's old value (a = self, b = condition)
template <class T> T ew_where(T a, T b, T, T old) { return b != T(0) ? a : old; }
// In place on self = old, in torch CPU's order (aten/native/cpu/PointwiseOpsKernel.cpp,
// LerpKernel.cpp), each operation rounded in T:
// addcmul_: self + (value * t1) * t2   (a = t1, b = t2, s = value)
template <class T> T ew_addcmul(T a, T b, T s, T old) { return wrap_add(old, ftz(wrap_mul(ftz(wrap_mul(s, a)), b))); }
// addcdiv_: self + (value * t1) / t2   (a = t1, b = t2, s = value)
template <class T> T ew_addcdiv(T a, T b, T s, T old) {
  if constexpr (is_int_v<T>) return old;  // never reached: float rows only (aten raises for integers)
  else return old + ftz(ftz(s * a) / b);
}
// lerp_: |w| < 0.5 ? self + w * (end - self) : end - (end - self) * (1 - w)   (a = end, s = w)
template <class T> T ew_lerp(T a, T, T s, T old) {
  if constexpr (is_int_v<T>) return old;  // never reached: float rows only
  else {
    const T d = ftz(a - old);
    return std::abs(s) < T(0.5) ? old + ftz(s * d) : a - ftz(d * ftz(T(1) - s));
  }
}
// mask ? value : self  (a = self, b = the mask as 0/1, s = the value)
template <class T> T ew_masked_fill(T a, T b, T s) { return b != T(0) ? s : a; }
// grad_output * (1 - y) * y, in torch CPU's order (a = grad_output, b = the forward's output).
template <class T> T ew_sigmoid_bwd(T a, T b, T) {
  if constexpr (is_int_v<T>) return a;  // never reached: float rows only
  else return a * (T(1) - b) * b;
}
// (0 < x) - (x < 0), as torch: sign(NaN) = 0, sign(-0) = +0.
template <class T> T ew_sign(T a, T, T) { return T(T(0) < a) - T(a < T(0)); }
// a + alpha * b in the compute type, unfused (torch's scalar path); sub is add with -alpha.
template <class T> T ew_add(T a, T b, T s) { return wrap_add(a, wrap_mul(s, b)); }
template <class T> T ew_sub(T a, T b, T s) { return wrap_add(a, wrap_neg(wrap_mul(s, b))); }
template <class T> T ew_mul(T a, T b, T) { return wrap_mul(a, b); }
template <class T> T ew_div(T a, T b, T) {
  if constexpr (is_int_v<T>) return b == 0 ? 0 : a / b;
  else return a / b;
}
// NaN if either is NaN, else std::max / std::min (returns a on ties, so max(0,-0) = 0).
template <class T> T ew_maximum(T a, T b, T) {
  if (is_nan(a)) return a;
  if (is_nan(b)) return b;
  return a < b ? b : a;
}
template <class T> T ew_minimum(T a, T b, T) {
  if (is_nan(a)) return a;
  if (is_nan(b)) return b;
  return b < a ? b : a;
}
template <class T> T ew_xor_s(T a, T, T s) {
  if constexpr (is_int_v<T>) return a ^ s;
  else return a;  // not reachable: bitwise_not has no float dtypes
}
template <class T> T ew_and(T a, T b, T) {
  if constexpr (is_int_v<T>) return a & b;
  else return T(0);  // not reachable: bitwise_and has no float dtypes
}
template <class T> T ew_or(T a, T b, T) {
  if constexpr (is_int_v<T>) return a | b;
  else return T(0);  // not reachable: bitwise_or has no float dtypes
}
template <class T> T ew_xor(T a, T b, T) {
  if constexpr (is_int_v<T>) return a ^ b;
  else return T(0);  // not reachable: bitwise_xor has no float dtypes
}
template <class T> T ew_eq(T a, T b, T) { return T(a == b); }
template <class T> T ew_ne(T a, T b, T) { return T(a != b); }
template <class T> T ew_lt(T a, T b, T) { return T(a < b); }
template <class T> T ew_le(T a, T b, T) { return T(a <= b); }
template <class T> T ew_gt(T a, T b, T) { return T(a > b); }
template <class T> T ew_ge(T a, T b, T) { return T(a >= b); }
// threshold_backward(grad, self, t): TensorIterator order is (self, grad), so a = self, b = grad.
template <class T> T ew_threshold_bwd(T a, T b, T s) { return a <= s ? T(0) : b; }

}  // namespace vkml::cpu
