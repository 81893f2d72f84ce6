// nll_loss_forward / nll_loss_backward (what cross_entropy reaches after log_softmax).
#include <ATen/ops/empty.h>
#include <ATen/ops/nll_loss_backward_meta.h>
#include <ATen/ops/nll_loss_forward_meta.h>

#include "aten/call.h"
#include "aten/common.h"
#include "aten/kernels.h"
#include "aten/structured.h"

namespace vkml::aten {
namespace {

// [N, C] view of a 1-D or 2-D input; [N] view of a 0-D or 1-D vector.
TensorDesc as_matrix(const at::Tensor& t, const char* op) {
  TensorDesc d = desc_of(t, op);
  if (t.dim() == 1) {
    d.ndim = 2;
    d.sizes[1] = d.sizes[0], d.strides[1] = d.strides[0];
    d.sizes[0] = 1, d.strides[0] = 0;
  }
  return d;
}
TensorDesc as_vector(const at::Tensor& t, const char* op) {
  TensorDesc d = desc_of(t, op);
  if (t.dim() == 0) d.ndim = 1, d.sizes[0] = 1, d.strides[0] = 0;
  return d;
}

// What torch's CPU kernels check after the metas (the metas check shapes): operand dtypes, as
// their typed data pointers do (with their message).
void check_same(c10::ScalarType expected, const at::Tensor& t) {
  TORCH_CHECK(!t.defined() || t.scalar_type() == expected, "expected scalar type ", expected, " but found ",
              t.scalar_type());
}
void check_target(const at::Tensor& target) {
  if (target.scalar_type() != c10::ScalarType::Byte) check_same(c10::ScalarType::Long, target);
}

// Both directions share NllArgs (the argument checks are the metas' and check_same's).
Node nll_node(OpId id, Call& c, at::Tensor& self, at::Tensor& target, at::Tensor& weight, bool backward) {
  const char* name = op_info(id).name;
  self = c.tensor("self");
  target = c.tensor("target");
  weight = c.has("weight") ? c.tensor("weight") : at::Tensor();
  check_dtype(id, to_dtype(self.scalar_type(), name));
  if (target.scalar_type() != c10::ScalarType::Long) target = target.to(c10::ScalarType::Long);
  const int64_t reduction = c["reduction"].toInt();
  Node n;
  n.op = id;
  n.compute = to_dtype(self.scalar_type(), name);
  NllArgs args;
  // A 1-D input has one sample: torch treats reduction none like sum there (total_weight = w[t]).
  args.reduction = reduction == 0 && self.dim() == 1 ? 2 : reduction;
  args.ignore_index = c["ignore_index"].toInt();
  args.backward = backward;
  auto rec = device().assert_record();  // out-of-range targets: raised at the next synchronisation
  check(rec.ok() ? Result<void>{} : Result<void>(rec.error()));
  args.asserts = rec.value();
  n.args = args;
  if (!backward && reduction != 0 && self.dim() == 2) n.reduction = std::max<int64_t>(1, self.size(0));
  return n;
}

// Scratch for many samples (nll.h); freed when the caller returns: later nodes run after this one.
at::Tensor scratch_for(Node& n, const at::Tensor& self) {
  const int64_t bytes = nll_partial_bytes(self.dim() == 2 ? self.size(0) : 1);
  if (!bytes) return {};
  at::Tensor s = at::empty({bytes}, self.options().dtype(c10::ScalarType::Byte));
  std::get<NllArgs>(n.args).partials = addr_of(s);
  return s;
}

}  // namespace

void nll_forward(OpId id, Call& c) {
  using A = NllArgs;
  const char* name = op_info(id).name;
  // nll_loss_forward.output(..., *, output, total_weight): shapes, target/weight checks and the
  // out= checks are torch's meta's
  const at::Tensor out = c.out();
  const OutKind kind = out.defined() ? OutKind::out : OutKind::functional;
  Structured<at::meta::structured_nll_loss_forward> op(kind, out, out.defined() ? c.tensor("total_weight") : at::Tensor());
  const at::Tensor weight_arg = c.has("weight") ? c.tensor("weight") : at::Tensor();
  op.meta(c.tensor("self"), c.tensor("target"), weight_arg, c["reduction"].toInt(), c["ignore_index"].toInt());
  const at::Tensor& output = op.out_;
  const at::Tensor& total = op.out1_;
  // torch's CPU kernel: the target dtype (torch 2.13's meta checks it first, with its own message)
  check_target(c.tensor("target"));
  check_same(output.scalar_type(), weight_arg);
  at::Tensor self, target, weight;
  Node n = nll_node(id, c, self, target, weight, false);
  const at::Tensor scratch = scratch_for(n, self);
  const bool vec = n.as<A>().reduction == 0 && self.dim() == 2;
  // The node writes both with their own strides; only memory shared with the inputs needs a temporary.
  const Dest dout(output, kind, true, {&self, &target, &weight}), dtotal(total, kind, true, {&self, &target, &weight});
  // reduction none over an empty batch runs no node; total_weight is then 0 as on the CPU
  if (vec && self.size(0) == 0) dtotal.t().zero_();
  n.nout = 2;
  n.nin = 3;
  n.t[A::out] = vec ? desc_of(dout.t(), name) : as_vector(dout.t(), name);
  n.t[A::total_weight] = desc_of(dtotal.t(), name);
  n.t[A::input] = as_matrix(self, name);
  n.t[A::target] = as_vector(target, name);
  if (weight.defined()) n.t[A::weight] = desc_of(weight, name);
  record(n);
  dout.finish();
  dtotal.finish();
  c.ret(output, total);
}

void nll_backward(OpId id, Call& c) {
  using A = NllArgs;
  const char* name = op_info(id).name;
  const at::Tensor out = c.out();
  const OutKind kind = out.defined() ? OutKind::out : OutKind::functional;
  const at::Tensor grad_output = c.tensor("grad_output"), total = c.tensor("total_weight");
  const at::Tensor weight_arg = c.has("weight") ? c.tensor("weight") : at::Tensor();
  Structured<at::meta::structured_nll_loss_backward> op(kind, out);
  op.meta(grad_output, c.tensor("self"), c.tensor("target"), weight_arg, c["reduction"].toInt(),
          c["ignore_index"].toInt(), total);
  const at::Tensor& grad_input = op.out_;
  // torch's CPU kernel: operand dtypes, in its order
  check_target(c.tensor("target"));
  check_same(grad_input.scalar_type(), grad_output);
  check_same(grad_input.scalar_type(), weight_arg);
  check_same(grad_input.scalar_type(), total);
  at::Tensor self, target, weight;
  Node n = nll_node(id, c, self, target, weight, true);
  const at::Tensor scratch = scratch_for(n, self);
  // the node writes the target entries only (with grad_input's strides): zeros first
  const Dest dest(grad_input, kind, true, {&grad_output, &self, &target, &weight, &total});
  if (grad_input.numel() > 0) {
    dest.t().zero_();
    n.nout = 1;
    n.nin = 4;
    n.t[A::grad_input] = as_matrix(dest.t(), name);
    n.t[A::grad_output] = as_vector(grad_output, name);
    n.t[A::bwd_target] = as_vector(target, name);
    if (weight.defined()) n.t[A::bwd_weight] = desc_of(weight, name);
    n.t[A::bwd_total_weight] = desc_of(total, name);
    record(n);
  }
  dest.finish();
  c.ret(grad_input);
}

}  // namespace vkml::aten
