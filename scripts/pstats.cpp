// pstats: print the driver's pipeline-executable statistics (VK_KHR_pipeline_executable_properties)
// for compute shaders given as SPIR-V files: registers, shared memory, spills, instruction counts,
// whatever the driver reports, plus each pipeline's creation time.
//   build: g++ -O1 -std=c++17 scripts/pstats.cpp -lvulkan -o /tmp/pstats
//   (on the lent GPU machine after `. .vkdev/prelude.sh`; blobs from scripts/shaders.py compile_stem)
//   usage: pstats [--device N] [--spec ID=VALUE ...] file1.spv [file2.spv ...]
// Pipelines get one 128-byte compute push-constant range and no descriptor sets, like the project's
// shaders (buffer device addresses + push constants). Output lines are tab-separated.
#include <vulkan/vulkan.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

// VK_KHR_cooperative_matrix is newer than Debian 12's headers (1.3.239, also the ones carried to the
// GPU machine): its features struct has the NV one's layout, only the sType differs.
static const char* const KHR_COOPMAT = "VK_KHR_cooperative_matrix";
static const VkStructureType KHR_COOPMAT_FEATURES = VkStructureType(1000506000);
// VK_KHR_shader_bfloat16 and VK_NV_cooperative_matrix2 (the workgroup-scope kernels), likewise newer:
// their feature structs as the registry defines them (csrc/backend/vulkan/device.cpp has the same).
struct Bf16Features {
  VkStructureType sType = VkStructureType(1000141000);
  void* pNext = nullptr;
  VkBool32 type = VK_FALSE, dot = VK_FALSE, coopmat = VK_FALSE;
};
struct Coop2Features {
  VkStructureType sType = VkStructureType(1000593000);
  void* pNext = nullptr;
  VkBool32 workgroupScope = VK_FALSE, flexibleDimensions = VK_FALSE, reductions = VK_FALSE, conversions = VK_FALSE,
           perElementOperations = VK_FALSE, tensorAddressing = VK_FALSE, blockLoads = VK_FALSE;
};

static const char* result_name(VkResult r) {
  switch (r) {
#define R(x) case x: return #x;
    R(VK_SUCCESS) R(VK_INCOMPLETE) R(VK_ERROR_OUT_OF_HOST_MEMORY) R(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    R(VK_ERROR_INITIALIZATION_FAILED) R(VK_ERROR_DEVICE_LOST) R(VK_ERROR_EXTENSION_NOT_PRESENT)
    R(VK_ERROR_FEATURE_NOT_PRESENT) R(VK_ERROR_INCOMPATIBLE_DRIVER) R(VK_ERROR_UNKNOWN)
    R(VK_ERROR_INVALID_SHADER_NV) R(VK_PIPELINE_COMPILE_REQUIRED)
#undef R
    default: return "?";
  }
}

static void fail(const std::string& what, const char* call, VkResult r) {
  std::printf("%s\terror: %s failed: VkResult %d (%s)\n", what.c_str(), call, int(r), result_name(r));
}

static bool has_ext(const std::vector<VkExtensionProperties>& exts, const char* name) {
  for (auto& e : exts) if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

// A SPIR-V file's words; empty when unreadable or without the SPIR-V magic number.
static std::vector<uint32_t> read_spv(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  std::streamsize n = f ? std::streamsize(f.tellg()) : 0;
  if (n < 20 || n % 4) return {};
  std::vector<uint32_t> w(size_t(n) / 4);
  f.seekg(0);
  f.read(reinterpret_cast<char*>(w.data()), n);
  if (!f || w[0] != 0x07230203u) return {};
  return w;
}

// Scans the instructions: any OpDecorate (71) with Binding (33) or DescriptorSet (34) sets *sets;
// OpCapability (17) CooperativeMatrixNV (5357) / CooperativeMatrixKHR (6022) sets *nv / *khr.
static void scan(const std::vector<uint32_t>& w, bool* sets, bool* nv, bool* khr) {
  for (size_t i = 5; i < w.size(); i += w[i] >> 16) {
    uint32_t count = w[i] >> 16, op = w[i] & 0xffff;
    if (count == 0 || i + count > w.size()) break;  // malformed: the driver will say so
    if (op == 71 && count >= 3 && (w[i + 2] == 33 || w[i + 2] == 34)) *sets = true;
    if (op == 17 && count == 2) *nv |= w[i + 1] == 5357, *khr |= w[i + 1] == 6022;
  }
}

int main(int argc, char** argv) {
  std::vector<VkSpecializationMapEntry> spec_entries;
  std::vector<uint32_t> spec_data;
  std::vector<std::string> files;
  int dev_index = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    size_t eq = i + 1 < argc ? std::string(argv[i + 1]).find('=') : std::string::npos;
    if (a == "--device" && i + 1 < argc) {
      dev_index = std::atoi(argv[++i]);
    } else if (a == "--spec" && eq != std::string::npos) {
      std::string v = argv[++i];  // ID=VALUE; VALUE may be negative (stored as its uint32 bits)
      spec_entries.push_back({uint32_t(std::strtoul(v.c_str(), nullptr, 0)), uint32_t(4 * spec_data.size()), 4});
      spec_data.push_back(uint32_t(std::strtoll(v.c_str() + eq + 1, nullptr, 0)));
    } else if (a.rfind("-", 0) == 0) {
      std::printf("usage: %s [--device N] [--spec ID=VALUE ...] file1.spv [file2.spv ...]\n", argv[0]);
      return 2;
    } else {
      files.push_back(a);
    }
  }

  // ---- instance, physical device, its description ----
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "pstats";
  app.apiVersion = VK_API_VERSION_1_3;
  VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ici.pApplicationInfo = &app;
  VkInstance inst;
  VkResult r = vkCreateInstance(&ici, nullptr, &inst);
  if (r != VK_SUCCESS) return fail("pstats", "vkCreateInstance", r), 1;
  uint32_t ndev = 0;
  vkEnumeratePhysicalDevices(inst, &ndev, nullptr);
  std::vector<VkPhysicalDevice> devs(ndev);
  vkEnumeratePhysicalDevices(inst, &ndev, devs.data());
  if (dev_index < 0 || uint32_t(dev_index) >= ndev)
    return std::printf("error: device %d asked for, %u found\n", dev_index, ndev), 1;
  VkPhysicalDevice phys = devs[dev_index];
  VkPhysicalDeviceDriverProperties drv{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &drv};
  vkGetPhysicalDeviceProperties2(phys, &props);
  const VkPhysicalDeviceProperties& p = props.properties;
  const uint32_t dv = p.driverVersion, av = p.apiVersion;
  char dvs[64];
  if (p.vendorID == 0x10DE)  // NVIDIA packs 10.8.8.6 bits
    std::snprintf(dvs, sizeof dvs, "%u.%u.%u.%u", dv >> 22, (dv >> 14) & 0xff, (dv >> 6) & 0xff, dv & 0x3f);
  else
    std::snprintf(dvs, sizeof dvs, "%u.%u.%u", VK_API_VERSION_MAJOR(dv), VK_API_VERSION_MINOR(dv), VK_API_VERSION_PATCH(dv));
  std::printf("device %d of %u: %s\ndriver: %s, %s, driverVersion %s (0x%08x), Vulkan %u.%u.%u\n", dev_index, ndev,
              p.deviceName, drv.driverName, drv.driverInfo, dvs, dv, VK_API_VERSION_MAJOR(av),
              VK_API_VERSION_MINOR(av), VK_API_VERSION_PATCH(av));

  uint32_t next = 0;
  vkEnumerateDeviceExtensionProperties(phys, nullptr, &next, nullptr);
  std::vector<VkExtensionProperties> exts(next);
  vkEnumerateDeviceExtensionProperties(phys, nullptr, &next, exts.data());
  const bool has13 = av >= VK_API_VERSION_1_3;
  const bool has_pe = has_ext(exts, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
  const bool has_nv = has_ext(exts, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME), has_khr = has_ext(exts, KHR_COOPMAT);
  const bool has_bf16 = has_ext(exts, "VK_KHR_shader_bfloat16"), has_c2 = has_ext(exts, "VK_NV_cooperative_matrix2");

  // ---- query the features; enable (in fresh, all-false structs) the wanted ones the device has ----
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR pe{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  VkPhysicalDeviceCooperativeMatrixFeaturesNV cnv{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  VkPhysicalDeviceCooperativeMatrixFeaturesNV ckhr{KHR_COOPMAT_FEATURES};
  VkPhysicalDeviceVulkan13Features q13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES}, e13 = q13;
  VkPhysicalDeviceVulkan12Features q12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES}, e12 = q12;
  VkPhysicalDeviceVulkan11Features q11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES}, e11 = q11;
  VkPhysicalDeviceFeatures2 q{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2}, en = q;
  auto link = [](VkPhysicalDeviceFeatures2& head, void* s) {  // s goes first in head's pNext chain
    static_cast<VkBaseOutStructure*>(s)->pNext = static_cast<VkBaseOutStructure*>(head.pNext);
    head.pNext = s;
  };
  link(q, &q11), link(q, &q12);
  if (has13) link(q, &q13);
  if (has_pe) link(q, &pe);
  if (has_nv) link(q, &cnv);
  if (has_khr) link(q, &ckhr);
  Bf16Features qbf, ebf;
  Coop2Features qc2, ec2;
  if (has_bf16) link(q, &qbf);
  if (has_c2) link(q, &qc2);
  vkGetPhysicalDeviceFeatures2(phys, &q);
  // Not robustBufferAccess or the like: they would change the generated code.
  en.features.shaderInt64 = q.features.shaderInt64;
  en.features.shaderFloat64 = q.features.shaderFloat64;
  en.features.shaderInt16 = q.features.shaderInt16;
  e11.storageBuffer16BitAccess = q11.storageBuffer16BitAccess;
  e11.uniformAndStorageBuffer16BitAccess = q11.uniformAndStorageBuffer16BitAccess;
  e11.storagePushConstant16 = q11.storagePushConstant16;
  e12.bufferDeviceAddress = q12.bufferDeviceAddress;
  e12.shaderFloat16 = q12.shaderFloat16;
  e12.shaderInt8 = q12.shaderInt8;
  e12.storageBuffer8BitAccess = q12.storageBuffer8BitAccess;
  e12.uniformAndStorageBuffer8BitAccess = q12.uniformAndStorageBuffer8BitAccess;
  e12.storagePushConstant8 = q12.storagePushConstant8;
  e12.scalarBlockLayout = q12.scalarBlockLayout;
  e12.vulkanMemoryModel = q12.vulkanMemoryModel;
  e12.vulkanMemoryModelDeviceScope = q12.vulkanMemoryModelDeviceScope;
  e13.maintenance4 = q13.maintenance4;
  e13.subgroupSizeControl = q13.subgroupSizeControl;
  e13.computeFullSubgroups = q13.computeFullSubgroups;
  e13.synchronization2 = q13.synchronization2;
  const bool stats = has_pe && pe.pipelineExecutableInfo;
  const bool use_nv = has_nv && cnv.cooperativeMatrix, use_khr = has_khr && ckhr.cooperativeMatrix;
  cnv.cooperativeMatrixRobustBufferAccess = ckhr.cooperativeMatrixRobustBufferAccess = VK_FALSE;
  std::vector<const char*> names;  // the extensions to enable, with their feature structs
  link(en, &e11), link(en, &e12);
  if (has13) link(en, &e13);
  if (stats) link(en, &pe), names.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
  if (use_nv) link(en, &cnv), names.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
  const bool use_bf16 = use_khr && has_bf16 && qbf.type && qbf.coopmat, use_c2 = use_khr && has_c2 && qc2.workgroupScope;
  ebf.type = ebf.coopmat = use_bf16;
  ec2.workgroupScope = ec2.flexibleDimensions = use_c2;
  ec2.perElementOperations = use_c2 && qc2.perElementOperations;
  // the fallback below drops these three (bfloat16 and cooperative_matrix2 need the KHR matrices)
  void* const without_khr = en.pNext;
  const size_t names_without_khr = names.size();
  if (use_bf16) link(en, &ebf), names.push_back("VK_KHR_shader_bfloat16");
  if (use_c2) link(en, &ec2), names.push_back("VK_NV_cooperative_matrix2");
  if (use_khr) link(en, &ckhr), names.push_back(KHR_COOPMAT);
  if (has_ext(exts, "VK_KHR_portability_subset")) names.push_back("VK_KHR_portability_subset");
  std::printf("enabled: bufferDeviceAddress=%u shaderInt64=%u shaderFloat64=%u shaderInt16=%u shaderFloat16=%u "
              "8bitStorage=%u 16bitStorage=%u vulkan13=%u NV_coopmat=%u KHR_coopmat=%u bfloat16=%u NV_coopmat2=%u "
              "pipelineExecutableInfo=%u\n",
              e12.bufferDeviceAddress, en.features.shaderInt64, en.features.shaderFloat64, en.features.shaderInt16,
              e12.shaderFloat16, e12.storageBuffer8BitAccess, e11.storageBuffer16BitAccess, has13, use_nv, use_khr, use_bf16,
              use_c2, stats);
  if (!stats)
    std::printf("note: the device lacks VK_KHR_pipeline_executable_properties: pipeline creation times only\n");

  uint32_t nq = 0, fam = 0;  // the first queue family with compute
  vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> qf(nq);
  vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, qf.data());
  while (fam < nq && !(qf[fam].queueFlags & VK_QUEUE_COMPUTE_BIT)) ++fam;
  if (fam == nq) return std::printf("error: no compute queue family\n"), 1;
  float prio = 1.0f;
  VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, nullptr, 0, fam, 1, &prio};
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &en, 0, 1, &qi};
  dci.enabledExtensionCount = uint32_t(names.size());
  dci.ppEnabledExtensionNames = names.data();
  VkDevice dev;
  r = vkCreateDevice(phys, &dci, nullptr, &dev);
  if (r != VK_SUCCESS && use_khr && use_nv) {  // in case a driver refuses both coopmat extensions at once
    fail("pstats", "vkCreateDevice with NV and KHR cooperative matrices", r);
    en.pNext = without_khr;
    names.resize(names_without_khr);
    if (has_ext(exts, "VK_KHR_portability_subset")) names.push_back("VK_KHR_portability_subset");
    dci.enabledExtensionCount = uint32_t(names.size());
    dci.ppEnabledExtensionNames = names.data();
    std::printf("retrying without VK_KHR_cooperative_matrix (and bfloat16, cooperative_matrix2)\n");
    r = vkCreateDevice(phys, &dci, nullptr, &dev);
  }
  if (r != VK_SUCCESS) return fail("pstats", "vkCreateDevice", r), 1;
  auto get_props = reinterpret_cast<PFN_vkGetPipelineExecutablePropertiesKHR>(
      vkGetDeviceProcAddr(dev, "vkGetPipelineExecutablePropertiesKHR"));
  auto get_stats = reinterpret_cast<PFN_vkGetPipelineExecutableStatisticsKHR>(
      vkGetDeviceProcAddr(dev, "vkGetPipelineExecutableStatisticsKHR"));

  // ---- one layout for every file: a 128-byte compute push-constant range, no descriptor sets ----
  VkPushConstantRange pcr{VK_SHADER_STAGE_COMPUTE_BIT, 0, 128};
  VkPipelineLayoutCreateInfo lci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, nullptr, 0, 0, nullptr, 1, &pcr};
  VkPipelineLayout layout;
  if ((r = vkCreatePipelineLayout(dev, &lci, nullptr, &layout)) != VK_SUCCESS)
    return fail("pstats", "vkCreatePipelineLayout", r), 1;
  VkSpecializationInfo si{uint32_t(spec_entries.size()), spec_entries.data(), spec_data.size() * 4, spec_data.data()};

  int failures = 0;
  for (const std::string& file : files) {
    const std::string f = file.substr(file.find_last_of('/') + 1);  // npos + 1 == 0
    std::vector<uint32_t> code = read_spv(file);
    bool sets = false, need_nv = false, need_khr = false;
    scan(code, &sets, &need_nv, &need_khr);
    const char* skip = code.empty() ? "cannot read it, or not SPIR-V"
                       : sets       ? "declares descriptor sets (this tool makes layouts without any)"
                       : (need_nv && !use_nv) || (need_khr && !use_khr) ? "needs cooperative matrices, which the device lacks"
                                    : nullptr;
    if (skip) { std::printf("%s\tskipped: %s\n", f.c_str(), skip); ++failures; continue; }
    VkShaderModuleCreateInfo mci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, nullptr, 0, code.size() * 4, code.data()};
    VkShaderModule mod;
    if ((r = vkCreateShaderModule(dev, &mci, nullptr, &mod)) != VK_SUCCESS) { fail(f, "vkCreateShaderModule", r); ++failures; continue; }
    VkComputePipelineCreateInfo pci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    pci.flags = stats ? VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR : 0;
    pci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, nullptr, 0, VK_SHADER_STAGE_COMPUTE_BIT, mod, "main",
                 spec_entries.empty() ? nullptr : &si};
    pci.layout = layout;
    VkPipeline pipe;
    auto t0 = std::chrono::steady_clock::now();
    r = vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &pci, nullptr, &pipe);  // no pipeline cache
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    vkDestroyShaderModule(dev, mod, nullptr);
    if (r != VK_SUCCESS) { fail(f, "vkCreateComputePipelines", r); ++failures; continue; }
    std::printf("%s\tpipeline creation %.2f ms\n", f.c_str(), ms);

    // ---- the executables (one for a compute pipeline, normally) and their statistics ----
    VkPipelineInfoKHR pinfo{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR, nullptr, pipe};
    uint32_t nexec = 0;
    if (stats && (r = get_props(dev, &pinfo, &nexec, nullptr)) != VK_SUCCESS) fail(f, "vkGetPipelineExecutablePropertiesKHR", r), ++failures;
    std::vector<VkPipelineExecutablePropertiesKHR> ep(nexec, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR});
    if (nexec && (r = get_props(dev, &pinfo, &nexec, ep.data())) != VK_SUCCESS) fail(f, "vkGetPipelineExecutablePropertiesKHR", r), ++failures, nexec = 0;
    for (uint32_t e = 0; e < nexec; ++e) {
      std::printf("%s\t%s\t(executable %u: %s; subgroup size %u)\n", f.c_str(), ep[e].name, e, ep[e].description, ep[e].subgroupSize);
      VkPipelineExecutableInfoKHR xinfo{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR, nullptr, pipe, e};
      uint32_t nstat = 0;
      r = get_stats(dev, &xinfo, &nstat, nullptr);
      std::vector<VkPipelineExecutableStatisticKHR> st(nstat, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
      if (r == VK_SUCCESS) r = get_stats(dev, &xinfo, &nstat, st.data());
      if (r != VK_SUCCESS) { fail(f, "vkGetPipelineExecutableStatisticsKHR", r); ++failures; continue; }
      for (const auto& s : st) {
        std::printf("%s\t%s\t%s\t", f.c_str(), ep[e].name, s.name);
        switch (s.format) {
          case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: std::printf("%s\n", s.value.b32 ? "true" : "false"); break;
          case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: std::printf("%lld\n", (long long)s.value.i64); break;
          case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: std::printf("%llu\n", (unsigned long long)s.value.u64); break;
          case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR: std::printf("%g\n", s.value.f64); break;
          default: std::printf("(unknown format %d)\n", int(s.format));
        }
      }
    }
    vkDestroyPipeline(dev, pipe, nullptr);
  }
  if (files.empty()) std::printf("no .spv files given\n");
  vkDestroyPipelineLayout(dev, layout, nullptr);
  vkDestroyDevice(dev, nullptr);
  vkDestroyInstance(inst, nullptr);
  return failures ? 1 : 0;
}
