// transfer: byte copy between two 1-d uint8 ranges of equal size (memmove: ranges may overlap).
#include <cstring>

#include "backend/cpu/access.h"
#include "backend/cpu/transfer.h"

namespace vkml::cpu {

Result<void> or_transfer(const Node& n, std::vector<double>*) {
  const TensorDesc &dst = n.t[0], &src = n.t[1];
  if (dst.dtype != DType::u8 || src.dtype != DType::u8 || dst.ndim != 1 || src.ndim != 1 ||
      dst.sizes[0] != src.sizes[0] || (dst.sizes[0] > 1 && (dst.strides[0] != 1 || src.strides[0] != 1)))
    return node_error(Err::invalid, n, "transfer needs two dense 1-d uint8 ranges of equal size");
  if (dst.sizes[0] > 0) {
    if (!dst.addr || !src.addr) return node_error(Err::invalid, n, "transfer address is null");
    std::memmove(reinterpret_cast<void*>(dst.addr), reinterpret_cast<const void*>(src.addr), size_t(dst.sizes[0]));
  }
  return {};
}

}  // namespace vkml::cpu
