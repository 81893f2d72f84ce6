// mm, addmm, bmm: C[b] = beta*bias + alpha*A[b]@B[b] with arbitrary strides (transposes are free).
#include <ATen/ops/addmm_meta.h>
#include <ATen/ops/addmv_meta.h>
#include <ATen/ops/bmm_meta.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mm_meta.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/zeros.h>

#include "aten/call.h"
#include "aten/common.h"
#include "aten/kernels.h"
#include "aten/structured.h"
#include "aten/torch_version.h"  // addmv's dtype check over an empty mat (torch 2.13)

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
  // Shapes, dtypes and the output come from torch's own meta functions (its messages, its out=
  // and in-place checks); dot has none (it is not structured), so its checks are torch's, copied.
  at::Tensor result;
  const OutKind kind = c.inplace() ? OutKind::inplace : c.out().defined() ? OutKind::out : OutKind::functional;
  const at::Tensor given = c.inplace() ? c.tensor("self") : c.out();
  if (id == OpId::mm) {
    Structured<at::meta::structured_mm> op(kind, given);
    op.meta(a, b);
    result = op.out_;
  } else if (id == OpId::bmm) {
    Structured<at::meta::structured_bmm> op(kind, given);
    op.meta(a, b);
    result = op.out_;
  } else if (id == OpId::addmm) {
    Structured<at::meta::structured_addmm> op(kind, given);
    op.meta(c.tensor("self"), a, b, c["beta"].toScalar(), c["alpha"].toScalar());
    result = op.out_;
  } else if (id == OpId::addmv) {
    Structured<at::meta::structured_addmv> op(kind, given);
    op.meta(c.tensor("self"), a, b, c["beta"].toScalar(), c["alpha"].toScalar());
    result = op.out_;
  } else {
    TORCH_CHECK(a.dim() == 1 && b.dim() == 1, "1D tensors expected, but got ", a.dim(), "D and ", b.dim(),
                "D tensors");
    TORCH_CHECK(a.numel() == b.numel(), "inconsistent tensor size, expected tensor [", a.numel(),
                "] and src [", b.numel(), "] to have the same number of elements, but got ", a.numel(), " and ",
                b.numel(), " elements respectively");
    TORCH_CHECK(a.scalar_type() == b.scalar_type(), "dot : expected both vectors to have same dtype, but found ",
                a.scalar_type(), " and ", b.scalar_type());
    result = c.out();
    if (!result.defined()) result = at::empty({}, a.options());
    check_out_dtype(result, a);
    if (result.dim() != 0) result.resize_({});
  }
  if (batched) {  // torch's CPU bmm: an empty result, or k = 0 (zeros), before any dtype check
    if (result.numel() == 0) return c.ret(result);
    if (a.size(-1) == 0 && a.scalar_type() != b.scalar_type()) return c.ret(result.zero_());
    TORCH_CHECK(a.scalar_type() == b.scalar_type(), "expected scalar type ", a.scalar_type(), " but found ",
                b.scalar_type());
  }
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "expected m1 and m2 to have the same dtype, but got: ",
              a.dtype(), " != ", b.dtype());  // where a meta leaves it to the kernel
  check_dtype(id, to_dtype(a.scalar_type(), name));
  if (id == OpId::addmv && a.numel() == 0) {  // as torch's CPU: zeros [M] for beta 0, else beta * self as shaped
    const at::Tensor& self = c.tensor("self");
    // torch 2.13 checks the dtypes first; 2.11's CPU kernel takes this shortcut before its check,
    // so mixed dtypes give beta * self there (measured on 2.11 and 2.13; 2.12 not measured).
    TORCH_CHECK(!VKML_TORCH_AT_LEAST_2_13 || (self.scalar_type() == a.scalar_type() && a.scalar_type() == b.scalar_type()),
                "addmv input tensors must have the same dtype, but got ", self.scalar_type(), ", ", a.scalar_type(),
                ", and ", b.scalar_type());
    const c10::Scalar beta = c["beta"].toScalar();
    if (beta.toDouble() == 0) return c.ret(result.zero_());
    at::Tensor r = at::mul(self, beta);  // torch's mul_out: the result takes self's shape
    if (result.sizes() != r.sizes()) result.resize_(r.sizes());
    return c.ret(result.copy_(r));
  }
  // The matrix view the node computes in (a2 @ b2 -> shape2).
  at::Tensor a2 = id == OpId::dot ? a.unsqueeze(0) : a;
  at::Tensor b2 = id == OpId::dot || id == OpId::addmv ? b.unsqueeze(1) : b;
  const int64_t B = batched ? a.size(0) : 1, M = a2.size(-2), N = b2.size(-1);
  std::vector<int64_t> shape2 = batched ? std::vector<int64_t>{B, M, N} : std::vector<int64_t>{M, N};

  Scalar alpha{1.0, 1}, beta{0.0, 0};
  if (id == OpId::addmm || id == OpId::addmv) {
    bias = c.tensor("self");
    TORCH_CHECK(bias.scalar_type() == a.scalar_type(), "self and mat2 must have the same dtype, but got ",
                bias.dtype(), " and ", b.dtype());  // addmv's meta leaves it to the kernel
    alpha = to_scalar(c["alpha"].toScalar());
    beta = to_scalar(c["beta"].toScalar());
    bias = id == OpId::addmv ? bias.expand({M}).unsqueeze(1) : bias.expand(shape2);
    // torch's CPU BLAS path (float32, float64) skips A@B when alpha is 0, so NaN and Inf there do
    // not propagate (its float16/bfloat16 loop multiplies, measured on torch 2.13; narrow dtypes
    // follow the float32 computation here, as everywhere). K = 0 does the same, on the GPU and
    // in the oracle alike.
    if (alpha.f == 0) a2 = a2.narrow(-1, 0, 0), b2 = b2.narrow(-2, 0, 0);
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
    const int64_t scratch_bytes = gemm_partial_bytes(B, M, N, a2.size(-1), device().limits().max_loop_trips,
                                                     n.compute == DType::f64 ? 8 : 4);
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
