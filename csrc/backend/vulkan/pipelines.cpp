#include "backend/vulkan/pipelines.h"

#include "backend/vulkan/device.h"
#include "backend/vulkan/spirv.h"

#include <cstring>
#include <fstream>
#include <iterator>

#include "util/env.h"

namespace vkml::vk {

Pipelines::Pipelines(Device& d) : d_(d) {}

Pipelines::~Pipelines() {
  for (auto& [k, p] : pipelines_) d_.fn.vkDestroyPipeline(d_.dev, p, nullptr);
  for (auto& [k, m] : modules_) d_.fn.vkDestroyShaderModule(d_.dev, m, nullptr);
  for (VkPipeline p : retired_pipelines_) d_.fn.vkDestroyPipeline(d_.dev, p, nullptr);
  for (VkShaderModule m : retired_modules_) d_.fn.vkDestroyShaderModule(d_.dev, m, nullptr);
  if (layout_) d_.fn.vkDestroyPipelineLayout(d_.dev, layout_, nullptr);
}

Result<void> Pipelines::init() {
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushBytes};
  VkPipelineLayoutCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  ci.pushConstantRangeCount = 1;
  ci.pPushConstantRanges = &range;
  VkResult r = d_.fn.vkCreatePipelineLayout(d_.dev, &ci, nullptr, &layout_);
  if (r != VK_SUCCESS) {
    layout_ = VK_NULL_HANDLE;
    return fail(Err::vulkan, std::string("vkCreatePipelineLayout failed: ") + result_name(r));
  }
  return {};
}

namespace {
// <dir>/<shader>.spv as words, or empty when there is no such file.
std::vector<uint32_t> read_spv(const std::string& dir, const std::string& shader) {
  std::ifstream f(dir + "/" + shader + ".spv", std::ios::binary);
  if (!f) return {};
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<uint32_t> words(bytes.size() / 4);
  if (!words.empty()) std::memcpy(words.data(), bytes.data(), words.size() * 4);
  return words;
}
}  // namespace

void Pipelines::refresh_locked() {
  if (env().spirv_dir == dir_) return;
  // a test switched shader sets (set_switch waited for the GPU first)
  for (auto& [k, p] : pipelines_) retired_pipelines_.push_back(p);
  for (auto& [k, m] : modules_) retired_modules_.push_back(m);
  pipelines_.clear();
  modules_.clear();
  dir_ = env().spirv_dir;
  ++generation_;
}

uint64_t Pipelines::generation() {
  std::lock_guard<std::mutex> lk(mu_);
  refresh_locked();
  return generation_;
}

Result<VkPipeline> Pipelines::get(const std::string& shader, int32_t opcode) {
  std::lock_guard<std::mutex> lk(mu_);
  refresh_locked();
  auto key = std::make_pair(shader, opcode);
  if (auto it = pipelines_.find(key); it != pipelines_.end()) return it->second;

  VkShaderModule mod = VK_NULL_HANDLE;
  if (auto it = modules_.find(shader); it != modules_.end()) {
    mod = it->second;
  } else {
    std::vector<uint32_t> file = dir_.empty() ? std::vector<uint32_t>() : read_spv(dir_, shader);
    std::span<const uint32_t> code = file.empty() ? spirv(shader.c_str()) : std::span<const uint32_t>(file);
    if (code.empty()) return fail(Err::unsupported, "no SPIR-V blob named '" + shader + "' was built in");
    VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    mi.codeSize = code.size() * 4;
    mi.pCode = code.data();
    VkResult r = d_.fn.vkCreateShaderModule(d_.dev, &mi, nullptr, &mod);
    if (r != VK_SUCCESS)
      return fail(Err::vulkan, std::string("vkCreateShaderModule failed for '") + shader + "': " + result_name(r));
    modules_[shader] = mod;
  }

  VkSpecializationMapEntry entry{0, 0, sizeof(int32_t)};
  VkSpecializationInfo spec{1, &entry, sizeof(int32_t), &opcode};
  VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = mod;
  ci.stage.pName = "main";
  ci.stage.pSpecializationInfo = &spec;
  ci.layout = layout_;
  VkPipeline pipe = VK_NULL_HANDLE;
  VkResult r = d_.fn.vkCreateComputePipelines(d_.dev, VK_NULL_HANDLE, 1, &ci, nullptr, &pipe);
  if (r != VK_SUCCESS)
    return fail(Err::vulkan, "vkCreateComputePipelines failed for '" + shader + "' opcode " +
                                 std::to_string(opcode) + ": " + result_name(r));
  pipelines_[key] = pipe;
  return pipe;
}

}  // namespace vkml::vk
