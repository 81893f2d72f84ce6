// The oracle's node functions, one per op family; oracle.cpp binds ops.def rows to them.
#pragma once
#include <cstdint>
#include <vector>

#include "graph/node.h"
#include "util/result.h"

namespace vkml::cpu {

// An elementwise row's scalar function (ew_ops.h), instantiated for each compute type.
struct EwFns {
  float (*f32)(float, float, float);
  double (*f64)(double, double, double);
  int64_t (*i64)(int64_t, int64_t, int64_t);
};

Result<void> or_elementwise(const Node& n, std::vector<double>* scale, const EwFns& fns);
Result<void> or_reduce(const Node& n, std::vector<double>* scale);
Result<void> or_gemm(const Node& n, std::vector<double>* scale);
Result<void> or_softmax(const Node& n, std::vector<double>* scale);
Result<void> or_nll(const Node& n, std::vector<double>* scale);
Result<void> or_transfer(const Node& n, std::vector<double>* scale);

// Whether node n wants a backward-error scale vector (tolerance kind of its op).
inline bool wants_scale(const Node& n, const std::vector<double>* scale) {
  return scale && op_info(n.op).tol.kind == TolKind::backward;
}

}  // namespace vkml::cpu
