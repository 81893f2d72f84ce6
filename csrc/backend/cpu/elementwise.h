// The elementwise family's oracle (backend/cpu/elementwise.cpp), bound to rows by their ORACLE column.
#pragma once
#include "backend/cpu/kernels.h"
#include "backend/cpu/ew_ops.h"

namespace vkml::cpu {

// An elementwise row's scalar function (ew_ops.h), instantiated for each compute type.
struct EwFns {
  float (*f32)(float, float, float);
  double (*f64)(double, double, double);
  int64_t (*i64)(int64_t, int64_t, int64_t);
};

Result<void> or_elementwise(const Node& n, std::vector<double>* scale, const EwFns& fns);

}  // namespace vkml::cpu
