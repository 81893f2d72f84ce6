#include "aten/trace.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "util/env.h"

namespace vkml::aten {
namespace {

std::mutex trace_mu;
std::atomic<int> g_scopes{0};  // open vkml_torch.trace() blocks
std::map<std::pair<std::string, std::string>, uint64_t> g_counts;

// VKML_TRACE=1: the per-op counts go to stderr when the process exits.
void print_at_exit() {
  std::lock_guard<std::mutex> g(trace_mu);
  std::fprintf(stderr, "vkml trace: %zu aten op(s) reached vkml\n", g_counts.size());
  for (const auto& [k, n] : g_counts)
    std::fprintf(stderr, "  %10llu  %-13s %s\n", (unsigned long long)n, k.second.c_str(), k.first.c_str());
}

}  // namespace

const char* path_name(Path p) {
  static const char* const names[] = {"native", "composite", "decomposition", "cpu_fallback", "missing"};
  return names[unsigned(p)];
}

bool tracing() { return env().trace || g_scopes.load(std::memory_order_relaxed) > 0; }

void trace(const std::string& op, Path p) {
  std::lock_guard<std::mutex> g(trace_mu);
  const bool first = g_counts.empty();
  auto [it, fresh] = g_counts.try_emplace({op, path_name(p)}, 0);
  ++it->second;
  if (env().trace && fresh) std::fprintf(stderr, "vkml trace: %s -> %s\n", op.c_str(), path_name(p));
  if (env().trace && first) std::atexit(print_at_exit);
}

void trace(const c10::OperatorHandle& op, Path p) {
  const auto& name = op.schema().operator_name();
  trace(name.overload_name.empty() ? name.name : name.name + "." + name.overload_name, p);
}

std::map<std::pair<std::string, std::string>, uint64_t> trace_counts() {
  std::lock_guard<std::mutex> g(trace_mu);
  return g_counts;
}

void trace_reset() {
  std::lock_guard<std::mutex> g(trace_mu);
  g_counts.clear();
}

void set_tracing(bool on) { g_scopes += on ? 1 : -1; }

}  // namespace vkml::aten
