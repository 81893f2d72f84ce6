// _softmax / _log_softmax and their backward, over a contiguous [outer, D, inner] view.
#include <ATen/TensorUtils.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/ops/_log_softmax_backward_data_meta.h>
#include <ATen/ops/_log_softmax_meta.h>
#include <ATen/ops/_softmax_backward_data_meta.h>
#include <ATen/ops/_softmax_meta.h>
#include <ATen/ops/empty.h>

#include "aten/call.h"
#include "aten/common.h"
#include "aten/kernels.h"
#include "aten/structured.h"

namespace vkml::aten {
namespace {

TensorDesc odi(const at::Tensor& t, int64_t dim, const char* op) {
  TensorDesc d;
  d.addr = t.numel() ? addr_of(t) : 0;
  d.dtype = to_dtype(t.scalar_type(), op);
  d.ndim = 3;
  int64_t o = 1, i = 1;
  for (int64_t k = 0; k < t.dim(); ++k) {
    if (k < dim) o *= t.size(k);
    if (k > dim) i *= t.size(k);
  }
  const int64_t D = t.dim() ? t.size(dim) : 1;
  d.sizes[0] = o, d.sizes[1] = D, d.sizes[2] = i;
  d.strides[0] = D * i, d.strides[1] = i, d.strides[2] = 1;
  return d;
}

// Shapes, dtypes and argument checks are torch's structured metas' (messages included).
template <class Meta>
at::Tensor forward_meta(OutKind kind, const at::Tensor& out, const at::Tensor& self, int64_t dim, bool half_to_float) {
  Structured<Meta> op(kind, out);
  op.meta(self, dim, half_to_float);
  return op.out_;
}
template <class Meta>
at::Tensor backward_meta(OutKind kind, const at::Tensor& out, const at::Tensor& grad, const at::Tensor& output,
                         int64_t dim, c10::ScalarType input_dtype) {
  Structured<Meta> op(kind, out);
  op.meta(grad, output, dim, input_dtype);
  return op.out_;
}

void softmax(OpId id, Call& c, bool bwd) {
  const char* name = op_info(id).name;
  const OutKind kind = c.out().defined() ? OutKind::out : OutKind::functional;
  const int64_t d = c["dim"].toInt();
  const bool log = id == OpId::log_softmax || id == OpId::log_softmax_backward;
  at::Tensor x = bwd ? c.tensor("grad_output") : c.tensor("self"), y, result;
  if (bwd) {
    y = c.tensor("output");
    const c10::ScalarType idt = c["input_dtype"].toScalarType();
    result = log ? backward_meta<at::meta::structured__log_softmax_backward_data>(kind, c.out(), x, y, d, idt)
                 : backward_meta<at::meta::structured__softmax_backward_data>(kind, c.out(), x, y, d, idt);
    // torch's _log_softmax_backward_data meta leaves the shapes unchecked (its CPU kernel then reads
    // output out of bounds); _softmax_backward_data's check, with its message, for both
    if (log) at::checkSameSize("log_softmax_backward", {x, "grad", 1}, {y, "output", 2});
    // the backward of that conversion (float grad, half input): refused too
    TORCH_CHECK(!(x.scalar_type() == c10::ScalarType::Float && idt == c10::ScalarType::Half),
                "softmax backward with half to float conversion is not supported on vkml");
    // torch's CPU kernel reads output as grad's dtype
    TORCH_CHECK(y.scalar_type() == x.scalar_type(), "expected scalar type ", x.scalar_type(), " but found ",
                y.scalar_type());
  } else {
    const bool h2f = c["half_to_float"].toBool();
    result = log ? forward_meta<at::meta::structured__log_softmax>(kind, c.out(), x, d, h2f)
                 : forward_meta<at::meta::structured__softmax>(kind, c.out(), x, d, h2f);
    // torch's CPU kernel refuses the conversion (its CUDA kernel does it), and so does vkml
    TORCH_CHECK(!h2f, "softmax with half to float conversion is not supported on vkml");
  }
  const int64_t dim = at::maybe_wrap_dim(d, x.dim());
  check_dtype(id, to_dtype(x.scalar_type(), name));
  x = x.contiguous();
  if (bwd) y = y.contiguous();
  const Dest dest(result, kind, result.is_contiguous(), {&x, &y});  // the node writes it densely
  if (result.numel() > 0) {
    Node n;
    n.op = id;
    n.nout = 1;
    n.nin = bwd ? 2 : 1;
    n.compute = to_dtype(result.scalar_type(), name);
    n.reduction = x.dim() ? x.size(dim) : 1;
    SoftmaxArgs args{bwd};
    const int64_t D = x.dim() ? x.size(dim) : 1;
    const int64_t scratch_bytes = softmax_partial_bytes(x.numel() / D, D);
    at::Tensor scratch;  // long rows: freed at once (later nodes run after this one)
    if (scratch_bytes) {
      scratch = at::empty({scratch_bytes}, x.options().dtype(c10::ScalarType::Byte));
      args.partials = addr_of(scratch);
    }
    n.args = args;
    n.t[SoftmaxArgs::out] = odi(dest.t(), dim, name);
    n.t[SoftmaxArgs::in] = odi(x, dim, name);
    if (bwd) n.t[SoftmaxArgs::fwd_out] = odi(y, dim, name);
    record(n);
  }
  dest.finish();
  c.ret(result);
}

}  // namespace

void softmax_forward(OpId id, Call& c) { softmax(id, c, false); }
void softmax_backward(OpId id, Call& c) { softmax(id, c, true); }

}  // namespace vkml::aten
