// The gemm family's oracle (backend/cpu/gemm.cpp), bound to rows by their ORACLE column.
#pragma once
#include "backend/cpu/kernels.h"

namespace vkml::cpu {

Result<void> or_gemm(const Node& n, std::vector<double>* scale);

}  // namespace vkml::cpu
