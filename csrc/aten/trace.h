// VKML_TRACE=1 / vkml_torch.trace(): which aten ops reach the vkml device and by which path.
#pragma once
#include <ATen/core/dispatch/Dispatcher.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>

namespace vkml::aten {

enum class Path : uint8_t { native, composite, decomposition, cpu_fallback, missing };
const char* path_name(Path p);

bool tracing();  // VKML_TRACE=1, or inside vkml_torch.trace()
void trace(const c10::OperatorHandle& op, Path p);
void trace(const std::string& op, Path p);  // "aten::add.Tensor"

// The counts since the last reset: (op, path) -> calls. set_tracing(false) keeps VKML_TRACE's.
std::map<std::pair<std::string, std::string>, uint64_t> trace_counts();
void trace_reset();
void set_tracing(bool on);

}  // namespace vkml::aten
