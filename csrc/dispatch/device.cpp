#include "dispatch/device.h"

#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "backend/vulkan/vulkan_backend.h"
#include "dispatch/compare.h"
#include "graph/device_assert.h"
#include "util/env.h"

namespace vkml {
namespace {

using Clock = std::chrono::steady_clock;
uint64_t ns_since(Clock::time_point t0) {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
}

constexpr size_t kMaxStagedBytes = size_t(256) << 20;  // flush when pending uploads hold this much
// Uploads and downloads go through staging blocks of at most this many bytes, so that a tensor
// larger than the device's largest allocation (1 GiB under VKML_MIN_SPEC) or its host-visible
// heap still copies, and check mode's downloads of large operands too.
constexpr size_t kStagingChunk = size_t(16) << 20;

// One vkml:N: its physical device (list_devices() order) and, once opened, the Device.
struct Slot {
  int physical = 0;
  std::once_flag once;
  std::atomic<Device*> dev{nullptr};
  std::string why;
};
struct Slots {
  std::vector<std::unique_ptr<Slot>> slots;  // empty when there is no device (why says why)
  std::string why;
};

thread_local Device::Current t_current;  // as CUDA's current device: per thread

// Fork: set in the child when the parent had started Vulkan (pthread_atfork runs for os.fork too).
std::atomic<bool> g_vulkan_started{false}, g_had_device{false}, g_bad_fork{false};
// A bad fork's exit skips the exit handlers registered before the fork: the driver's would tear
// down objects through the file descriptors it shares with the parent (seen on NVIDIA: the child
// crashed in them, and the parent's next result was wrong). on_exit passes the status; handlers
// run in reverse order, so this one, registered last, runs first.
void bad_fork_exit(int status, void*) {
  std::fflush(nullptr);
  _exit(status);
}
void forked_child() {
  if (!g_vulkan_started.load()) return;
  g_bad_fork.store(true);
  on_exit(bad_fork_exit, nullptr);
}
const int g_atfork = pthread_atfork(nullptr, nullptr, forked_child);
const std::string kBadFork =
    "Cannot re-initialize vkml in forked subprocess. To use vkml with multiprocessing, you must use the "
    "'spawn' start method";

Planner g_planner = nullptr;

}  // namespace

void Device::set_planner(Planner p) { g_planner = p; }

static Slots& slots();
static Slot* slot(int index) {
  auto& s = slots().slots;
  return index >= 0 && index < int(s.size()) ? s[size_t(index)].get() : nullptr;
}

bool Device::in_bad_fork() { return g_bad_fork.load(); }

Device* Device::get(int index) {
  if (in_bad_fork()) return nullptr;
  Slot* s = slot(index);
  if (!s) return nullptr;
  // Every op passes here (allocator, record, free): once the device is open, skip call_once
  // (its thread-local bookkeeping and pthread_once cost more than the rest of this function).
  if (Device* d = s->dev.load(std::memory_order_acquire)) return d;
  std::call_once(s->once, [&] {
    auto b = vk::create_backend(s->physical, env().min_spec);
    if (!b.ok()) {
      s->why = b.error().msg;
      return;
    }
    s->dev.store(new Device(std::move(b.value()), index, s->physical));  // lives for the process: tensors may outlive main
    g_had_device.store(true);
  });
  return s->dev.load();
}

Device::Current& Device::current_state() { return t_current; }

Device* Device::get() {
  Current& c = t_current;
  // A forked child inherits the forking thread's Current, but no usable device (get() is null in a
  // bad fork): the remembered Device counts only outside one.
  if (c.dev && !in_bad_fork()) return c.dev;
  return c.dev = get(c.index);  // null (not open, or a bad fork): found again on the next call
}

const std::string& Device::why_unavailable(int index) {
  static const std::string none;
  if (in_bad_fork()) return kBadFork;
  Slots& all = slots();
  if (all.slots.empty()) return all.why;
  Slot* s = slot(index);
  if (!s) return none;
  get(index);
  return s->why;
}

// In a bad fork the devices still exist (as CUDA's count does); using them raises.
int Device::device_count() {
  if (in_bad_fork()) return g_had_device.load() ? int(slots().slots.size()) : 0;
  return get(0) ? int(slots().slots.size()) : 0;
}

std::vector<Device*> Device::opened_devices() {
  std::vector<Device*> r;
  for (auto& s : slots().slots) {
    if (Device* d = s->dev.load()) r.push_back(d);
  }
  return r;
}

static Slots& slots() {
  static Slots o = [] {
    g_vulkan_started.store(true);
    (void)g_atfork;
    Slots r;
    std::string why;
    auto devices = vk::list_devices(&why);
    if (devices.empty()) {
      r.why = why.empty() ? "no Vulkan 1.3 device found" : why;
      return r;
    }
    const int chosen = env().device;
    if (chosen >= int(devices.size())) {
      r.why = "VKML_DEVICE=" + std::to_string(chosen) + " but only " + std::to_string(devices.size()) +
              " Vulkan device(s) found";
      return r;
    }
    std::vector<int> physical;
    if (env().fake_devices > 0) physical.assign(size_t(env().fake_devices), chosen < 0 ? 0 : chosen);
    else if (chosen >= 0) physical = {chosen};
    else for (int i = 0; i < int(devices.size()); ++i) physical.push_back(i);
    for (int p : physical) {
      r.slots.push_back(std::make_unique<Slot>());
      r.slots.back()->physical = p;
    }
    return r;
  }();
  return o;
}

Result<Block> Device::alloc(size_t bytes) {
  // Every op's output passes here: the first try takes only the allocator's own lock (the Vulkan
  // backend's Memory is thread safe), the device lock only for the out-of-memory retry.
  auto r = backend_->alloc(bytes, MemKind::device);
  if (r.ok() || r.error().code != Err::out_of_memory) return r;
  std::lock_guard<std::recursive_mutex> g(mu_);
  // Memory pressure: run what is pending (frees staging), give cached blocks back, try again.
  ++alloc_retries_;
  VKML_TRY(flush_locked());
  backend_->empty_cache();
  r = backend_->alloc(bytes, MemKind::device);
  if (!r.ok() && r.error().code == Err::out_of_memory) ++ooms_;
  return r;
}

void Device::free(const Block& b) {
  // Stream-ordered reuse: nodes run in recording order, with a barrier wherever a later one
  // touches bytes an earlier one wrote or read (the backend tracks that by address), so a block
  // freed now may be handed to a later node even while earlier pending nodes still use it.
  std::lock_guard<std::recursive_mutex> g(mu_);
  // The plan may skip storing a value nothing can read any more: one whose block is freed.
  if (!graph_.empty()) graph_.freed.push_back(Freed{b.addr, b.size, graph_.nodes.size()});
  // Check mode defers elementwise nodes to the flush, which allocates as it checks them (scratch,
  // the subnormal probe): a block they still read must not be handed out before they ran.
  if (env().check && !checking_ && !graph_.empty()) {
    Backend* be = backend_.get();
    graph_.keepalive.push_back(std::shared_ptr<void>(nullptr, [be, b](void*) { be->free(b); }));
    return;
  }
  backend_->free(b);
}

void Device::empty_cache() {
  std::lock_guard<std::recursive_mutex> g(mu_);
  if (auto r = flush_locked(); !r.ok()) late_ = r.error();  // pending nodes may still read freed blocks
  backend_->empty_cache();
}

MemoryStats Device::memory_stats() const {
  std::lock_guard<std::recursive_mutex> g(mu_);
  MemoryStats m = backend_->memory_stats();
  m.num_alloc_retries = alloc_retries_;
  m.num_ooms = ooms_;
  return m;
}

void Device::reset_memory_stats(bool peaks, bool totals) {
  std::lock_guard<std::recursive_mutex> g(mu_);
  backend_->reset_memory_stats(peaks, totals);
  if (totals) alloc_retries_ = ooms_ = 0;
}

Result<Block> Device::alloc_host(size_t bytes) {
  std::lock_guard<std::recursive_mutex> g(mu_);
  return staging_locked(bytes);
}

void* Device::host_ptr(const Block& b) { return backend_->host_ptr(b.addr); }

void Device::release_later(const Block& b) {
  std::lock_guard<std::recursive_mutex> g(mu_);
  Backend* be = backend_.get();
  auto keep = std::shared_ptr<void>(nullptr, [be, b](void*) { be->free(b); });
  if (!graph_.empty()) {
    graph_.keepalive.push_back(std::move(keep));
    return;
  }
  release_completed();
  // Batches finish in order: the last one submitted finishes after any that may read b.
  if (!inflight_.empty()) inflight_.back().second.push_back(std::move(keep));
}  // else nothing can read it any more: freed here

Result<void> Device::upload_from_host_block(uint64_t dst, uint64_t src, size_t bytes) {
  if (bytes == 0) return {};
  std::lock_guard<std::recursive_mutex> g(mu_);
  return record(transfer_node(dst, src, bytes));
}

bool Device::supports(const Node& n) const { return backend_->supports(n); }

Result<void> Device::record(const Node& n) {
  std::lock_guard<std::recursive_mutex> g(mu_);
  graph_.nodes.push_back(n);
  return commit_locked();
}

Result<void> Device::commit_locked() {
  const Node& n = graph_.nodes.back();
  if (!backend_->supports(n)) {
    std::string what = std::string(op_info(n.op).name) + " on " + info().name + ":";
    for (int i = 0; i < n.nout + n.nin; ++i)
      if (n.t[i].addr) what += " " + describe(n.t[i]);
    graph_.nodes.pop_back();
    return fail(Err::unsupported, "no Vulkan kernel for " + what);
  }
  ++stats_.nodes;
  const Env& e = env();
  // Check mode with fusion: elementwise nodes wait for the next flush, which fuses and checks
  // them step by step (flush_checked); anything else flushes (and is checked) at once.
  if (e.check && e.fuse && g_planner && !checking_ && op_info(n.op).family == Family::elementwise &&
      int(graph_.nodes.size()) < e.max_pending)
    return {};
  if (e.eager || e.check) return flush_locked();
  // Past the bounds the batch goes to the GPU without waiting: recording goes on meanwhile.
  if (int(graph_.nodes.size()) >= e.max_pending || graph_.staged_bytes >= kMaxStagedBytes)
    return flush_locked(/*wait=*/false);
  // Early submission: once matrix products worth it are pending, the batch goes without waiting,
  // so the GPU runs them while the host records what follows (Limits::submit_early_mflop,
  // docs/performance.md). Elementwise work never counts, so chains keep fusing; the points where
  // it submits depend on the program alone, so a training step's batches (and the fused programs
  // they plan) are the same every step.
  if (op_info(n.op).family == Family::gemm) {
    const uint32_t mflop = e.submit_early >= 0 ? uint32_t(e.submit_early) : limits().submit_early_mflop;
    const TensorDesc& a = n.t[GemmArgs::a];  // c [B, M, N] = a [B, M, K] @ b: 2*B*M*N*K
    graph_.gemm_flops += 2.0 * double(n.t[GemmArgs::c].numel()) * double(a.ndim ? a.sizes[a.ndim - 1] : 0);
    if (mflop && graph_.gemm_flops >= 1e6 * mflop) return flush_locked(/*wait=*/false);
  }
  return {};
}

Result<void> Device::flush() {
  std::lock_guard<std::recursive_mutex> g(mu_);
  return flush_locked();
}

Result<void> Device::plan_locked() {
  if (!g_planner || graph_.nodes.size() < 2) return {};
  VKML_TRY(g_planner(graph_, limits()));
  for (const Node& n : graph_.nodes)
    if (n.op == OpId::fused) {
      ++stats_.fused;
      stats_.fused_steps += n.as<FusedArgs>().prog->nodes.size();
    }
  return {};
}

// Check mode: the pending nodes (elementwise ones deferred by record(), then the node that
// flushed them) are planned as usual; a fused node is checked step by step, any other node as
// always, and transfers run as they are. The batch's keepalive outlives every submission here.
Result<void> Device::flush_checked() {
  const auto t0 = Clock::now();
  Result<void> r = plan_locked();
  stats_.submit_ns += ns_since(t0);
  std::vector<Node> nodes;
  nodes.swap(graph_.nodes);
  auto keep = std::move(graph_.keepalive);
  graph_.clear();
  checking_ = true;
  for (const Node& n : nodes) {
    if (!r.ok()) break;
    if (n.op == OpId::fused) r = run_checked_fused(n);
    else if (n.op != OpId::transfer) r = run_checked(n);
    else {
      graph_.nodes.push_back(n);
      r = flush_locked();
    }
  }
  checking_ = false;
  graph_.clear();
  if (!keep.empty()) {  // freed once the last submission (after all of these) completes
    if (last_ticket_) inflight_.emplace_back(last_ticket_, std::move(keep));
    else keep.clear();
  }
  if (!r.ok()) return r;
  if (last_ticket_) VKML_TRY(timed_wait(last_ticket_));
  release_completed();
  return take_assert();
}

Result<void> Device::flush_locked(bool wait) {
  if (env().check && !checking_ && !graph_.empty()) return flush_checked();
  if (graph_.empty()) {
    if (wait && last_ticket_) VKML_TRY(timed_wait(last_ticket_));
    release_completed();
    return wait ? take_assert() : Result<void>{};
  }
  ++stats_.flushes;
  ++stats_.submits;
  const auto t0 = Clock::now();
  if (!checking_) {
    auto p = plan_locked();
    if (!p.ok()) {
      graph_.clear();
      return p.error();
    }
  }
  auto t = backend_->submit(graph_.nodes);
  stats_.submit_ns += ns_since(t0);
  if (t.ok()) {
    last_ticket_ = t.value();
    inflight_.emplace_back(last_ticket_, std::move(graph_.keepalive));
  }
  graph_.clear();  // also on error: the batch is gone either way, and its staging must be freed
  if (!t.ok()) return t.error();
  if (wait) VKML_TRY(timed_wait(last_ticket_));
  release_completed();
  return wait ? take_assert() : Result<void>{};
}

Result<uint64_t> Device::assert_record() {
  std::lock_guard<std::recursive_mutex> g(mu_);
  if (!assert_.addr) {
    auto b = backend_->alloc(sizeof(DeviceAssert), MemKind::staging);  // kept for the process
    if (!b.ok()) return b.error();
    std::memset(backend_->host_ptr(b.value().addr), 0, sizeof(DeviceAssert));
    assert_ = b.value();
  }
  return assert_.addr;
}

Result<void> Device::take_assert() {
  if (late_.code != Err::ok) return std::exchange(late_, Error{});
  if (!assert_.addr) return {};
  auto* rec = static_cast<DeviceAssert*>(backend_->host_ptr(assert_.addr));
  if (rec->code == kAssertNone) return {};
  const DeviceAssert found = *rec;
  *rec = DeviceAssert{};  // the next batch starts clean (its barrier orders host writes first)
  return assert_error(found);
}

Result<void> Device::timed_wait(uint64_t ticket) {
  const auto t0 = Clock::now();
  auto r = backend_->wait(ticket);
  stats_.wait_ns += ns_since(t0);
  return r;
}

void Device::release_completed() {
  const uint64_t done = backend_->completed();
  size_t k = 0;
  while (k < inflight_.size() && inflight_[k].first <= done) ++k;
  inflight_.erase(inflight_.begin(), inflight_.begin() + ptrdiff_t(k));
}

// A host-visible block. Out of memory: as alloc(), flush (frees the staging pending uploads
// hold), give cached blocks of either kind back to the driver, try once more.
Result<Block> Device::staging_locked(size_t bytes) {
  auto st = backend_->alloc(bytes, MemKind::staging);
  if (st.ok() || st.error().code != Err::out_of_memory) return st;
  ++alloc_retries_;
  VKML_TRY(flush_locked());
  backend_->empty_cache();
  st = backend_->alloc(bytes, MemKind::staging);
  if (!st.ok() && st.error().code == Err::out_of_memory) ++ooms_;
  return st;
}

Result<void> Device::upload(uint64_t dst, const void* src, size_t bytes) {
  std::lock_guard<std::recursive_mutex> g(mu_);
  Backend* be = backend_.get();
  for (size_t off = 0; off < bytes; off += kStagingChunk) {
    const size_t len = std::min(kStagingChunk, bytes - off);
    auto st = staging_locked(len);
    if (!st.ok()) return st.error();
    Block blk = st.value();
    std::memcpy(backend_->host_ptr(blk.addr), static_cast<const uint8_t*>(src) + off, len);
    graph_.keepalive.push_back(std::shared_ptr<void>(nullptr, [be, blk](void*) { be->free(blk); }));
    graph_.staged_bytes += len;
    VKML_TRY(record(transfer_node(dst + off, blk.addr, len)));
  }
  return {};
}

Result<void> Device::download_to_host_block(uint64_t src, uint64_t dst, size_t bytes) {
  if (bytes == 0) return {};
  std::lock_guard<std::recursive_mutex> g(mu_);
  ++stats_.nodes;
  graph_.nodes.push_back(transfer_node(dst, src, bytes));
  return flush_locked();
}

Result<void> Device::download(uint64_t src, void* dst, size_t bytes) {
  std::lock_guard<std::recursive_mutex> g(mu_);
  return download_locked(src, dst, bytes);
}

Result<void> Device::download_locked(uint64_t src, void* dst, size_t bytes) {
  for (size_t off = 0; off < bytes; off += kStagingChunk) {
    const size_t len = std::min(kStagingChunk, bytes - off);
    auto st = staging_locked(len);
    if (!st.ok()) return st.error();
    Block blk = st.value();
    ++stats_.nodes;
    graph_.nodes.push_back(transfer_node(blk.addr, src + off, len));
    auto r = flush_locked();
    if (r.ok()) std::memcpy(static_cast<uint8_t*>(dst) + off, backend_->host_ptr(blk.addr), len);
    backend_->free(blk);
    VKML_TRY(r);
  }
  return {};
}

void Device::save_pipeline_caches() {
  if (!in_bad_fork()) vk::save_pipeline_caches();
}

Stats Device::stats() {
  std::lock_guard<std::recursive_mutex> g(mu_);
  Stats s = stats_;
  s.dispatches = backend_->dispatches();
  s.barriers = backend_->barriers();
  s.specialized = backend_->specialized();
  s.pending = graph_.nodes.size();
  const PipelineStats p = backend_->pipeline_stats();
  s.pipelines = p.created;
  s.pipeline_cache_hits = p.cache_hits;
  return s;
}

PipelineStats Device::pipeline_stats() {
  std::lock_guard<std::recursive_mutex> g(mu_);
  return backend_->pipeline_stats();
}

Result<std::string> Device::set_profiling(bool on) {
  std::lock_guard<std::recursive_mutex> g(mu_);
  VKML_TRY(flush_locked());
  return backend_->set_profiling(on);
}

Result<GpuProfile> Device::take_profile() {
  std::lock_guard<std::recursive_mutex> g(mu_);
  VKML_TRY(flush_locked());
  return backend_->take_profile();
}

}  // namespace vkml
