// The transfer family is not lowered: the backend records a buffer copy for it (backend.cpp),
// except for a copy between two device buffers, which runs as elementwise.comp's raw-bit copy
// (transfer_as_copy below): on the H100 vkCmdCopyBuffer copied 64M float32 at 0.77 TB/s, the
// shader at 2.17 (2026-12-06, docs/performance.md).
#include <string>

#include "backend/vulkan/lower.h"

namespace vkml::vk {

int lower_transfer(const Node&, const Limits&, Dispatch*, std::string& why) {
  why = "transfers are copied by the runtime, not lowered";
  return -1;
}

bool transfer_as_copy(const Node& n, Node& c) {
  const uint64_t bytes = uint64_t(n.t[TransferArgs::dst].sizes[0]);
  const uint64_t dst = n.t[TransferArgs::dst].addr, src = n.t[TransferArgs::src].addr;
  const uint64_t all = bytes | dst | src;
  const DType word = all % 8 == 0 ? DType::i64 : all % 4 == 0 ? DType::i32 : DType::u8;
  const uint64_t count = bytes / dtype_size(word);
  if (word == DType::u8 || count == 0 || count > UINT32_MAX) return false;
  using A = ElementwiseArgs;
  c = Node{};
  c.op = OpId::copy;
  c.nout = 1;
  c.nin = 1;
  c.compute = DType::i64;
  c.args = A{};
  for (const int k : {int(A::out), int(A::a)}) {
    TensorDesc& t = c.t[k];
    t.dtype = word;
    t.ndim = 1;
    t.sizes[0] = int64_t(count);
    t.strides[0] = 1;
  }
  c.t[A::out].addr = dst;
  c.t[A::a].addr = src;
  return true;
}

}  // namespace vkml::vk
