// One recorded op: what to compute, on which tensors, with which parameters. Backend-neutral:
// the Vulkan backend lowers it to dispatches, the CPU oracle interprets it.
//
// Operands are t[0..nout) outputs then t[nout..nout+nin) inputs; which slot is which is named by
// the family's argument struct (graph/families/<family>.h), e.g. t[GemmArgs::bias]. An absent
// optional operand has addr 0. The family's parameters live in `args` (a std::variant over every
// family's struct, generated from the families present), read with n.as<GemmArgs>().
#pragma once
#include <cstdint>
#include <variant>

#include "core/desc.h"
#include "families.h"  // generated: every graph/families/<family>.h and VKML_FAMILIES
#include "graph/op.h"

namespace vkml {

using Args = std::variant<std::monostate
#define VKML_ARGS_ALT(name, A) , A
                          VKML_FAMILIES(VKML_ARGS_ALT)
#undef VKML_ARGS_ALT
                          >;

struct Node {
  OpId op = OpId::count_;
  uint8_t nout = 0, nin = 0;
  DType compute = DType::f32;  // the dtype the op computes in (after promotion); the shader variant
  int64_t reduction = 1;       // terms behind one output element: tolerance bounds grow with it
  TensorDesc t[kMaxOperands];
  Args args;

  template <class A> A& as() { return std::get<A>(args); }
  template <class A> const A& as() const { return std::get<A>(args); }
  const TensorDesc& operator[](int slot) const { return t[slot]; }
  TensorDesc& operator[](int slot) { return t[slot]; }
};

// Whether a family's nodes touch memory only through their operands (t[0..nout) written, the rest
// read), so that the backend can order them by what they touch (no barrier between independent
// nodes). A family says so with `static constexpr bool kOperandsOnly = true;` in its argument
// struct; others (scratch or records addressed from their args) are ordered against everything.
template <class A>
constexpr bool kOperandsOnlyOf = requires { A::kOperandsOnly; };

inline bool operands_only(Family f) {
  static constexpr bool table[] = {
#define VKML_OPERANDS_ONLY(name, A) kOperandsOnlyOf<A>,
      VKML_FAMILIES(VKML_OPERANDS_ONLY)
#undef VKML_OPERANDS_ONLY
  };
  return table[unsigned(f)];
}

}  // namespace vkml
