// Op identities, kinds and tolerances, expanded from the op table (graph/ops.def).
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace vkml {

// What the aten layer does with an op, and which shader family runs it.
enum class Kind : uint8_t {
  K_FILL, K_COPY, K_UNARY, K_UNARY_FLOAT, K_BINARY, K_BINARY_FLOAT, K_COMPARE, K_THRESHOLD_BWD, K_GRAD_BWD, K_MASKED_FILL, K_CLAMP, K_WHERE,
  K_REDUCE, K_ARGREDUCE, K_GEMM, K_SOFTMAX, K_SOFTMAX_BWD, K_NLL, K_NLL_BWD, K_TRANSFER,
};
using enum Kind;

enum class Family : uint8_t { elementwise, reduce, gemm, softmax, nll, transfer };

constexpr Family family_of(Kind k) {
  switch (k) {
    case K_REDUCE: case K_ARGREDUCE: return Family::reduce;
    case K_GEMM: return Family::gemm;
    case K_SOFTMAX: case K_SOFTMAX_BWD: return Family::softmax;
    case K_NLL: case K_NLL_BWD: return Family::nll;
    case K_TRANSFER: return Family::transfer;
    default: return Family::elementwise;
  }
}

// How far a GPU result may be from the oracle's. Bounds are per element; see docs/tolerances.md.
enum class TolKind : uint8_t {
  exact,     // same bits (any NaN matches any NaN)
  ulp,       // |got - ref| <= bound units in the last place of the output dtype
  rel,       // |got - ref| <= bound * |ref|  (+1 ulp of a narrower output dtype)
  backward,  // |got - ref| <= bound * eps(compute) * scale, scale from the oracle (e.g. sum |x_i|)
};

struct Tol {
  TolKind kind;
  double bound;
  const char* why;
};

inline const char* tol_kind_name(TolKind k) {
  switch (k) {
    case TolKind::exact: return "exact";
    case TolKind::ulp: return "ulp";
    case TolKind::rel: return "relative";
    case TolKind::backward: return "backward-error";
  }
  return "?";
}

#define TOL_EXACT Tol{TolKind::exact, 0, "correctly rounded in IEEE arithmetic on both sides"}
#define TOL_DIV Tol{TolKind::ulp, 3, "Vulkan allows OpFDiv 2.5 ulp"}
#define TOL_SQRT Tol{TolKind::ulp, 3, "Vulkan allows sqrt as 1/inversesqrt: 2.5 ulp"}
#define TOL_EXP Tol{TolKind::rel, 1.1e-5, "Vulkan allows exp 3+2|x| ulp; |x|<=88 gives <=179 ulp = 1.07e-5"}
#define TOL_RSQRT Tol{TolKind::ulp, 7, "1/sqrt(x): sqrt within 3 ulp, then OpFDiv 2.5 ulp; relative errors add, +1 for ulp steps at powers of 2"}
#define TOL_SIGMOID Tol{TolKind::rel, 1.2e-5, "1/(1+exp(-x)): exp's 1.07e-5 scaled by exp(-x)/(1+exp(-x)) < 1, plus OpFDiv 2.5 ulp"}
#define TOL_LOG Tol{TolKind::backward, 8, "Vulkan allows log 3 ulp, or 2^-21 absolute in [0.5,2]; scale=max(|ref|,1)"}
#define TOL_SUM Tol{TolKind::backward, 2, "fixed-order tree vs sequential sum: |err| <= 2*eps*(log2 n+1)*sum|x|; scale from oracle"}
#define TOL_GEMM Tol{TolKind::backward, 2, "dot products in another order: |err| <= 2*eps*(log2 k+1)*sum|a||b|; scale from oracle"}
#define TOL_SOFTMAX Tol{TolKind::backward, 16, "exp/log ulp bounds plus a reduction; scale from oracle (max|x| + log n)"}

enum class OpId : uint16_t {
#define OP(NAME, KIND, OPCODE, ORACLE, DTYPES, TOL, ...) NAME,
#include "graph/ops.def"
#undef OP
  count_
};

struct OpInfo {
  const char* name;
  Kind kind;
  uint32_t dtypes;
  Tol tol;
};

inline const OpInfo& op_info(OpId id) {
  static const OpInfo table[] = {
#define OP(NAME, KIND, OPCODE, ORACLE, DTYPES, TOL, ...) {#NAME, KIND, DTYPES, TOL},
#include "graph/ops.def"
#undef OP
  };
  return table[unsigned(id)];
}

constexpr int op_count() { return int(OpId::count_); }

}  // namespace vkml
