// The pending graph of one device: nodes recorded in program order, not yet submitted, and what
// they keep alive until they have run (host staging buffers, mostly).
#pragma once
#include <memory>
#include <vector>

#include "core/limits.h"
#include "graph/node.h"
#include "util/result.h"

namespace vkml {

// A device block freed while nodes were pending: nothing recorded from node `at` on can hold it.
struct Freed {
  uint64_t addr, bytes;
  size_t at;  // nodes.size() when it was freed
};

struct Graph {
  std::vector<Node> nodes;
  std::vector<Freed> freed;  // what the plan's liveness reads (plan/fuse.cpp)
  std::vector<std::shared_ptr<void>> keepalive;  // released once the nodes have executed
  size_t staged_bytes = 0;                        // host staging held by pending uploads
  double gemm_flops = 0;                          // of the pending matrix products (VKML_SUBMIT_EARLY)

  bool empty() const { return nodes.empty(); }
  void clear() {
    nodes.clear();
    freed.clear();
    keepalive.clear();
    staged_bytes = 0;
    gemm_flops = 0;
  }
};

// Rewrites a pending graph before it is submitted (the plan layer, csrc/plan/: fusion). Set by
// the layer above dispatch (aten), since dispatch and plan do not include each other.
using Planner = Result<void> (*)(Graph& g, const Limits& lim);

}  // namespace vkml
