// mm, addmm, bmm: C[b] = beta*bias + alpha*A[b]@B[b] with arbitrary strides (transposes are free).
#include <ATen/ops/empty.h>

#include "aten/call.h"
#include "aten/common.h"
#include "aten/kernels.h"

namespace vkml::aten {
namespace {

// Describe a 2-D or 3-D tensor as [batch, rows, cols] (batch stride 0 for 2-D).
TensorDesc desc3(const at::Tensor& t, const char* op) {
  TensorDesc d;
  d.addr = t.numel() ? addr_of(t) : 0;
  d.dtype = to_dtype(t.scalar_type(), op);
  d.ndim = 3;
  const int64_t off = 3 - t.dim();
  d.sizes[0] = 1;
  d.strides[0] = 0;
  for (int64_t i = 0; i < t.dim(); ++i) {
    d.sizes[off + i] = t.size(i);
    d.strides[off + i] = t.size(i) == 1 ? 0 : t.stride(i);
  }
  return d;
}

}  // namespace

void gemm_kernel(OpId id, Call& c) {
  const char* name = op_info(id).name;
  const bool batched = id == OpId::bmm;
  at::Tensor a = c.tensor(id == OpId::addmm ? "mat1" : "self");
  at::Tensor b = c.tensor(id == OpId::addmm ? "mat2" : "mat2");
  if (batched) {
    TORCH_CHECK(a.dim() == 3, "batch1 must be a 3D tensor");
    TORCH_CHECK(b.dim() == 3, "batch2 must be a 3D tensor");
    TORCH_CHECK(b.size(0) == a.size(0) && b.size(1) == a.size(2),
                "Expected size for first two dimensions of batch2 tensor to be: [", a.size(0), ", ",
                a.size(2), "] but got: [", b.size(0), ", ", b.size(1), "].");
  } else {
    TORCH_CHECK(a.dim() == 2, id == OpId::addmm ? "mat1 must be a matrix, got " : "self must be a matrix, got ",
                a.dim(), "-D tensor");
    TORCH_CHECK(b.dim() == 2, "mat2 must be a matrix, got ", b.dim(), "-D tensor");
    TORCH_CHECK(a.size(1) == b.size(0), "mat1 and mat2 shapes cannot be multiplied (", a.size(0), "x",
                a.size(1), " and ", b.size(0), "x", b.size(1), ")");
  }
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "expected m1 and m2 to have the same dtype, but got: ",
              a.dtype(), " != ", b.dtype());
  check_dtype(id, to_dtype(a.scalar_type(), name));
  const int64_t B = batched ? a.size(0) : 1, M = a.size(-2), N = b.size(-1);
  std::vector<int64_t> shape = batched ? std::vector<int64_t>{B, M, N} : std::vector<int64_t>{M, N};

  at::Tensor bias;
  Scalar alpha{1.0, 1}, beta{0.0, 0};
  if (id == OpId::addmm) {
    bias = c.tensor("self");
    TORCH_CHECK(bias.scalar_type() == a.scalar_type(), "self and mat2 must have the same dtype, but got ",
                bias.dtype(), " and ", b.dtype());
    alpha = to_scalar(c["alpha"].toScalar());
    beta = to_scalar(c["beta"].toScalar());
    bias = bias.expand(shape);
  }
  at::Tensor out = c.inplace() ? c.tensor("self") : c.out();
  at::Tensor result = out;
  if (!result.defined()) {
    result = at::empty(shape, a.options());
  } else {
    TORCH_CHECK(result.scalar_type() == a.scalar_type(), "Expected out tensor to have dtype ", a.dtype(),
                ", but got ", result.dtype(), " instead");
    if (result.sizes() != at::IntArrayRef(shape)) result.resize_(shape);
  }
  if (result.numel() > 0) {
    Node n;
    n.op = id;
    n.nout = 1;
    n.nin = 3;
    n.t[0] = desc3(result, name);
    n.t[1] = desc3(a, name);
    n.t[2] = desc3(b, name);
    if (bias.defined() && beta.f != 0) n.t[3] = desc3(bias, name);  // beta == 0 ignores bias (NaN too)
    n.s[0] = alpha;
    n.s[1] = beta;
    record(n);
  }
  c.ret(result);
}

}  // namespace vkml::aten
