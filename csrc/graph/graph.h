// The pending graph of one device: nodes recorded in program order, not yet submitted, and what
// they keep alive until they have run (host staging buffers, mostly).
#pragma once
#include <memory>
#include <vector>

#include "graph/node.h"

namespace vkml {

struct Graph {
  std::vector<Node> nodes;
  std::vector<std::shared_ptr<void>> keepalive;  // released once the nodes have executed
  size_t staged_bytes = 0;                        // host staging held by pending uploads

  bool empty() const { return nodes.empty(); }
  void clear() {
    nodes.clear();
    keepalive.clear();
    staged_bytes = 0;
  }
};

}  // namespace vkml
