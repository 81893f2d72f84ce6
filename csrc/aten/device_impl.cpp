// What torch needs to know about the vkml device: its allocator, its device guard, its hooks.
#include <ATen/core/CachingHostAllocator.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/Allocator.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "aten/common.h"
#include "aten/devices.h"
#include "aten/pinned.h"
#include "aten/random.h"

namespace vkml::aten {
namespace {

// A block and the device it came from (freed there, whichever device is current).
struct Owned {
  Block block;
  int device;
};

void delete_block(void* ctx) {
  auto* b = static_cast<Owned*>(ctx);
  if (Device* d = Device::get(b->device)) d->free(b->block);
  delete b;
}

void put(c10::CachingAllocator::Stat& s, const Counter& c) {
  s.current = c.current, s.peak = c.peak, s.allocated = c.allocated, s.freed = c.freed;
}

// data_ptr() is the element's buffer-device address; the context is the allocator's Block.
// A c10::DeviceAllocator, so that torch.accelerator's memory functions read its counters.
struct VkmlAllocator final : c10::DeviceAllocator {
  c10::DataPtr allocate(size_t n) override {
    // On the current device (kernels and factories make their tensors' device current).
    const int index = Device::current();  // (read once: nothing here changes it)
    c10::Device dev(c10::DeviceType::PrivateUse1, c10::DeviceIndex(index));
    if (n == 0) return {nullptr, nullptr, &c10::detail::deleteNothing, dev};
    auto r = device().alloc(n);
    if (!r.ok()) raise(r.error());
    auto* b = new Owned{r.value(), index};
    return {reinterpret_cast<void*>(b->block.addr), b, &delete_block, dev};
  }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    if (count == 0) return;
    record(transfer_node(reinterpret_cast<uint64_t>(dest), reinterpret_cast<uint64_t>(src), count));
  }
  bool initialized() override { return Device::get() != nullptr; }
  void emptyCache(c10::MempoolId_t) override {  // every device's, as CUDA's
    for (Device* d : Device::opened_devices()) d->empty_cache();
  }
  void recordStream(const c10::DataPtr&, c10::Stream) override {}  // one queue, in order
  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex i) override {
    c10::CachingDeviceAllocator::DeviceStats r;
    Device* d = i >= 0 && i < Device::device_count() ? Device::get(i) : nullptr;
    if (!d) return r;
    MemoryStats m = d->memory_stats();
    for (size_t k = 0; k < 3; ++k) {
      const PoolStats& p = m.pool[k];
      put(r.allocation[k], p.allocation);
      put(r.active[k], p.allocation);  // freed blocks are reusable at once: active == allocated
      put(r.segment[k], p.segment);
      put(r.allocated_bytes[k], p.allocated_bytes);
      put(r.active_bytes[k], p.allocated_bytes);
      put(r.reserved_bytes[k], p.reserved_bytes);
      put(r.requested_bytes[k], p.requested_bytes);
      put(r.inactive_split[k], p.inactive_split);
      put(r.inactive_split_bytes[k], p.inactive_split_bytes);
    }
    r.num_alloc_retries = m.num_alloc_retries;
    r.num_ooms = m.num_ooms;
    r.num_device_alloc = m.num_device_alloc;
    r.num_device_free = m.num_device_free;
    return r;
  }
  void resetAccumulatedStats(c10::DeviceIndex i) override {
    if (Device* d = stats_device(i)) d->reset_memory_stats(false, true);
  }
  void resetPeakStats(c10::DeviceIndex i) override {
    if (Device* d = stats_device(i)) d->reset_memory_stats(true, false);
  }
  static Device* stats_device(c10::DeviceIndex i) {
    return i >= 0 && i < Device::device_count() ? Device::get(i) : nullptr;
  }
  // Free as this process sees it: the heap less what vkml holds (no VK_EXT_memory_budget yet).
  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex i) override {
    check_device_index(i);
    Device& d = device(i);
    size_t total = d.info().memory_bytes, held = d.memory_stats().reserved;
    return {total > held ? total - held : 0, total};
  }
};

VkmlAllocator g_allocator;

struct Guard final : c10::impl::DeviceGuardImplInterface {
  static constexpr c10::DeviceType kType = c10::DeviceType::PrivateUse1;
  c10::DeviceType type() const override { return kType; }
  // The calling thread's current device (dispatch/device.h), as CUDA's. Every op that names a
  // device passes here (factories, .to(), torch.accelerator.set_device_index): an absent one raises.
  c10::Device exchangeDevice(c10::Device d) const override {
    const c10::Device prev = getDevice();
    setDevice(d);
    return prev;
  }
  c10::Device getDevice() const override { return {kType, c10::DeviceIndex(Device::current())}; }
  void setDevice(c10::Device d) const override {
    check_device_index(d.index());
    if (d.index() >= 0) Device::set_current(d.index());
  }
  void uncheckedSetDevice(c10::Device d) const noexcept override {
    if (d.index() >= 0 && d.index() < Device::device_count()) Device::set_current(d.index());
  }
  // One in-order queue per device: its default stream.
  c10::Stream getStream(c10::Device d) const override { return c10::Stream(c10::Stream::DEFAULT, on(d)); }
  c10::Stream exchangeStream(c10::Stream s) const override { return c10::Stream(c10::Stream::DEFAULT, on(s.device())); }
  static c10::Device on(c10::Device d) { return {kType, d.index() < 0 ? c10::DeviceIndex(Device::current()) : d.index()}; }
  c10::DeviceIndex deviceCount() const noexcept override { return c10::DeviceIndex(Device::device_count()); }
  void record(void**, const c10::Stream&, const c10::DeviceIndex, const c10::EventFlag) const override {}
  void block(void*, const c10::Stream&) const override {}
  bool queryEvent(void*) const override { return true; }
  void destroyEvent(void*, const c10::DeviceIndex) const noexcept override {}
  void synchronizeDevice(const c10::DeviceIndex i) const override { check(device(i).flush()); }
};

struct Hooks final : at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return Device::device_count() > 0; }
  // Generators on the vkml device that draw with a CPU generator inside (aten/random.h).
  const at::Generator& getDefaultGenerator(c10::DeviceIndex) const override { return default_generator(); }
  at::Generator getNewGenerator(c10::DeviceIndex) const override { return new_generator(); }
  // An address alone does not say which device (two may share a physical one): the current one.
  at::Device getDeviceFromPtr(void*) const override {
    return {c10::DeviceType::PrivateUse1, c10::DeviceIndex(Device::current())};
  }
  // A CUDA build of torch pins `torch.empty(..., pin_memory=True)` with CUDA's host allocator
  // whenever CUDA is present (at::detail::GetCPUAllocatorMaybePinned asks CUDA first), while
  // is_pinned() asks the accelerator, vkml: memory CUDA pinned counts as pinned too. Only our own
  // pinned blocks take the staging path's direct copy (aten/pinned.h). CUDA is asked only where
  // it already has a context (its pinned blocks imply one): asking would create one otherwise.
  bool isPinnedPtr(const void* p) const override {
    if (is_pinned(p)) return true;
    const auto& cuda = at::detail::getCUDAHooks();
    if (!cuda.hasCUDA()) return false;
    for (c10::DeviceIndex i = 0; i < cuda.deviceCount(); ++i)
      if (cuda.hasPrimaryContext(i)) return cuda.isPinnedPtr(p);
    return false;
  }
  c10::Allocator* getPinnedMemoryAllocator() const override { return pinned_allocator(); }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override;
};

void Hooks::resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const {
  auto* impl = storage.unsafeGetStorageImpl();
  TORCH_CHECK(impl->resizable(), "vkml: trying to resize storage that is not resizable");
  OnDevice on(impl->device().index());
  size_t old = impl->nbytes();
  c10::DataPtr fresh = g_allocator.allocate(newsize);
  if (old && newsize) g_allocator.copy_data(fresh.get(), impl->data(), std::min(old, newsize));
  impl->set_data_ptr_noswap(std::move(fresh));
  impl->set_nbytes(newsize);
}

Hooks g_hooks;

struct Register {
  Register() {
    c10::SetAllocator(c10::DeviceType::PrivateUse1, &g_allocator);
    at::RegisterPrivateUse1HooksInterface(&g_hooks);
  }
} g_register;

C10_REGISTER_GUARD_IMPL(PrivateUse1, Guard);

}  // namespace

c10::Allocator* allocator() { return &g_allocator; }

}  // namespace vkml::aten
