// The elementwise family's oracle (backend/cpu/elementwise.cpp), bound to rows by their ORACLE column.
#pragma once
#include "backend/cpu/kernels.h"
#include "backend/cpu/ew_ops.h"

namespace vkml::cpu {

// An elementwise row's scalar function (ew_ops.h), instantiated for each compute type:
// fn(a, b, s, old), s the scalar s0 and old the output's previous value (0 unless reads_out).
// ew_ops.h's functions that do not read old take (a, b, s); oracle.cpp adapts them.
struct EwFns {
  float (*f32)(float, float, float, float);
  double (*f64)(double, double, double, double);
  int64_t (*i64)(int64_t, int64_t, int64_t, int64_t);
};

Result<void> or_elementwise(const Node& n, std::vector<double>* scale, const EwFns& fns);

}  // namespace vkml::cpu
