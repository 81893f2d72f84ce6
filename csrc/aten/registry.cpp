// Table-driven registration: every overload named in the op rows gets a boxed kernel that calls
// the row's ATEN function with the row's id. Adding an op never touches this file.
#include <torch/library.h>

#include <memory>
#include <string>

#include "aten/call.h"
#include "aten/devices.h"
#include "aten/kernels.h"
#include "aten/trace.h"

namespace vkml::aten {

// Rows without overloads (copy, transfer) are reached from other kernels, never from torch.
void internal(OpId id, Call&) {
  TORCH_INTERNAL_ASSERT(false, "vkml: internal op ", op_info(id).name, " was dispatched");
}

namespace {

struct RowKernel final : c10::OperatorKernel {
  RowKernel(OpId id, Kernel fn, const char* overload)
      : id(id), fn(fn), check(torch_checks_devices(overload)), method(std::string("aten::") + overload) {}
  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
    if (tracing()) trace(op, Path::native);
    if (check) check_devices(op, *stack, method.c_str());
    OnDevice on(stack_device(op, *stack));
    Call c(op, stack);
    fn(id, c);
  }
  OpId id;
  Kernel fn;
  bool check;
  std::string method;
};

void register_row(torch::Library& m, OpId id, Kernel fn, std::initializer_list<const char*> overloads) {
  for (const char* name : overloads)
    m.impl(name, torch::CppFunction::makeFromBoxedKernel(
                     c10::BoxedKernel::makeFromFunctor(std::make_unique<RowKernel>(id, fn, name))));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
#define OP(NAME, FAMILY, ATEN, OPCODE, ORACLE, DTYPES, TOL, ...) register_row(m, OpId::NAME, &ATEN, {__VA_ARGS__});
#include "op_rows.def"
#undef OP
}

}  // namespace vkml::aten
