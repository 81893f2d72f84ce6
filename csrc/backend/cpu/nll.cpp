// nll_loss forward and backward (operands as graph/families/nll.h names them), computed in double and
// rounded once. Reduction: 0 none, 1 mean, 2 sum (NllArgs). Mean divides by the
// total weight of the used targets, so all-ignored gives 0/0 = NaN, as torch does. An input of
// rank 1 ([C], target 0-d) is taken as N = 1.
#include <cmath>

#include "backend/cpu/access.h"
#include "backend/cpu/nll.h"

namespace vkml::cpu {
namespace {

struct Nll {
  int64_t N = 0, C = 0, sn = 0, sc = 0;  // sizes and element strides of the [N, C] operand
  const TensorDesc *target = nullptr, *weight = nullptr;
  int64_t target_at(int64_t i) const {
    return load<int64_t>(at(*target, target->ndim ? i * target->strides[0] : 0), target->dtype);
  }
  double weight_at(int64_t c) const {
    return weight ? load<double>(at(*weight, c * weight->strides[0]), weight->dtype) : 1.0;
  }
};

Result<void> setup(const Node& n, const TensorDesc& mat, int ti, int wi, Nll* g) {
  if (mat.ndim == 2) g->N = mat.sizes[0], g->C = mat.sizes[1], g->sn = mat.strides[0], g->sc = mat.strides[1];
  else if (mat.ndim == 1) g->N = 1, g->C = mat.sizes[0], g->sc = mat.strides[0];
  else return node_error(Err::invalid, n, "nll input must be [N, C] or [C]");
  g->target = &n.t[ti];
  g->weight = n.t[wi].addr ? &n.t[wi] : nullptr;
  if (!valid_dtype(g->target->dtype) || is_float(g->target->dtype) || g->target->numel() != g->N)
    return node_error(Err::invalid, n, "nll target must be integer with N elements");
  if (g->weight && (!is_float(g->weight->dtype) || g->weight->numel() != g->C))
    return node_error(Err::invalid, n, "nll weight must be floating point with C elements");
  if (n.as<NllArgs>().reduction < 0 || n.as<NllArgs>().reduction > 2) return node_error(Err::invalid, n, "nll reduction must be 0, 1 or 2");
  for (int64_t i = 0; i < g->N; ++i) {
    int64_t t = g->target_at(i);
    if (t != n.as<NllArgs>().ignore_index && (t < 0 || t >= g->C))  // torch's error, as the GPU's check
      return fail(Err::index, "Target " + std::to_string(t) + " is out of bounds.");
  }
  return {};
}

Result<void> forward(const Node& n, std::vector<double>* scale) {
  using A = NllArgs;
  const TensorDesc &out = n.t[A::out], &tw = n.t[A::total_weight], &in = n.t[A::input];
  Nll g;
  VKML_TRY(setup(n, in, A::target, A::weight, &g));
  const int64_t red = n.as<A>().reduction, ignore = n.as<A>().ignore_index;
  if (red == 0 && out.numel() != g.N) return node_error(Err::invalid, n, "nll output must have N elements");
  if (red != 0 && out.numel() != 1) return node_error(Err::invalid, n, "nll output must be 0-d");
  const bool want = wants_scale(n, scale);
  if (want) scale->assign(size_t(out.numel()), 0.0);
  double loss = 0, total = 0, mag = 0;
  for (int64_t i = 0; i < g.N; ++i) {
    const int64_t t = g.target_at(i);
    double l = 0, w = 0;
    if (t != ignore) {
      w = g.weight_at(t);
      l = -(load<double>(at(in, i * g.sn + t * g.sc), in.dtype) * w);
    }
    if (red == 0) {
      store<double>(at(out, out.ndim ? i * out.strides[0] : 0), out.dtype, l);
      if (want) (*scale)[size_t(i)] = std::fabs(l);
    }
    loss += l, total += w, mag += std::fabs(l);
  }
  if (tw.addr) store<double>(at(tw, 0), tw.dtype, red == 0 ? 0.0 : total);  // none: torch leaves 0
  if (red == 0) return {};
  if (red == 1) loss /= total, mag = total != 0 ? mag / std::fabs(total) : 0.0;
  // the products w * x may be flushed below the smallest normal (compare.cpp allows for the
  // partial sums); mean divides both by the total weight, which may be below 1
  if (red == 2) mag += abs_as_scale(n, double(g.N) * tiny_of(n));
  if (red == 1 && total != 0) mag += abs_as_scale(n, 2.0 * double(g.N) * tiny_of(n) / std::fabs(total));
  store<double>(at(out, 0), out.dtype, loss);
  if (want) (*scale)[0] = mag;
  return {};
}

// Writes only grad_input[i, t_i] (the rest was zeroed by the caller), as torch does:
// grad = -(mean ? gout / total_weight : gout); grad_input[i, t_i] = w[t_i] * grad.
Result<void> backward(const Node& n) {
  using A = NllArgs;
  const TensorDesc &gin = n.t[A::grad_input], &gout = n.t[A::grad_output], &tw = n.t[A::bwd_total_weight];
  Nll g;
  VKML_TRY(setup(n, gin, A::bwd_target, A::bwd_weight, &g));
  const int64_t red = n.as<NllArgs>().reduction, ignore = n.as<NllArgs>().ignore_index;
  if (red == 0 && gout.numel() != g.N) return node_error(Err::invalid, n, "nll grad_output must have N elements");
  if (red != 0 && gout.numel() != 1) return node_error(Err::invalid, n, "nll grad_output must be 0-d");
  if (red == 1 && !tw.addr) return node_error(Err::invalid, n, "nll mean backward needs total_weight");
  const double total = red == 1 ? load<double>(at(tw, 0), tw.dtype) : 1.0;
  for (int64_t i = 0; i < g.N; ++i) {
    const int64_t t = g.target_at(i);
    if (t == ignore) continue;
    double go = load<double>(at(gout, red == 0 && gout.ndim ? i * gout.strides[0] : 0), gout.dtype);
    double grad = -(red == 1 ? go / total : go);
    store<double>(at(gin, i * g.sn + t * g.sc), gin.dtype, g.weight_at(t) * grad);
  }
  return {};
}

}  // namespace

Result<void> or_nll(const Node& n, std::vector<double>* scale) {
  if (!std::holds_alternative<NllArgs>(n.args)) return node_error(Err::invalid, n, "not nll arguments");
  const bool bwd = n.as<NllArgs>().backward;
  const int fl[] = {0, 1, 2};  // float operands: out, total_weight, input (fwd) / gin, gout (bwd)
  for (int i : fl) {
    if (bwd && i == 2) break;
    if (!valid_dtype(n.t[i].dtype) || !(op_info(n.op).dtypes & bit(n.t[i].dtype)))
      return node_error(Err::unsupported, n, "nll operands must be floating point");
  }
  return bwd ? backward(n) : forward(n, scale);
}

}  // namespace vkml::cpu
