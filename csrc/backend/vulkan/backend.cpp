// The Backend interface on Vulkan: memory from Memory, nodes lowered to dispatches and recorded
// into a command buffer per batch; up to kSlots batches in flight, each with its fence.
#include <atomic>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <vector>

#include "backend/vulkan/device.h"
#include "backend/vulkan/lower.h"
#include "backend/vulkan/memory.h"
#include "backend/vulkan/pipelines.h"
#include "backend/vulkan/timestamps.h"
#include "backend/vulkan/vulkan_backend.h"

namespace vkml::vk {
namespace {

constexpr VkPipelineStageFlags kWork = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
constexpr VkAccessFlags kWrites = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
constexpr VkAccessFlags kAll = kWrites | VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT;

bool empty_output(const Node& n) {
  for (int i = 0; i < n.nout; ++i)
    if (n.t[i].numel() == 0) return true;
  return n.op == OpId::transfer && n.t[0].sizes[0] <= 0;
}

std::string hex(uint64_t a) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", (unsigned long long)a);
  return b;
}

class VulkanBackend final : public Backend {
 public:
  explicit VulkanBackend(std::unique_ptr<Device> d)
      : dev_(std::move(d)), mem_(*dev_), pipes_(*dev_), ts_(*dev_, kSlots) {}

  ~VulkanBackend() override {
    const auto& fn = dev_->fn;
    fn.vkDeviceWaitIdle(dev_->dev);
    for (Slot& sl : slots_) {
      if (sl.fence) fn.vkDestroyFence(dev_->dev, sl.fence, nullptr);
      for (const Block& b : sl.params) mem_.free(b);
    }
    if (pool_) fn.vkDestroyCommandPool(dev_->dev, pool_, nullptr);
  }

  Result<void> init() {
    VKML_TRY(pipes_.init());
    const auto& fn = dev_->fn;
    VkCommandPoolCreateInfo pi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pi.queueFamilyIndex = dev_->queue_family;
    VKML_TRY(check(fn.vkCreateCommandPool(dev_->dev, &pi, nullptr, &pool_), "vkCreateCommandPool", "init"));
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = pool_;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    for (Slot& sl : slots_) {
      VKML_TRY(check(fn.vkAllocateCommandBuffers(dev_->dev, &ai, &sl.cmd), "vkAllocateCommandBuffers", "init"));
      VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
      VKML_TRY(check(fn.vkCreateFence(dev_->dev, &fi, nullptr, &sl.fence), "vkCreateFence", "init"));
    }
    return {};
  }

  const DeviceInfo& info() const override { return dev_->info; }
  const Limits& limits() const override { return dev_->limits; }

  Result<Block> alloc(size_t bytes, MemKind kind) override { return mem_.alloc(bytes, kind); }
  void free(const Block& b) override { mem_.free(b); }
  void* host_ptr(uint64_t addr) override { return mem_.host_ptr(addr); }
  void empty_cache() override { mem_.empty_cache(); }
  MemoryStats memory_stats() const override { return mem_.stats(); }
  PipelineStats pipeline_stats() override { return pipes_.stats(); }
  void reset_memory_stats(bool peaks, bool totals) override { mem_.reset_stats(peaks, totals); }

  bool supports(const Node& n) const override {
    return n.op == OpId::transfer || can_lower(n, dev_->limits);
  }
  uint64_t dispatches() const override { return dispatches_.load(); }
  uint64_t barriers() const override { return barriers_.load(); }
  uint64_t specialized() const override { return specialized_.load(); }

  std::string set_profiling(bool on) override {
    std::lock_guard<std::mutex> lk(exec_mu_);
    return ts_.set_on(on);
  }
  GpuProfile take_profile() override {
    std::lock_guard<std::mutex> lk(exec_mu_);
    return ts_.take();
  }
  uint64_t timestamps_written() const override {
    std::lock_guard<std::mutex> lk(exec_mu_);
    return ts_.written();
  }

  Result<uint64_t> submit(std::span<const Node> nodes) override {
    std::lock_guard<std::mutex> lk(exec_mu_);
    const auto& fn = dev_->fn;
    Slot& sl = slots_[next_ % kSlots];
    if (sl.ticket > done_) VKML_TRY(wait_slot(sl));  // the ring is full: the oldest must finish
    cmd_ = sl.cmd;
    slot_ = &sl;
    reset_params(sl);
    bool begun = false;
    uint64_t count = 0;
    Dispatch ds[kMaxDispatchesPerNode];  // once per submission: lower() resets what it fills
    for (const Node& n : nodes) {
      if (empty_output(n)) continue;
      const char* op = op_info(n.op).name;
      if (!begun) {
        VKML_TRY(check(fn.vkResetCommandBuffer(cmd_, 0), "vkResetCommandBuffer", op));
        VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        VKML_TRY(check(fn.vkBeginCommandBuffer(cmd_, &bi), "vkBeginCommandBuffer", op));
        bound_ = VK_NULL_HANDLE;  // a new command buffer has no pipeline bound
        // Earlier submissions may still be running: order this batch after their writes (and
        // after host writes into staging).
        VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
        mb.srcAccessMask = kWrites | VK_ACCESS_HOST_WRITE_BIT;
        mb.dstAccessMask = kAll;
        fn.vkCmdPipelineBarrier(cmd_, kWork | VK_PIPELINE_STAGE_HOST_BIT, kWork, 0, 1, &mb, 0, nullptr, 0,
                                nullptr);
        VKML_TRY(ts_.begin(int(&sl - slots_), cmd_, nodes.size() * kMaxDispatchesPerNode));
        hazards_.clear();
        begun = true;
      }
      if (n.op == OpId::transfer) {
        order(n);
        VKML_TRY(record_copy(n, ds));
        ++count;
      } else {
        auto k = lower(n, dev_->limits, ds);
        if (!k.ok()) return k.error();
        if (*k > 0) order(n);
        // Profiling: a fused dispatch is one kernel, named by the rows it runs.
        std::string fused;
        const char* name = op;
        if (n.op == OpId::fused && ts_.active()) name = (fused = fused_name(n)).c_str();
        for (int i = 0; i < *k; ++i) {
          // A node's dispatches depend on each other. The barrier forgets what came before, so
          // the node's own operands are noted again: the next node that reads its output (or
          // writes what it reads) must still wait for its last dispatch. A concurrent one needs
          // no barrier: its operands are already noted.
          if (i > 0 && !ds[i].concurrent) full_barrier(), note(n);
          VKML_TRY(record_dispatch(ds[i], name));
          ++count;
        }
      }
    }
    if (!begun) return last_;  // nothing to run: done once the last submission is
    ts_.end(next_ + 1);
    barrier(VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    const char* last = op_info(nodes.back().op).name;
    VKML_TRY(check(fn.vkEndCommandBuffer(cmd_), "vkEndCommandBuffer", last));
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd_;
    VKML_TRY(check(fn.vkQueueSubmit(dev_->queue, 1, &si, sl.fence), "vkQueueSubmit", last));
    sl.ticket = ++next_;
    last_ = sl.ticket;
    dispatches_ += count;
    return sl.ticket;
  }

  Result<void> wait(uint64_t ticket) override {
    std::lock_guard<std::mutex> lk(exec_mu_);
    for (uint64_t t = done_ + 1; t <= ticket && t <= last_; ++t)
      for (Slot& sl : slots_)
        if (sl.ticket == t) VKML_TRY(wait_slot(sl));
    return {};
  }

  uint64_t completed() override {
    std::lock_guard<std::mutex> lk(exec_mu_);
    return done_;
  }

 private:
  static constexpr int kSlots = 3;  // submissions in flight at most
  static constexpr int kSpinMicros = 200;
  struct Slot {
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    uint64_t ticket = 0;  // 0: never submitted
    // The submission's parameter buffer (Dispatch::params of its dispatches): host-visible blocks
    // filled front to back, reused once the slot's fence has signalled.
    std::vector<Block> params;
    size_t params_used = 0;  // bytes used in params.back()
  };
  static constexpr size_t kParamBlock = size_t(64) << 10;

  // The slot's submission has finished (or never ran): keep one block, start it over.
  void reset_params(Slot& sl) {
    while (sl.params.size() > 1) {
      mem_.free(sl.params.back());
      sl.params.pop_back();
    }
    sl.params_used = 0;
  }

  // Copies d's parameter block into the current slot's buffer; returns its device address.
  Result<uint64_t> stage_params(const Dispatch& d) {
    Slot& sl = *slot_;
    const size_t at = (sl.params_used + 15) & ~size_t(15);
    if (sl.params.empty() || at + d.param_size > sl.params.back().size) {
      auto b = mem_.alloc(kParamBlock, MemKind::staging);
      if (!b.ok()) return b.error();
      sl.params.push_back(b.value());
      sl.params_used = 0;
      return stage_params(d);
    }
    const Block& b = sl.params.back();
    std::memcpy(static_cast<uint8_t*>(mem_.host_ptr(b.addr)) + at, d.params, d.param_size);
    sl.params_used = at + d.param_size;
    return b.addr + at;
  }

  // Waits for one slot's submission; submissions complete in order, so done_ advances to it.
  Result<void> wait_slot(Slot& sl) {
    if (sl.ticket <= done_) return {};
    const auto& fn = dev_->fn;
    // Poll briefly before sleeping: a small batch finishes in tens of microseconds, and a
    // sleeping wait adds the scheduler's wake-up latency to every synchronisation.
    VkResult w = VK_NOT_READY;
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(kSpinMicros);
    while ((w = fn.vkGetFenceStatus(dev_->dev, sl.fence)) == VK_NOT_READY && std::chrono::steady_clock::now() < until) {
    }
    if (w == VK_NOT_READY) w = fn.vkWaitForFences(dev_->dev, 1, &sl.fence, VK_TRUE, UINT64_MAX);
    fn.vkResetFences(dev_->dev, 1, &sl.fence);
    done_ = sl.ticket;
    if (w == VK_SUCCESS) ts_.harvest(int(&sl - slots_));
    return check(w, "vkWaitForFences", "submission");
  }

  static Result<void> check(VkResult r, const char* call, const char* op) {
    if (r == VK_SUCCESS) return {};
    return fail(Err::vulkan, std::string(call) + " failed: " + result_name(r) + " (op " + op + ")");
  }

  // Makes every compute/transfer write visible to what follows (`stage`, `access`).
  void barrier(VkPipelineStageFlags stage, VkAccessFlags access) {
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = kWrites;
    mb.dstAccessMask = access;
    dev_->fn.vkCmdPipelineBarrier(cmd_, kWork, stage, 0, 1, &mb, 0, nullptr, 0, nullptr);
  }

  // The profiler's name for a copy: which way it goes (staging memory is the host's side).
  const char* copy_name(const Node& n) {
    const bool from_host = mem_.host_ptr(n.t[1].addr) != nullptr, to_host = mem_.host_ptr(n.t[0].addr) != nullptr;
    if (from_host) return to_host ? "copy host->host" : "copy host->device";
    return to_host ? "copy device->host" : "copy device->device";
  }

  void full_barrier() {
    barrier(kWork, kAll);
    hazards_.clear();
    ++barriers_;
  }

  // A barrier before node n only where it depends on what was recorded since the last one: it
  // reads or writes bytes written there (RAW, WAW) or writes bytes read there (WAR). A node of a
  // family that is not operands-only depends on everything, and everything after on it.
  void order(const Node& n) {
    const bool known = operands_only(op_info(n.op).family);
    if (hazards_.touched && (!known || hazards_.all || hazards_.conflicts(n))) full_barrier();
    note(n);
  }

  // Records that the dispatches since the last barrier touch n's operands.
  void note(const Node& n) {
    hazards_.touched = true;
    if (!operands_only(op_info(n.op).family) || !hazards_.add(n)) hazards_.all = true;
  }

  // A transfer: a buffer copy, or between two device buffers the elementwise copy shader
  // (transfer_as_copy; ds: room for its dispatch).
  Result<void> record_copy(const Node& n, Dispatch* ds) {
    const uint64_t bytes = uint64_t(n.t[0].sizes[0]);
    if (n.t[1].numel() * int64_t(dtype_size(n.t[1].dtype)) < int64_t(bytes))
      return fail(Err::invalid, "transfer: source holds fewer than " + std::to_string(bytes) + " bytes");
    VkBuffer src, dst;
    VkBufferCopy c{0, 0, bytes};
    if (!mem_.lookup(n.t[1].addr, bytes, &src, &c.srcOffset))
      return fail(Err::invalid, "transfer: source " + hex(n.t[1].addr) + " + " + std::to_string(bytes) +
                                    " bytes is not inside one vkml buffer");
    if (!mem_.lookup(n.t[0].addr, bytes, &dst, &c.dstOffset))
      return fail(Err::invalid, "transfer: destination " + hex(n.t[0].addr) + " + " + std::to_string(bytes) +
                                    " bytes is not inside one vkml buffer");
    Node as;
    if (copy_shader(dev_->limits) && mem_.host_ptr(n.t[0].addr) == nullptr &&
        mem_.host_ptr(n.t[1].addr) == nullptr && transfer_as_copy(n, as)) {
      auto k = lower(as, dev_->limits, ds);
      if (k.ok() && *k == 1) return record_dispatch(ds[0], copy_name(n));
    }
    const bool timed = ts_.active();  // profiling off: no calls, no names
    if (timed) ts_.before(copy_name(n), "", 0);
    dev_->fn.vkCmdCopyBuffer(cmd_, src, dst, 1, &c);
    if (timed) ts_.after();
    return {};
  }

  Result<void> record_dispatch(const Dispatch& d, const char* op) {
    if (d.pc_size > Pipelines::kPushBytes)
      return fail(Err::invalid, std::string("push constants of ") + std::to_string(d.pc_size) +
                                    " bytes exceed 128 (op " + op + ")");
    const auto& fn = dev_->fn;
    // Runs of one op are the common case: reuse the last pipeline, and bind only on a change
    // (of op, shader, or the SPIR-V directory a test loads broken shaders from).
    const uint64_t gen = pipes_.generation();
    // A specialized pipeline, where the dispatch offers one and it is made (Dispatch::spec)
    VkPipeline special = VK_NULL_HANDLE;
    if (d.nspec) {
      std::string shader(d.spec_shader, strnlen(d.spec_shader, sizeof d.spec_shader));
      auto p = pipes_.get_after(shader, d.opcode, std::span<const uint32_t>(d.spec, d.nspec), d.spec_after);
      if (!p.ok()) return fail(p.error().code, p.error().msg + " (op " + op + ")");
      special = *p;
    }
    if (special) {
      // counted where it runs another blob, a fused program's (elementwise rows specialize their own)
      if (std::strncmp(d.spec_shader, d.shader, sizeof d.shader) != 0) specialized_++;
      last_gen_ = ~uint64_t(0);  // the next dispatch looks its pipeline up again
      if (bound_ != special) {
        fn.vkCmdBindPipeline(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, special);
        bound_ = special;
      }
    } else if (d.opcode != last_opcode_ || gen != last_gen_ ||
               std::memcmp(d.shader, last_shader_, sizeof last_shader_) != 0) {
      std::string shader(d.shader, strnlen(d.shader, sizeof d.shader));
      auto p = pipes_.get(shader, d.opcode);
      if (!p.ok()) return fail(p.error().code, p.error().msg + " (op " + op + ")");
      last_pipe_ = *p;
      last_opcode_ = d.opcode;
      last_gen_ = gen;
      std::memcpy(last_shader_, d.shader, sizeof last_shader_);
      bound_ = VK_NULL_HANDLE;
    }
    if (!special && bound_ != last_pipe_) {
      fn.vkCmdBindPipeline(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, last_pipe_);
      bound_ = last_pipe_;
    }
    if (d.param_size) {  // the parameter block's address goes into the push constants
      if (d.param_addr_at + 8 > d.pc_size)
        return fail(Err::invalid, std::string("parameter address outside the push constants (op ") + op + ")");
      auto addr = stage_params(d);
      if (!addr.ok()) return addr.error();
      alignas(8) uint8_t pc[sizeof d.pc];
      std::memcpy(pc, d.pc, d.pc_size);
      std::memcpy(pc + d.param_addr_at, &addr.value(), 8);
      fn.vkCmdPushConstants(cmd_, pipes_.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, d.pc_size, pc);
    } else if (d.pc_size) {
      fn.vkCmdPushConstants(cmd_, pipes_.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, d.pc_size, d.pc);
    }
    const bool timed = ts_.active();  // profiling off: no calls, no names
    const char* shown = special ? d.spec_shader : d.shader;
    if (timed) ts_.before(op, shown, strnlen(shown, sizeof d.shader));
    fn.vkCmdDispatch(cmd_, d.groups[0], d.groups[1], d.groups[2]);
    if (timed) ts_.after();
    return {};
  }

  // What the dispatches since the last barrier read and wrote (byte ranges).
  struct Hazards {
    struct Span {
      uint64_t lo, hi;
      bool write;
    };
    static constexpr size_t kMax = 64;  // past this, the next node just gets a barrier
    std::vector<Span> spans;
    bool touched = false, all = false;
    void clear() {
      spans.clear();
      touched = all = false;
    }
    static Span span_of(const Node& n, int k) {
      const TensorDesc& t = n.t[k];
      const uint64_t bytes = n.op == OpId::transfer ? uint64_t(n.t[0].sizes[0]) : uint64_t(t.span_bytes());
      return {t.addr, t.addr + bytes, k < n.nout};
    }
    bool conflicts(const Node& n) const {
      for (int k = 0; k < n.nout + n.nin && k < kMaxOperands; ++k) {
        if (!n.t[k].addr) continue;
        const Span s = span_of(n, k);
        for (const Span& o : spans)
          if ((s.write || o.write) && s.lo < o.hi && o.lo < s.hi) return true;
      }
      return false;
    }
    bool add(const Node& n) {
      for (int k = 0; k < n.nout + n.nin && k < kMaxOperands; ++k) {
        if (!n.t[k].addr) continue;
        if (spans.size() == kMax) return false;
        spans.push_back(span_of(n, k));
      }
      return true;
    }
  } hazards_;
  std::atomic<uint64_t> barriers_{0};
  std::atomic<uint64_t> specialized_{0};  // dispatches run on a specialized pipeline (Dispatch::spec)

  // The pipeline of the last dispatch recorded, and the one bound in the current command buffer.
  char last_shader_[sizeof(Dispatch::shader)] = {};
  int32_t last_opcode_ = -1;
  uint64_t last_gen_ = 0;
  VkPipeline last_pipe_ = VK_NULL_HANDLE, bound_ = VK_NULL_HANDLE;

  std::unique_ptr<Device> dev_;  // first: destroyed last
  Memory mem_;
  Pipelines pipes_;
  Timestamps ts_;  // writes queries only while profiling
  VkCommandPool pool_ = VK_NULL_HANDLE;
  Slot slots_[kSlots];
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;  // the one being recorded
  Slot* slot_ = nullptr;                   // its slot
  uint64_t next_ = 0, last_ = 0, done_ = 0;  // tickets: last submitted, last known complete
  mutable std::mutex exec_mu_;
  std::atomic<uint64_t> dispatches_{0};
};

}  // namespace

Result<std::unique_ptr<Backend>> create_backend(int index, bool min_spec) {
  auto d = open_device(index, min_spec);
  if (!d.ok()) return d.error();
  auto b = std::make_unique<VulkanBackend>(std::move(*d));
  VKML_TRY(b->init());
  return std::unique_ptr<Backend>(std::move(b));
}

}  // namespace vkml::vk
