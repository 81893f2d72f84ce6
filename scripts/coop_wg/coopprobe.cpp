// Lists what the first Vulkan device offers for cooperative matrices (KHR, NV, NV2) and bfloat16.
#include <vulkan/vulkan.h>
#include <cstdio>
#include <cstring>
#include <vector>
struct KProps { VkStructureType sType; void* pNext; uint32_t M, N, K; int A, B, C, R; VkBool32 sat; int scope; };
struct FProps { VkStructureType sType; void* pNext; uint32_t M, N, K; int A, B, C, R; VkBool32 sat; int scope; uint32_t inv; };
struct Coop2F { VkStructureType sType; void* pNext; VkBool32 f[7]; };
struct Coop2P { VkStructureType sType; void* pNext; uint32_t maxwg, maxdim, reserved; };
struct Bf16F { VkStructureType sType; void* pNext; VkBool32 type, dot, coop; };
struct KhrF { VkStructureType sType; void* pNext; VkBool32 coop, robust; };
int main() {
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO}; app.apiVersion = VK_API_VERSION_1_3;
  VkInstanceCreateInfo ici{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO}; ici.pApplicationInfo = &app;
  VkInstance inst; if (vkCreateInstance(&ici, nullptr, &inst)) { puts("no instance"); return 1; }
  uint32_t n = 0; vkEnumeratePhysicalDevices(inst, &n, nullptr); std::vector<VkPhysicalDevice> pds(n);
  vkEnumeratePhysicalDevices(inst, &n, pds.data()); VkPhysicalDevice pd = pds[0];
  VkPhysicalDeviceProperties pp; vkGetPhysicalDeviceProperties(pd, &pp);
  printf("device %s driver %u api %u.%u.%u\n", pp.deviceName, pp.driverVersion, VK_VERSION_MAJOR(pp.apiVersion), VK_VERSION_MINOR(pp.apiVersion), VK_VERSION_PATCH(pp.apiVersion));
  uint32_t ne = 0; vkEnumerateDeviceExtensionProperties(pd, nullptr, &ne, nullptr);
  std::vector<VkExtensionProperties> ex(ne); vkEnumerateDeviceExtensionProperties(pd, nullptr, &ne, ex.data());
  for (auto& e : ex) if (strstr(e.extensionName, "cooperative") || strstr(e.extensionName, "bfloat") || strstr(e.extensionName, "float8") || strstr(e.extensionName, "maintenance") || strstr(e.extensionName, "memory_model") || strstr(e.extensionName, "spirv"))
    printf("ext %s v%u\n", e.extensionName, e.specVersion);
  Bf16F bf{VkStructureType(1000141000)}; Coop2F c2{VkStructureType(1000593000), &bf}; KhrF kf{VkStructureType(1000506000), &c2};
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &kf}; vkGetPhysicalDeviceFeatures2(pd, &f2);
  printf("khr coop %u robust %u | coop2 wgscope %u flexdims %u reductions %u conversions %u perelem %u tensoraddr %u blockloads %u | bf16 type %u dot %u coop %u\n",
    kf.coop, kf.robust, c2.f[0], c2.f[1], c2.f[2], c2.f[3], c2.f[4], c2.f[5], c2.f[6], bf.type, bf.dot, bf.coop);
  Coop2P cp{VkStructureType(1000593002)}; VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &cp};
  vkGetPhysicalDeviceProperties2(pd, &p2); printf("coop2 maxwg %u maxdim %u reservedsmem %u\n", cp.maxwg, cp.maxdim, cp.reserved);
  auto kp = (VkResult(*)(VkPhysicalDevice, uint32_t*, KProps*))vkGetInstanceProcAddr(inst, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
  if (kp) { uint32_t c = 0; kp(pd, &c, nullptr); std::vector<KProps> v(c); for (auto& x : v) { memset(&x, 0, sizeof x); x.sType = VkStructureType(1000506001); } kp(pd, &c, v.data());
    for (auto& x : v) printf("KHR M%u N%u K%u A%d B%d C%d R%d sat%u scope%d\n", x.M, x.N, x.K, x.A, x.B, x.C, x.R, x.sat, x.scope); }
  auto fp = (VkResult(*)(VkPhysicalDevice, uint32_t*, FProps*))vkGetInstanceProcAddr(inst, "vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV");
  if (fp) { uint32_t c = 0; fp(pd, &c, nullptr); std::vector<FProps> v(c); for (auto& x : v) { memset(&x, 0, sizeof x); x.sType = VkStructureType(1000593001); } fp(pd, &c, v.data());
    for (auto& x : v) printf("FLEX Mg%u Ng%u Kg%u A%d B%d C%d R%d sat%u scope%d inv%u\n", x.M, x.N, x.K, x.A, x.B, x.C, x.R, x.sat, x.scope, x.inv); }
  return 0;
}
