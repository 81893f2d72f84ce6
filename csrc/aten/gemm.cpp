// mm, addmm, bmm: C[b] = beta*bias + alpha*A[b]@B[b] with arbitrary strides (transposes are free).
#include <ATen/ops/empty.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/zeros.h>

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

// Matrix-vector (addmv) and vector-vector (dot) products are the same node with [K] operands
// viewed as [K, 1] (or [1, K]) and the result as [M, 1] (or [1, 1]).
void gemm(OpId id, Call& c) {
  const char* name = op_info(id).name;
  const bool batched = id == OpId::bmm;
  at::Tensor a, b, bias;
  if (id == OpId::addmm) a = c.tensor("mat1"), b = c.tensor("mat2");
  else if (id == OpId::addmv) a = c.tensor("mat"), b = c.tensor("vec");
  else if (id == OpId::dot) a = c.tensor("self"), b = c.tensor("tensor");
  else a = c.tensor("self"), b = c.tensor("mat2");
  if (batched) {
    TORCH_CHECK(a.dim() == 3, "batch1 must be a 3D tensor");
    TORCH_CHECK(b.dim() == 3, "batch2 must be a 3D tensor");
    TORCH_CHECK(b.size(0) == a.size(0) && b.size(1) == a.size(2),
                "Expected size for first two dimensions of batch2 tensor to be: [", a.size(0), ", ",
                a.size(2), "] but got: [", b.size(0), ", ", b.size(1), "].");
  } else if (id == OpId::dot) {
    TORCH_CHECK(a.dim() == 1 && b.dim() == 1, "1D tensors expected, but got ", a.dim(), "D and ", b.dim(),
                "D tensors");
    TORCH_CHECK(a.numel() == b.numel(), "inconsistent tensor size, expected tensor [", a.numel(),
                "] and src [", b.numel(), "] to have the same number of elements, but got ", a.numel(), " and ",
                b.numel(), " elements respectively");
    TORCH_CHECK(a.scalar_type() == b.scalar_type(), "dot : expected both vectors to have same dtype, but found ",
                a.scalar_type(), " and ", b.scalar_type());
  } else if (id == OpId::addmv) {
    const at::Tensor& self = c.tensor("self");
    TORCH_CHECK(a.dim() == 2 && b.dim() == 1 && self.dim() <= 1, "vector + matrix @ vector expected, got ",
                self.dim(), ", ", a.dim(), ", ", b.dim());
    // torch's CPU check reads self.size(0) while formatting its message: IndexError for a 0-dim self
    TORCH_CHECK_INDEX(self.dim() > 0 || (a.size(1) == b.size(0) && (a.size(0) == self.numel() || self.numel() == 1)),
                      "Dimension specified as 0 but tensor has no dimensions");
    TORCH_CHECK(a.size(1) == b.size(0) && (a.size(0) == self.numel() || self.numel() == 1),
                "size mismatch, got input (", self.dim() ? self.size(0) : 1, "), mat (", a.size(0), "x", a.size(1),
                "), vec (", b.size(0), ")");
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
  if (id == OpId::addmv && a.numel() == 0) {  // as torch's CPU: zeros [M] for beta 0, else beta * self as shaped
    const at::Tensor& self = c.tensor("self");
    TORCH_CHECK(self.scalar_type() == a.scalar_type() && a.scalar_type() == b.scalar_type(),
                "addmv input tensors must have the same dtype, but got ", self.scalar_type(), ", ", a.scalar_type(),
                ", and ", b.scalar_type());
    const c10::Scalar beta = c["beta"].toScalar();
    at::Tensor r = beta.toDouble() == 0 ? at::zeros({a.size(0)}, self.options()) : at::mul(self, beta);
    if (c.inplace()) return c.ret(self.copy_(r));
    return ret_result(c, r);
  }
  // What the user gets (shape) and the matrix view the node computes in (a2 @ b2 -> shape2).
  at::Tensor a2 = id == OpId::dot ? a.unsqueeze(0) : a;
  at::Tensor b2 = id == OpId::dot || id == OpId::addmv ? b.unsqueeze(1) : b;
  const int64_t B = batched ? a.size(0) : 1, M = a2.size(-2), N = b2.size(-1);
  std::vector<int64_t> shape2 = batched ? std::vector<int64_t>{B, M, N} : std::vector<int64_t>{M, N};
  std::vector<int64_t> shape = id == OpId::dot ? std::vector<int64_t>{} : id == OpId::addmv ? std::vector<int64_t>{M} : shape2;

  Scalar alpha{1.0, 1}, beta{0.0, 0};
  if (id == OpId::addmm || id == OpId::addmv) {
    bias = c.tensor("self");
    TORCH_CHECK(bias.scalar_type() == a.scalar_type(), "self and mat2 must have the same dtype, but got ",
                bias.dtype(), " and ", b.dtype());
    alpha = to_scalar(c["alpha"].toScalar());
    beta = to_scalar(c["beta"].toScalar());
    bias = id == OpId::addmv ? bias.expand({M}).unsqueeze(1) : bias.expand(shape2);
    // torch's CPU BLAS path (float32, float64) skips A@B when alpha is 0, so NaN and Inf there do
    // not propagate (its float16/bfloat16 loop multiplies, measured on torch 2.13; narrow dtypes
    // follow the float32 computation here, as everywhere). K = 0 does the same, on the GPU and
    // in the oracle alike.
    if (alpha.f == 0) a2 = a2.narrow(-1, 0, 0), b2 = b2.narrow(-2, 0, 0);
  }
  at::Tensor result = c.inplace() ? c.tensor("self") : c.out();
  if (!result.defined()) {
    result = at::empty(shape, a.options());
  } else {
    TORCH_CHECK(result.scalar_type() == a.scalar_type(), "Expected out tensor to have dtype ", a.dtype(),
                ", but got ", result.dtype(), " instead");
    if (result.sizes() != at::IntArrayRef(shape)) result.resize_(shape);
  }
  if (result.numel() > 0) {
    at::Tensor r2 = id == OpId::dot ? result.view({1, 1}) : id == OpId::addmv ? result.unsqueeze(1) : result;
    Node n;
    n.op = id;
    n.nout = 1;
    n.nin = 3;
    n.compute = to_dtype(result.scalar_type(), name);
    n.reduction = a2.size(-1);
    GemmArgs args{alpha, beta};
    const int64_t scratch_bytes = gemm_partial_bytes(B, M, N, a2.size(-1), device().limits().max_loop_trips);
    at::Tensor scratch;  // a split K: freed at once (later nodes run after this one)
    if (scratch_bytes) {
      scratch = at::empty({scratch_bytes}, a.options().dtype(c10::ScalarType::Byte));
      args.partials = addr_of(scratch);
    }
    n.args = args;
    n.t[GemmArgs::c] = desc3(r2, name);
    n.t[GemmArgs::a] = desc3(a2, name);
    n.t[GemmArgs::b] = desc3(b2, name);
    if (bias.defined() && beta.f != 0) n.t[GemmArgs::bias] = desc3(bias, name);  // beta == 0 ignores bias (NaN too)
    record(n);
  }
  c.ret(result);
}

}  // namespace vkml::aten
