#include "util/env.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace vkml {
namespace {
bool flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}
int integer(const char* name, int dflt) {
  const char* v = std::getenv(name);
  return (v && *v) ? std::atoi(v) : dflt;
}
Env read() {
  Env e;
  e.eager = flag("VKML_EAGER");
  e.check = flag("VKML_CHECK");
  e.min_spec = flag("VKML_MIN_SPEC");
  e.cpu_fallback = flag("VKML_CPU_FALLBACK");
  e.trace = flag("VKML_TRACE");
  e.crash_trace = flag("VKML_CRASH_TRACE");
  e.device = integer("VKML_DEVICE", -1);
  e.fake_devices = integer("VKML_FAKE_DEVICES", 0);
  if (e.fake_devices < 0) e.fake_devices = 0;
  e.max_pending = integer("VKML_MAX_PENDING", 4096);
  if (e.max_pending < 1) e.max_pending = 1;
  if (const char* d = std::getenv("VKML_SPIRV_DIR")) e.spirv_dir = d;
  if (const char* r = std::getenv("VKML_RNG")) e.rng = r;
  if (const char* c = std::getenv("VKML_CACHE_DIR"); c && *c) e.cache_dir = c;
  else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) e.cache_dir = std::string(x) + "/vkml";
  else if (const char* h = std::getenv("HOME"); h && *h) e.cache_dir = std::string(h) + "/.cache/vkml";
  else e.cache_dir = "off";
  if (const char* m = std::getenv("VKML_FUSE")) e.fuse = !(*m && std::strcmp(m, "0") == 0);
  if (const char* m = std::getenv("VKML_FUSE_HIDDEN")) e.fuse_hidden = !(*m && std::strcmp(m, "0") == 0);
  if (const char* g = std::getenv("VKML_GEMM_PIPE")) e.gemm_pipe = g;
  e.gemm_split_groups = integer("VKML_GEMM_SPLIT_GROUPS", 192);
  if (e.gemm_split_groups < 1) e.gemm_split_groups = 1;
  if (const char* c = std::getenv("VKML_CONV_PIPE")) e.conv_pipe = c;
  e.specialize = integer("VKML_SPECIALIZE", -1);
  e.copy_shader = integer("VKML_COPY_SHADER", -1);
  e.submit_early = integer("VKML_SUBMIT_EARLY", -1);
  return e;
}
}  // namespace

// Read on every recorded op: the first call reads the environment (a function-local static:
// thread safe), later ones take the pointer it left. Kept out of line from the static's
// initialisation, whose register saves GCC otherwise makes on every call.
namespace {
std::atomic<Env*> g_env{nullptr};
[[gnu::noinline]] Env& first_env() {
  static Env e = read();
  g_env.store(&e, std::memory_order_release);
  return e;
}
}  // namespace

Env& env() {
  if (Env* e = g_env.load(std::memory_order_acquire)) return *e;
  return first_env();
}

}  // namespace vkml
