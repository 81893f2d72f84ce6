// Standalone GEMM kernel timer: C[M][N] (f32) = A[M][K] * B[K][N] (16-bit, row-major), one SPIR-V
// compute shader with push constants {a, b, c addresses; M, N, K}, grid (N/BN, M/BM).
// usage: wgbench file.spv M N K BM BN bf16(0/1) [reps]
#include <vulkan/vulkan.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <vector>
#define CK(x) do { VkResult r_ = (x); if (r_) { printf("FAIL %s = %d\n", #x, r_); exit(1); } } while (0)
struct KhrF { VkStructureType sType; void* pNext; VkBool32 coop, robust; };
struct Coop2F { VkStructureType sType; void* pNext; VkBool32 f[7]; };
struct Bf16F { VkStructureType sType; void* pNext; VkBool32 type, dot, coop; };
static uint16_t f2h(float f) { _Float16 h = (_Float16)f; uint16_t u; memcpy(&u, &h, 2); return u; }
static float h2f(uint16_t u) { _Float16 h; memcpy(&h, &u, 2); return (float)h; }
static uint16_t f2b(float f) { uint32_t u; memcpy(&u, &f, 4); u += 0x7fff + ((u >> 16) & 1); return u >> 16; }
static float b2f(uint16_t b) { uint32_t u = uint32_t(b) << 16; float f; memcpy(&f, &u, 4); return f; }
VkDevice dev; VkPhysicalDevice pd; VkPhysicalDeviceMemoryProperties mp;
uint32_t memtype(uint32_t bits, VkMemoryPropertyFlags want) {
  for (uint32_t i = 0; i < mp.memoryTypeCount; ++i) if ((bits >> i & 1) && (mp.memoryTypes[i].propertyFlags & want) == want) return i;
  printf("no memory type\n"); exit(1);
}
struct Buf { VkBuffer b; VkDeviceMemory m; void* p = nullptr; VkDeviceAddress a; };
Buf mk(VkDeviceSize n, bool host) {
  Buf r; VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO}; bi.size = n;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT;
  CK(vkCreateBuffer(dev, &bi, nullptr, &r.b)); VkMemoryRequirements mr; vkGetBufferMemoryRequirements(dev, r.b, &mr);
  VkMemoryAllocateFlagsInfo fi{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO}; fi.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, &fi}; ai.allocationSize = mr.size;
  ai.memoryTypeIndex = memtype(mr.memoryTypeBits, host ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  CK(vkAllocateMemory(dev, &ai, nullptr, &r.m)); CK(vkBindBufferMemory(dev, r.b, r.m, 0));
  if (host) CK(vkMapMemory(dev, r.m, 0, n, 0, &r.p));
  VkBufferDeviceAddressInfo da{VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO}; da.buffer = r.b; r.a = vkGetBufferDeviceAddress(dev, &da);
  return r;
}
int main(int argc, char** argv) {
  if (argc < 8) { printf("usage\n"); return 1; }
  std::ifstream f(argv[1], std::ios::binary | std::ios::ate); size_t sz = f.tellg(); std::vector<uint32_t> code(sz / 4); f.seekg(0); f.read((char*)code.data(), sz);
  uint32_t M = atoi(argv[2]), N = atoi(argv[3]), K = atoi(argv[4]), BM = atoi(argv[5]), BN = atoi(argv[6]); bool bf = atoi(argv[7]); int reps = argc > 8 ? atoi(argv[8]) : 20;
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO}; app.apiVersion = VK_API_VERSION_1_3;
  VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO}; ici.pApplicationInfo = &app; VkInstance inst; CK(vkCreateInstance(&ici, nullptr, &inst));
  uint32_t n = 1; CK(vkEnumeratePhysicalDevices(inst, &n, &pd) < 0 ? VK_ERROR_UNKNOWN : VK_SUCCESS); vkGetPhysicalDeviceMemoryProperties(pd, &mp);
  Bf16F bff{VkStructureType(1000141000)}; bff.type = bff.coop = 1;
  Coop2F c2{VkStructureType(1000593000), &bff}; c2.f[0] = c2.f[1] = 1;
  KhrF kf{VkStructureType(1000506000), &c2}; kf.coop = 1;
  VkPhysicalDeviceVulkan13Features v13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES, &kf}; v13.maintenance4 = 1; v13.synchronization2 = 1;
  VkPhysicalDeviceVulkan12Features v12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, &v13}; v12.bufferDeviceAddress = 1; v12.shaderFloat16 = 1; v12.vulkanMemoryModel = 1; v12.vulkanMemoryModelDeviceScope = 1; v12.storageBuffer8BitAccess = 1;
  VkPhysicalDeviceVulkan11Features v11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, &v12}; v11.storageBuffer16BitAccess = 1;
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &v11}; f2.features.shaderInt64 = 1; f2.features.shaderInt16 = 1;
  const char* exts[] = {"VK_KHR_cooperative_matrix", "VK_NV_cooperative_matrix2", "VK_KHR_shader_bfloat16", "VK_NV_cooperative_matrix"};
  VkPhysicalDeviceCooperativeMatrixFeaturesNV nvf{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV}; nvf.cooperativeMatrix = 1; bff.pNext = &nvf;
  float prio = 1; VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO}; qi.queueCount = 1; qi.pQueuePriorities = &prio;
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &f2}; dci.queueCreateInfoCount = 1; dci.pQueueCreateInfos = &qi; dci.enabledExtensionCount = 4; dci.ppEnabledExtensionNames = exts;
  CK(vkCreateDevice(pd, &dci, nullptr, &dev)); VkQueue q; vkGetDeviceQueue(dev, 0, 0, &q);
  size_t na = size_t(M) * K, nb = size_t(K) * N, nc = size_t(M) * N;
  std::vector<uint16_t> ha(na), hb(nb); std::mt19937 rng(1); std::uniform_real_distribution<float> U(-1, 1);
  for (auto& x : ha) x = bf ? f2b(U(rng)) : f2h(U(rng)); for (auto& x : hb) x = bf ? f2b(U(rng)) : f2h(U(rng));
  Buf A = mk(na * 2, false), B = mk(nb * 2, false), C = mk(nc * 4, false), S = mk(std::max(na * 2 + nb * 2, nc * 4), true);
  memcpy(S.p, ha.data(), na * 2); memcpy((char*)S.p + na * 2, hb.data(), nb * 2);
  VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO}; VkCommandPool pool; CK(vkCreateCommandPool(dev, &pci, nullptr, &pool));
  VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO}; cai.commandPool = pool; cai.commandBufferCount = 1; VkCommandBuffer cb; CK(vkAllocateCommandBuffers(dev, &cai, &cb));
  auto submit = [&]() { VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO}; si.commandBufferCount = 1; si.pCommandBuffers = &cb; CK(vkQueueSubmit(q, 1, &si, VK_NULL_HANDLE)); CK(vkQueueWaitIdle(q)); };
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  CK(vkBeginCommandBuffer(cb, &bi)); VkBufferCopy r1{0, 0, na * 2}, r2{na * 2, 0, nb * 2}; vkCmdCopyBuffer(cb, S.b, A.b, 1, &r1); vkCmdCopyBuffer(cb, S.b, B.b, 1, &r2); vkCmdFillBuffer(cb, C.b, 0, nc * 4, 0); CK(vkEndCommandBuffer(cb)); submit();
  VkShaderModuleCreateInfo smi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO}; smi.codeSize = sz; smi.pCode = code.data(); VkShaderModule sm; CK(vkCreateShaderModule(dev, &smi, nullptr, &sm));
  VkPushConstantRange pr{VK_SHADER_STAGE_COMPUTE_BIT, 0, 40}; VkPipelineLayoutCreateInfo li{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO}; li.pushConstantRangeCount = 1; li.pPushConstantRanges = &pr; VkPipelineLayout pl; CK(vkCreatePipelineLayout(dev, &li, nullptr, &pl));
  VkComputePipelineCreateInfo cpi{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO}; cpi.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, nullptr, 0, VK_SHADER_STAGE_COMPUTE_BIT, sm, "main"}; cpi.layout = pl;
  VkPipeline pipe; CK(vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &cpi, nullptr, &pipe));
  VkQueryPoolCreateInfo qpi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO}; qpi.queryType = VK_QUERY_TYPE_TIMESTAMP; qpi.queryCount = 2; VkQueryPool qp; CK(vkCreateQueryPool(dev, &qpi, nullptr, &qp));
  struct { uint64_t a, b, c; uint32_t M, N, K, pad; } pc{A.a, B.a, C.a, M, N, K, 0};
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER}; mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT; mb.dstAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT;
  for (int pass = 0; pass < 2; ++pass) {
    int R = pass ? reps : 1;
    CK(vkResetCommandBuffer(cb, 0)); CK(vkBeginCommandBuffer(cb, &bi)); vkCmdResetQueryPool(cb, qp, 0, 2);
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipe); vkCmdPushConstants(cb, pl, VK_SHADER_STAGE_COMPUTE_BIT, 0, 40, &pc);
    vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, qp, 0);
    for (int i = 0; i < R; ++i) { vkCmdDispatch(cb, (N + BN - 1) / BN, (M + BM - 1) / BM, 1); vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr); }
    vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, qp, 1);
    if (!pass) { VkBufferCopy r3{0, 0, nc * 4}; vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr); vkCmdCopyBuffer(cb, C.b, S.b, 1, &r3); }
    CK(vkEndCommandBuffer(cb)); submit();
    uint64_t ts[2]; CK(vkGetQueryPoolResults(dev, qp, 0, 2, 16, ts, 8, VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
    VkPhysicalDeviceProperties pp; vkGetPhysicalDeviceProperties(pd, &pp);
    double us = (ts[1] - ts[0]) * pp.limits.timestampPeriod / 1e3 / R;
    if (!pass) {
      const float* c = (const float*)S.p; double worst = 0; int bad = 0; std::mt19937 r2(7);
      for (int t = 0; t < 256; ++t) {
        uint32_t i = r2() % M, j = r2() % N; double ref = 0, mag = 0;
        for (uint32_t k = 0; k < K; ++k) { double x = bf ? b2f(ha[size_t(i) * K + k]) : h2f(ha[size_t(i) * K + k]), y = bf ? b2f(hb[size_t(k) * N + j]) : h2f(hb[size_t(k) * N + j]); ref += x * y; mag += std::fabs(x * y); }
        double e = std::fabs(c[size_t(i) * N + j] - ref) / (mag + 1e-30); if (e > worst) worst = e; if (!(e < 1e-5)) ++bad;
      }
      printf("%s %ux%ux%u %s: check worst |err|/sum|ab| %.3g, %d of 256 over 1e-5\n", argv[1], M, N, K, bf ? "bf16" : "f16", worst, bad);
    } else printf("%s %ux%ux%u %s: %.1f us, %.1f TFLOP/s\n", argv[1], M, N, K, bf ? "bf16" : "f16", us, 2.0 * M * N * K / us / 1e6);
  }
  return 0;
}
