// The norm family's oracle (backend/cpu/norm.cpp), bound to rows by their ORACLE column.
#pragma once
#include "backend/cpu/kernels.h"

namespace vkml::cpu {

// Layer / group / batch norm forward and backward (graph/families/norm.h), in long double.
// Scales: for every present output in slot order, one entry per element (row-major): the
// first-order bound of the shader's rounding error there, in units of the compute type's eps
// (backend/cpu/norm_bounds.h).
Result<void> or_norm(const Node& n, std::vector<double>* scale);

}  // namespace vkml::cpu
