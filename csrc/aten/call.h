// A boxed call as the table-driven kernels see it: arguments by schema name, results pushed back.
#pragma once
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <cstring>
#include <type_traits>

#include "graph/node.h"

namespace vkml::aten {

struct Call {
  const c10::FunctionSchema& schema;
  torch::jit::Stack* stack;
  size_t base;  // index of the first argument on the stack

  // Bit i: stack[base + i] is a borrowed tensor, one that holds no reference of its own (the
  // unboxed kernels of aten/registry.cpp put their tensor arguments on the stack so: copying them
  // in and out costs torch 2.13 a GIL round trip each, PyObject preservation). ret() and
  // release() let go of those without dropping a reference; a result that is one of them (an
  // in-place op's self) is pushed borrowed as well, and the caller lets go of it (release()).
  uint64_t borrowed = 0;

  Call(const c10::OperatorHandle& op, torch::jit::Stack* s)
      : schema(op.schema()), stack(s), base(s->size() - op.schema().arguments().size()) {}

  // Runs several times per recorded op: compare the first character before the whole name
  // (std::string == const char* measures the literal first).
  int index(const char* name) const {
    const auto& args = schema.arguments();
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i].name();
      if (a[0] == name[0] && std::strcmp(a.c_str(), name) == 0) return int(i);
    }
    return -1;
  }
  const c10::IValue& arg(int i) const { return (*stack)[base + size_t(i)]; }
  bool has(const char* name) const {
    int i = index(name);
    return i >= 0 && !arg(i).isNone();
  }
  const c10::IValue& operator[](const char* name) const {
    int i = index(name);
    TORCH_INTERNAL_ASSERT(i >= 0, "vkml: ", schema.name(), " has no argument ", name);
    return arg(i);
  }
  // The argument itself, not a copy (no reference count traffic): valid until ret().
  const at::Tensor& tensor(const char* name) const { return (*this)[name].toTensor(); }
  bool inplace() const { return !schema.name().empty() && schema.name().back() == '_'; }
  // The out= tensor (first write-aliased keyword argument), or an undefined tensor.
  at::Tensor out() const {
    const auto& args = schema.arguments();
    for (size_t i = 0; i < args.size(); ++i)
      if (args[i].is_out()) return arg(int(i)).toTensor();
    return {};
  }
  // Pops the arguments and pushes the results. The results are taken first: they may refer to
  // the arguments (c.ret(c.tensor("self")), or a result borrowing an out= argument).
  template <class... T>
  void ret(T&&... results) {
    if constexpr (sizeof...(T) == 0) {
      release();
      stack->resize(base);
    } else {
      uint64_t mask = 0;
      int k = 0;
      c10::IValue r[] = {result(std::forward<T>(results), k++, mask)...};
      release();
      stack->resize(base);
      for (auto& v : r) stack->push_back(std::move(v));
      borrowed = mask;
    }
  }
  // Lets go of the borrowed entries (they become None; no reference is dropped).
  void release() {
    for (size_t i = 0; borrowed; ++i, borrowed >>= 1)
      if (borrowed & 1) c10::MaybeOwnedTraits<c10::IValue>::destroyBorrow((*stack)[base + i]);
  }

 private:
  // A result as it goes on the stack: borrowed where it is a borrowed argument's tensor.
  template <class T>
  c10::IValue result(T&& v, int k, uint64_t& mask) const {
    if constexpr (std::is_same_v<std::decay_t<T>, at::Tensor>) {
      if (borrowed && v.defined())
        for (size_t i = 0, b = borrowed; b; ++i, b >>= 1)
          if ((b & 1) && (*stack)[base + i].unsafeToTensorImpl() == v.unsafeGetTensorImpl()) {
            mask |= uint64_t(1) << k;
            return c10::IValue(c10::MaybeOwnedTraits<at::Tensor>::createBorrow(v));
          }
    }
    return c10::IValue(std::forward<T>(v));
  }
};

using Kernel = void (*)(OpId, Call&);

// Writes r into an out= tensor (resizing it as torch's out= kernels do) and returns out: the one
// way results reach out= tensors (ret_result, composites' derived overloads, nll's two outputs).
inline at::Tensor& into(at::Tensor& out, const at::Tensor& r) {
  if (out.sizes() != r.sizes()) out.resize_(r.sizes());
  return out.copy_(r);
}

[[noreturn]] void wrong_device(const at::TensorBase& t);  // aten/common.h

// torch's structured out= kernels take an out tensor of the result's dtype only (their resize_out).
inline void check_out_dtype(const at::Tensor& out, const at::Tensor& result) {
  TORCH_CHECK(out.scalar_type() == result.scalar_type(), "Expected out tensor to have dtype ", result.dtype(),
              ", but got ", out.dtype(), " instead");
}

// Returns `result` through the out= tensor when there is one (on the result's device and of its
// dtype, as torch's structured out= kernels require); else returns `result` itself.
inline void ret_result(Call& c, const at::Tensor& result) {
  at::Tensor out = c.out();
  if (!out.defined()) return c.ret(result);
  if (out.device() != result.device()) wrong_device(out);  // as torch's out= kernels
  check_out_dtype(out, result);
  c.ret(into(out, result));
}

inline Scalar to_scalar(const c10::Scalar& v) {
  Scalar s;
  s.f = v.toDouble();
  s.i = v.isFloatingPoint() ? int64_t(s.f) : v.toLong();
  return s;
}

}  // namespace vkml::aten
