// The transfer family: a byte copy between two vkml buffers (uploads and downloads go through
// host-visible staging buffers). Not lowered to a shader: the backend records a buffer copy.
#pragma once
#include <cstddef>

#include "graph/families/args.h"

namespace vkml {

struct TransferArgs {
  enum Operand : uint8_t { dst, src };  // 1-d uint8 byte ranges of equal size
  static constexpr bool kOperandsOnly = true;  // graph/node.h operands_only()
};

struct Node;
// The one transfer node: `bytes` bytes from src to dst (graph/transfer.cpp).
Node transfer_node(uint64_t dst, uint64_t src, size_t bytes);

}  // namespace vkml
