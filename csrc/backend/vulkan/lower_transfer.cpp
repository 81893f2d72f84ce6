// The transfer family is not lowered: the backend records a buffer copy for it (backend.cpp).
#include <string>

#include "backend/vulkan/lower.h"

namespace vkml::vk {

int lower_transfer(const Node&, const Limits&, Dispatch*, std::string& why) {
  why = "transfers are copied by the runtime, not lowered";
  return -1;
}

}  // namespace vkml::vk
