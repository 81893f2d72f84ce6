// The random family -> shaders/random.comp: one dispatch, one invocation per output element (per 4
// elements of dense, aligned operands). The operands' addresses, coalesced sizes and strides go in
// a parameter block (shaders/rng.h).
#include <cstddef>
#include <string>

#include "backend/vulkan/lower.h"
#include "op_codes.h"
#include "rng.h"

namespace vkml::vk {

int lower_random(const Node& n, const Limits& lim, Dispatch* out, std::string& why) {
  using A = RandomArgs;
  const RandomArgs& g = n.as<A>();
  const TensorDesc& o = n.t[A::out];
  const int64_t numel = o.numel();
  if (numel == 0) return 0;
  if (!set_shader(out[0], "random", compute_of(n.compute), lim, why)) return -1;
  pc::RngParams p{};
  const int nops = n.nout + n.nin;
  if (nops > 3) return why = "too many operands", -1;
  const int64_t* strides[3] = {o.strides, o.strides, o.strides};
  for (int k = 0; k < nops; ++k) {
    if (n.t[k].ndim != o.ndim) return why = "operands must have the output's sizes", -1;
    strides[k] = n.t[k].strides;
    p.addr[k] = n.t[k].addr;
    p.dt[k] = uint32_t(n.t[k].dtype);
  }
  int64_t sz[kMaxDims], st[3][kMaxDims];
  const int nd = coalesce(o.ndim, o.sizes, strides, nops, RNG_MAX_DIMS, sz, st);
  if (nd < 0) return why = "more than 8 dims after coalescing", -1;
  bool dense = nd <= 1;
  for (int k = 0; k < nops && dense; ++k) dense = nd == 0 || st[k][0] == 1;
  p.ndim = uint32_t(nd);
  for (int d = 0; d < nd; ++d) {
    p.size[d] = sz[d];
    for (int k = 0; k < nops; ++k) p.st[k * RNG_MAX_DIMS + d] = st[k][d];
  }
  // Blocks of 4 elements where every operand is dense and aligned for them.
  bool block4 = dense;
  for (int k = 0; k < nops && block4; ++k) block4 = n.t[k].addr % block4_align(n.t[k].dtype) == 0;
  p.flags = (dense ? RNG_CONTIGUOUS : 0u) | (block4 ? RNG_BLOCK4 : 0u) | (n.nin ? RNG_HAS_IN : 0u);
  p.numel = uint64_t(numel);
  p.seed = g.seed;
  p.offset = g.offset;
  const Compute c = compute_of(n.compute);
  p.a = raw_scalar(g.a, c);
  p.b = raw_scalar(g.b, c);
  p.c = raw_scalar(g.c, c);
  const uint64_t items = block4 ? (uint64_t(numel) + 3) / 4 : uint64_t(numel);
  if (!grid2((items + kGroup - 1) / kGroup, lim, out[0])) return why = "too many groups", -1;
  put_params(out[0], p, offsetof(pc::RngPc, params));
  pc::RngPc pcb{};
  put(out[0], pcb);
  return 1;
}

}  // namespace vkml::vk
