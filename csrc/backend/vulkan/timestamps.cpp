#include "backend/vulkan/timestamps.h"

#include <string>
#include <utility>

namespace vkml::vk {

Timestamps::Timestamps(Device& d, int slots) : dev_(d), pools_(size_t(slots)) {
  VkPhysicalDeviceProperties p;
  vkGetPhysicalDeviceProperties(d.phys, &p);
  uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(d.phys, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> qs(nq);
  vkGetPhysicalDeviceQueueFamilyProperties(d.phys, &nq, qs.data());
  const uint32_t bits = d.queue_family < nq ? qs[d.queue_family].timestampValidBits : 0;
  if (bits == 0)
    why_ = "the compute queue of " + d.info.name + " has no timestamps (timestampValidBits is 0)";
  else if (p.limits.timestampPeriod <= 0.0f)
    why_ = d.info.name + " reports no timestamp period";
  period_ns_ = double(p.limits.timestampPeriod);
  mask_ = bits >= 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
  // timestampComputeAndGraphics false only means some queues may lack them: the valid bits of
  // our queue family decide (the spec's rule for that case).
}

Timestamps::~Timestamps() {
  for (Pool& p : pools_)
    if (p.pool) dev_.fn.vkDestroyQueryPool(dev_.dev, p.pool, nullptr);
}

std::string Timestamps::set_on(bool on) {
  if (on && !why_.empty()) return why_;
  if (on) out_ = GpuProfile{};  // a new block starts empty (nothing left over from a late batch)
  on_ = on;
  return {};
}

Result<void> Timestamps::begin(int slot, VkCommandBuffer cmd, size_t max_cmds) {
  Pool& p = pools_[size_t(slot)];
  p.pending = false;  // a slot is reused only after its last submission was harvested
  p.used = 0;
  p.names.clear();
  cur_ = nullptr;
  if (!on_) return {};
  const uint64_t need = 2 + 2 * uint64_t(max_cmds);
  if (need > UINT32_MAX) return fail(Err::invalid, "profile: too many commands in one submission");
  if (p.capacity < need) {  // grow by powers of two: few re-creations over a session
    uint32_t cap = 256;
    while (cap < need) cap *= 2;
    if (p.pool) dev_.fn.vkDestroyQueryPool(dev_.dev, p.pool, nullptr);
    p.pool = VK_NULL_HANDLE;
    p.capacity = 0;
    VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = cap;
    VkResult r = dev_.fn.vkCreateQueryPool(dev_.dev, &qi, nullptr, &p.pool);
    if (r != VK_SUCCESS) {
      p.pool = VK_NULL_HANDLE;
      return fail(Err::vulkan, std::string("vkCreateQueryPool failed: ") + result_name(r) + " (profile)");
    }
    p.capacity = cap;
  }
  dev_.fn.vkCmdResetQueryPool(cmd, p.pool, 0, uint32_t(need));
  cur_ = &p;
  cmd_ = cmd;
  // After everything submitted before (all commands, this queue): the moment this batch can start.
  write(VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT);
  return {};
}

void Timestamps::write(VkPipelineStageFlags2 stage) {
  dev_.fn.vkCmdWriteTimestamp2(cmd_, stage, cur_->pool, cur_->used++);
  ++written_;
}

void Timestamps::before(const char* op, const char* shader, size_t shader_len) {
  if (!cur_ || cur_->used + 3 > cur_->capacity) return;
  std::string name(op);
  if (shader_len) name += " [" + std::string(shader, shader_len) + "]";
  cur_->names.push_back(std::move(name));
  // When every earlier command has finished. Independent dispatches have no barrier between
  // them and may overlap: a command's time then runs from the end of those before it to its own
  // end, so the times still add up to the busy span and none is counted twice.
  write(VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT);
}

void Timestamps::after() {
  if (cur_ && cur_->used % 2 == 0) write(VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT);
}

void Timestamps::end(uint64_t ticket) {
  if (!cur_) return;
  write(VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT);
  cur_->pending = true;
  cur_->ticket = ticket;
  cur_ = nullptr;
}

void Timestamps::harvest(int slot) {
  Pool& p = pools_[size_t(slot)];
  if (!p.pending) return;
  p.pending = false;
  std::vector<uint64_t> t(p.used);
  VkResult r = dev_.fn.vkGetQueryPoolResults(dev_.dev, p.pool, 0, p.used, t.size() * 8, t.data(), 8,
                                             VK_QUERY_RESULT_64_BIT);
  if (r != VK_SUCCESS) {  // the fence has signalled, so this does not happen; say so if it does
    out_.lost += p.names.size();
    return;
  }
  auto ns = [&](uint32_t i) { return double(t[i] & mask_) * period_ns_; };
  // Queries: [0] batch start, then (start, end) per command, then the batch end.
  out_.submissions.push_back({p.ticket, ns(0), ns(p.used - 1)});
  for (size_t k = 0; k < p.names.size(); ++k)
    out_.kernels.push_back({std::move(p.names[k]), p.ticket, ns(uint32_t(1 + 2 * k)), ns(uint32_t(2 + 2 * k))});
  p.names.clear();
}

GpuProfile Timestamps::take() { return std::exchange(out_, GpuProfile{}); }

}  // namespace vkml::vk
