// nll_loss_forward / nll_loss_backward (what cross_entropy reaches after log_softmax).
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>

#include "aten/call.h"
#include "aten/common.h"
#include "aten/kernels.h"

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

void check_args(const at::Tensor& self, const at::Tensor& target, const at::Tensor& weight) {
  TORCH_CHECK(self.dim() > 0 && self.dim() <= 2, "input tensor should be 1D or 2D");
  TORCH_CHECK(target.dim() <= 1, "0D or 1D target tensor expected, multi-target not supported");
  const bool no_batch_dim = self.dim() == 1 && target.dim() == 0;
  TORCH_CHECK(no_batch_dim || self.size(0) == target.size(0), "size mismatch (got input: ", self.sizes(),
              ", target: ", target.sizes(), ")");
  const int64_t n_classes = self.size(-1);
  TORCH_CHECK(!weight.defined() || (weight.dim() == 1 && weight.numel() == n_classes),
              "weight tensor should be defined either for all ", n_classes,
              " classes or no classes but got weight tensor of shape: ", weight.sizes());
  TORCH_CHECK(target.scalar_type() == c10::ScalarType::Long || target.scalar_type() == c10::ScalarType::Byte,
              "nll_loss: expected target of dtype int64 (or uint8), got ", target.dtype());
}

// Both directions share the argument checks and NllArgs.
Node nll_node(OpId id, Call& c, at::Tensor& self, at::Tensor& target, at::Tensor& weight, bool backward) {
  const char* name = op_info(id).name;
  self = c.tensor("self");
  target = c.tensor("target");
  weight = c.has("weight") ? c.tensor("weight") : at::Tensor();
  check_args(self, target, weight);
  check_dtype(id, to_dtype(self.scalar_type(), name));
  if (target.scalar_type() != c10::ScalarType::Long) target = target.to(c10::ScalarType::Long);
  if (weight.defined()) TORCH_CHECK(weight.scalar_type() == self.scalar_type(), name, ": weight dtype ",
                                    weight.dtype(), " differs from input dtype ", self.dtype());
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
  at::Tensor self, target, weight;
  Node n = nll_node(id, c, self, target, weight, false);
  const at::Tensor scratch = scratch_for(n, self);
  const bool vec = n.as<A>().reduction == 0 && self.dim() == 2;
  at::Tensor output = at::empty(vec ? std::vector<int64_t>{self.size(0)} : std::vector<int64_t>{}, self.options());
  // reduction none over an empty batch runs no node; total_weight is then 0 as on the CPU
  at::Tensor total = vec && self.size(0) == 0 ? at::zeros({}, self.options()) : at::empty({}, self.options());
  n.nout = 2;
  n.nin = 3;
  n.t[A::out] = vec ? desc_of(output, name) : as_vector(output, name);
  n.t[A::total_weight] = desc_of(total, name);
  n.t[A::input] = as_matrix(self, name);
  n.t[A::target] = as_vector(target, name);
  if (weight.defined()) n.t[A::weight] = desc_of(weight, name);
  record(n);
  at::Tensor out = c.out();
  if (out.defined()) {  // nll_loss_forward.output(..., *, output, total_weight)
    at::Tensor tw = c.tensor("total_weight");
    check_out_dtype(out, output);
    check_out_dtype(tw, total);
    into(out, output);
    into(tw, total);
    return c.ret(out, tw);
  }
  c.ret(output, total);
}

void nll_backward(OpId id, Call& c) {
  using A = NllArgs;
  const char* name = op_info(id).name;
  at::Tensor self, target, weight;
  Node n = nll_node(id, c, self, target, weight, true);
  const at::Tensor scratch = scratch_for(n, self);
  at::Tensor grad_output = c.tensor("grad_output");
  at::Tensor total = c.tensor("total_weight");
  at::Tensor grad_input = at::zeros_like(self, at::MemoryFormat::Contiguous);
  if (grad_input.numel() > 0) {
    n.nout = 1;
    n.nin = 4;
    n.t[A::grad_input] = as_matrix(grad_input, name);
    n.t[A::grad_output] = as_vector(grad_output, name);
    n.t[A::bwd_target] = as_vector(target, name);
    if (weight.defined()) n.t[A::bwd_weight] = desc_of(weight, name);
    n.t[A::bwd_total_weight] = desc_of(total, name);
    record(n);
  }
  ret_result(c, grad_input);
}

}  // namespace vkml::aten
