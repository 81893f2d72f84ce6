// Ops composed of table rows: each step is a recorded node (checked by the oracle one by one), in
// the evaluation order of torch's CPU kernel, so float32 results match it up to fused
// multiply-adds (which torch's vectorised loops use and these nodes do not).
//   lerp(self, end, w)        = |w| < 0.5 ? self + w * (end - self) : end - (end - self) * (1 - w)
//   addcmul(self, t1, t2, v)  = self + (v * t1) * t2
//   addcdiv(self, t1, t2, v)  = self + (v * t1) / t2
// torch.optim.Adam/AdamW reach exactly these three beyond the table's elementwise rows.
#include <ATen/core/Tensor.h>
#include <ATen/ops/add.h>
#include <ATen/ops/div.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/sub.h>
#include <torch/library.h>

#include <cmath>

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

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
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
