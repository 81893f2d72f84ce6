// Ops composed of table rows: each step is a recorded node (checked by the oracle one by one), in
// the evaluation order of torch's CPU kernel, so float32 results match it up to fused
// multiply-adds (which torch's vectorised loops use and these nodes do not).
//   lerp(self, end, w)        = |w| < 0.5 ? self + w * (end - self) : end - (end - self) * (1 - w)
//   addcmul(self, t1, t2, v)  = self + (v * t1) * t2
//   addcdiv(self, t1, t2, v)  = self + (v * t1) / t2
// torch.optim.Adam/AdamW reach exactly these three beyond the table's elementwise rows.
//   any(x, dims) = amax(x != 0, dims),  all(x, dims) = amin(x != 0, dims)   (exact; bool out,
//   uint8 for uint8 input, as torch; an empty input is reduced on the CPU: there is no data)
#include <ATen/core/Tensor.h>
#include <ATen/ops/add.h>
#include <ATen/ops/all.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/amin.h>
#include <ATen/ops/any.h>
#include <ATen/ops/ne.h>
#include <ATen/ops/div.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/sub.h>
#include <torch/library.h>

#include <cmath>
#include <vector>

namespace vkml::aten {
namespace {

// Writes r into out (resizing an out= tensor as torch does) and returns out.
at::Tensor& into(at::Tensor& out, const at::Tensor& r) {
  if (out.sizes() != r.sizes()) out.resize_(r.sizes());
  return out.copy_(r);
}

at::Tensor lerp(const at::Tensor& self, const at::Tensor& end, const c10::Scalar& weight) {
  TORCH_CHECK(self.scalar_type() == end.scalar_type(), "expected dtype ", self.scalar_type(),
              " for `end` but got dtype ", end.scalar_type());
  TORCH_CHECK(c10::isFloatingType(self.scalar_type()), "lerp: expected a floating point tensor, got ",
              self.scalar_type());
  const double w = weight.toDouble();
  // torch's opmath: float for float16/bfloat16/float32, double for float64
  const bool f64 = self.scalar_type() == c10::ScalarType::Double;
  const double w1 = f64 ? 1.0 - w : double(1.0f - float(w));
  at::Tensor diff = at::sub(end, self);
  return std::fabs(w) < 0.5 ? at::add(self, diff, weight) : at::sub(end, diff, w1);
}
at::Tensor& lerp_(at::Tensor& self, const at::Tensor& end, const c10::Scalar& weight) {
  return into(self, lerp(self, end, weight));
}
at::Tensor& lerp_out(const at::Tensor& self, const at::Tensor& end, const c10::Scalar& weight, at::Tensor& out) {
  return into(out, lerp(self, end, weight));
}

at::Tensor addcmul(const at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2, const c10::Scalar& value) {
  return at::add(self, at::mul(at::mul(t1, value), t2));
}
at::Tensor& addcmul_(at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2, const c10::Scalar& value) {
  return into(self, addcmul(self, t1, t2, value));
}
at::Tensor& addcmul_out(const at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2, const c10::Scalar& value,
                        at::Tensor& out) {
  return into(out, addcmul(self, t1, t2, value));
}

at::Tensor addcdiv(const at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2, const c10::Scalar& value) {
  TORCH_CHECK(!(c10::isIntegralType(t1.scalar_type(), true) && c10::isIntegralType(t2.scalar_type(), true)),
              "Integer division with addcdiv is no longer supported, and in a future release addcdiv will "
              "perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented "
              "as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as "
              "(input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter "
              "implementation: (input + value * tensor1 / tensor2), for all dtypes.");
  return at::add(self, at::div(at::mul(t1, value), t2));
}
at::Tensor& addcdiv_(at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2, const c10::Scalar& value) {
  return into(self, addcdiv(self, t1, t2, value));
}
at::Tensor& addcdiv_out(const at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2, const c10::Scalar& value,
                        at::Tensor& out) {
  return into(out, addcdiv(self, t1, t2, value));
}

// any / all over `dims` (all dims when absent): the max / min of x != 0.
at::Tensor any_all(const at::Tensor& self, at::OptionalIntArrayRef dims, bool keepdim, bool is_all) {
  TORCH_CHECK(self.scalar_type() != c10::ScalarType::ComplexFloat && self.scalar_type() != c10::ScalarType::ComplexDouble,
              "vkml: any/all of complex tensors are not supported");
  const c10::ScalarType rt = self.scalar_type() == c10::ScalarType::Byte ? c10::ScalarType::Byte : c10::ScalarType::Bool;
  if (self.numel() == 0) {  // no data to move: torch's CPU kernel gives the shape and the identity
    const at::Tensor cpu = at::empty(self.sizes(), self.options().device(c10::kCPU));
    at::Tensor r = is_all ? at::all(cpu, dims, keepdim) : at::any(cpu, dims, keepdim);
    return r.to(self.device());
  }
  const at::Tensor nz = at::ne(self, 0);
  const std::vector<int64_t> d = dims ? dims->vec() : std::vector<int64_t>{};
  at::Tensor r = is_all ? at::amin(nz, d, keepdim) : at::amax(nz, d, keepdim);
  return r.scalar_type() == rt ? r : r.to(rt);
}

at::Tensor any_(const at::Tensor& self) { return any_all(self, std::nullopt, false, false); }
at::Tensor all_(const at::Tensor& self) { return any_all(self, std::nullopt, false, true); }
at::Tensor any_dim(const at::Tensor& self, int64_t dim, bool keepdim) {
  return any_all(self, c10::IntArrayRef(dim), keepdim, false);
}
at::Tensor all_dim(const at::Tensor& self, int64_t dim, bool keepdim) {
  return any_all(self, c10::IntArrayRef(dim), keepdim, true);
}
at::Tensor any_dims(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim) {
  return any_all(self, dim, keepdim, false);
}
at::Tensor all_dims(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim) {
  return any_all(self, dim, keepdim, true);
}
at::Tensor& any_all_out(const at::Tensor& self, at::Tensor& out) { return into(out, any_(self)); }
at::Tensor& all_all_out(const at::Tensor& self, at::Tensor& out) { return into(out, all_(self)); }
at::Tensor& any_out(const at::Tensor& self, int64_t dim, bool keepdim, at::Tensor& out) {
  return into(out, any_dim(self, dim, keepdim));
}
at::Tensor& all_out(const at::Tensor& self, int64_t dim, bool keepdim, at::Tensor& out) {
  return into(out, all_dim(self, dim, keepdim));
}
at::Tensor& any_dims_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim, at::Tensor& out) {
  return into(out, any_dims(self, dim, keepdim));
}
at::Tensor& all_dims_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim, at::Tensor& out) {
  return into(out, all_dims(self, dim, keepdim));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("any", TORCH_FN(any_));
  m.impl("all", TORCH_FN(all_));
  m.impl("any.dim", TORCH_FN(any_dim));
  m.impl("all.dim", TORCH_FN(all_dim));
  m.impl("any.dims", TORCH_FN(any_dims));
  m.impl("all.dims", TORCH_FN(all_dims));
  m.impl("any.all_out", TORCH_FN(any_all_out));
  m.impl("all.all_out", TORCH_FN(all_all_out));
  m.impl("any.out", TORCH_FN(any_out));
  m.impl("all.out", TORCH_FN(all_out));
  m.impl("any.dims_out", TORCH_FN(any_dims_out));
  m.impl("all.dims_out", TORCH_FN(all_dims_out));
  m.impl("lerp.Scalar", TORCH_FN(lerp));
  m.impl("lerp_.Scalar", TORCH_FN(lerp_));
  m.impl("lerp.Scalar_out", TORCH_FN(lerp_out));
  m.impl("addcmul", TORCH_FN(addcmul));
  m.impl("addcmul_", TORCH_FN(addcmul_));
  m.impl("addcmul.out", TORCH_FN(addcmul_out));
  m.impl("addcdiv", TORCH_FN(addcdiv));
  m.impl("addcdiv_", TORCH_FN(addcdiv_));
  m.impl("addcdiv.out", TORCH_FN(addcdiv_out));
}

}  // namespace vkml::aten
