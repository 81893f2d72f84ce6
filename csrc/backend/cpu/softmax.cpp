// Softmax family over rows of length D in an [outer, D, inner] view, computed in double (the row
// sums compensated: reduce_sum.h) and rounded once to the output dtype. Each row is read whole before it is written, so outputs may alias inputs.
//   log_softmax      out = x - max - log(sum exp(x - max))
//   softmax          out = exp(x - max) / sum exp(x - max)
//   log_softmax_bwd  gin = gout - exp(out) * sum(gout)
//   softmax_bwd      gin = out * (gout - sum(gout * out))
// A NaN anywhere in a row makes the whole row NaN (max propagates NaN), as in torch.
#include <cmath>

#include "backend/cpu/access.h"
#include "backend/cpu/reduce_sum.h"
#include "backend/cpu/softmax.h"

namespace vkml::cpu {
namespace {

struct Rows {
  const TensorDesc* d;
  double get(int64_t o, int64_t j, int64_t i) const {
    return load<double>(at(*d, o * d->strides[0] + j * d->strides[1] + i * d->strides[2]), d->dtype);
  }
  uint8_t* ptr(int64_t o, int64_t j, int64_t i) const {
    return at(*d, o * d->strides[0] + j * d->strides[1] + i * d->strides[2]);
  }
};

// Forward scale (the brief's bound): max_j |x_j| + log(D) for every element of the row, over the
// finite x_j: a -inf contributes an exact 0 to the sum (and gives -inf or 0 exactly), and an
// infinite scale would leave the comparison only |expected| to go by (dispatch/compare.cpp), a
// bound far below one rounding of log(sum) (found: a row of 140,000 with one -inf).
void forward_row(bool log_sm, const double* x, int64_t D, double* y, double* sc) {
  double m = -INFINITY, amax = 0;
  bool nan = false;
  for (int64_t j = 0; j < D; ++j) {
    nan |= std::isnan(x[j]);
    m = std::fmax(m, x[j]);
    if (std::isfinite(x[j])) amax = std::fmax(amax, std::fabs(x[j]));
  }
  if (nan) m = NAN;
  ExactSum es;
  for (int64_t j = 0; j < D; ++j) es.add(std::exp(x[j] - m));
  const double s = es.value();
  for (int64_t j = 0; j < D; ++j) {
    y[j] = log_sm ? x[j] - m - std::log(s) : std::exp(x[j] - m) / s;
    sc[j] = amax + std::log(double(D));
  }
}

// Backward scales (our judgement; the GPU's error comes from the exp and the row sum):
//   log_softmax_bwd: |gout_j| + exp(out_j) * (1 + |out_j|) * sum_k |gout_k|
//                    (exp carries a relative error growing with |out_j|; the sum an absolute one)
//                    + flush * (|sum_k gout_k| + 1): an exp(out_j) below the smallest normal may
//                    come out 0 (Vulkan's precision holds for normal results only), times the
//                    sum, and so may the product
//   softmax_bwd:     |out_j| * (|gout_j| + sum_k |gout_k * out_k|) + flush * D * |out_j|: the
//                    products gout_k * out_k may be flushed (check mode allows for the sums)
// flush: the scale of an absolute error of one smallest normal (cpu/access.h abs_as_scale).
void backward_row(bool log_sm, const double* g, const double* y, int64_t D, double flush, double* gi, double* sc) {
  ExactSum es;
  double sa = 0;
  for (int64_t j = 0; j < D; ++j) {
    es.add(log_sm ? g[j] : g[j] * y[j]);
    sa += std::fabs(log_sm ? g[j] : g[j] * y[j]);
  }
  const double s = es.value();
  for (int64_t j = 0; j < D; ++j) {
    if (log_sm) {
      gi[j] = g[j] - std::exp(y[j]) * s;
      sc[j] = std::fabs(g[j]) + std::exp(y[j]) * (1 + std::fabs(y[j])) * sa + flush * (std::fabs(s) + 1);
    } else {
      gi[j] = y[j] * (g[j] - s);
      sc[j] = std::fabs(y[j]) * (std::fabs(g[j]) + sa) + flush * double(D) * std::fabs(y[j]);
    }
  }
}

}  // namespace

Result<void> or_softmax(const Node& n, std::vector<double>* scale) {
  if (!std::holds_alternative<SoftmaxArgs>(n.args)) return node_error(Err::invalid, n, "not softmax arguments");
  const bool bwd = n.as<SoftmaxArgs>().backward;
  const bool log_sm = n.op == OpId::log_softmax || n.op == OpId::log_softmax_backward;
  const int nt = bwd ? 3 : 2;
  for (int i = 0; i < nt; ++i) {
    const TensorDesc& d = n.t[i];
    if (!valid_dtype(d.dtype) || !(op_info(n.op).dtypes & bit(d.dtype)))
      return node_error(Err::unsupported, n, "softmax operands must be floating point");
    if (d.ndim != 3) return node_error(Err::invalid, n, "softmax operands must be [outer, D, inner]");
    for (int k = 0; k < 3; ++k)
      if (d.sizes[k] != n.t[0].sizes[k]) return node_error(Err::invalid, n, "softmax operand sizes differ");
  }
  const int64_t O = n.t[0].sizes[0], D = n.t[0].sizes[1], I = n.t[0].sizes[2];
  const bool want = wants_scale(n, scale);
  if (want) scale->assign(size_t(O * D * I), 0.0);
  Rows out{&n.t[0]}, a{&n.t[1]}, b{&n.t[2]};
  const size_t len = size_t(D);
  const double flush = abs_as_scale(n, tiny_of(n));
  std::vector<double> x(len), y(len), r(len), sc(len);
  for (int64_t o = 0; o < O; ++o)
    for (int64_t i = 0; i < I; ++i) {
      for (int64_t j = 0; j < D; ++j) {
        x[j] = a.get(o, j, i);
        if (bwd) y[j] = b.get(o, j, i);
      }
      if (bwd) backward_row(log_sm, x.data(), y.data(), D, flush, r.data(), sc.data());
      else forward_row(log_sm, x.data(), D, r.data(), sc.data());
      for (int64_t j = 0; j < D; ++j) {
        store<double>(out.ptr(o, j, i), n.t[0].dtype, r[j]);
        if (want) (*scale)[size_t((o * D + j) * I + i)] = sc[j];
      }
    }
  return {};
}

}  // namespace vkml::cpu
