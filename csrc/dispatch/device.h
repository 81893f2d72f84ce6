// The device: one backend, its pending graph, the flush policy, check mode and the counters.
// Every layer above talks to the GPU only through this class. Thread safe (autograd runs
// backward on its own thread).
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "backend/api/backend.h"
#include "graph/graph.h"
#include "util/env.h"
#include "util/result.h"

namespace vkml {

struct Stats {
  uint64_t nodes = 0;       // nodes recorded
  uint64_t dispatches = 0;  // GPU dispatches and copies (from the backend)
  uint64_t submits = 0;     // batches handed to the backend (each one queue submission)
  uint64_t flushes = 0;     // flushes that had work
  uint64_t pending = 0;     // nodes recorded and not yet submitted
  uint64_t checked = 0;     // nodes verified against the oracle (each step of a fused node counts)
  uint64_t fused = 0;       // fused nodes submitted (plan/fuse.cpp)
  uint64_t fused_steps = 0; // elementwise nodes they replaced
  uint64_t barriers = 0;    // pipeline barriers between dispatches (from the backend)
  uint64_t specialized = 0; // fused dispatches that ran a pipeline specialized to their program
  uint64_t submit_ns = 0;   // host time building and submitting batches (lowering, command recording)
  uint64_t wait_ns = 0;     // host time waiting for submitted batches to finish
  uint64_t pipelines = 0;   // pipelines compiled (from the backend)
  uint64_t pipeline_cache_hits = 0;  // of those, found in the on-disk pipeline cache
};

class Device {
 public:
  // Devices are numbered 0..device_count()-1 (vkml:N): every usable Vulkan device in
  // list_devices() order, or only VKML_DEVICE's; VKML_FAKE_DEVICES=N presents that first one as N
  // devices (each its own Vulkan device and context over the same physical device), for tests.
  // get(i): device i, opened on first use; null when it cannot be (see why_unavailable(i)).
  static Device* get(int index);
  // The calling thread's current device (torch's current device; 0 until set_current()), as
  // get(current()): null where that is.
  static Device* get();
  static int current() { return current_state().index; }
  static void set_current(int index) { current_state().set(index); }  // index must be in [0, device_count())
  // The calling thread's current device: its index and, once get() found it open, the Device. Every
  // op looks its device up (allocation, recording): get() returns the remembered Device instead of
  // finding it again. Devices are never destroyed, so the pointer cannot dangle; a new index
  // forgets it. One thread-local access (a call in a shared library): OnDevice keeps the reference
  // for its scope rather than taking it twice.
  struct Current {
    int index = 0;
    Device* dev = nullptr;  // get(index), once found open
    void set(int i) {
      if (i != index) index = i, dev = nullptr;
    }
  };
  static Current& current_state();
  static const std::string& why_unavailable(int index = 0);
  static int device_count();  // never throws; 0 when device 0 cannot be opened
  // The devices opened so far (the switches apply to each).
  static std::vector<Device*> opened_devices();
  // A process forked after Vulkan was initialised cannot use it (the driver's threads and queues
  // stay in the parent): get() is then null and why_unavailable() says so, as CUDA does.
  static bool in_bad_fork();
  static void save_pipeline_caches();  // every open device's, to VKML_CACHE_DIR (at exit)

  const DeviceInfo& info() const { return backend_->info(); }
  const Limits& limits() const { return backend_->limits(); }
  int index() const { return index_; }        // N of vkml:N
  int physical() const { return physical_; }  // its index in list_devices() order

  // Device memory. On out-of-memory: flush, return cached memory to the driver, retry once.
  Result<Block> alloc(size_t bytes);
  void free(const Block& b);
  void empty_cache();
  MemoryStats memory_stats() const;
  PipelineStats pipeline_stats();
  void reset_memory_stats(bool peaks, bool totals);

  // Pinned host memory (aten/pinned.cpp): a mapped staging block; host_ptr() gives its bytes.
  Result<Block> alloc_host(size_t bytes);
  void* host_ptr(const Block& b);
  // Frees b once no pending or submitted batch can still read it.
  void release_later(const Block& b);
  // Records a copy to dst from a staging block's address (alloc_host's): no copy on the host.
  Result<void> upload_from_host_block(uint64_t dst, uint64_t src, size_t bytes);
  // Copies src into a staging block's address (pinned memory) and waits: no copy on the host.
  Result<void> download_to_host_block(uint64_t src, uint64_t dst, size_t bytes);

  // The graph rewrite run on every batch before it is submitted (plan::fuse; set by aten).
  static void set_planner(Planner p);

  bool supports(const Node& n) const;
  // Records a node: it runs at the next flush (at once under eager or check mode).
  Result<void> record(const Node& n);
  // The same for a node written in place at the end of the pending graph: fill(Node&) gets a
  // default node there, so that the 2 KB node is neither built on the caller's stack nor copied.
  // The device is locked while fill runs: it must only write the node (no allocation, freeing or
  // recording); if it throws, the node is dropped.
  template <class F>
  Result<void> record_in_place(F&& fill) {
    std::lock_guard<std::recursive_mutex> g(mu_);
    Node& n = graph_.nodes.emplace_back();
    try {
      fill(n);
    } catch (...) {
      graph_.nodes.pop_back();
      throw;
    }
    return commit_locked();
  }
  Result<void> flush();

  // Host <-> device bytes. upload is recorded (lazy); download flushes and waits.
  Result<void> upload(uint64_t dst, const void* src, size_t bytes);
  Result<void> download(uint64_t src, void* dst, size_t bytes);

  Stats stats();

  // The device assert record (graph/device_assert.h) kernels write bad input into; allocated on
  // first use. A finding is raised by the next wait: flush(), download(), ...
  Result<uint64_t> assert_record();

  // Runs f(env()) under the device lock once everything pending has run (the switches check,
  // eager and the SPIR-V directory change how nodes are recorded and lowered).
  template <class F>
  Result<void> with_switches(F f) {
    std::lock_guard<std::recursive_mutex> g(mu_);
    VKML_TRY(flush_locked());
    f(env());
    return {};
  }

  // Whether float arithmetic in the compute type flushes subnormal inputs and results to zero.
  // Vulkan allows it unless a shader declares DenormPreserve, and e.g. NVIDIA does it for f32.
  // Probed once, on first call, by running x * 1 on subnormals (dispatch/probe.cpp).
  bool flushes_subnormals(Compute c);

  // Profiling (vkml_torch.profile()): turning it on or off first runs what is pending (untimed
  // when turning on). "" or why the device cannot time. take_profile() flushes and waits first.
  Result<std::string> set_profiling(bool on);
  Result<GpuProfile> take_profile();
  uint64_t timestamps_written() const { return backend_->timestamps_written(); }

 Device(std::unique_ptr<Backend> b, int index, int physical)
     : backend_(std::move(b)), index_(index), physical_(physical) {}  // use get()

 private:
  // Submits the pending graph; with wait, also waits for it (and for everything before it).
  Result<void> flush_locked(bool wait = true);
  // The graph's last node was just added: dropped with an error if the backend cannot run it,
  // else counted, and the flush policy applied (eager, check mode, the pending bounds).
  Result<void> commit_locked();
  void release_completed();
  Result<void> timed_wait(uint64_t ticket);
  Result<void> run_checked(const Node& n);  // check mode: dispatch/check.cpp
  Result<void> run_checked_fused(const Node& n);  // each step of a fused node: dispatch/check_fused.cpp
  Result<void> flush_checked();              // check mode: plan the pending nodes, check each
  Result<void> plan_locked();                // runs the planner on graph_
  Result<bool> probe_flush(Compute c);       // dispatch/probe.cpp
  Result<void> download_locked(uint64_t src, void* dst, size_t bytes);
  Result<Block> staging_locked(size_t bytes);
  Result<void> take_assert();  // after a wait: the assert found by what was waited for, once

  std::unique_ptr<Backend> backend_;
  int index_ = 0, physical_ = 0;
  Graph graph_;
  // What submitted batches keep alive (upload staging), released once their ticket completes.
  std::vector<std::pair<uint64_t, std::vector<std::shared_ptr<void>>>> inflight_;
  uint64_t last_ticket_ = 0;
  Stats stats_;
  int64_t alloc_retries_ = 0, ooms_ = 0;  // Device::alloc, for memory_stats()
  Block assert_;  // host-visible: read without a transfer
  Error late_;    // a finding an empty_cache() flush could not report, raised by the next wait
  bool checking_ = false;  // inside flush_checked: flushes submit as they are
  int8_t flushes_[2] = {-1, -1};  // per Compute f32/f64: -1 not probed yet, 0 no, 1 yes
  mutable std::recursive_mutex mu_;
};

}  // namespace vkml
