// The index family's oracle (backend/cpu/index.cpp), bound to rows by their ORACLE column.
#pragma once
#include "backend/cpu/kernels.h"

namespace vkml::cpu {

Result<void> or_gather(const Node& n, std::vector<double>* scale);   // index, index_select, gather
Result<void> or_put(const Node& n, std::vector<double>* scale);      // index_put, scatter
Result<void> or_count(const Node& n, std::vector<double>* scale);    // index_count
Result<void> or_accum(const Node& n, std::vector<double>* scale);    // the accumulating rows
Result<void> or_nonzero(const Node& n, std::vector<double>* scale);  // nonzero(_count), masked_select

}  // namespace vkml::cpu
