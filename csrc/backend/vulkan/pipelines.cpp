#include "backend/vulkan/pipelines.h"

#include "backend/vulkan/device.h"
#include "backend/vulkan/spirv.h"
#include "backend/vulkan/vulkan_backend.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "util/env.h"

namespace vkml::vk {

namespace {
// Every live Pipelines, for save_pipeline_caches().
std::mutex g_live_mu;
std::set<Pipelines*>& live() {
  static std::set<Pipelines*> s;
  return s;
}
const pid_t g_pid = getpid();  // a forked child never writes its parent's cache

std::string hex(const uint8_t* b, size_t n) {
  std::string s;
  char t[3];
  for (size_t i = 0; i < n; ++i) std::snprintf(t, sizeof t, "%02x", b[i]), s += t;
  return s;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return f ? std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>()) : std::string();
}
}  // namespace

// Called by vkml_torch at interpreter exit (Python's atexit runs before the C library's exit
// handlers): not from a C atexit handler or a destructor, because by then the driver may have
// stopped its own threads (Mesa's do: vkGetPipelineCacheData then aborts on a dead mutex owner).
void save_pipeline_caches() {
  std::lock_guard<std::mutex> lk(g_live_mu);
  for (Pipelines* p : live()) p->save();
}

Pipelines::Pipelines(Device& d) : d_(d) {}

Pipelines::~Pipelines() {
  {
    std::lock_guard<std::mutex> lk(g_live_mu);
    live().erase(this);
  }
  if (cache_) d_.fn.vkDestroyPipelineCache(d_.dev, cache_, nullptr);
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
  // The pipeline cache: its file is named by the driver's pipelineCacheUUID, so another driver
  // or device never reads it (the driver checks the header again, and ignores data it rejects).
  std::string data;
  if (env().cache_dir != "off") {
    VkPhysicalDeviceProperties props{};
    vkGetPhysicalDeviceProperties(d_.phys, &props);
    stats_.file = env().cache_dir + "/pipelines-" + hex(props.pipelineCacheUUID, VK_UUID_SIZE) + ".bin";
    data = read_file(stats_.file);
  }
  VkPipelineCacheCreateInfo pc{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  pc.initialDataSize = data.size();
  pc.pInitialData = data.empty() ? nullptr : data.data();
  if (d_.fn.vkCreatePipelineCache(d_.dev, &pc, nullptr, &cache_) != VK_SUCCESS) {
    pc.initialDataSize = 0, pc.pInitialData = nullptr;  // unreadable data: start empty
    if (d_.fn.vkCreatePipelineCache(d_.dev, &pc, nullptr, &cache_) != VK_SUCCESS) cache_ = VK_NULL_HANDLE;
    data.clear();
  }
  stats_.loaded_bytes = cache_ ? data.size() : 0;
  if (!cache_) stats_.file.clear();
  std::lock_guard<std::mutex> lk(g_live_mu);
  live().insert(this);
  return {};
}

void Pipelines::save() {
  std::lock_guard<std::mutex> lk(mu_);
  save_locked();
}

// Written to a temporary file, then renamed over the old one: a reader (another process) sees the
// old cache or the new one, never half of one. Failures only cost the next run its warm start.
void Pipelines::save_locked() {
  if (!dirty_ || !cache_ || stats_.file.empty() || getpid() != g_pid) return;
  size_t n = 0;
  if (d_.fn.vkGetPipelineCacheData(d_.dev, cache_, &n, nullptr) != VK_SUCCESS || n == 0) return;
  std::string bytes(n, '\0');
  if (d_.fn.vkGetPipelineCacheData(d_.dev, cache_, &n, bytes.data()) != VK_SUCCESS) return;
  bytes.resize(n);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(stats_.file).parent_path(), ec);
  const std::string tmp = stats_.file + "." + std::to_string(getpid()) + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f.write(bytes.data(), std::streamsize(bytes.size()))) return;
  }
  std::filesystem::rename(tmp, stats_.file, ec);
  if (ec) std::filesystem::remove(tmp, ec);
  else dirty_ = false;
}

PipelineStats Pipelines::stats() {
  std::lock_guard<std::mutex> lk(mu_);
  return stats_;
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
  asked_.clear();
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

namespace {
std::string key(const std::string& shader, int32_t opcode, std::span<const uint32_t> spec) {
  std::string k = shader;
  k.push_back('\0');
  k.append(reinterpret_cast<const char*>(&opcode), sizeof opcode);
  k.append(reinterpret_cast<const char*>(spec.data()), spec.size_bytes());
  return k;
}
}  // namespace

Result<VkPipeline> Pipelines::get(const std::string& shader, int32_t opcode, std::span<const uint32_t> spec) {
  std::lock_guard<std::mutex> lk(mu_);
  refresh_locked();
  const std::string k = key(shader, opcode, spec);
  if (auto it = pipelines_.find(k); it != pipelines_.end()) return it->second;
  return get_locked(k, shader, opcode, spec);
}

Result<VkPipeline> Pipelines::get_after(const std::string& shader, int32_t opcode, std::span<const uint32_t> spec,
                                        uint32_t after) {
  if (after == 0) return VkPipeline(VK_NULL_HANDLE);
  std::lock_guard<std::mutex> lk(mu_);
  refresh_locked();
  const std::string k = key(shader, opcode, spec);
  if (auto it = pipelines_.find(k); it != pipelines_.end()) return it->second;
  if (++asked_[k] < after) return VkPipeline(VK_NULL_HANDLE);
  asked_.erase(k);
  return get_locked(k, shader, opcode, spec);
}

Result<VkPipeline> Pipelines::get_locked(const std::string& k, const std::string& shader, int32_t opcode,
                                         std::span<const uint32_t> spec) {
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

  // constant 0 = opcode, constant i = spec[i - 1]
  std::vector<uint32_t> data(1 + spec.size());
  std::memcpy(data.data(), &opcode, sizeof opcode);
  std::copy(spec.begin(), spec.end(), data.begin() + 1);
  std::vector<VkSpecializationMapEntry> entries(data.size());
  for (uint32_t i = 0; i < entries.size(); ++i) entries[i] = {i, 4 * i, 4};
  VkSpecializationInfo si{uint32_t(entries.size()), entries.data(), data.size() * 4, data.data()};
  VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = mod;
  ci.stage.pName = "main";
  ci.stage.pSpecializationInfo = &si;
  ci.layout = layout_;
  VkPipelineCreationFeedback fb{};  // core in Vulkan 1.3: whether the cache had it
  VkPipelineCreationFeedbackCreateInfo fci{VK_STRUCTURE_TYPE_PIPELINE_CREATION_FEEDBACK_CREATE_INFO};
  fci.pPipelineCreationFeedback = &fb;
  ci.pNext = &fci;
  VkPipeline pipe = VK_NULL_HANDLE;
  const auto t0 = std::chrono::steady_clock::now();
  VkResult r = d_.fn.vkCreateComputePipelines(d_.dev, cache_, 1, &ci, nullptr, &pipe);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (r != VK_SUCCESS)
    return fail(Err::vulkan, "vkCreateComputePipelines failed for '" + shader + "' opcode " +
                                 std::to_string(opcode) + ": " + result_name(r));
  pipelines_[k] = pipe;
  ++stats_.created;
  const bool hit = (fb.flags & VK_PIPELINE_CREATION_FEEDBACK_VALID_BIT) &&
                   (fb.flags & VK_PIPELINE_CREATION_FEEDBACK_APPLICATION_PIPELINE_CACHE_HIT_BIT);
  if (hit)
    ++stats_.cache_hits;
  else
    dirty_ = true;
  stats_.made.push_back({shader, opcode, ms, hit});
  return pipe;
}

}  // namespace vkml::vk
