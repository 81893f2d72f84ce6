// What a backend is: memory it hands out by address, and a way to run a batch of nodes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/limits.h"
#include "graph/node.h"
#include "util/result.h"

namespace vkml {

enum class MemKind : uint8_t {
  device,   // device-local, for tensors
  staging,  // host-visible and mapped, for transfers (has a device address too)
};

struct Block {
  uint64_t addr = 0;   // device address of the first byte
  size_t size = 0;     // bytes usable
  void* handle = nullptr;  // the allocator's record; pass back to free()
};

// A counter as torch's caching allocators keep one (c10::CachingAllocator::Stat): the value now,
// its peak since the last reset, and the totals added and removed since the last reset.
struct Counter {
  int64_t current = 0, peak = 0, allocated = 0, freed = 0;
  void add(int64_t n) {
    current += n;
    if (current > peak) peak = current;
    if (n > 0) allocated += n;
    else freed -= n;
  }
};

// Device memory counters of one pool, after torch's CUDA caching allocator.
struct PoolStats {
  Counter allocation, segment, allocated_bytes, reserved_bytes, requested_bytes;
  Counter inactive_split, inactive_split_bytes;  // free blocks inside segments partly in use (current only)
};

// Device-local memory only (staging and pinned host memory are not counted).
struct MemoryStats {
  size_t allocated = 0, reserved = 0, max_allocated = 0;  // bytes: pool[0]'s allocated/reserved
  PoolStats pool[3];  // [0] all, [1] small (requests <= 1 MiB), [2] large: c10's StatType order
  int64_t num_device_alloc = 0, num_device_free = 0;  // segments taken from / given to the driver
  int64_t num_alloc_retries = 0, num_ooms = 0;        // Device::alloc: retried after a flush; failed
};

struct DeviceInfo {
  std::string name;        // "NVIDIA H200"
  std::string type;        // "discrete", "integrated", "virtual", "cpu"
  std::string api_version; // "1.3.230"
  std::string driver;      // driver version, as the vendor writes it
  uint32_t vendor_id = 0, device_id = 0;
  uint64_t memory_bytes = 0;  // largest device-local heap
};

// GPU timestamps of the batches submitted while profiling (Backend::set_profiling), in ns on the
// device's own clock (timestampPeriod applied; comparable within one device only).
struct GpuKernel {
  std::string name;         // "add [elementwise_f32]" (row [shader]), "copy host->device"
  uint64_t submission = 0;  // the batch's ticket
  double start_ns = 0, end_ns = 0;
};
struct GpuSubmission {
  uint64_t ticket = 0;
  double start_ns = 0, end_ns = 0;  // when the batch could start (after earlier ones), and ended
};
struct GpuProfile {
  std::vector<GpuKernel> kernels;
  std::vector<GpuSubmission> submissions;
  uint64_t lost = 0;  // commands whose queries could not be read back
};

// The pipelines a device has made, and its pipeline cache on disk (VKML_CACHE_DIR).
struct PipelineStats {
  uint64_t created = 0;     // pipelines compiled (vkCreateComputePipelines calls)
  uint64_t cache_hits = 0;  // of those, found in the pipeline cache (as the driver reports it)
  uint64_t loaded_bytes = 0;  // cache data read from the file at start (0: none, or no cache)
  std::string file;         // the cache file ("" when the cache is off)
  struct Made {             // one vkCreateComputePipelines call, in the order they were made
    std::string shader;
    int32_t opcode = 0;
    double ms = 0;          // host wall time of the call (the driver's compile, or its cache lookup)
    bool cache_hit = false;
  };
  std::vector<Made> made;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const DeviceInfo& info() const = 0;
  virtual const Limits& limits() const = 0;

  // Memory. alloc may fail with Err::out_of_memory; the caller may flush, empty the cache, retry.
  // alloc and free are thread-safe (the device calls them without its own lock).
  virtual Result<Block> alloc(size_t bytes, MemKind kind) = 0;
  virtual void free(const Block& b) = 0;
  virtual void* host_ptr(uint64_t addr) = 0;  // mapped pointer for a staging address, else null
  virtual void empty_cache() = 0;            // give cached, unused memory back to the driver
  virtual MemoryStats memory_stats() const = 0;
  virtual void reset_memory_stats(bool peaks, bool totals) = 0;  // as torch.cuda's reset_* functions

  // Execution. supports() is asked per node before it is recorded. submit() records the batch
  // and hands it to the GPU without waiting; batches run in submission order (each node sees the
  // writes of every node before it). It returns a ticket; wait(ticket) blocks until that batch
  // (and all before it) has finished; completed() is the last ticket known finished.
  virtual bool supports(const Node& n) const = 0;
  virtual Result<uint64_t> submit(std::span<const Node> nodes) = 0;
  virtual Result<void> wait(uint64_t ticket) = 0;
  virtual uint64_t completed() = 0;
  Result<void> execute(std::span<const Node> nodes) {  // submit and wait
    auto t = submit(nodes);
    if (!t.ok()) return t.error();
    return wait(t.value());
  }
  virtual uint64_t dispatches() const = 0;  // GPU dispatches + copies recorded since start
  virtual uint64_t barriers() const = 0;    // pipeline barriers recorded between them since start
  virtual uint64_t specialized() const { return 0; }  // dispatches run on a specialized pipeline

  // Profiling: timestamps around every dispatch and copy of the batches submitted while on (none
  // written while off). Returns "" or why the device cannot (it then stays off). take_profile()
  // hands over what finished batches recorded, and forgets it.
  virtual std::string set_profiling(bool on) = 0;
  virtual GpuProfile take_profile() = 0;
  virtual uint64_t timestamps_written() const = 0;  // queries written since start (tests)
  virtual PipelineStats pipeline_stats() = 0;
};

}  // namespace vkml
