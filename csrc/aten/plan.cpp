// Connects the plan layer's rewrite (fusion, csrc/plan/) to the device: dispatch and plan share a
// rank and include neither each other, so the layer above them does it, once, at load.
#include "dispatch/device.h"
#include "plan/fuse.h"

namespace vkml::aten {
namespace {

const bool g_planner_set = (Device::set_planner(&plan::fuse), true);

}  // namespace
}  // namespace vkml::aten
