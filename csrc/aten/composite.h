// Composite ops: one functional body, registered with its in-place and out= overloads derived
// from it, so each op is written once:
//   composite<pow_scalar>(m, "pow.Tensor_Scalar", {"pow_.Scalar", "pow.Tensor_Scalar_out"});
// An in-place body of its own, where writing self directly saves the copy, is registered the
// same way with nothing derived: composite<f>(m, "op_", {}).
// A derived in-place overload (first argument written) runs the functional op on the same
// arguments and copies the result into self; an out= overload (trailing write-aliased arguments) runs it on the
// other arguments and writes each result into its out tensor, resized as torch's out= kernels do.
// Both check the result dtype can be cast to the destination, with torch's message.
#pragma once
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <initializer_list>
#include <memory>
#include <string>

#include "aten/devices.h"
#include "aten/trace.h"

namespace vkml::aten {

// The body, boxed so that tracing sees it.
struct CompositeKernel final : c10::OperatorKernel {
  explicit CompositeKernel(c10::KernelFunction k) : k(std::move(k)) {}
  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet ks, torch::jit::Stack* s) {
    if (tracing()) trace(op, Path::composite);
    OnDevice on(stack_device(op, *s));
    k.callBoxed(op, ks, s);
  }
  c10::KernelFunction k;
};

// An in-place or out= overload of `functional` ("lerp.Scalar").
struct DerivedKernel final : c10::OperatorKernel {
  explicit DerivedKernel(std::string functional) : functional(std::move(functional)) {}
  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet ks, torch::jit::Stack* s);
  std::string functional;
  std::optional<c10::OperatorHandle> handle;  // looked up on first call (registration order)
};

template <auto F>
void composite(torch::Library& m, const char* functional, std::initializer_list<const char*> derived) {
  m.impl(functional, torch::CppFunction::makeFromBoxedKernel(c10::BoxedKernel::makeFromFunctor(
                         std::make_unique<CompositeKernel>(c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(F))))));
  for (const char* d : derived)
    m.impl(d, torch::CppFunction::makeFromBoxedKernel(
                  c10::BoxedKernel::makeFromFunctor(std::make_unique<DerivedKernel>(functional))));
}

}  // namespace vkml::aten
