// The elementwise family -> shaders/elementwise.comp: one dispatch of at most 4 (merged) dims.
#include <string>

#include "backend/vulkan/lower.h"
#include "params.h"

namespace vkml::vk {
namespace {

// The shader variant: the compute dtype's, except that float64 storage must work without
// shaderFloat64 (printing runs .to(float64)): same-dtype copies move raw bits, float <-> f64 is
// exact in software in the f32 variant, and integer <-> f64 in the i64 variant.
Compute compute_for(const Node& n, const Limits& lim) {
  const Compute c = compute_of(n.compute);
  if (n.op == OpId::copy && c == Compute::f64 && !lim.float64) {
    DType other = n.t[0].dtype == DType::f64 ? n.t[1].dtype : n.t[0].dtype;
    return is_float(other) ? Compute::f32 : Compute::i64;
  }
  return c;
}

// The contiguous fast path of elementwise.comp (EW_VEC): every tensor operand dense in the output's
// order (stride 1 after merging) or a single value broadcast (stride 0), and every dense base
// aligned for the shader's 4-element blocks (min(4 * size, 16) bytes: views such as x[1:] are not).
// Returns EW_VEC | EW_BCAST_* flags, or 0 for the strided path.
constexpr uint64_t kVecPerGroup = 128 * 4 * 2;  // invocations x block x blocks (kBlocks in the shader)
uint32_t fast_path_flags(int nd, const int64_t (*st)[kMaxDims], const TensorDesc* const* ops) {
  if (nd > 1) return 0;
  uint32_t flags = EW_VEC;
  for (int k = 0, slot = 0; k < 3; ++k) {
    if (!ops[k]) continue;
    const int64_t s = nd == 0 ? 1 : st[slot++][0];
    const uint64_t align = block4_align(ops[k]->dtype);
    if (s == 0 && k > 0) {  // one value: loaded on its own, any alignment
      flags |= k == 1 ? EW_BCAST_A : EW_BCAST_B;
      continue;
    }
    if (s != 1 || ops[k]->addr % align != 0) return 0;
  }
  return flags;
}

}  // namespace

// Whether this refuses a node is remembered at record time by what it reads (EwKey in lower.cpp):
// a new refusal that depends on anything else must be added there.
int lower_elementwise(const Node& n, const Limits& lim, Dispatch* out, std::string& why) {
  using A = ElementwiseArgs;
  const A& args = n.as<A>();
  const Compute c = compute_for(n, lim);
  if (!set_shader(out[0], "elementwise", c, lim, why)) return -1;
  const TensorDesc& o = n.t[A::out];
  const bool has_a = n.nin >= 1;
  const bool scalar_b = args.scalar_b;
  const bool has_b = n.nin >= 2 && !scalar_b;
  const TensorDesc* ops[3] = {&o, has_a ? &n.t[A::a] : nullptr, has_b ? &n.t[A::b] : nullptr};
  const int64_t* strides[3];
  int nops = 0;
  for (auto* t : ops) {
    if (!t) continue;
    if (t->ndim != o.ndim) return why = "operands differ in rank from the output", -1;
    strides[nops++] = t->strides;
  }
  int64_t sz[kMaxDims], st[3][kMaxDims];
  int nd = coalesce(o.ndim, o.sizes, strides, nops, 4, sz, st);
  if (nd < 0) return why = "more than 4 dims after merging dense ones", -1;
  int64_t numel = o.numel();
  if (numel > int64_t(UINT32_MAX)) return why = "more than 2^32-1 elements", -1;
  if (numel == 0) return 0;

  pc::EwParams p{};
  p.dst = o.addr;
  p.a = has_a ? n.t[A::a].addr : 0;
  p.b = has_b ? n.t[A::b].addr : 0;
  p.numel = uint32_t(numel);
  uint32_t dt[3] = {uint32_t(o.dtype), has_a ? uint32_t(n.t[A::a].dtype) : 0, has_b ? uint32_t(n.t[A::b].dtype) : 0};
  p.dtypes = dt[0] | dt[1] << 8 | dt[2] << 16 | uint32_t(n.compute) << 24;  // compute dtype last
  p.ndim = uint32_t(nd);
  bool contiguous = nd <= 1;
  for (int k = 0; k < nops && nd == 1; ++k) contiguous = contiguous && st[k][0] == 1;
  const uint32_t vec = fast_path_flags(nd, st, ops);
  for (int k = 0, slot = 0; k < 3; ++k) {
    if (!ops[k]) continue;
    int64_t esz = int64_t(dtype_size(ops[k]->dtype)), span = 0;
    int32_t* dst = k == 0 ? p.st_out : k == 1 ? p.st_a : p.st_b;
    for (int d = 0; d < nd; ++d) {
      int64_t s = st[slot][d] * esz;  // bytes
      span += (sz[d] - 1) * (s < 0 ? -s : s);
      dst[nd - 1 - d] = int32_t(s);
    }
    // the contiguous and fast paths index in 64 bits; the strided one in 32
    if (!contiguous && !vec && !fits_i32(span)) return why = "byte offsets do not fit 32 bits", -1;
    ++slot;
  }
  for (int d = 0; d < nd; ++d) p.shape[nd - 1 - d] = int32_t(sz[d]);
  p.flags = (scalar_b ? EW_SCALAR_B : 0u) | (contiguous ? EW_CONTIGUOUS : 0u);
  p.alpha = raw_scalar(args.s0, c);
  p.bscalar = raw_scalar(args.s1, c);
  uint64_t groups = (uint64_t(numel) + kGroup - 1) / kGroup;
  if (vec) {
    p.flags |= vec;
    groups = (uint64_t(numel) + kVecPerGroup - 1) / kVecPerGroup;
  }
  if (!grid2(groups, lim, out[0])) return why = "too many groups", -1;
  put(out[0], p);
  // The dtypes, the path and which operands exist as constants of the pipeline (elementwise.comp's
  // SPEC_*): the driver folds every dtype switch and the path choice.
  if (!spec_dtypes(out, 1, lim, p.dtypes) || !out[0].nspec) return 1;
  out[0].spec[1] = p.flags;
  out[0].spec[2] = (p.a ? 1u : 0u) | (p.b ? 2u : 0u);
  out[0].nspec = 3;
  return 1;
}


}  // namespace vkml::vk
