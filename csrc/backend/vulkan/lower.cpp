// Graph node -> shader dispatches: the row's family lowering fills the dispatches (shader blob,
// push constants, grid); this file adds the row's opcode.
#include "backend/vulkan/lower.h"

#include <cstdio>
#include <cstring>
#include <string>

#include "backend/vulkan/spirv.h"
#include "op_codes.h"

namespace vkml::vk {

uint64_t raw_scalar(const Scalar& s, Compute c) {
  if (c == Compute::i64) return uint64_t(s.i);
  if (c == Compute::f64) { uint64_t u; std::memcpy(&u, &s.f, 8); return u; }
  float f = float(s.f);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

bool grid2(uint64_t groups, const Limits& lim, Dispatch& d) {
  uint64_t x = groups < lim.max_workgroup_count[0] ? groups : lim.max_workgroup_count[0];
  uint64_t y = x ? (groups + x - 1) / x : 0;
  if (y > lim.max_workgroup_count[1]) return false;
  d.groups[0] = uint32_t(x);
  d.groups[1] = uint32_t(y);
  d.groups[2] = 1;
  return true;
}

bool set_shader(Dispatch& d, const char* stem, Compute c, const Limits& lim, std::string& why) {
  if (c == Compute::f64 && !lim.float64) return why = "float64 compute needs shaderFloat64, which this device lacks", false;
  // This runs for every recorded node (supports()): no heap string, and the blob lookup is
  // remembered for the last (stem, variant), since runs of one op are the common case.
  const char* variant = c == Compute::f64 ? "_f64" : c == Compute::i64 ? "_i64" : "_f32";
  const char* ieee = c != Compute::i64 && lim.float_controls ? "_ieee" : "";
  const size_t ls = std::strlen(stem), lv = 4, li = std::strlen(ieee);
  if (ls + lv + li >= sizeof d.shader) return why = std::string("shader name too long: ") + stem, false;
  std::memcpy(d.shader, stem, ls);
  std::memcpy(d.shader + ls, variant, lv);
  std::memcpy(d.shader + ls + lv, ieee, li + 1);
  thread_local char last[sizeof d.shader] = {};
  if (std::strcmp(last, d.shader) == 0) return true;
  if (spirv(d.shader).empty()) return why = std::string("no shader ") + d.shader, false;
  std::memcpy(last, d.shader, sizeof last);
  return true;
}

namespace {

int32_t opcode_of(OpId id) {
  static const int32_t codes[] = {
#define OP(NAME, FAMILY, ATEN, OPCODE, ...) OPCODE,
#include "op_rows.def"
#undef OP
  };
  return codes[unsigned(id)];
}

using LowerFn = int (*)(const Node&, const Limits&, Dispatch*, std::string&);
constexpr LowerFn kLower[] = {
#define VKML_LOWER_FN(name, A) &lower_##name,
    VKML_FAMILIES(VKML_LOWER_FN)
#undef VKML_LOWER_FN
};

std::string describe(const Node& n) {
  std::string s = std::string("op '") + op_info(n.op).name + "' (";
  for (int k = 0; k < n.nout + n.nin && k < kMaxOperands; ++k) {
    const TensorDesc& t = n.t[k];
    if (k) s += ", ";
    if (t.addr == 0 && t.ndim == 0) { s += "none"; continue; }
    s += std::string(dtype_name(t.dtype)) + "[";
    for (int d = 0; d < t.ndim; ++d) s += (d ? "," : "") + std::to_string(t.sizes[d]);
    s += "]";
  }
  return s + ")";
}

int build(const Node& n, const Limits& lim, Dispatch* out, std::string& why) {
  for (int i = 0; i < kMaxDispatchesPerNode; ++i) out[i].reset();
  const int count = kLower[unsigned(op_info(n.op).family)](n, lim, out, why);
  if (count < 0) return count;
  const int32_t code = row_opcode(n.op);
  for (int i = 0; i < count; ++i) {
    if (out[i].opcode == kRowOpcode) out[i].opcode = code;
    if (!out[i].shader[0] && i > 0) std::memcpy(out[i].shader, out[0].shader, sizeof out[i].shader);
  }
  return count;
}

}  // namespace

int32_t row_opcode(OpId id) {
  const int32_t code = opcode_of(id);
  return code;
}

Result<int> lower(const Node& n, const Limits& lim, Dispatch* out) {
  std::string why;
  int count = build(n, lim, out, why);
  if (count < 0) return fail(Err::unsupported, "vkml: cannot run " + describe(n) + " on Vulkan: " + why);
  return count;
}

namespace {

// What decides whether an elementwise node lowers (lower_elementwise.cpp): the op, the compute
// dtype, the args' flags, and each operand's presence, dtype, sizes, strides and the low bits of
// its address (alignment picks the vectorised path, which decides whether byte offsets must fit
// 32 bits); not the rest of the addresses, nor the scalars. A refusal there that reads anything
// else must be added here.
struct EwKey {
  static constexpr uint64_t kLowBits = 0xFFF;
  const Limits* lim = nullptr;
  OpId op = OpId::count_;
  uint8_t nout = 0, nin = 0;
  DType compute = DType::f32;
  bool scalar_b = false, round_scalars = false, reads_out = false;
  TensorDesc t[3];  // addresses masked to kLowBits, with bit 63 marking a present operand

  static uint64_t masked(uint64_t addr) { return addr ? (addr & kLowBits) | (uint64_t(1) << 63) : 0; }
  bool same(const Node& n, const Limits& l) const {
    if (n.op != op || &l != lim || n.nout != nout || n.nin != nin || n.compute != compute) return false;
    const auto& a = n.as<ElementwiseArgs>();
    if (a.scalar_b != scalar_b || a.round_scalars != round_scalars || a.reads_out != reads_out) return false;
    for (int k = 0; k < nout + nin; ++k) {
      const TensorDesc &x = n.t[k], &y = t[k];
      if (masked(x.addr) != y.addr || x.dtype != y.dtype || x.ndim != y.ndim) return false;
      for (int d = 0; d < x.ndim; ++d)
        if (x.sizes[d] != y.sizes[d] || x.strides[d] != y.strides[d]) return false;
    }
    return true;
  }
  void set(const Node& n, const Limits& l) {
    lim = &l;
    op = n.op;
    nout = n.nout;
    nin = n.nin;
    compute = n.compute;
    const auto& a = n.as<ElementwiseArgs>();
    scalar_b = a.scalar_b;
    round_scalars = a.round_scalars;
    reads_out = a.reads_out;
    for (int k = 0; k < nout + nin; ++k) {
      t[k] = n.t[k];
      t[k].addr = masked(n.t[k].addr);
    }
  }
};

}  // namespace

bool can_lower(const Node& n, const Limits& lim) {
  // Recording asks this for every node, and runs of one op over one shape are the common case:
  // the last few elementwise nodes accepted are remembered, so that their like skips the lowering
  // (about 6% of what recording a tiny op costs, docs/performance.md). Acceptance only:
  // lower() still builds every node at submit.
  static thread_local EwKey seen[8];
  static thread_local unsigned next = 0;
  const bool ew = op_info(n.op).family == Family::elementwise && n.nout + n.nin <= 3;
  if (ew)
    for (const EwKey& k : seen)
      if (k.same(n, lim)) return true;
  static thread_local Dispatch scratch[kMaxDispatchesPerNode];
  std::string why;
  if (build(n, lim, scratch, why) < 0) return false;
  if (ew) seen[next++ % 8].set(n, lim);
  return true;
}

}  // namespace vkml::vk
