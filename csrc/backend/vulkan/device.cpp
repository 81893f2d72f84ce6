#include "backend/vulkan/device.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "backend/vulkan/vulkan_backend.h"

namespace vkml::vk {

const char* result_name(VkResult r) {
  switch (r) {
#define C(x) case x: return #x;
    C(VK_SUCCESS) C(VK_NOT_READY) C(VK_TIMEOUT) C(VK_INCOMPLETE)
    C(VK_ERROR_OUT_OF_HOST_MEMORY) C(VK_ERROR_OUT_OF_DEVICE_MEMORY) C(VK_ERROR_INITIALIZATION_FAILED)
    C(VK_ERROR_DEVICE_LOST) C(VK_ERROR_MEMORY_MAP_FAILED) C(VK_ERROR_LAYER_NOT_PRESENT)
    C(VK_ERROR_EXTENSION_NOT_PRESENT) C(VK_ERROR_FEATURE_NOT_PRESENT) C(VK_ERROR_INCOMPATIBLE_DRIVER)
    C(VK_ERROR_TOO_MANY_OBJECTS) C(VK_ERROR_FORMAT_NOT_SUPPORTED) C(VK_ERROR_FRAGMENTED_POOL)
    C(VK_ERROR_UNKNOWN) C(VK_ERROR_OUT_OF_POOL_MEMORY) C(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    C(VK_ERROR_FRAGMENTATION) C(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS) C(VK_PIPELINE_COMPILE_REQUIRED)
    C(VK_ERROR_INVALID_SHADER_NV)
#undef C
    default: return "VK_ERROR_(unknown)";
  }
}

namespace {

// The process-wide instance: created on first use, never destroyed (backends may outlive statics).
struct Instance {
  VkInstance inst = VK_NULL_HANDLE;
  std::string why;  // set when inst is null
};

bool has_ext(const std::vector<VkExtensionProperties>& exts, const char* name) {
  for (const auto& e : exts)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

Instance make_instance() {
  Instance I;
  if (volkInitialize() != VK_SUCCESS) {
    I.why = "no Vulkan loader (libvulkan.so.1) found";
    return I;
  }
  uint32_t ver = VK_API_VERSION_1_0;
  if (vkEnumerateInstanceVersion) vkEnumerateInstanceVersion(&ver);
  if (ver < VK_API_VERSION_1_3) {
    char b[128];
    std::snprintf(b, sizeof b, "Vulkan loader is %u.%u; 1.3 is needed", VK_API_VERSION_MAJOR(ver),
                  VK_API_VERSION_MINOR(ver));
    I.why = b;
    return I;
  }
  uint32_t n = 0;
  vkEnumerateInstanceExtensionProperties(nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> exts(n);
  vkEnumerateInstanceExtensionProperties(nullptr, &n, exts.data());
  std::vector<const char*> enable;
  VkInstanceCreateFlags flags = 0;
  // MoltenVK (and other non-conformant layered drivers) only show up with this.
  if (has_ext(exts, VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
    enable.push_back(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME);
    flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
  }
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "vkml-torch";
  app.pEngineName = "vkml";
  app.apiVersion = VK_API_VERSION_1_3;
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.flags = flags;
  ci.pApplicationInfo = &app;
  ci.enabledExtensionCount = uint32_t(enable.size());
  ci.ppEnabledExtensionNames = enable.data();
  VkResult r = vkCreateInstance(&ci, nullptr, &I.inst);
  if (r != VK_SUCCESS) {
    I.inst = VK_NULL_HANDLE;
    I.why = std::string("vkCreateInstance failed: ") + result_name(r) +
            (r == VK_ERROR_INCOMPATIBLE_DRIVER ? " (no Vulkan driver installed?)" : "");
    return I;
  }
  volkLoadInstanceOnly(I.inst);
  return I;
}

const Instance& instance() {
  static const Instance I = make_instance();
  return I;
}

// What of VK_KHR_cooperative_matrix the device has, as the rewritten coopmat kernels use it (coop_khr()).
struct CoopKhr {
  bool f16 = false, bf16 = false, wg = false, wg_bf16 = false;
  uint32_t wg_reserved = 0;
  bool any() const { return f16 || bf16 || wg || wg_bf16; }
};

// What we learn about one physical device before opening it.
struct Candidate {
  VkPhysicalDevice phys = VK_NULL_HANDLE;
  DeviceInfo info;
  Limits limits;
  uint64_t max_buffer = 0;
  uint32_t queue_family = 0;
  int rank = 0;
  VkPhysicalDeviceFeatures core{};
  VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan13Features f13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  bool portability_subset = false;
  CoopKhr coop_khr;  // what of VK_KHR_cooperative_matrix the device has, as the rewritten kernels use it
};

std::string version_str(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) +
         "." + std::to_string(VK_API_VERSION_PATCH(v));
}

std::string driver_str(const VkPhysicalDeviceProperties& p, const VkPhysicalDeviceVulkan12Properties& p12) {
  uint32_t v = p.driverVersion;
  if (p.vendorID == 0x10DE)  // NVIDIA packs 10.8.8.6 bits; users know it as major.minor ("580.159")
    return std::to_string(v >> 22) + "." + std::to_string((v >> 14) & 0xff);
  if (p12.driverInfo[0]) return p12.driverInfo;
  return version_str(v);
}

// What every gemm_coop*.comp build asks of the device besides its matrices: 32-wide subgroups in
// compute shaders with the basic operations (gl_SubgroupID), the Vulkan memory model and float16
// (the sources convert through it).
bool coop_subgroups(const Candidate& c, const VkPhysicalDeviceVulkan11Properties& p11) {
  return c.f12.vulkanMemoryModel && c.f12.shaderFloat16 && p11.subgroupSize == 32 &&
         (p11.subgroupSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
         (p11.subgroupSupportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT);
}

// VK_KHR_cooperative_matrix and VK_KHR_shader_bfloat16 are newer than the Vulkan headers this
// builds against (Debian 12's 1.3.239): their structures, as the registry defines them.
constexpr const char* kKhrCoopExt = "VK_KHR_cooperative_matrix";
constexpr const char* kBf16Ext = "VK_KHR_shader_bfloat16";
struct KhrCoopFeatures {  // VkPhysicalDeviceCooperativeMatrixFeaturesKHR
  VkStructureType sType = VkStructureType(1000506000);
  void* pNext = nullptr;
  VkBool32 cooperativeMatrix = VK_FALSE, cooperativeMatrixRobustBufferAccess = VK_FALSE;
};
struct KhrCoopProps {  // VkCooperativeMatrixPropertiesKHR
  VkStructureType sType = VkStructureType(1000506001);
  void* pNext = nullptr;
  uint32_t MSize = 0, NSize = 0, KSize = 0;
  int32_t AType = 0, BType = 0, CType = 0, ResultType = 0;  // VkComponentTypeKHR
  VkBool32 saturatingAccumulation = VK_FALSE;
  int32_t scope = 0;  // VkScopeKHR
};
struct Bf16Features {  // VkPhysicalDeviceShaderBfloat16FeaturesKHR
  VkStructureType sType = VkStructureType(1000141000);
  void* pNext = nullptr;
  VkBool32 shaderBFloat16Type = VK_FALSE, shaderBFloat16DotProduct = VK_FALSE,
           shaderBFloat16CooperativeMatrix = VK_FALSE;
};
constexpr int32_t kCompF16 = 0, kCompF32 = 1, kCompBf16 = 1000141000, kScopeSubgroup = 3;

struct Coop2Features {  // VkPhysicalDeviceCooperativeMatrix2FeaturesNV
  VkStructureType sType = VkStructureType(1000593000);
  void* pNext = nullptr;
  VkBool32 workgroupScope = VK_FALSE, flexibleDimensions = VK_FALSE, reductions = VK_FALSE,
           conversions = VK_FALSE, perElementOperations = VK_FALSE, tensorAddressing = VK_FALSE,
           blockLoads = VK_FALSE;
};
struct Coop2Props {  // VkPhysicalDeviceCooperativeMatrix2PropertiesNV
  VkStructureType sType = VkStructureType(1000593002);
  void* pNext = nullptr;
  uint32_t workgroupScopeMaxWorkgroupSize = 0, flexibleDimensionsMaxDimension = 0,
           workgroupScopeReservedSharedMemory = 0;
};
struct FlexProps {  // VkCooperativeMatrixFlexibleDimensionsPropertiesNV
  VkStructureType sType = VkStructureType(1000593001);
  void* pNext = nullptr;
  uint32_t MGranularity = 0, NGranularity = 0, KGranularity = 0;
  int32_t AType = 0, BType = 0, CType = 0, ResultType = 0;
  VkBool32 saturatingAccumulation = VK_FALSE;
  int32_t scope = 0;
  uint32_t workgroupInvocations = 0;
};
constexpr const char* kCoop2Ext = "VK_NV_cooperative_matrix2";
constexpr int32_t kScopeWorkgroup = 2;

// What the coopmat kernels (all rewritten to KHR by scripts/spv_khr.py) can use: all need
// VK_KHR_cooperative_matrix and coop_subgroups().
// - f16: 16x16x16 float16 x float16 + float32 at subgroup scope (shaders/gemm_coop.comp);
// - bf16: 16x16x16 bfloat16 x bfloat16 + float32 at subgroup scope, with VK_KHR_shader_bfloat16's
//   bfloat16 type and cooperative matrices (shaders/gemm_coop_bf16.comp);
// - wg: VK_NV_cooperative_matrix2's workgroup scope with flexible dimensions, of float16 x float16
//   + float32 in 128-invocation workgroups, granularities that divide
//   the 128x128x32 products of shaders/gemm_coop_wg.comp.
// - wg_bf16: the same of bfloat16 x bfloat16 (with bf16's features), and per-element operations,
//   with which shaders/gemm_coop_wg_bf16.comp rounds its tile (scripts/spv_khr.py rne).

CoopKhr coop_khr(VkInstance inst, VkPhysicalDevice phys, const std::vector<VkExtensionProperties>& exts,
                 const Candidate& c, const VkPhysicalDeviceVulkan11Properties& p11) {
  CoopKhr out;
  using PropsFn = VkResult(VKAPI_PTR*)(VkPhysicalDevice, uint32_t*, KhrCoopProps*);
  using FlexFn = VkResult(VKAPI_PTR*)(VkPhysicalDevice, uint32_t*, FlexProps*);
  auto props_fn = reinterpret_cast<PropsFn>(vkGetInstanceProcAddr(inst, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"));
  auto flex_fn = reinterpret_cast<FlexFn>(vkGetInstanceProcAddr(inst, "vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV"));
  if (!has_ext(exts, kKhrCoopExt) || !props_fn) return out;
  if (!coop_subgroups(c, p11)) return out;
  const bool has_bf16 = has_ext(exts, kBf16Ext), has_coop2 = has_ext(exts, kCoop2Ext) && flex_fn;
  Bf16Features bf;
  Coop2Features c2;
  KhrCoopFeatures cf;
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f2.pNext = &cf;
  if (has_bf16) bf.pNext = cf.pNext, cf.pNext = &bf;
  if (has_coop2) c2.pNext = cf.pNext, cf.pNext = &c2;
  vkGetPhysicalDeviceFeatures2(phys, &f2);
  if (!cf.cooperativeMatrix) return out;
  const bool bf16_ok = bf.shaderBFloat16Type && bf.shaderBFloat16CooperativeMatrix;
  uint32_t n = 0;
  if (props_fn(phys, &n, nullptr) != VK_SUCCESS) return out;
  std::vector<KhrCoopProps> props(n);
  if (n && props_fn(phys, &n, props.data()) != VK_SUCCESS) return out;
  for (const auto& m : props) {
    const bool fits = m.MSize == 16 && m.NSize == 16 && m.KSize == 16 && m.AType == m.BType &&
                      m.CType == kCompF32 && m.ResultType == kCompF32 && m.scope == kScopeSubgroup;
    if (fits && m.AType == kCompF16) out.f16 = true;
    if (fits && m.AType == kCompBf16) out.bf16 = bf16_ok;
  }
  if (!has_coop2 || !c2.workgroupScope || !c2.flexibleDimensions) return out;
  Coop2Props cp;
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = &cp;
  vkGetPhysicalDeviceProperties2(phys, &p2);
  if (cp.workgroupScopeMaxWorkgroupSize < 128 || cp.flexibleDimensionsMaxDimension < 128) return out;
  n = 0;
  if (flex_fn(phys, &n, nullptr) != VK_SUCCESS) return out;
  std::vector<FlexProps> flex(n);
  if (n && flex_fn(phys, &n, flex.data()) != VK_SUCCESS) return out;
  for (const auto& m : flex) {
    const bool fits = m.scope == kScopeWorkgroup && m.workgroupInvocations == 128 && m.MGranularity &&
                      m.NGranularity && m.KGranularity && 128 % m.MGranularity == 0 &&
                      128 % m.NGranularity == 0 && 32 % m.KGranularity == 0 && m.CType == kCompF32 &&
                      m.ResultType == kCompF32 && m.AType == m.BType;
    if (fits && m.AType == kCompF16) out.wg = true;
    if (fits && m.AType == kCompBf16) out.wg_bf16 = bf16_ok && c2.perElementOperations;  // rounding (spv_khr.py rne)
  }
  out.wg_reserved = cp.workgroupScopeReservedSharedMemory;
  return out;
}

// Empty string when the device is usable, else why not.
std::string probe(VkPhysicalDevice phys, Candidate& c) {
  c.phys = phys;
  VkPhysicalDeviceProperties p0;
  vkGetPhysicalDeviceProperties(phys, &p0);
  c.info.name = p0.deviceName;
  if (p0.apiVersion < VK_API_VERSION_1_3)
    return "Vulkan " + version_str(p0.apiVersion) + " (1.3 needed)";

  VkPhysicalDeviceVulkan11Properties p11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_PROPERTIES};
  VkPhysicalDeviceVulkan12Properties p12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_PROPERTIES};
  VkPhysicalDeviceVulkan13Properties p13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_PROPERTIES};
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = &p11;
  p11.pNext = &p12;
  p12.pNext = &p13;
  vkGetPhysicalDeviceProperties2(phys, &p2);
  const VkPhysicalDeviceProperties& p = p2.properties;

  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f2.pNext = &c.f11;
  c.f11.pNext = &c.f12;
  c.f12.pNext = &c.f13;
  vkGetPhysicalDeviceFeatures2(phys, &f2);
  c.f11.pNext = c.f12.pNext = c.f13.pNext = nullptr;
  c.core = f2.features;

  static const char* kTypes[] = {"other", "integrated", "discrete", "virtual", "cpu"};
  static const int kRank[] = {4, 1, 0, 2, 3};
  unsigned t = p.deviceType <= 4 ? unsigned(p.deviceType) : 0;
  c.info.type = kTypes[t];
  c.rank = kRank[t];
  c.info.api_version = version_str(p.apiVersion);
  c.info.driver = driver_str(p, p12);
  c.info.vendor_id = p.vendorID;
  c.info.device_id = p.deviceID;
  VkPhysicalDeviceMemoryProperties mp;
  vkGetPhysicalDeviceMemoryProperties(phys, &mp);
  for (uint32_t i = 0; i < mp.memoryHeapCount; ++i)
    if (mp.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      c.info.memory_bytes = std::max<uint64_t>(c.info.memory_bytes, mp.memoryHeaps[i].size);

  if (!c.f12.bufferDeviceAddress) return "no bufferDeviceAddress";
  if (!c.core.shaderInt64) return "no shaderInt64";
  if (!c.f13.maintenance4) return "no maintenance4";

  uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> qs(nq);
  vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, qs.data());
  bool found = false;
  for (uint32_t i = 0; i < nq && !found; ++i)
    if (qs[i].queueFlags & VK_QUEUE_COMPUTE_BIT) c.queue_family = i, found = true;
  if (!found) return "no compute queue";

  uint32_t ne = 0;
  vkEnumerateDeviceExtensionProperties(phys, nullptr, &ne, nullptr);
  std::vector<VkExtensionProperties> exts(ne);
  vkEnumerateDeviceExtensionProperties(phys, nullptr, &ne, exts.data());
  c.portability_subset = has_ext(exts, "VK_KHR_portability_subset");

  Limits& L = c.limits;
  const VkPhysicalDeviceLimits& l = p.limits;
  L.max_push_constants = l.maxPushConstantsSize;
  L.max_shared_memory = l.maxComputeSharedMemorySize;
  L.max_workgroup_invocations = l.maxComputeWorkGroupInvocations;
  for (int i = 0; i < 3; ++i) {
    L.max_workgroup_size[i] = l.maxComputeWorkGroupSize[i];
    L.max_workgroup_count[i] = l.maxComputeWorkGroupCount[i];
  }
  L.subgroup_size = p11.subgroupSize;
  L.max_allocation = p11.maxMemoryAllocationSize;
  L.max_storage_buffer_range = l.maxStorageBufferRange;
  L.float64 = c.core.shaderFloat64;
  L.int64 = true;
  L.float16 = c.f12.shaderFloat16 && c.f11.storageBuffer16BitAccess;
  c.coop_khr = coop_khr(instance().inst, phys, exts, c, p11);
  L.cooperative_matrix = c.coop_khr.f16;
  L.cooperative_matrix_bf16 = c.coop_khr.bf16;
  L.cooperative_matrix_wg = c.coop_khr.wg;
  L.cooperative_matrix_wg_bf16 = c.coop_khr.wg_bf16;
  L.cooperative_matrix_wg_reserved = c.coop_khr.wg_reserved;
  L.float_controls = p12.shaderSignedZeroInfNanPreserveFloat32 &&
                     (!L.float64 || p12.shaderSignedZeroInfNanPreserveFloat64);
  c.max_buffer = p13.maxBufferSize;
  if (p12.driverID == VK_DRIVER_ID_MESA_LLVMPIPE) L.max_loop_trips = 65535;  // gallivm's loop limiter
  L.specialize_after = p.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? 0 : 1;
  L.copy_shader = p.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU;
  L.submit_early_mflop = p.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? 0 : 1000;
  return {};
}

// Usable devices in list order; reasons for the rejected ones go to *why.
std::vector<Candidate> candidates(std::string* why) {
  std::vector<Candidate> out;
  const Instance& I = instance();
  if (!I.inst) {
    if (why) *why = I.why;
    return out;
  }
  uint32_t n = 0;
  VkResult r = vkEnumeratePhysicalDevices(I.inst, &n, nullptr);
  std::vector<VkPhysicalDevice> phys(n);
  if (r == VK_SUCCESS && n) r = vkEnumeratePhysicalDevices(I.inst, &n, phys.data());
  if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
    if (why) *why = std::string("vkEnumeratePhysicalDevices failed: ") + result_name(r);
    return {};
  }
  std::string rejected;
  for (uint32_t i = 0; i < n; ++i) {
    Candidate c;
    std::string no = probe(phys[i], c);
    if (no.empty())
      out.push_back(std::move(c));
    else
      rejected += (rejected.empty() ? "" : "; ") + c.info.name + ": " + no;
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Candidate& a, const Candidate& b) { return a.rank < b.rank; });
  if (why && out.empty())
    *why = n == 0 ? "no Vulkan device found" : "no usable Vulkan 1.3 device (" + rejected + ")";
  return out;
}

}  // namespace

std::vector<DeviceInfo> list_devices(std::string* why) {
  std::vector<DeviceInfo> out;
  for (auto& c : candidates(why)) out.push_back(std::move(c.info));
  return out;
}

Device::~Device() {
  if (dev) {
    fn.vkDeviceWaitIdle(dev);
    fn.vkDestroyDevice(dev, nullptr);
  }
}

Result<std::unique_ptr<Device>> open_device(int index, bool min_spec) {
  std::string why;
  auto cs = candidates(&why);
  if (cs.empty()) return fail(Err::no_device, why);
  if (index >= int(cs.size()))
    return fail(Err::no_device, "Vulkan device " + std::to_string(index) + " requested, but only " +
                                    std::to_string(cs.size()) + " usable");
  Candidate& c = cs[index < 0 ? 0 : index];

  // Required features, plus the optional ones shaders may use when present. Not robustBufferAccess:
  // it costs speed and our shaders do their own bounds checks.
  VkPhysicalDeviceVulkan13Features e13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  e13.maintenance4 = VK_TRUE;
  e13.synchronization2 = c.f13.synchronization2;
  e13.subgroupSizeControl = c.f13.subgroupSizeControl;
  e13.computeFullSubgroups = c.f13.computeFullSubgroups;
  VkPhysicalDeviceVulkan12Features e12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  e12.pNext = &e13;
  e12.bufferDeviceAddress = VK_TRUE;
  e12.shaderFloat16 = c.f12.shaderFloat16;
  e12.shaderInt8 = c.f12.shaderInt8;
  e12.storageBuffer8BitAccess = c.f12.storageBuffer8BitAccess;
  e12.scalarBlockLayout = c.f12.scalarBlockLayout;
  e12.vulkanMemoryModel = c.f12.vulkanMemoryModel;
  e12.vulkanMemoryModelDeviceScope = c.f12.vulkanMemoryModelDeviceScope;
  VkPhysicalDeviceVulkan11Features e11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  e11.pNext = &e12;
  e11.storageBuffer16BitAccess = c.f11.storageBuffer16BitAccess;
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f2.pNext = &e11;
  f2.features.shaderInt64 = VK_TRUE;
  f2.features.shaderFloat64 = c.core.shaderFloat64;
  f2.features.shaderInt16 = c.core.shaderInt16;

  float prio = 1.0f;
  VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qi.queueFamilyIndex = c.queue_family;
  qi.queueCount = 1;
  qi.pQueuePriorities = &prio;
  std::vector<const char*> exts;
  if (c.portability_subset) exts.push_back("VK_KHR_portability_subset");  // must be enabled where it exists
  KhrCoopFeatures kcoop;
  Bf16Features bf16;
  Coop2Features coop2;
  if (c.coop_khr.any()) {
    exts.push_back(kKhrCoopExt);
    kcoop.cooperativeMatrix = VK_TRUE;
    kcoop.pNext = f2.pNext;
    f2.pNext = &kcoop;
  }
  if (c.coop_khr.bf16 || c.coop_khr.wg_bf16) {
    exts.push_back(kBf16Ext);
    bf16.shaderBFloat16Type = bf16.shaderBFloat16CooperativeMatrix = VK_TRUE;
    bf16.pNext = f2.pNext;
    f2.pNext = &bf16;
  }
  if (c.coop_khr.wg || c.coop_khr.wg_bf16) {  // either kernel needs the extension
    exts.push_back(kCoop2Ext);
    coop2.workgroupScope = coop2.flexibleDimensions = VK_TRUE;
    coop2.perElementOperations = c.coop_khr.wg_bf16 ? VK_TRUE : VK_FALSE;
    coop2.pNext = f2.pNext;
    f2.pNext = &coop2;
  }
  VkDeviceCreateInfo ci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  ci.pNext = &f2;
  ci.queueCreateInfoCount = 1;
  ci.pQueueCreateInfos = &qi;
  ci.enabledExtensionCount = uint32_t(exts.size());
  ci.ppEnabledExtensionNames = exts.data();

  auto d = std::make_unique<Device>();
  VkResult r = vkCreateDevice(c.phys, &ci, nullptr, &d->dev);
  if (r != VK_SUCCESS && c.coop_khr.any()) {  // a device that refuses them still runs without
    exts.resize(c.portability_subset ? 1 : 0);
    f2.pNext = &e11;
    ci.enabledExtensionCount = uint32_t(exts.size());
    ci.ppEnabledExtensionNames = exts.data();
    c.coop_khr = {};
    c.limits.cooperative_matrix = c.limits.cooperative_matrix_bf16 = false;
    c.limits.cooperative_matrix_wg = c.limits.cooperative_matrix_wg_bf16 = false;
    r = vkCreateDevice(c.phys, &ci, nullptr, &d->dev);
  }
  if (r != VK_SUCCESS) {
    d->dev = VK_NULL_HANDLE;
    return fail(Err::vulkan, "vkCreateDevice failed on " + c.info.name + ": " + result_name(r));
  }
  volkLoadDeviceTable(&d->fn, d->dev);
  d->fn.vkGetDeviceQueue(d->dev, c.queue_family, 0, &d->queue);
  d->phys = c.phys;
  d->queue_family = c.queue_family;
  vkGetPhysicalDeviceMemoryProperties(c.phys, &d->mem_props);
  d->info = c.info;
  d->limits = min_spec ? clamp_to_min_spec(c.limits) : c.limits;
  d->max_buffer = std::min<uint64_t>(c.max_buffer, d->limits.max_allocation);
  return d;
}

}  // namespace vkml::vk
