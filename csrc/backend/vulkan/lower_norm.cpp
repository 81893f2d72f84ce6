// The norm family -> shaders/norm.comp: the statistics groups (dispatch 0), and for the
// per-sample backward a second dispatch with one workgroup per channel for dw / db. A group has
// 128 lanes (a workgroup), but layer norm's rows take fewer, about 16 elements each, and share
// workgroups (norm_lanes; their trees: shaders/lanes.glsl). The operands' addresses, strides and
// dtypes go in a parameter block (shaders/norm.h).
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
  // Rows addressing (norm.comp set_rows): a group is one sample's channels, and every step from
  // one element to the next (a channel stride, or a 1-D operand's stride) fits 31 bits in bytes.
  bool rows = !a.per_channel && p.S == 1;
  for (int k = 0; k < nt && rows; ++k) {
    const TensorDesc& t = n.t[k];
    if (!t.addr) continue;
    const int64_t step = t.strides[is3(a, k) ? 1 : 0] * int64_t(dtype_size(t.dtype));
    rows = step > -(int64_t(1) << 31) && step < (int64_t(1) << 31);
  }
  if (rows) p.flags |= NORM_ROWS;
  p.eps = raw_scalar(Scalar{a.eps, 0}, compute_of(n.compute));
  p.momentum = raw_scalar(Scalar{a.momentum, 0}, compute_of(n.compute));
  const uint64_t per_sample = uint64_t(p.C / p.G) * p.S, per_channel = uint64_t(p.A) * p.S;
  const uint64_t terms = a.per_channel ? per_channel : per_sample;
  if (terms > kMaxGroupTerms || per_channel > kMaxGroupTerms || uint64_t(p.A) * p.G > UINT32_MAX)
    return why = "a normalization group exceeds " + std::to_string(kMaxGroupTerms) + " elements", false;
  return true;
}

// Lanes of a statistics group: 128 (a workgroup), but for layer norm's rows and batch norm's
// channels the power of two that gives about 16 elements each (a row of 512: 32 lanes, 4 rows a
// workgroup; on the H100, 4096 rows of 512 took 28 us with a row a workgroup, 24 us so, against
// CUDA's 11; a BatchNorm1d channel of a batch of 64: 4 lanes, 32 channels a workgroup).
// Group norm keeps 128: its non-finite backward forms are sized for a loop-limited driver
// (lower_norm's fits) with 128 lanes.
uint32_t norm_lanes(const NormArgs& a, uint64_t R) {
  if (!a.layer && !a.per_channel) return 128;
  return row_lanes(R, 16);
}

bool emit(Dispatch& d, pc::NormParams& p, uint64_t groups, int32_t opcode, uint32_t lanes, const Node& n,
          const Limits& lim, std::string& why) {
  if (!set_shader(d, "norm", compute_of(n.compute), lim, why)) return false;
  p.lanes = lanes;
  const uint64_t per_wg = 128 / lanes;
  if (!grid2((groups + per_wg - 1) / per_wg, lim, d)) return why = "too many groups", false;
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
  const uint64_t group_terms = a.per_channel ? uint64_t(p.A) * p.S : uint64_t(p.C / p.G) * p.S;
  const uint32_t lanes = norm_lanes(a, group_terms);
  if (stats_pass && !emit(out[count++], p, stat_groups, kRowOpcode, lanes, n, lim, why)) return -1;
  if (a.backward && !a.per_channel && (p.t[NormArgs::dw] || p.t[NormArgs::db]) &&
      !emit(out[count++], p, p.C, OP_NORM_BWD_AFFINE, 128, n, lim, why))
    return -1;
  // norm.comp's specialization constant 1: slots 0-7's dtypes, 4 bits each
  uint32_t dtypes = 0;
  for (int k = 0; k < 8; ++k) {
    if (p.dt[k] > 15u) return count;  // no 4-bit code: the generic pipeline
    dtypes |= p.dt[k] << (4 * k);
  }
  spec_dtypes(out, count, lim, dtypes);
  // Constants 2, 3 and 4 beside it: the forward's cache trips (the power of two from 1 to 8 that
  // holds a group of R, 4 elements a lane a trip; larger groups are not cached), the counter's
  // levels, one more than the bits of the most terms an invocation pushes (any path pushes at
  // most one per element it visits, ceil(R / lanes), e.g. group norm's torch-order dx and dw),
  // and the lanes.
  for (int k = 0; k < count; ++k) {
    if (out[k].nspec != 1) continue;
    const bool affine = out[k].opcode == OP_NORM_BWD_AFFINE;
    const uint64_t R = affine ? uint64_t(p.A) * p.S : group_terms, L = affine ? 128 : lanes;
    out[k].spec[1] = uint32_t(std::min<uint64_t>(8, std::bit_ceil((R + 4 * L - 1) / (4 * L))));
    out[k].spec[2] = std::min(uint32_t(std::bit_width((R + L - 1) / L)) + 1, 20u);
    out[k].spec[3] = uint32_t(L);
    out[k].nspec = 4;
  }
  return count;
}

}  // namespace vkml::vk
