#include "aten/pinned.h"

#include <ATen/core/CachingHostAllocator.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

#include "aten/common.h"

namespace vkml::aten {
namespace {

struct Pinned {
  Block block;
  uint8_t* host = nullptr;
  size_t bytes = 0;
};

// Live pinned allocations by host address, for is_pinned() and the upload path.
std::mutex g_mu;
std::map<uintptr_t, Pinned*> g_live;
size_t g_bytes = 0, g_peak_bytes = 0, g_count = 0, g_peak_count = 0, g_total = 0, g_total_bytes = 0;

Pinned* find_locked(const void* ptr, size_t bytes) {
  auto p = reinterpret_cast<uintptr_t>(ptr);
  auto it = g_live.upper_bound(p);  // the first allocation above p; the one before may hold p
  if (it == g_live.begin()) return nullptr;
  --it;
  return p + bytes <= it->first + it->second->bytes ? it->second : nullptr;
}

void free_pinned(void* ctx) {
  auto* b = static_cast<Pinned*>(ctx);
  {
    std::lock_guard<std::mutex> lk(g_mu);
    g_live.erase(reinterpret_cast<uintptr_t>(b->host));
    g_bytes -= b->bytes;
    --g_count;
  }
  // A recorded copy may still read it: the device frees it once no pending or running batch can.
  if (Device* d = Device::get(0)) d->release_later(b->block);
  delete b;
}

struct PinnedAllocator final : at::HostAllocator {
  at::DataPtr allocate(size_t n) override {
    if (n == 0) return {nullptr, nullptr, &c10::detail::deleteNothing, c10::Device(c10::DeviceType::CPU)};
    // Staging memory of vkml:0 (the device whose uploads can read it directly).
    auto r = device(0).alloc_host(n);
    if (!r.ok()) raise(r.error());
    auto* b = new Pinned{r.value(), static_cast<uint8_t*>(device(0).host_ptr(r.value())), n};
    {
      std::lock_guard<std::mutex> lk(g_mu);
      g_live[reinterpret_cast<uintptr_t>(b->host)] = b;
      g_bytes += n, ++g_count, ++g_total, g_total_bytes += n;
      g_peak_bytes = std::max(g_peak_bytes, g_bytes);
      g_peak_count = std::max(g_peak_count, g_count);
    }
    return {b->host, b, &free_pinned, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
  void copy_data(void* dst, const void* src, size_t n) const override {
    if (n) std::memcpy(dst, src, n);
  }
  // One queue, in recording order: nothing to track per stream.
  bool record_event(void*, void*, c10::Stream) override { return true; }
  // Nothing is cached here; freed blocks go back to the device's staging pool.
  void empty_cache() override {}
  at::HostStats get_stats() override {
    std::lock_guard<std::mutex> lk(g_mu);
    at::HostStats s;
    s.active_requests.current = s.allocations.current = int64_t(g_count);
    s.active_requests.peak = s.allocations.peak = int64_t(g_peak_count);
    s.active_requests.allocated = s.allocations.allocated = int64_t(g_total);
    s.active_bytes.current = s.allocated_bytes.current = int64_t(g_bytes);
    s.active_bytes.peak = s.allocated_bytes.peak = int64_t(g_peak_bytes);
    s.active_bytes.allocated = s.allocated_bytes.allocated = int64_t(g_total_bytes);
    s.num_host_alloc = int64_t(g_total);
    s.num_host_free = int64_t(g_total - g_count);
    return s;
  }
  void reset_accumulated_stats() override {
    std::lock_guard<std::mutex> lk(g_mu);
    g_total = g_count, g_total_bytes = g_bytes;
  }
  void reset_peak_stats() override {
    std::lock_guard<std::mutex> lk(g_mu);
    g_peak_bytes = g_bytes, g_peak_count = g_count;
  }
};

PinnedAllocator g_pinned;

}  // namespace

// torch.accelerator.empty_host_cache() and torch's host-allocator lookups find it here.
REGISTER_HOST_ALLOCATOR(at::kPrivateUse1, &g_pinned)

at::HostAllocator* pinned_allocator() { return &g_pinned; }

bool is_pinned(const void* ptr, size_t bytes) {
  std::lock_guard<std::mutex> lk(g_mu);
  return find_locked(ptr, bytes) != nullptr;
}

uint64_t pinned_device_address(const void* ptr, size_t bytes) {
  std::lock_guard<std::mutex> lk(g_mu);
  Pinned* b = find_locked(ptr, bytes);
  return b ? b->block.addr + uint64_t(static_cast<const uint8_t*>(ptr) - b->host) : 0;
}

}  // namespace vkml::aten
