// The one place where VKML_* environment variables are read (once, at first use).
#pragma once
#include <string>

namespace vkml {

struct Env {
  bool eager = false;         // VKML_EAGER=1: submit and wait after every op
  bool check = false;         // VKML_CHECK=1: run every node on the oracle too and compare
  bool min_spec = false;      // VKML_MIN_SPEC=1: report only Vulkan 1.3's guaranteed limits
  bool cpu_fallback = false;  // VKML_CPU_FALLBACK=1: unsupported ops run on the CPU, warning once
  int device = -1;            // VKML_DEVICE=N: only Vulkan device N (after ordering) is vkml:0; -1 = all
  int fake_devices = 0;       // VKML_FAKE_DEVICES=N: present the first (or VKML_DEVICE's) device as N, for tests
  int max_pending = 4096;     // VKML_MAX_PENDING: flush when this many nodes are pending
  bool trace = false;         // VKML_TRACE=1: log each aten op reaching vkml once (path taken), counts at exit
  bool crash_trace = false;   // VKML_CRASH_TRACE=1: print the native stack on SIGSEGV/SIGBUS
  std::string spirv_dir;      // VKML_SPIRV_DIR=path: <blob>.spv files there replace the built-in SPIR-V
                             // (scripts/mutate.py and the check-mode tests load broken shaders so)
  std::string cache_dir;      // VKML_CACHE_DIR=path: where the pipeline cache lives (default
                             // $XDG_CACHE_HOME/vkml or ~/.cache/vkml); VKML_CACHE_DIR=off: none
  std::string gemm_pipe;      // VKML_GEMM_PIPE=gemv|small|large|split|coopmat: force a matmul pipeline (tests)
  int gemm_split_groups = 192;  // VKML_GEMM_SPLIT_GROUPS=N: a product of K >= 2048 with fewer tiles
                                // than N splits K towards 2N workgroups (graph/families/gemm.h)
  std::string conv_pipe;      // VKML_CONV_PIPE=tiled|direct: force the convolution kernel where both run (tests)
  std::string rng;            // VKML_RNG=cpu: random ops draw on the host, torch CPU's stream (docs/random.md)
  bool fuse = true;           // VKML_FUSE=0: no fusion of elementwise chains at flush (docs/fusion.md)
  bool fuse_hidden = true;    // VKML_FUSE_HIDDEN=0: fused groups keep no view in registers past
                              // a reused block (docs/fusion.md; to measure what that gains)
  int specialize = -1;        // VKML_SPECIALIZE=N: specialized pipelines once their constants came N
                              // times, 0 never (Limits::specialize_after); -1: the device's default
  int submit_early = -1;      // VKML_SUBMIT_EARLY=M: submit without waiting once M MFLOP of matrix
                              // products are pending; 0: never; -1: the device's default
                              // (Limits::submit_early_mflop)
  int copy_shader = -1;       // VKML_COPY_SHADER=0/1: device-to-device copies by shader (Limits::copy_shader)
};

// Mutable so tests can toggle check/eager at run time through the Python module.
Env& env();

}  // namespace vkml
