// The norm family -> shaders/norm.comp: one workgroup per statistics group (dispatch 0), and for
// the per-sample backward a second dispatch with one workgroup per channel for dw / db. The
// operands' addresses, strides and dtypes go in a parameter block (shaders/norm.h).
#include <algorithm>
#include <bit>
#include <cstddef>
#include <string>

#include "backend/vulkan/lower.h"
#include "norm.h"
#include "op_codes.h"

namespace vkml::vk {
namespace {

// The [A, C, S] operands: x and y forward; dx, dy and x backward. The others are 1-D.
bool is3(const NormArgs& a, int k) {
  if (a.backward) return k == NormArgs::dx || k == NormArgs::dy || k == NormArgs::bx;
  return k == NormArgs::y || k == NormArgs::x;
}

constexpr uint64_t kMaxGroupTerms = uint64_t(kGroup) * ((1u << 20) - 1);  // the shader's pairwise levels

bool fill(const Node& n, pc::NormParams& p, std::string& why) {
  const NormArgs& a = n.as<NormArgs>();
  const int x = a.backward ? int(NormArgs::bx) : int(NormArgs::x);
  const TensorDesc& xd = n.t[x];
  if (xd.ndim != 3) return why = "the input must be an [A, C, S] view", false;
  for (int d = 0; d < 3; ++d)
    if (xd.sizes[d] > int64_t(UINT32_MAX)) return why = "a dimension exceeds 2^32", false;
  p.A = uint32_t(xd.sizes[0]);
  p.C = uint32_t(xd.sizes[1]);
  p.S = uint32_t(xd.sizes[2]);
  if (a.groups < 1 || xd.sizes[1] % a.groups != 0) return why = "bad group count", false;
  p.G = uint32_t(a.groups);
  const int nt = n.nout + n.nin;
  if (nt > NORM_SLOTS) return why = "too many operands", false;
  for (int k = 0; k < nt; ++k) {
    const TensorDesc& t = n.t[k];
    p.t[k] = t.addr;
    p.dt[k] = uint32_t(t.dtype);
    if (!t.addr) continue;
    if (t.ndim != (is3(a, k) ? 3 : 1)) return why = "operand " + std::to_string(k) + " has an unexpected shape", false;
    if (is3(a, k)) {
      for (int d = 0; d < 3; ++d) {
        if (t.sizes[d] != xd.sizes[d]) return why = "operand sizes differ from the input's", false;
        p.st[3 * k + d] = t.strides[d];
      }
    } else {
      const bool per_group = a.backward ? (k == NormArgs::bmean || k == NormArgs::bstat)
                                        : (k == NormArgs::mean || k == NormArgs::rstd);
      const uint64_t want = per_group && !a.per_channel ? uint64_t(p.A) * p.G : p.C;
      if (uint64_t(t.sizes[0]) != want) return why = "operand " + std::to_string(k) + " has the wrong length", false;
      p.st[3 * k] = t.strides[0];
    }
  }
  p.flags = (a.per_channel ? NORM_PER_CHANNEL : 0u) | (a.training ? NORM_TRAINING : 0u) |
            (a.var_given ? NORM_VAR_GIVEN : 0u) | (a.backward ? NORM_BACKWARD : 0u) | (a.layer ? NORM_LAYER : 0u);
  p.eps = raw_scalar(Scalar{a.eps, 0}, compute_of(n.compute));
  p.momentum = raw_scalar(Scalar{a.momentum, 0}, compute_of(n.compute));
  const uint64_t per_sample = uint64_t(p.C / p.G) * p.S, per_channel = uint64_t(p.A) * p.S;
  const uint64_t terms = a.per_channel ? per_channel : per_sample;
  if (terms > kMaxGroupTerms || per_channel > kMaxGroupTerms || uint64_t(p.A) * p.G > UINT32_MAX)
    return why = "a normalization group exceeds " + std::to_string(kMaxGroupTerms) + " elements", false;
  return true;
}

bool emit(Dispatch& d, const pc::NormParams& p, uint64_t groups, int32_t opcode, const Node& n, const Limits& lim,
          std::string& why) {
  if (!set_shader(d, "norm", compute_of(n.compute), lim, why)) return false;
  if (!grid2(groups, lim, d)) return why = "too many groups", false;
  d.opcode = opcode;
  put(d, pc::NormPc{});
  put_params(d, p, offsetof(pc::NormPc, params));
  return true;
}

}  // namespace

int lower_norm(const Node& n, const Limits& lim, Dispatch* out, std::string& why) {
  pc::NormParams p{};
  if (!fill(n, p, why)) return -1;
  const NormArgs& a = n.as<NormArgs>();
  if (uint64_t(p.A) * p.C * p.S == 0) return 0;
  const uint64_t stat_groups = a.per_channel ? p.C : uint64_t(p.A) * p.G;
  int count = 0;
  // Group norm's backward with non-finite sums takes torch's forms: dw per sample (an invocation
  // loops over a sample's S elements, ceil(A / 128) samples each), dx from per-channel sums (K
  // reductions over S per workgroup). Each only where its loop fits a loop-limited driver
  // (lavapipe); past it the flat sums stay (docs/normalization.md, Limits).
  if (a.backward && !a.per_channel && !a.layer) {
    const auto fits = [&](uint64_t trips) { return !lim.max_loop_trips || trips + 64 <= lim.max_loop_trips; };
    if (fits((uint64_t(p.A) + 127) / 128 * (uint64_t(p.S) + 1))) p.flags |= NORM_TORCH_DW;
    if (fits(uint64_t(p.C / p.G) * ((uint64_t(p.S) + 127) / 128 + 16))) p.flags |= NORM_TORCH_DX;
  }
  const bool stats_pass = !a.backward || a.per_channel || p.t[NormArgs::dx];
  if (stats_pass && !emit(out[count++], p, stat_groups, kRowOpcode, n, lim, why)) return -1;
  if (a.backward && !a.per_channel && (p.t[NormArgs::dw] || p.t[NormArgs::db]) &&
      !emit(out[count++], p, p.C, OP_NORM_BWD_AFFINE, n, lim, why))
    return -1;
  // norm.comp's specialization constant 1: slots 0-7's dtypes, 4 bits each
  uint32_t dtypes = 0;
  for (int k = 0; k < 8; ++k) {
    if (p.dt[k] > 15u) return count;  // no 4-bit code: the generic pipeline
    dtypes |= p.dt[k] << (4 * k);
  }
  spec_dtypes(out, count, lim, dtypes);
  // Constants 2 and 3 beside it: the forward's cache trips (the power of two from 1 to 8 that
  // holds a group of R; larger groups are not cached) and the counter's levels, one more than the
  // bits of the most terms an invocation pushes (any path pushes at most one per element it
  // visits, ceil(R / 128), e.g. group norm's torch-order dx and dw).
  for (int k = 0; k < count; ++k) {
    if (out[k].nspec != 1) continue;
    const uint64_t R = out[k].opcode == OP_NORM_BWD_AFFINE || a.per_channel ? uint64_t(p.A) * p.S
                                                                           : uint64_t(p.C / p.G) * p.S;
    out[k].spec[1] = uint32_t(std::min<uint64_t>(8, std::bit_ceil((R + 511) / 512)));
    out[k].spec[2] = std::min(uint32_t(std::bit_width((R + 127) / 128)) + 1, 20u);
    out[k].nspec = 3;
  }
  return count;
}

}  // namespace vkml::vk
