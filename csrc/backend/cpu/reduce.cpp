// Reductions (sum, mean, amax, amin, argmax, argmin). Input `in` lists the kept dims (ReduceArgs) first,
// then the reduced dims, so element (k, r) is row-major index k * n_red + r of t[1]. Output t[0]
// holds the kept elements in row-major order. Float sums are compensated sums in double (exact as
// far as the result can tell: reduce_sum.h), integers and bool accumulate in int64 (wrapping),
// and the result is rounded once to the output dtype.
//
// Each term is the input element as torch CPU converts it before summing, where the op computes
// in a narrower dtype than its input (sum(x, dtype=), an out= of another dtype): sum rounds it to
// the compute dtype (float64 -> float16 through float, as c10::Half does: 70000 becomes inf),
// mean to float32 for a float16 or bfloat16 compute dtype (torch's mean sums those in float32
// and rounds the quotient) and to the compute dtype otherwise.
#include <cmath>

#include "backend/cpu/access.h"
#include "backend/cpu/reduce.h"
#include "backend/cpu/reduce_sum.h"

namespace vkml::cpu {
namespace {

template <class T> bool nan_of(T v) {
  if constexpr (std::is_same_v<T, double>) return std::isnan(v);
  else return false;
}

// The dtype a float sum's terms are rounded to first (see the top), or f64 for none.
DType term_dtype(OpId op, DType compute, DType in) {
  if (!is_float(compute) || compute == DType::f64) return DType::f64;
  if (op == OpId::mean && (compute == DType::f16 || compute == DType::bf16)) return DType::f32;
  return compute == in ? DType::f64 : compute;
}

// Element p of dtype `in` as a term of dtype `term` (f64: as it is).
double term_of(const uint8_t* p, DType in, DType term) {
  if (term == DType::f64) return load<double>(p, in);
  const float f = load<float>(p, in);  // integers convert to float directly, float64 rounds once
  if (term == DType::f32) return f;
  uint8_t b[2];
  store<float>(b, term, f);
  return load<double>(b, term);
}

// sum / mean / amax / amin of one kept element; T = double or int64_t.
template <class T>
T reduce_one(OpId op, DType term, bool in_f32, const TensorDesc& in, int64_t base, int64_t n_red, double* abs_sum) {
  T acc = T(0);
  ExactSum sum;
  double asum = 0;
  float f32 = 0;  // the same terms summed in float32 in order: does a partial sum overflow there?
  const bool is_sum = op == OpId::sum || op == OpId::mean;
  for (int64_t r = 0; r < n_red; ++r) {
    const uint8_t* p = at(in, offset_of(in, base + r));
    T v;
    if constexpr (std::is_same_v<T, double>) v = is_sum ? term_of(p, in.dtype, term) : load<T>(p, in.dtype);
    else v = load<T>(p, in.dtype);
    asum += std::fabs(double(v));
    if (is_sum) {
      if constexpr (std::is_same_v<T, int64_t>) acc = T(uint64_t(acc) + uint64_t(v));
      else sum.add(v), f32 += float(v);
    } else if (r == 0) {
      acc = v;
    } else if (!nan_of(acc) && (nan_of(v) || (op == OpId::amax ? v > acc : v < acc))) {
      acc = v;  // NaN propagates: once acc is NaN it stays
    }
  }
  if constexpr (std::is_same_v<T, double>)
    if (is_sum) {
      acc = sum.value();
      // A float32 computation of terms whose magnitudes pass float32's range may overflow in a
      // partial sum (3e38 + 3e38 - 3e38), as torch CPU's and the GPU's do: the exact sum is then
      // not what any float32 order gives, so the reference is the in-order float32 one.
      if (in_f32 && std::isinf(f32) && !std::isinf(acc)) acc = double(f32);
    }
  if (op == OpId::mean) {
    if constexpr (std::is_same_v<T, double>) acc = acc / double(n_red);  // n == 0: 0/0 = NaN
    asum /= double(n_red);
  }
  *abs_sum = asum;
  return acc;
}

// First NaN if any, else the first extreme element.
template <class T>
int64_t arg_one(bool is_max, const TensorDesc& in, int64_t base, int64_t n_red) {
  int64_t best = 0;
  T bv = T(0);
  for (int64_t r = 0; r < n_red; ++r) {
    T v = load<T>(at(in, offset_of(in, base + r)), in.dtype);
    if (nan_of(v)) return r;
    if (r == 0 || (is_max ? v > bv : v < bv)) { best = r; bv = v; }
  }
  return best;
}

template <class T>
void run(const Node& n, int64_t n_kept, int64_t n_red, std::vector<double>* scale) {
  const TensorDesc &out = n.t[0], &in = n.t[1];
  const bool arg = n.op == OpId::argmax || n.op == OpId::argmin;
  if (scale) scale->assign(size_t(n_kept), 0.0);
  for (int64_t k = 0; k < n_kept; ++k) {
    uint8_t* o = at(out, offset_of(out, k));
    if (arg) {
      store<int64_t>(o, out.dtype, arg_one<T>(n.op == OpId::argmax, in, k * n_red, n_red));
      continue;
    }
    double asum = 0;
    const bool in_f32 = is_float(n.compute) && n.compute != DType::f64;  // f32, f16, bf16 compute in float32
    store<T>(o, out.dtype, reduce_one<T>(n.op, term_dtype(n.op, n.compute, in.dtype), in_f32, in, k * n_red, n_red, &asum));
    if (scale) (*scale)[size_t(k)] = asum;
  }
}

}  // namespace

Result<void> or_reduce(const Node& n, std::vector<double>* scale) {
  const TensorDesc &out = n.t[0], &in = n.t[1];
  const bool arg = n.op == OpId::argmax || n.op == OpId::argmin;
  if (!valid_dtype(out.dtype) || !valid_dtype(in.dtype))
    return node_error(Err::unsupported, n, "bad dtype code");
  const DType ct = arg ? in.dtype : out.dtype;  // the dtype the op computes in
  if (!(op_info(n.op).dtypes & bit(ct)))
    return node_error(Err::unsupported, n, std::string("dtype ") + dtype_name(ct) + " not supported");
  if (arg && out.dtype != DType::i64) return node_error(Err::unsupported, n, "indices must be int64");
  if (!std::holds_alternative<ReduceArgs>(n.args)) return node_error(Err::invalid, n, "not reduce arguments");
  const int kept = n.as<ReduceArgs>().kept;
  if (kept < 0 || kept > in.ndim) return node_error(Err::invalid, n, "kept dims out of range");
  int64_t n_kept = 1, n_red = 1;
  for (int i = 0; i < in.ndim; ++i) (i < kept ? n_kept : n_red) *= in.sizes[i];
  if (out.numel() != n_kept)
    return node_error(Err::invalid, n, "output numel " + std::to_string(out.numel()) +
                                           " != kept numel " + std::to_string(n_kept));
  const bool is_sum = n.op == OpId::sum || n.op == OpId::mean;
  if (!is_sum && n_red == 0 && n_kept > 0)
    return node_error(Err::invalid, n, "reduction over an empty dimension has no identity");
  std::vector<double>* sc = wants_scale(n, scale) ? scale : nullptr;
  if (compute_of(ct) == Compute::i64) run<int64_t>(n, n_kept, n_red, sc);
  else run<double>(n, n_kept, n_red, sc);
  return {};
}

}  // namespace vkml::cpu
