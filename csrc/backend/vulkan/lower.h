// Lowering: one graph node -> the dispatches that compute it on Vulkan.
#pragma once
#include <cstdint>

#include "core/limits.h"
#include "graph/node.h"
#include "util/result.h"

namespace vkml::vk {

struct Dispatch {
  char shader[32] = {};   // SPIR-V blob name, e.g. "elementwise_f32"
  int32_t opcode = 0;     // specialization constant 0 (OP_* from build/gen/op_codes.h)
  uint32_t groups[3] = {1, 1, 1};
  uint32_t pc_size = 0;
  alignas(8) uint8_t pc[128] = {};
};

constexpr int kMaxDispatchesPerNode = 4;

// Fills out[0..n) and returns n. Dispatches of one node run in order with a full barrier
// between them. Transfer nodes are not lowered: the runtime copies buffers for them.
// Fails with Err::unsupported (naming op, dtypes, sizes) when no shader can run the node.
Result<int> lower(const Node& n, const Limits& lim, Dispatch* out);

// Whether lower() can handle the node (same answer lower would give, without building it).
bool can_lower(const Node& n, const Limits& lim);

}  // namespace vkml::vk
