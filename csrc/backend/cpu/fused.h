// The fused family's oracle (backend/cpu/fused.cpp), bound to rows by their ORACLE column.
#pragma once
#include "backend/cpu/kernels.h"

namespace vkml::cpu {

Result<void> or_fused(const Node& n, std::vector<double>* scale);

}  // namespace vkml::cpu
