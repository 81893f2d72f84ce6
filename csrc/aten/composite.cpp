// Ops composed of table rows: each step is a recorded node (checked by the oracle one by one), in
// the evaluation order of torch's CPU kernel, so float32 results match it up to fused
// multiply-adds (which torch's vectorised loops use and these nodes do not).
//   pow(x, e) for e in {0, 1, 2, 3, 0.5, -0.5, -1, -2}: ones, copy, x*x, x*x*x, sqrt, rsqrt,
//   reciprocal, 1/(x*x), as torch's CPU kernel special-cases them (float16 in float32 rounded
//   once, bfloat16 step by step, as torch); other exponents raise (a general pow row needs its
//   own tolerance).
//   mse_loss = reduce((self - target)^2), backward = (self - target) * norm * grad (torch's order)
//   isposinf(x) = x == inf, isneginf(x) = x == -inf   (exact; bool; integer and bool inputs compare
//   as float and give false, as torch's; nn.MultiheadAttention's mask checks reach isneginf)
//   gelu(x) = (x * 0.5) * (1 + erf(x * sqrt(1/2))), 'tanh': (0.5 * x) * (1 + tanh(kBeta * (x + kKappa * x^3)))
//   and gelu_backward, in the order of torch's CPU kernel (GeluKernel.cpp); float16 and bfloat16
//   in float32, rounded once, as it does
//   any(x, dims) = amax(x != 0, dims),  all(x, dims) = amin(x != 0, dims)   (exact; bool out,
//   uint8 for uint8 input, as torch; an empty input is reduced on the CPU: there is no data)
#include <ATen/core/Tensor.h>
#include <ATen/ops/add.h>
#include <ATen/ops/all.h>
#include <ATen/ops/copy.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/amin.h>
#include <ATen/ops/any.h>
#include <ATen/ops/eq.h>
#include <ATen/ops/erf.h>
#include <ATen/ops/exp.h>
#include <ATen/ops/tanh.h>
#include <ATen/ops/ne.h>
#include <ATen/ops/mean.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/reciprocal.h>
#include <ATen/ops/result_type.h>
#include <ATen/ops/neg.h>
#include <ATen/ops/rsqrt.h>
#include <ATen/ops/sqrt.h>
#include <ATen/ops/sum.h>
#include <ATen/core/Reduction.h>
#include <ATen/ops/div.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/sub.h>
#include <torch/library.h>

#include <cmath>
#include <vector>

#include "aten/common.h"
#include "aten/composite.h"

namespace vkml::aten {
namespace {

at::Tensor pow_scalar(const at::Tensor& self, const c10::Scalar& exponent) {
  const c10::ScalarType rt = at::result_type(self, exponent);
  const double e = exponent.toDouble();
  TORCH_CHECK(!(c10::isIntegralType(rt, true) && exponent.isIntegral(true) && exponent.toLong() < 0),
              "Integers to negative integer powers are not allowed.");
  // torch CPU (2.13): float16 computes these in float32 and rounds once; bfloat16 rounds each step.
  const bool narrow = rt == c10::ScalarType::Half;
  at::Tensor x = self.to(narrow ? c10::ScalarType::Float : rt);
  at::Tensor r;
  if (e == 0) r = at::ones_like(x);
  else if (e == 1) r = x.clone();
  else if (e == 2) r = at::mul(x, x);
  else if (e == 3) r = at::mul(at::mul(x, x), x);
  else if (e == 0.5) r = at::sqrt(x);
  else if (e == -0.5) r = at::rsqrt(x);
  else if (e == -1) r = at::reciprocal(x);
  else if (e == -2) r = at::reciprocal(at::mul(x, x));
  else
    TORCH_CHECK_NOT_IMPLEMENTED(false, "vkml: pow with exponent ", exponent,
                                " is not implemented yet (exponents 0, 1, 2, 3, 0.5, -0.5, -1 and -2 are); "
                                "set VKML_CPU_FALLBACK=1 to run it on the CPU");
  return r.scalar_type() == rt ? r : r.to(rt);
}

at::Tensor mse_loss(const at::Tensor& self, const at::Tensor& target, int64_t reduction) {
  const at::Tensor d = at::sub(self, target);
  const at::Tensor sq = at::mul(d, d);
  if (reduction == at::Reduction::Mean) return at::mean(sq);
  if (reduction == at::Reduction::Sum) return at::sum(sq);
  return sq;
}
at::Tensor mse_loss_backward(const at::Tensor& grad, const at::Tensor& self, const at::Tensor& target,
                             int64_t reduction) {
  const double norm = reduction == at::Reduction::Mean ? 2. / double(self.numel()) : 2.;
  return at::mul(at::mul(at::sub(self, target), norm), grad);
}

// GELU. Torch computes float16 and bfloat16 in float32 and rounds once; so do these.
constexpr double kSqrt1_2 = 0.70710678118654752440, kTanhBeta = 0.79788456080286535588;  // sqrt(2/pi)
constexpr double kTanhKappa = 0.044715, kPdfBeta = 0.39894228040143267794;  // 1/sqrt(2 pi)
bool gelu_tanh(c10::string_view approximate) {
  TORCH_CHECK(approximate == "none" || approximate == "tanh", "approximate argument must be either none or tanh.");
  return approximate == "tanh";
}
// kBeta * (x + kKappa * x^3), the tanh form's argument, with x_sq = x * x
at::Tensor gelu_tanh_inner(const at::Tensor& x, const at::Tensor& x_sq) {
  return at::mul(at::add(x, at::mul(at::mul(x_sq, x), kTanhKappa)), kTanhBeta);
}
c10::ScalarType gelu_compute(const at::Tensor& x) {
  TORCH_CHECK(at::isFloatingType(x.scalar_type()), "\"GeluKernelImpl\" not implemented for '", x.scalar_type(), "'");
  return at::isReducedFloatingType(x.scalar_type()) ? c10::ScalarType::Float : x.scalar_type();
}
at::Tensor gelu(const at::Tensor& self, c10::string_view approximate) {
  const bool tanh_form = gelu_tanh(approximate);
  const at::Tensor x = self.to(gelu_compute(self));
  at::Tensor r;
  if (tanh_form) {  // 0.5 * x * (1 + tanh(kBeta * (x + kKappa * x * x * x)))
    r = at::mul(at::mul(x, 0.5), at::add(at::tanh(gelu_tanh_inner(x, at::mul(x, x))), 1));
  } else {  // x * 0.5 * (1 + erf(x * kAlpha))
    r = at::mul(at::mul(x, 0.5), at::add(at::erf(at::mul(x, kSqrt1_2)), 1));
  }
  return r.scalar_type() == self.scalar_type() ? r : r.to(self.scalar_type());
}
at::Tensor gelu_backward(const at::Tensor& grad, const at::Tensor& self, c10::string_view approximate) {
  const bool tanh_form = gelu_tanh(approximate);
  const c10::ScalarType rt = at::result_type(grad, self);
  const at::Tensor x = self.to(gelu_compute(self)), dy = grad.to(x.scalar_type());
  at::Tensor r;
  if (tanh_form) {
    const at::Tensor x_sq = at::mul(x, x);
    const at::Tensor t = at::tanh(gelu_tanh_inner(x, x_sq));
    const at::Tensor left = at::mul(x, 0.5), right = at::add(t, 1);
    const at::Tensor left_derivative = at::mul(right, 0.5);
    // 1 - t*t as (1 - t)(1 + t): no cancellation where t is near +-1 (the tanh_backward row's form)
    const at::Tensor tanh_derivative = at::mul(at::add(at::neg(t), 1), right);
    const at::Tensor inner_derivative = at::mul(at::add(at::mul(x_sq, 3 * kTanhKappa), 1), kTanhBeta);
    const at::Tensor right_derivative = at::mul(at::mul(left, tanh_derivative), inner_derivative);
    r = at::mul(dy, at::add(left_derivative, right_derivative));
  } else {  // dy * (cdf + x * pdf), cdf = 0.5 * (1 + erf(x * kAlpha)), pdf = kBeta * exp(x * x * -0.5)
    const at::Tensor cdf = at::mul(at::add(at::erf(at::mul(x, kSqrt1_2)), 1), 0.5);
    const at::Tensor pdf = at::mul(at::exp(at::mul(at::mul(x, x), -0.5)), kPdfBeta);
    r = at::mul(dy, at::add(cdf, at::mul(x, pdf)));
  }
  return r.scalar_type() == rt ? r : r.to(rt);
}

at::Tensor isinf_signed(const at::Tensor& self, bool negative) {
  TORCH_CHECK(!self.is_complex(), negative ? "isneginf" : "isposinf", " does not support complex inputs.");
  return at::eq(self, negative ? -INFINITY : INFINITY);
}
at::Tensor isposinf(const at::Tensor& self) { return isinf_signed(self, false); }
at::Tensor isneginf(const at::Tensor& self) { return isinf_signed(self, true); }
// out=: bool only, as torch's structured kernels check (the derived out= would cast)
at::Tensor& isinf_signed_out(const at::Tensor& self, at::Tensor& out, bool negative) {
  TORCH_CHECK(!self.is_complex(), negative ? "isneginf" : "isposinf", " does not support complex inputs.");
  TORCH_CHECK(out.scalar_type() == c10::ScalarType::Bool, negative ? "isneginf" : "isposinf",
              " does not support non-boolean outputs.");
  return at::eq_out(out, self, negative ? -INFINITY : INFINITY);
}
at::Tensor& isposinf_out(const at::Tensor& self, at::Tensor& out) { return isinf_signed_out(self, out, false); }
at::Tensor& isneginf_out(const at::Tensor& self, at::Tensor& out) { return isinf_signed_out(self, out, true); }

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

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  // functional body, then the in-place and out= overloads derived from it (aten/composite.h)
  composite<pow_scalar>(m, "pow.Tensor_Scalar", {"pow_.Scalar", "pow.Tensor_Scalar_out"});
  composite<mse_loss>(m, "mse_loss", {"mse_loss.out"});
  composite<mse_loss_backward>(m, "mse_loss_backward", {"mse_loss_backward.grad_input"});
  composite<any_>(m, "any", {"any.all_out"});
  composite<all_>(m, "all", {"all.all_out"});
  composite<any_dim>(m, "any.dim", {"any.out"});
  composite<all_dim>(m, "all.dim", {"all.out"});
  composite<any_dims>(m, "any.dims", {"any.dims_out"});
  composite<all_dims>(m, "all.dims", {"all.dims_out"});
  composite<gelu>(m, "gelu", {"gelu_", "gelu.out"});
  composite<gelu_backward>(m, "gelu_backward", {"gelu_backward.grad_input"});
  composite<isposinf>(m, "isposinf", {});
  composite<isneginf>(m, "isneginf", {});
  m.impl("isposinf.out", TORCH_FN(isposinf_out));
  m.impl("isneginf.out", TORCH_FN(isneginf_out));
}

}  // namespace vkml::aten

namespace vkml::aten {

void DerivedKernel::operator()(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* s) {
  if (tracing()) trace(op, Path::composite);
  OnDevice on(stack_device(op, *s));
  if (!handle) {
    const auto dot = functional.find('.');
    const std::string name = "aten::" + functional.substr(0, dot);
    handle = c10::Dispatcher::singleton().findSchemaOrThrow(
        name.c_str(), dot == std::string::npos ? "" : functional.c_str() + dot + 1);
  }
  const auto& args = op.schema().arguments();
  const size_t n = args.size(), base = s->size() - n;
  size_t nout = 0;
  while (nout < n && args[n - 1 - nout].is_out()) ++nout;
  std::vector<at::Tensor> dst;
  if (nout) {
    for (size_t i = n - nout; i < n; ++i) dst.push_back((*s)[base + i].toTensor());
    s->resize(base + n - nout);
  } else {
    dst.push_back((*s)[base].toTensor());  // in place: self
  }
  handle->callBoxed(s);
  const size_t nres = s->size() - base;
  TORCH_CHECK(nres == dst.size(), "vkml: ", op.schema().name(), ": ", functional, " returned ", nres,
              " results for ", dst.size(), " destination(s)");
  for (size_t i = 0; i < dst.size(); ++i) {
    const at::Tensor r = (*s)[base + i].toTensor();
    if (dst[i].device() != r.device()) wrong_device(dst[i]);  // as torch's out= kernels
    TORCH_CHECK(c10::canCast(r.scalar_type(), dst[i].scalar_type()), "result type ", r.scalar_type(),
                " can't be cast to the desired output type ", dst[i].scalar_type());
    into(dst[i], r);
  }
  s->resize(base);
  for (auto& t : dst) s->emplace_back(t);
}

}  // namespace vkml::aten
