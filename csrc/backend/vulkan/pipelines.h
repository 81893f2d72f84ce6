// Compute pipelines: one layout for every shader (no descriptor sets: shaders reach memory through
// buffer-device addresses in a 128-byte push-constant block), modules and pipelines cached, and a
// VkPipelineCache kept on disk (VKML_CACHE_DIR) so that a second run compiles nothing.
#pragma once
#include <volk.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backend/api/backend.h"
#include "util/result.h"

namespace vkml::vk {

struct Device;

class Pipelines {
 public:
  static constexpr uint32_t kPushBytes = 128;  // Vulkan 1.3's guaranteed maxPushConstantsSize

  explicit Pipelines(Device& d);
  ~Pipelines();
  Pipelines(const Pipelines&) = delete;
  Pipelines& operator=(const Pipelines&) = delete;

  Result<void> init();  // creates the layout, and the pipeline cache from its file
  // Writes the pipeline cache to its file when pipelines were made since the last save.
  void save();
  PipelineStats stats();
  VkPipelineLayout layout() const { return layout_; }
  // The pipeline of SPIR-V blob `shader` with specialization constant 0 = opcode and, when given,
  // constants 1..spec.size() = spec.
  Result<VkPipeline> get(const std::string& shader, int32_t opcode, std::span<const uint32_t> spec = {});
  // The same, once these constants were asked for `after` times (counting this call); before
  // that, and always when after == 0, VK_NULL_HANDLE: the caller runs its generic pipeline.
  Result<VkPipeline> get_after(const std::string& shader, int32_t opcode, std::span<const uint32_t> spec,
                               uint32_t after);
  // Bumped whenever VKML_SPIRV_DIR changed since the last call (the cache is then retired): a
  // caller that keeps a pipeline across calls compares it.
  uint64_t generation();

 private:
  Device& d_;
  std::mutex mu_;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  std::map<std::string, VkShaderModule> modules_;
  // Keyed by shader, opcode and the other constants' bytes (key()).
  std::map<std::string, VkPipeline> pipelines_;
  std::map<std::string, uint32_t> asked_;  // get_after's counts of constants not yet compiled
  // VKML_SPIRV_DIR: the directory the cached modules came from; when it changes the cache is
  // retired (kept until destruction: a retired pipeline may still be in a recorded batch).
  std::string dir_;
  uint64_t generation_ = 0;
  void refresh_locked();
  Result<VkPipeline> get_locked(const std::string& key, const std::string& shader, int32_t opcode,
                                std::span<const uint32_t> spec);
  std::vector<VkShaderModule> retired_modules_;
  std::vector<VkPipeline> retired_pipelines_;
  VkPipelineCache cache_ = VK_NULL_HANDLE;
  PipelineStats stats_;
  bool dirty_ = false;
  void save_locked();
};

}  // namespace vkml::vk
