// Table-driven registration: every overload named in graph/ops.def gets a boxed kernel that knows
// its row. Adding an op never touches this file.
#include <torch/library.h>

#include <memory>

#include "aten/call.h"
#include "aten/kernels.h"

namespace vkml::aten {
namespace {

Kernel kernel_for(Kind k) {
  switch (family_of(k)) {
    case Family::elementwise: return &elementwise_kernel;
    case Family::reduce: return &reduce_kernel;
    case Family::gemm: return &gemm_kernel;
    case Family::softmax: return &softmax_kernel;
    case Family::nll: return &nll_kernel;
    case Family::transfer: return nullptr;
  }
  return nullptr;
}

struct RowKernel final : c10::OperatorKernel {
  RowKernel(OpId id, Kernel fn) : id(id), fn(fn) {}
  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
    Call c(op, stack);
    fn(id, c);
  }
  OpId id;
  Kernel fn;
};

void register_row(torch::Library& m, OpId id, std::initializer_list<const char*> overloads) {
  Kernel fn = kernel_for(op_info(id).kind);
  for (const char* name : overloads)
    m.impl(name, torch::CppFunction::makeFromBoxedKernel(
                     c10::BoxedKernel::makeFromFunctor(std::make_unique<RowKernel>(id, fn))));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
#define OP(NAME, KIND, OPCODE, ORACLE, DTYPES, TOL, ...) register_row(m, OpId::NAME, {__VA_ARGS__});
#include "graph/ops.def"
#undef OP
}

}  // namespace vkml::aten
