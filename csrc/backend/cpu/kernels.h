// What every oracle family file shares: the node-function signature and the backward-error scale.
#pragma once
#include <cstdint>
#include <vector>

#include "graph/node.h"
#include "util/result.h"

namespace vkml::cpu {

// Whether node n wants a backward-error scale vector (tolerance kind of its op).
inline bool wants_scale(const Node& n, const std::vector<double>* scale) {
  return scale && op_info(n.op).tol.kind == TolKind::backward;
}

}  // namespace vkml::cpu
