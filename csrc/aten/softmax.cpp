// _softmax / _log_softmax and their backward, over a contiguous [outer, D, inner] view.
#include <ATen/WrapDimUtils.h>
#include <ATen/ops/empty.h>

#include "aten/call.h"
#include "aten/common.h"
#include "aten/kernels.h"

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

void softmax(OpId id, Call& c, bool bwd) {
  const char* name = op_info(id).name;
  at::Tensor x = (bwd ? c.tensor("grad_output") : c.tensor("self")).contiguous();
  const int64_t dim = at::maybe_wrap_dim(c["dim"].toInt(), x.dim());
  at::Tensor y;
  c10::ScalarType odt = x.scalar_type();
  if (bwd) {
    y = c.tensor("output").contiguous();
    // torch's meta: the result has grad_output's dtype; input_dtype only matters for the
    // half-to-float case (float grad, half input), which torch's CPU kernel rejects
    TORCH_CHECK(!(x.scalar_type() == c10::ScalarType::Float && c["input_dtype"].toScalarType() == c10::ScalarType::Half),
                "softmax backward with half to float conversion is not supported on vkml");
    TORCH_CHECK(y.sizes() == x.sizes(), name, ": grad_output and output shapes differ");
  } else {
    TORCH_CHECK(!c["half_to_float"].toBool(),
                "softmax with half to float conversion is not supported on vkml");
  }
  check_dtype(id, to_dtype(x.scalar_type(), name));
  at::Tensor result = at::empty(x.sizes(), x.options().dtype(odt));
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
    n.t[SoftmaxArgs::out] = odi(result, dim, name);
    n.t[SoftmaxArgs::in] = odi(x, dim, name);
    if (bwd) n.t[SoftmaxArgs::fwd_out] = odi(y, dim, name);
    record(n);
  }
  ret_result(c, result);
}

}  // namespace

void softmax_forward(OpId id, Call& c) { softmax(id, c, false); }
void softmax_backward(OpId id, Call& c) { softmax(id, c, true); }

}  // namespace vkml::aten
