// fused: not run as one node by the oracle. Check mode checks each step of a fused node against
// its original row's oracle (dispatch/check_fused.cpp), which is where the tolerances are.
#include "backend/cpu/access.h"
#include "backend/cpu/fused.h"

namespace vkml::cpu {

Result<void> or_fused(const Node& n, std::vector<double>*) {
  return node_error(Err::invalid, n, "a fused node is checked step by step, against each step's own row");
}

}  // namespace vkml::cpu
