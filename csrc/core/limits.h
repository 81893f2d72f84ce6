// Device limits the kernels depend on, and the floor Vulkan 1.3 guarantees (VKML_MIN_SPEC=1).
#pragma once
#include <cstdint>

namespace vkml {

struct Limits {
  uint32_t max_push_constants = 128;
  uint32_t max_shared_memory = 16384;
  uint32_t max_workgroup_invocations = 128;
  uint32_t max_workgroup_size[3] = {128, 128, 64};
  uint32_t max_workgroup_count[3] = {65535, 65535, 65535};
  uint32_t subgroup_size = 4;  // smallest a 1.3 device may have (minSubgroupSize floor is 1; 4 in practice)
  uint64_t max_allocation = 1ull << 30;  // maxMemoryAllocationSize floor (maintenance3)
  uint64_t max_storage_buffer_range = 1ull << 27;
  bool float64 = false;  // shaderFloat64 is optional
  bool int64 = true;     // required by this project (buffer-device addresses are 64-bit)
  bool float16 = false;
  // VK_KHR_cooperative_matrix with float16 as shaders/gemm_coop.comp needs it
  // (backend/vulkan/device.cpp); a feature, kept under VKML_MIN_SPEC, but its shader needs 24 KiB of shared memory, so the
  // floor's 16 KiB runs float16 gemm on the scalar tiles (lower_gemm.cpp pick()).
  bool cooperative_matrix = false;
  // VK_KHR_cooperative_matrix with bfloat16 (VK_KHR_shader_bfloat16) as shaders/gemm_coop_bf16.comp
  // needs it; a feature, like cooperative_matrix, with the same 24 KiB of shared memory.
  bool cooperative_matrix_bf16 = false;
  // VK_NV_cooperative_matrix2's workgroup-scope matrices of float16 as shaders/gemm_coop_wg.comp
  // needs them (a feature, like the two above); lower_gemm.cpp runs it where the 20 KiB of shared
  // memory it takes fit beside what the driver reserves for workgroup-scope matrices.
  bool cooperative_matrix_wg = false;
  // the same for bfloat16, with per-element operations (gemm_coop_wg_bf16 rounds with them)
  bool cooperative_matrix_wg_bf16 = false;
  uint32_t cooperative_matrix_wg_reserved = 0;  // shared memory bytes the driver keeps for them
  // shaderSignedZeroInfNanPreserve for f32 (and f64 when float64): the "_ieee" shader builds
  // keep NaN/Inf/-0 as IEEE (and PyTorch's CPU) does. Subnormals depend on the device.
  bool float_controls = false;
  // Not a Vulkan limit, a driver's: llvmpipe (lavapipe) ends a shader invocation after 65535
  // loop trips in all, silently. 0: no such limit. Kernels that loop over a long dimension split
  // it (reduce, softmax, nll always; gemm's K only where this is set).
  uint32_t max_loop_trips = 0;
  // Not a limit either, a cost: elementwise rows and fused programs run pipelines specialized to
  // their dtypes / program (Dispatch::spec) once the same constants came this many times; 0:
  // never. 1 on GPUs; 0 on CPU devices (lavapipe), where a compile costs far more than the
  // folded shader saves. VKML_SPECIALIZE=N overrides it (specialize_after() in backend/vulkan/lower.h).
  uint32_t specialize_after = 0;
  // A cost too: copies between two device buffers run elementwise.comp's raw-bit copy instead of
  // vkCmdCopyBuffer (on the H100 2.8x faster; on lavapipe, a memcpy, 20x slower). On GPUs;
  // VKML_COPY_SHADER=0/1 overrides it (copy_shader() in backend/vulkan/lower.h).
  bool copy_shader = false;
  // A cost too: once this many MFLOP of matrix products are pending, the batch is submitted
  // without waiting, so the GPU runs them while the host records what follows (a training step
  // is otherwise recorded whole while the GPU idles: on the H100 the MLP step went from 238-280
  // to 437-477 steps/s). 1000 on GPUs; 0 (never) on CPU devices, where the GPU's threads are the
  // host's. VKML_SUBMIT_EARLY=M overrides it (Device::commit_locked in dispatch/device.cpp).
  uint32_t submit_early_mflop = 0;
};

// Vulkan 1.3 required limits (spec, "Required Limits" table).
inline Limits min_spec_limits() { return Limits{}; }

// Clamp what a device reports to the floor, keeping features the project cannot work without.
inline Limits clamp_to_min_spec(const Limits& dev) {
  Limits m = min_spec_limits();
  m.int64 = dev.int64;
  m.float64 = dev.float64;  // fp64 is a feature, not a limit; kept so float64 ops keep working
  m.float_controls = dev.float_controls;  // a correctness feature, kept likewise
  m.cooperative_matrix = dev.cooperative_matrix;  // a feature
  m.cooperative_matrix_bf16 = dev.cooperative_matrix_bf16;  // a feature
  m.cooperative_matrix_wg = dev.cooperative_matrix_wg;  // a feature
  m.cooperative_matrix_wg_bf16 = dev.cooperative_matrix_wg_bf16;  // a feature
  m.cooperative_matrix_wg_reserved = dev.cooperative_matrix_wg_reserved;  // its cost
  m.max_loop_trips = dev.max_loop_trips;  // a restriction, kept
  m.specialize_after = dev.specialize_after;  // a policy, kept
  m.copy_shader = dev.copy_shader;  // a policy, kept
  m.submit_early_mflop = dev.submit_early_mflop;  // a policy, kept
  return m;
}

}  // namespace vkml
