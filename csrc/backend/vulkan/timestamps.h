// GPU timestamps around every dispatch and copy while profiling (vkml_torch.profile()). One query
// pool per submission slot; nothing is written while profiling is off.
#pragma once
#include <volk.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backend/api/backend.h"
#include "backend/vulkan/device.h"
#include "util/result.h"

namespace vkml::vk {

class Timestamps {
 public:
  Timestamps(Device& d, int slots);
  ~Timestamps();
  Timestamps(const Timestamps&) = delete;
  Timestamps& operator=(const Timestamps&) = delete;

  // "" when profiling is on (or off), else why the device cannot time (then it stays off).
  std::string set_on(bool on);

  // Recording slot `slot`'s next submission of at most `max_cmds` timed commands. No-op (and
  // no queries) when profiling is off.
  Result<void> begin(int slot, VkCommandBuffer cmd, size_t max_cmds);
  bool active() const { return cur_ != nullptr; }  // this submission is timed
  void before(const char* op, const char* shader, size_t shader_len);  // a command's start
  void after();                                                         // ... and its end
  void end(uint64_t ticket);        // the submission's end; it will be ticket `ticket`
  void harvest(int slot);           // the slot's submission finished: read its queries
  GpuProfile take();                // everything harvested so far, cleared
  uint64_t written() const { return written_; }

 private:
  struct Pool {
    VkQueryPool pool = VK_NULL_HANDLE;
    uint32_t capacity = 0, used = 0;
    bool pending = false;        // queries written by a submission not harvested yet
    uint64_t ticket = 0;
    std::vector<std::string> names;  // one per timed command, in order
  };
  void write(VkPipelineStageFlags2 stage);

  Device& dev_;
  std::vector<Pool> pools_;
  Pool* cur_ = nullptr;                 // the slot being recorded, when timed
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
  bool on_ = false;
  std::string why_;                     // set when the device has no usable timestamps
  double period_ns_ = 1.0;              // VkPhysicalDeviceLimits::timestampPeriod
  uint64_t mask_ = ~uint64_t(0);        // timestampValidBits of the queue family
  uint64_t written_ = 0;
  GpuProfile out_;
};

}  // namespace vkml::vk
