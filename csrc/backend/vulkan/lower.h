// Lowering: one graph node -> the dispatches that compute it on Vulkan. Each family has its own
// lowering, lower_<family>() in backend/vulkan/lower_<family>.cpp (declared below from the list of
// families; a family without one is a link error). lower.cpp picks it by the row's family.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>

#include "core/coalesce.h"
#include "core/limits.h"
#include "graph/node.h"
#include "util/env.h"
#include "util/result.h"

namespace vkml::vk {

constexpr int32_t kRowOpcode = INT32_MIN;  // Dispatch::opcode left as is: the row's OPCODE
constexpr uint32_t kMaxParamBytes = 1024;  // per dispatch, in the submission's parameter buffer
constexpr uint32_t kMaxSpec = 68;          // specialization constants past OP (fused_spec.comp's)

struct Dispatch {
  char shader[32] = {};          // SPIR-V blob name, e.g. "elementwise_f32" (set_shader)
  int32_t opcode = kRowOpcode;   // specialization constant 0 (OP_* from build/gen/op_codes.h)
  uint32_t groups[3] = {1, 1, 1};
  uint32_t pc_size = 0;
  alignas(8) uint8_t pc[128] = {};
  // Parameters that do not fit the 128 push-constant bytes Vulkan guarantees: the backend copies
  // them into the submission's parameter buffer and writes their device address (8 bytes) at
  // pc[param_addr_at]. See put_params().
  uint32_t param_size = 0, param_addr_at = 0;
  // A node's later dispatch that touches nothing its earlier ones write, nor writes what they
  // touch (a strided convolution's phases): no barrier before it.
  bool concurrent = false;
  alignas(16) uint8_t params[kMaxParamBytes];
  // Optional: specialization constants 1..nspec for blob `spec_shader`, which computes what
  // `shader` does with part of its parameters made constants (the elementwise dtypes and path,
  // a fused program's steps). The backend switches to it once the same constants came
  // `spec_after` times (specialize_after(): 1 on GPUs); until then, and always when 0, `shader`.
  char spec_shader[32] = {};
  uint32_t nspec = 0, spec_after = 0;
  uint32_t spec[kMaxSpec];
  void specialize(const char* blob, uint32_t after) {
    std::memcpy(spec_shader, blob, sizeof spec_shader);
    spec_after = after;
  }

  void reset() {  // everything but the blocks' bytes (put / put_params overwrite those)
    shader[0] = spec_shader[0] = 0;
    nspec = spec_after = 0;
    opcode = kRowOpcode;
    groups[0] = groups[1] = groups[2] = 1;
    pc_size = param_size = param_addr_at = 0;
    concurrent = false;
  }
};

// 8: a strided 3-d convolution's input gradient runs as 8 phases (lower_conv.cpp phases()).
constexpr int kMaxDispatchesPerNode = 8;

// Fills out[0..n) and returns n. Dispatches of one node run in order with a full barrier
// between them, but before one marked `concurrent`. Transfer nodes are not lowered: the runtime copies buffers for them.
// Fails with Err::unsupported (naming op, dtypes, sizes) when no shader can run the node.
Result<int> lower(const Node& n, const Limits& lim, Dispatch* out);

// A transfer between two device buffers as an elementwise copy node of 8- or 4-byte words (its
// raw-bit path), where sizes and addresses allow; false: the runtime copies it as a buffer copy.
bool transfer_as_copy(const Node& transfer, Node& copy);
// Whether device-to-device transfers go through transfer_as_copy: VKML_COPY_SHADER where set.
inline bool copy_shader(const Limits& lim) {
  return env().copy_shader >= 0 ? env().copy_shader != 0 : lim.copy_shader;
}

// Whether lower() can handle the node (same answer lower would give, without building it).
bool can_lower(const Node& n, const Limits& lim);

// ---- for the family lowerings ----------------------------------------------------------------

// A family's lowering: fills out[], returns the dispatch count (0: nothing to run) or -1 with why.
#define VKML_LOWER_DECL(name, A) int lower_##name(const Node& n, const Limits& lim, Dispatch* out, std::string& why);
VKML_FAMILIES(VKML_LOWER_DECL)
#undef VKML_LOWER_DECL

constexpr uint32_t kGroup = 128;  // local size of every shader

// Picks blob "<stem>_<variant>[_ieee]" for compute type c; false (with why) if the device lacks it.
bool set_shader(Dispatch& d, const char* stem, Compute c, const Limits& lim, std::string& why);

// The push-constant block of a dispatch.
template <class P>
void put(Dispatch& d, const P& p) {
  static_assert(sizeof(P) <= sizeof(d.pc), "a push-constant block exceeds 128 bytes");
  std::memcpy(d.pc, &p, sizeof(P));
  d.pc_size = sizeof(P);
}

// A parameter block too big for push constants; `addr_at` is the byte offset in the push-constant
// block of the u64 that receives its device address.
template <class P>
void put_params(Dispatch& d, const P& p, uint32_t addr_at) {
  static_assert(sizeof(P) <= kMaxParamBytes, "a parameter block exceeds kMaxParamBytes");
  std::memcpy(d.params, &p, sizeof(P));
  d.param_size = sizeof(P);
  d.param_addr_at = addr_at;
}

// The row's OP_* code (lower.cpp).
int32_t row_opcode(OpId id);

// The profiler's kernel name for a fused node: its steps' rows, "fused(add,mul,exp)", or past 8
// steps "fused[12](add,mul,exp,sub,div,neg,...)" (lower_fused.cpp).
std::string fused_name(const Node& n);

uint64_t raw_scalar(const Scalar& s, Compute c);  // as the shaders read u64 scalars
// After how many uses a dispatch's constants get their own pipeline (Dispatch::spec; 0: never):
// VKML_SPECIALIZE / vkml_torch._C._set_specialize where set, else the device's default.
inline uint32_t specialize_after(const Limits& lim) {
  return env().specialize >= 0 ? uint32_t(env().specialize) : lim.specialize_after;
}

// Offers the pipelines of out[0..count) specialized to the dtypes word of their push constants
// (shaders/spec_dtypes.glsl's constant 1), where the device's policy asks for it. Returns count.
inline int spec_dtypes(Dispatch* out, int count, const Limits& lim, uint32_t dtypes) {
  if (const uint32_t after = specialize_after(lim)) {
    for (int k = 0; k < count; ++k) {
      out[k].specialize(out[k].shader[0] ? out[k].shader : out[0].shader, after);  // (build() fills empty names)
      out[k].spec[0] = dtypes;
      out[k].nspec = 1;
    }
  }
  return count;
}

inline bool fits_i32(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }
// The alignment a 4-element block of dtype d needs for shaders/common.glsl's ld_block4 /
// st_block4 (the contiguous fast paths): min(4 * size, 16) bytes.
inline uint64_t block4_align(DType d) {
  const uint64_t esz = dtype_size(d);
  return esz * 4 < 16 ? esz * 4 : 16;
}

// Lanes of a row for the kernels whose rows share 128-wide workgroups (softmax, norm, reduce; their
// trees: shaders/lanes.glsl, reduce.comp's tree): the power of two from 1 to 128 that gives each
// lane about `per_lane` of the row's n elements; 128 / lanes rows a workgroup.
inline uint32_t row_lanes(uint64_t n, uint64_t per_lane) {
  const uint64_t want = (n + per_lane - 1) / per_lane;
  uint32_t lanes = 1;
  while (lanes < 128 && lanes < want) lanes *= 2;
  return lanes;
}

// Spreads `groups` over a 2-D grid within the device's group-count limits.
bool grid2(uint64_t groups, const Limits& lim, Dispatch& d);

}  // namespace vkml::vk
