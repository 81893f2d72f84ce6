// The oracle's entry point: a switch over OpId expanded from the ORACLE column of the op rows
// (graph/families/*.def). Elementwise rows name a scalar template from ew_ops.h, instantiated here
// for float, double and int64_t; other rows name a node function declared in backend/cpu/<family>.h.
// Adding a row needs only its function.
#include "backend/cpu/oracle.h"

#include <string>
#include <type_traits>

#include "backend/cpu/access.h"
#include "oracle_families.h"  // generated: every backend/cpu/<family>.h

namespace vkml::cpu {
namespace {

// A row's scalar function with the output's old value (where, addcmul_, lerp_), or without.
template <class F, class T> T call(F f, T a, T b, T s, T old) {
  if constexpr (std::is_invocable_v<F, T, T, T, T>) return f(a, b, s, old);
  else return f(a, b, s);
}

// F: a captureless generic lambda forwarding to the row's ORACLE name. Only the branch the row's
// family selects is instantiated, so F never sees arguments its function cannot take.
template <bool Elementwise, class F>
Result<void> row(const Node& n, std::vector<double>* scale, F) {
  if constexpr (Elementwise) {
    EwFns fns{[](float a, float b, float s, float o) { return call(F{}, a, b, s, o); },
              [](double a, double b, double s, double o) { return call(F{}, a, b, s, o); },
              [](int64_t a, int64_t b, int64_t s, int64_t o) { return call(F{}, a, b, s, o); }};
    return or_elementwise(n, scale, fns);
  } else {
    return F{}(n, scale);
  }
}

}  // namespace

thread_local bool g_flush_intermediates = false;
void flush_intermediates(bool on) { g_flush_intermediates = on; }

Result<void> run(const Node& n, std::vector<double>* scale) {
  if (n.nout + n.nin > kMaxOperands)
    return fail(Err::invalid, "oracle: node has " + std::to_string(n.nout + n.nin) + " operands");
  switch (n.op) {
#define OP(NAME, FAMILY, ATEN, OPCODE, ORACLE, DTYPES, TOL, ...)                            \
  case OpId::NAME:                                                                        \
    return row<Family::FAMILY == Family::elementwise>(                                    \
        n, scale, [](auto&&... x) -> decltype(ORACLE(x...)) { return ORACLE(x...); });
#include "op_rows.def"
#undef OP
    case OpId::count_: break;
  }
  return fail(Err::unsupported, "oracle: unknown op id " + std::to_string(unsigned(n.op)));
}

}  // namespace vkml::cpu
