// Batch norm: native_batch_norm (what F.batch_norm and nn.BatchNorm*d reach), the
// _native_batch_norm_legit, _batch_norm_with_update and _no_update variants (torch.compile / export), and
// native_batch_norm_backward / batch_norm_backward. Training updates running_mean / running_var in
// place as torch's CPU kernel does: new = momentum * batch + (1 - momentum) * old, the variance
// unbiased (sum of squares / (n - 1)); save_invstd is 1/sqrt(biased var + eps).
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/zeros.h>

#include "aten/common.h"
#include "aten/kernels.h"
#include "aten/norm_common.h"

namespace vkml::aten {
namespace {
using namespace norm;
using F = NormArgs::Fwd;
using B = NormArgs::Bwd;

// torch's check_dims_match_num_input_features (aten/src/ATen/native/Normalization.cpp); the CPU
// kernel itself does not check, and would read past the end.
void check_features(const char* arg, const at::Tensor& t, int64_t C) {
  if (!t.defined()) return;
  TORCH_CHECK(t.numel() == C, arg, " should contain ", C, " elements not ", t.numel());
  TORCH_CHECK(t.dim() == 1, arg, ": expected a 1-D tensor, but got ", t.dim(), " dims");
}

at::MemoryFormat format_of(const at::Tensor& t) {
  return t.is_contiguous() ? at::MemoryFormat::Contiguous : t.suggest_memory_format();
}

at::Tensor maybe_named(Call& c, const char* a, const char* b) { return c.index(a) >= 0 ? opt(c, a) : opt(c, b); }

}  // namespace

void norm_batch(OpId id, Call& c) {
  const char* name = op_info(id).name;
  const at::Tensor input = c.tensor("input"), w = opt(c, "weight"), b = opt(c, "bias");
  const at::Tensor rm = opt(c, "running_mean"), rv = opt(c, "running_var");
  // _batch_norm_with_update trains; _batch_norm_no_update is eval (torch runs its CPU kernel with
  // train = false, and calls that kernel directly, whatever the device: so we register it too)
  const bool training = c.index("training") >= 0 ? c["training"].toBool() : c.schema.name() != "aten::_batch_norm_no_update";
  const int64_t C = input.size(1);  // torch's IndexError for a 1-D input
  check_features("weight", w, C);
  check_features("bias", b, C);
  check_features("running_mean", rm, C);
  check_features("running_var", rv, C);
  TORCH_CHECK_VALUE(rm.defined() == rv.defined(),  // torch's batch_norm_cpu check, its message
                    "running_mean and running_var must either both be None or neither be None");
  check_dtype(id, to_dtype(input.scalar_type(), name));
  const auto pt = param_type(input, w, b, rm, rv);
  if (training) {
    TORCH_CHECK(input.numel() != 0, "input tensor must have at least one element, but got input_sizes = ", input.sizes());
  } else {
    TORCH_CHECK(rm.defined() && rv.defined(), name, ": running_mean and running_var must be defined in evaluation mode");
  }
  at::Tensor y = at::empty_like(input, format_of(input));
  at::Tensor save_mean = at::empty({training ? C : 0}, input.options().dtype(pt));
  at::Tensor save_invstd = at::empty({training ? C : 0}, input.options().dtype(pt));
  if (input.numel() > 0) {
    TensorDesc t[10];
    at::Tensor k[7];  // what the descriptors point into, alive until recorded
    k[0] = viewable(input, 1, 2, t[F::x], name);
    view3(y, 1, 2, t[F::y], name);
    t[F::w] = vec(w, k[1], name);
    t[F::b] = vec(b, k[2], name);
    t[F::run_mean] = vec(rm, k[3], name);
    t[F::run_var] = vec(rv, k[4], name);
    if (training) {
      t[F::mean] = vec(save_mean, k[5], name);
      t[F::rstd] = vec(save_invstd, k[6], name);
      t[F::new_mean] = t[F::run_mean];  // updated in place
      t[F::new_var] = t[F::run_var];
    }
    NormArgs a;
    a.per_channel = true;
    a.training = training;
    a.eps = c["eps"].toDouble();
    a.momentum = c["momentum"].toDouble();
    record_node(id, input, a, t, 5, 5);
  }
  const bool with_reserve = c.schema.returns().size() == 4;  // _batch_norm_with_update / _no_update
  at::Tensor out = c.out();
  if (out.defined()) {
    at::Tensor sm = c.tensor("save_mean"), si = c.tensor("save_invstd");
    into(out, y);
    into(sm, save_mean);
    into(si, save_invstd);
    if (!with_reserve) return c.ret(out, sm, si);
    at::Tensor r = c.tensor("reserve");
    r.resize_({0});
    return c.ret(out, sm, si, r);
  }
  if (with_reserve) return c.ret(y, save_mean, save_invstd, at::empty({0}, input.options().dtype(at::kByte)));
  c.ret(y, save_mean, save_invstd);
}

void norm_batch_backward(OpId id, Call& c) {
  const char* name = op_info(id).name;
  const at::Tensor grad_out = c.tensor("grad_out"), input = c.tensor("input"), w = opt(c, "weight");
  const at::Tensor rm = opt(c, "running_mean"), rv = opt(c, "running_var");
  const at::Tensor sm = opt(c, "save_mean"), si = maybe_named(c, "save_invstd", "save_var");
  const bool train = c.index("train") >= 0 ? c["train"].toBool() : c["update"].toBool();
  const int64_t C = input.size(1);
  check_features("weight", w, C);
  check_features(train ? "save_mean" : "running_mean", train ? sm : rm, C);
  check_features(train ? "save_invstd" : "running_var", train ? si : rv, C);
  TORCH_CHECK(train ? sm.defined() && si.defined() : rm.defined() && rv.defined(), name,
              train ? ": save_mean and save_invstd must be defined in training mode"
                    : ": running_mean and running_var must be defined in evaluation mode");
  check_dtype(id, to_dtype(input.scalar_type(), name));
  const auto pt = param_type(input, w, rm, rv, sm, si);
  TORCH_CHECK(grad_out.sizes() == input.sizes(), name, ": grad_out of size ", grad_out.sizes(),
              " does not match input of size ", input.sizes());
  auto l = c["output_mask"].toBoolList();
  const bool m0 = l.get(0), m1 = l.get(1), m2 = l.get(2);
  const auto popt = w.defined() ? w.options() : input.options().dtype(pt);
  const bool empty = input.numel() == 0;  // no terms: zero parameter gradients
  at::Tensor dx, dw, db;
  if (m0) dx = at::empty_like(input, format_of(input));
  if (m1) dw = empty ? at::zeros({C}, popt) : at::empty({C}, popt);
  if (m2) db = empty ? at::zeros({C}, popt) : at::empty({C}, popt);
  if (!empty && (m0 || m1 || m2)) {
    TensorDesc t[8];
    at::Tensor k[7];
    k[0] = viewable(grad_out, 1, 2, t[B::dy], name);
    k[1] = viewable(input, 1, 2, t[B::bx], name);
    if (m0) view3(dx, 1, 2, t[B::dx], name);
    t[B::dw] = vec(dw, k[2], name);
    t[B::db] = vec(db, k[3], name);
    t[B::bw] = vec(w, k[4], name);
    t[B::bmean] = vec(train ? sm : rm, k[5], name);
    t[B::bstat] = vec(train ? si : rv, k[6], name);
    NormArgs a;
    a.backward = true;
    a.per_channel = true;
    a.training = train;
    a.var_given = !train;
    a.eps = c["eps"].toDouble();
    record_node(id, input, a, t, 3, 5);
  }
  c.ret(dx, dw, db);
}

}  // namespace vkml::aten
