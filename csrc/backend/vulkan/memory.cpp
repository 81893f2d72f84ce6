#include "backend/vulkan/memory.h"

#include <algorithm>
#include <cstdio>

#include "backend/vulkan/device.h"

namespace vkml::vk {

struct Memory::Segment {
  VkDeviceMemory mem = VK_NULL_HANDLE;
  VkBuffer buf = VK_NULL_HANDLE;
  uint64_t base = 0;
  size_t size = 0;
  uint8_t* host = nullptr;  // mapped, for staging pools
  Pool* pool = nullptr;
  Rec* first = nullptr;
};

// A block: a sub-range of a segment, linked to its neighbours in address order.
struct Memory::Rec {
  Segment* seg = nullptr;
  uint64_t addr = 0;
  size_t size = 0;
  size_t req = 0;  // rounded request while in use (what `allocated` counts)
  size_t asked = 0;  // the request as made (requested_bytes)
  bool used = false;
  Rec* prev = nullptr;
  Rec* next = nullptr;
};

bool Memory::BySize::operator()(const Rec* a, const Rec* b) const {
  return a->size != b->size ? a->size < b->size : a->addr < b->addr;
}

namespace {

constexpr VkBufferUsageFlags kUsage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                      VK_BUFFER_USAGE_TRANSFER_DST_BIT |
                                      VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT;

size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

std::string human(uint64_t b) {
  char s[32];
  if (b >= (1ull << 40)) std::snprintf(s, sizeof s, "%.2f TiB", double(b) / double(1ull << 40));
  else if (b >= (1ull << 30)) std::snprintf(s, sizeof s, "%.2f GiB", double(b) / double(1ull << 30));
  else if (b >= (1ull << 20)) std::snprintf(s, sizeof s, "%.2f MiB", double(b) / double(1ull << 20));
  else if (b >= 1024) std::snprintf(s, sizeof s, "%.2f KiB", double(b) / 1024.0);
  else std::snprintf(s, sizeof s, "%llu bytes", (unsigned long long)b);
  return s;
}

// First type allowed by `bits` that has all of `want`, preferring ones with none of `avoid`.
uint32_t pick_type(const VkPhysicalDeviceMemoryProperties& mp, uint32_t bits, VkMemoryPropertyFlags want,
                   VkMemoryPropertyFlags avoid) {
  for (int pass = 0; pass < 2; ++pass)
    for (uint32_t i = 0; i < mp.memoryTypeCount; ++i) {
      VkMemoryPropertyFlags f = mp.memoryTypes[i].propertyFlags;
      if ((bits >> i & 1) && (f & want) == want && (pass == 1 || !(f & avoid))) return i;
    }
  return UINT32_MAX;
}

}  // namespace

Memory::Memory(Device& d) : d_(d) {
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = kSmallSegment;
  bi.usage = kUsage;
  VkDeviceBufferMemoryRequirements q{VK_STRUCTURE_TYPE_DEVICE_BUFFER_MEMORY_REQUIREMENTS};
  q.pCreateInfo = &bi;
  VkMemoryRequirements2 req{VK_STRUCTURE_TYPE_MEMORY_REQUIREMENTS_2};
  d_.fn.vkGetDeviceBufferMemoryRequirements(d_.dev, &q, &req);
  uint32_t bits = req.memoryRequirements.memoryTypeBits;
  const auto& mp = d_.mem_props;
  // Device: device-local, preferably not host-visible (a ReBAR window is small and precious).
  uint32_t dev = pick_type(mp, bits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT);
  if (dev == UINT32_MAX) dev = pick_type(mp, bits, 0, 0);
  // Staging: coherent and mapped; cached when possible, since downloads read it on the CPU.
  constexpr VkMemoryPropertyFlags hv = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  uint32_t stg = pick_type(mp, bits, hv | VK_MEMORY_PROPERTY_HOST_CACHED_BIT, 0);
  if (stg == UINT32_MAX) stg = pick_type(mp, bits, hv, 0);
  for (int i = 0; i < 4; ++i) {
    pools_[i].host = i >= 2;
    pools_[i].small = i % 2 == 1;
    pools_[i].type = pools_[i].host ? stg : dev;
    if (pools_[i].type != UINT32_MAX) pools_[i].heap = mp.memoryTypes[pools_[i].type].heapIndex;
  }
}

Memory::~Memory() {
  std::lock_guard<std::mutex> lk(mu_);
  for (auto& [base, s] : segments_) destroy(s);
  segments_.clear();
}

void Memory::count(const Pool& p, Counter PoolStats::*c, int64_t n) {
  if (p.host) return;
  (dev_.pool[0].*c).add(n);
  (dev_.pool[p.small ? 1 : 2].*c).add(n);
}

void Memory::destroy(Segment* s) {
  d_.fn.vkDestroyBuffer(d_.dev, s->buf, nullptr);
  d_.fn.vkFreeMemory(d_.dev, s->mem, nullptr);  // also unmaps
  count(*s->pool, &PoolStats::segment, -1);
  count(*s->pool, &PoolStats::reserved_bytes, -int64_t(s->size));
  if (!s->pool->host) ++dev_.num_device_free;
  reserved_ -= s->size;
  heap_used_[s->pool->heap] -= s->size;
  for (Rec* r = s->first; r;) {
    Rec* n = r->next;
    delete r;
    r = n;
  }
  delete s;
}

Memory::Rec* Memory::take(Pool& p, size_t size) {
  Rec key;
  key.size = size;
  auto it = p.free.lower_bound(&key);
  if (it == p.free.end()) return nullptr;
  Rec* r = *it;
  p.free.erase(it);
  return r;
}

Error Memory::oom(MemKind kind, size_t size, const Pool& p, const char* detail) {
  uint64_t heap = p.type == UINT32_MAX ? 0 : d_.mem_props.memoryHeaps[p.heap].size;
  std::string m = kind == MemKind::device ? "out of device memory" : "out of staging (host-visible) memory";
  m += ": tried to allocate " + human(size) + " (allocated " + human(allocated_) + ", reserved " +
       human(reserved_) + ", " + (kind == MemKind::device ? "device" : "staging") + " heap " + human(heap) + ")";
  if (detail && *detail) m += std::string("; ") + detail;
  return fail(Err::out_of_memory, m);
}

Result<Memory::Rec*> Memory::new_segment(Pool& p, size_t seg_size) {
  const auto& fn = d_.fn;
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = seg_size;
  bi.usage = kUsage;
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkBuffer buf = VK_NULL_HANDLE;
  VkResult r = fn.vkCreateBuffer(d_.dev, &bi, nullptr, &buf);
  if (r != VK_SUCCESS) return fail(Err::out_of_memory, std::string("vkCreateBuffer: ") + result_name(r));
  VkMemoryRequirements req;
  fn.vkGetBufferMemoryRequirements(d_.dev, buf, &req);
  if (!(req.memoryTypeBits >> p.type & 1)) {
    fn.vkDestroyBuffer(d_.dev, buf, nullptr);
    return fail(Err::vulkan, "no memory type usable for a storage buffer segment");
  }
  VkMemoryAllocateFlagsInfo fi{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO};
  fi.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.pNext = &fi;
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = p.type;
  VkDeviceMemory mem = VK_NULL_HANDLE;
  r = fn.vkAllocateMemory(d_.dev, &ai, nullptr, &mem);
  if (r == VK_SUCCESS) r = fn.vkBindBufferMemory(d_.dev, buf, mem, 0);
  void* host = nullptr;
  if (r == VK_SUCCESS && p.host) r = fn.vkMapMemory(d_.dev, mem, 0, VK_WHOLE_SIZE, 0, &host);
  if (r != VK_SUCCESS) {
    fn.vkDestroyBuffer(d_.dev, buf, nullptr);
    if (mem) fn.vkFreeMemory(d_.dev, mem, nullptr);
    return fail(Err::out_of_memory, std::string("vkAllocateMemory: ") + result_name(r));
  }
  VkBufferDeviceAddressInfo ba{VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO};
  ba.buffer = buf;
  auto* s = new Segment;
  s->mem = mem;
  s->buf = buf;
  s->base = fn.vkGetBufferDeviceAddress(d_.dev, &ba);
  s->size = seg_size;
  s->host = static_cast<uint8_t*>(host);
  s->pool = &p;
  s->first = new Rec;
  s->first->seg = s;
  s->first->addr = s->base;
  s->first->size = seg_size;
  segments_[s->base] = s;
  count(p, &PoolStats::segment, 1);
  count(p, &PoolStats::reserved_bytes, int64_t(seg_size));
  if (!p.host) ++dev_.num_device_alloc;
  reserved_ += seg_size;
  heap_used_[p.heap] += seg_size;
  return s->first;
}

Result<Block> Memory::alloc(size_t bytes, MemKind kind) {
  if (bytes == 0) return Block{};
  std::lock_guard<std::mutex> lk(mu_);
  const size_t size = round_up(bytes, kRound);
  const bool small = size <= kSmall;
  Pool& p = pool(kind, small);
  Rec* r = take(p, size);
  if (!r) {
    if (p.type == UINT32_MAX) return oom(kind, size, p, "no suitable memory type");
    if (size > d_.max_buffer)
      return oom(kind, size, p, ("the device's largest allocation is " + human(d_.max_buffer)).c_str());
    // Stay inside the heap even where the driver would not say no (lavapipe's heap is a fiction
    // over malloc): the same program then runs out of memory at the same point on every device.
    const uint64_t heap = d_.mem_props.memoryHeaps[p.heap].size;
    if (size > heap) return oom(kind, size, p, "larger than the whole heap");
    size_t seg = small ? kSmallSegment : size < kLargeSegment / 2 ? kLargeSegment : round_up(size, kSmallSegment);
    seg = std::min<size_t>(seg, d_.max_buffer & ~(kRound - 1));
    auto fits = [&](size_t n) { return heap_used_[p.heap] + n <= heap; };
    // Cached segments are not released here: pending nodes may still use blocks freed into them.
    // Device::alloc flushes, calls empty_cache() and retries when this reports out of memory.
    if (!fits(seg)) seg = size;
    if (!fits(seg)) return oom(kind, size, p, "");
    auto s = new_segment(p, seg);
    if (!s.ok() && s.error().code == Err::out_of_memory && seg > size) s = new_segment(p, size);
    if (!s.ok())
      return s.error().code == Err::out_of_memory ? oom(kind, size, p, s.error().msg.c_str()) : s.error();
    r = *s;
  }
  // Split off the tail when it is worth keeping (small: any 512 B; large: more than a small request).
  const size_t rest = r->size - size;
  if (small ? rest >= kRound : rest > kSmall) {
    Rec* t = new Rec;
    t->seg = r->seg;
    t->addr = r->addr + size;
    t->size = rest;
    t->prev = r;
    t->next = r->next;
    if (r->next) r->next->prev = t;
    r->next = t;
    r->size = size;
    p.free.insert(t);
  }
  r->used = true;
  r->req = size;
  r->asked = bytes;
  count(p, &PoolStats::allocation, 1);
  count(p, &PoolStats::allocated_bytes, int64_t(size));
  count(p, &PoolStats::requested_bytes, int64_t(bytes));
  allocated_ += size;
  return Block{r->addr, r->size, r};
}

void Memory::free(const Block& b) {
  if (!b.handle) return;
  std::lock_guard<std::mutex> lk(mu_);
  Rec* r = static_cast<Rec*>(b.handle);
  if (!r->used) return;
  r->used = false;
  allocated_ -= r->req;
  Pool& p = *r->seg->pool;
  count(p, &PoolStats::allocation, -1);
  count(p, &PoolStats::allocated_bytes, -int64_t(r->req));
  count(p, &PoolStats::requested_bytes, -int64_t(r->asked));
  if (Rec* n = r->next; n && !n->used) {  // absorb the free block after
    p.free.erase(n);
    r->size += n->size;
    r->next = n->next;
    if (n->next) n->next->prev = r;
    delete n;
  }
  if (Rec* q = r->prev; q && !q->used) {  // merge into the free block before
    p.free.erase(q);
    q->size += r->size;
    q->next = r->next;
    if (r->next) r->next->prev = q;
    delete r;
    r = q;
  }
  p.free.insert(r);
}

void Memory::release_free_segments() {
  for (auto it = segments_.begin(); it != segments_.end();) {
    Segment* s = it->second;
    if (!s->first->used && !s->first->next) {
      s->pool->free.erase(s->first);
      destroy(s);
      it = segments_.erase(it);
    } else {
      ++it;
    }
  }
}

void Memory::empty_cache() {
  std::lock_guard<std::mutex> lk(mu_);
  release_free_segments();
}

MemoryStats Memory::stats() const {
  std::lock_guard<std::mutex> lk(mu_);
  MemoryStats m = dev_;
  for (auto& [base, s] : segments_) {  // free blocks that cannot go back to the driver yet
    if (s->pool->host) continue;
    int64_t n = 0, bytes = 0;
    bool used = false;
    for (Rec* r = s->first; r; r = r->next) {
      used |= r->used;
      if (!r->used) ++n, bytes += int64_t(r->size);
    }
    if (!used) continue;
    for (int i : {0, s->pool->small ? 1 : 2}) {
      m.pool[i].inactive_split.current += n;
      m.pool[i].inactive_split_bytes.current += bytes;
    }
  }
  m.allocated = size_t(m.pool[0].allocated_bytes.current);
  m.reserved = size_t(m.pool[0].reserved_bytes.current);
  m.max_allocated = size_t(m.pool[0].allocated_bytes.peak);
  return m;
}

void Memory::reset_stats(bool peaks, bool totals) {
  std::lock_guard<std::mutex> lk(mu_);
  for (PoolStats& p : dev_.pool)
    for (Counter* c : {&p.allocation, &p.segment, &p.allocated_bytes, &p.reserved_bytes, &p.requested_bytes}) {
      if (peaks) c->peak = c->current;
      if (totals) c->allocated = c->freed = 0;
    }
  if (totals) dev_.num_device_alloc = dev_.num_device_free = 0;
}

bool Memory::lookup(uint64_t addr, uint64_t bytes, VkBuffer* buf, VkDeviceSize* offset) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = segments_.upper_bound(addr);
  if (it == segments_.begin()) return false;
  Segment* s = std::prev(it)->second;
  if (addr + bytes > s->base + s->size) return false;
  *buf = s->buf;
  *offset = addr - s->base;
  return true;
}

void* Memory::host_ptr(uint64_t addr) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = segments_.upper_bound(addr);
  if (it == segments_.begin()) return nullptr;
  Segment* s = std::prev(it)->second;
  if (!s->host || addr >= s->base + s->size) return nullptr;
  return s->host + (addr - s->base);
}

}  // namespace vkml::vk
