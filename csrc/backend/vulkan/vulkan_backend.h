// The Vulkan backend: device selection, memory, pipelines, command recording.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "backend/api/backend.h"
#include "util/result.h"

namespace vkml::vk {

// Every Vulkan 1.3 device with what the project needs, ordered discrete, integrated, virtual,
// CPU (stable within a type). Empty with *why set when there is no loader/driver/device.
std::vector<DeviceInfo> list_devices(std::string* why);

// Open device `index` into list_devices() order, or the first one when index < 0.
// min_spec: report (and use) only Vulkan 1.3's guaranteed limits.
Result<std::unique_ptr<Backend>> create_backend(int index, bool min_spec);

// Writes every open device's pipeline cache to its file (VKML_CACHE_DIR), where it changed. The
// Python module calls it at interpreter exit.
void save_pipeline_caches();

}  // namespace vkml::vk
