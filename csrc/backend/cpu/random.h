// The random family's oracle (backend/cpu/random.cpp), bound to rows by their ORACLE column.
#pragma once
#include "backend/cpu/kernels.h"

namespace vkml::cpu {

Result<void> or_random(const Node& n, std::vector<double>* scale);

}  // namespace vkml::cpu
