// SPIR-V of the shader variants, embedded at build time (build/gen/spirv_blobs.cpp, from setup.py).
#pragma once
#include <cstdint>
#include <span>

namespace vkml::vk {
// Blob "<shader stem>_<variant>", e.g. "elementwise_f32"; empty if there is none.
std::span<const uint32_t> spirv(const char* name);
}  // namespace vkml::vk
