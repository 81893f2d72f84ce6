#include "backend/vulkan/pipelines.h"

#include "backend/vulkan/device.h"
#include "backend/vulkan/spirv.h"

namespace vkml::vk {

Pipelines::Pipelines(Device& d) : d_(d) {}

Pipelines::~Pipelines() {
  for (auto& [k, p] : pipelines_) d_.fn.vkDestroyPipeline(d_.dev, p, nullptr);
  for (auto& [k, m] : modules_) d_.fn.vkDestroyShaderModule(d_.dev, m, nullptr);
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

Result<VkPipeline> Pipelines::get(const std::string& shader, int32_t opcode) {
  std::lock_guard<std::mutex> lk(mu_);
  auto key = std::make_pair(shader, opcode);
  if (auto it = pipelines_.find(key); it != pipelines_.end()) return it->second;

  VkShaderModule mod = VK_NULL_HANDLE;
  if (auto it = modules_.find(shader); it != modules_.end()) {
    mod = it->second;
  } else {
    std::span<const uint32_t> code = spirv(shader.c_str());
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
