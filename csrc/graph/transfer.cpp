#include "graph/node.h"

namespace vkml {

Node transfer_node(uint64_t dst, uint64_t src, size_t bytes) {
  Node n;
  n.op = OpId::transfer;
  n.nout = 1;
  n.nin = 1;
  n.compute = DType::u8;
  n.args = TransferArgs{};
  for (int i = 0; i < 2; ++i) {
    n.t[i].dtype = DType::u8;
    n.t[i].ndim = 1;
    n.t[i].sizes[0] = int64_t(bytes);
    n.t[i].strides[0] = 1;
  }
  n.t[TransferArgs::dst].addr = dst;
  n.t[TransferArgs::src].addr = src;
  return n;
}

}  // namespace vkml
