// The transfer family's oracle (backend/cpu/transfer.cpp), bound to rows by their ORACLE column.
#pragma once
#include "backend/cpu/kernels.h"

namespace vkml::cpu {

Result<void> or_transfer(const Node& n, std::vector<double>* scale);

}  // namespace vkml::cpu
