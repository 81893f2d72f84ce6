// Caching sub-allocator, after PyTorch's CUDA caching allocator: segments are VkDeviceMemory bound to
// one VkBuffer each (with a buffer-device address); blocks are sub-ranges handed out by address.
// Small requests (<= 1 MiB) come from 2 MiB segments, large ones from segments of >= 20 MiB; freed
// blocks are cached (best fit, split, coalesced with free neighbours) until empty_cache().
#pragma once
#include <volk.h>

#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "backend/api/backend.h"
#include "util/result.h"

namespace vkml::vk {

struct Device;

class Memory {
 public:
  explicit Memory(Device& d);
  ~Memory();
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;

  Result<Block> alloc(size_t bytes, MemKind kind);
  void free(const Block& b);
  void* host_ptr(uint64_t addr);
  void empty_cache();
  MemoryStats stats() const;
  void reset_stats(bool peaks, bool totals);
  // The buffer and offset holding [addr, addr+bytes), if one segment holds all of it.
  bool lookup(uint64_t addr, uint64_t bytes, VkBuffer* buf, VkDeviceSize* offset);

  static constexpr size_t kRound = 512;             // block sizes are multiples of this
  static constexpr size_t kSmall = 1 << 20;         // requests up to this use small segments
  static constexpr size_t kSmallSegment = 2 << 20;  // segment size of the small pools
  static constexpr size_t kLargeSegment = 20 << 20; // smallest segment of the large pools

 private:
  struct Segment;
  struct Rec;
  struct BySize {
    bool operator()(const Rec* a, const Rec* b) const;
  };
  struct Pool {
    std::set<Rec*, BySize> free;
    uint32_t type = 0;  // memory type index
    uint32_t heap = 0;  // its heap
    bool host = false;  // mapped staging memory
    bool small = false;
  };
  void count(const Pool& p, Counter PoolStats::*c, int64_t n);  // into the pool's and the total

  Pool& pool(MemKind kind, bool small) { return pools_[(kind == MemKind::staging) * 2 + small]; }
  Rec* take(Pool& p, size_t size);
  Result<Rec*> new_segment(Pool& p, size_t seg_size);
  void release_free_segments();
  void destroy(Segment* s);
  Error oom(MemKind kind, size_t size, const Pool& p, const char* detail);

  Device& d_;
  mutable std::mutex mu_;
  Pool pools_[4];
  std::map<uint64_t, Segment*> segments_;  // by base address
  size_t allocated_ = 0, reserved_ = 0;  // all kinds (for the heaps and OOM text)
  MemoryStats dev_;  // device memory, torch's counters
  uint64_t heap_used_[VK_MAX_MEMORY_HEAPS] = {};  // reserved bytes per heap (pools may share one)
};

}  // namespace vkml::vk
