// gemm: C[b,m,n] = beta * bias[b,m,n] + alpha * sum_k A[b,m,k] * B[b,k,n], accumulated in double and
// rounded once to C's dtype. No bias (addr 0) or beta == 0 means no bias term at all, so NaN/Inf in
// an ignored bias does not propagate (torch: "if beta is 0, input is ignored"). 2-d operands are
// taken as batch 1. The result is buffered before it is stored, so C may alias the bias (addmm_).
#include <cmath>

#include "backend/cpu/access.h"
#include "backend/cpu/gemm.h"

namespace vkml::cpu {
namespace {

struct Mat {
  const TensorDesc* d;
  int64_t n[3], s[3];  // sizes and element strides: batch, rows, cols
  double get(int64_t b, int64_t r, int64_t c) const {
    return load<double>(at(*d, b * s[0] + r * s[1] + c * s[2]), d->dtype);
  }
};

bool view3(const TensorDesc& d, Mat* m) {
  m->d = &d;
  if (d.ndim == 3) {
    for (int i = 0; i < 3; ++i) m->n[i] = d.sizes[i], m->s[i] = d.strides[i];
    return true;
  }
  if (d.ndim != 2) return false;
  m->n[0] = 1, m->s[0] = 0;
  for (int i = 0; i < 2; ++i) m->n[i + 1] = d.sizes[i], m->s[i + 1] = d.strides[i];
  return true;
}

}  // namespace

Result<void> or_gemm(const Node& n, std::vector<double>* scale) {
  const bool has_bias = n.t[3].addr != 0;
  for (int i = 0; i < (has_bias ? 4 : 3); ++i)
    if (!valid_dtype(n.t[i].dtype) || !(op_info(n.op).dtypes & bit(n.t[i].dtype)))
      return node_error(Err::unsupported, n, "gemm operands must be floating point");
  Mat c, a, b, bias{};
  if (!view3(n.t[0], &c) || !view3(n.t[1], &a) || !view3(n.t[2], &b) || (has_bias && !view3(n.t[3], &bias)))
    return node_error(Err::invalid, n, "gemm operands must be 2-d or 3-d");
  const int64_t B = c.n[0], M = c.n[1], N = c.n[2], K = a.n[2];
  if (a.n[0] != B || b.n[0] != B || a.n[1] != M || b.n[1] != K || b.n[2] != N ||
      (has_bias && (bias.n[0] != B || bias.n[1] != M || bias.n[2] != N)))
    return node_error(Err::invalid, n, "gemm shapes do not match C[B,M,N] = A[B,M,K] @ B[B,K,N]");
  if (!std::holds_alternative<GemmArgs>(n.args)) return node_error(Err::invalid, n, "not gemm arguments");
  const double alpha = n.as<GemmArgs>().alpha.f, beta = n.as<GemmArgs>().beta.f;
  const bool use_bias = has_bias && beta != 0;
  const bool want = wants_scale(n, scale);
  std::vector<double> res(size_t(B * M * N));
  if (want) scale->assign(res.size(), 0.0);
  size_t idx = 0;
  for (int64_t bb = 0; bb < B; ++bb)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t j = 0; j < N; ++j, ++idx) {
        double acc = 0, mag = 0;
        for (int64_t k = 0; k < K; ++k) {
          double p = a.get(bb, m, k) * b.get(bb, k, j);
          acc += p;
          mag += std::fabs(alpha * p);
        }
        // a product below the smallest normal may be flushed (compare.cpp allows for the partial
        // sums): K of them, scaled by alpha
        mag += abs_as_scale(n, double(K) * tiny_of(n) * std::fabs(alpha));
        double r = alpha * acc;
        if (use_bias) {
          double t = beta * bias.get(bb, m, j);
          r += t;
          mag += std::fabs(t);
        }
        res[idx] = r;
        if (want) (*scale)[idx] = mag;
      }
  idx = 0;
  for (int64_t bb = 0; bb < B; ++bb)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t j = 0; j < N; ++j) store<double>(at(n.t[0], bb * c.s[0] + m * c.s[1] + j * c.s[2]), n.t[0].dtype, res[idx++]);
  return {};
}

}  // namespace vkml::cpu
