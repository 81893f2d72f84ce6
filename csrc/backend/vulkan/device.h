// Instance, physical-device selection and the logical device (with its own volk function table).
#pragma once
#include <volk.h>

#include <memory>
#include <string>
#include <vector>

#include "backend/api/backend.h"
#include "util/result.h"

namespace vkml::vk {

// "VK_ERROR_OUT_OF_DEVICE_MEMORY", for error messages.
const char* result_name(VkResult r);

// An opened device. Everything else in the backend borrows it.
struct Device {
  VkPhysicalDevice phys = VK_NULL_HANDLE;
  VkDevice dev = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queue_family = 0;
  VolkDeviceTable fn{};  // device-level entry points, loaded for this device only
  VkPhysicalDeviceMemoryProperties mem_props{};
  uint64_t max_buffer = 0;  // min(maxBufferSize, limits.max_allocation): the largest segment
  DeviceInfo info;
  Limits limits;  // already clamped when min_spec

  Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  ~Device();
};

// Opens device `index` of list_devices() order (the first when index < 0).
Result<std::unique_ptr<Device>> open_device(int index, bool min_spec);

}  // namespace vkml::vk
