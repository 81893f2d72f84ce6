// The softmax family -> shaders/softmax.comp: rows of an [outer, D, inner] view, each on `lanes`
// invocations of a 128-wide workgroup.
#include <algorithm>
#include <bit>
#include <string>

#include "backend/vulkan/lower.h"
#include "params.h"

namespace vkml::vk {

// Invocations per row: about 4 elements each, a power of two from 1 to 128. A row of 128 (an
// attention row) takes 32, so a workgroup does 4 rows; the shader's register cache holds up to
// 32 elements a lane, so every row up to 4,096 is read once.
static uint32_t softmax_lanes(uint32_t D) { return row_lanes(D, 4); }

// softmax.comp's specialization constants 2 and 3, beside the dtypes (constant 1) where those are
// set: the lanes, and the register cache's elements per lane (the power of two from 4 to 32 that
// holds a row of D; longer rows are not cached).
static int spec_lanes(Dispatch* out, int count, uint32_t lanes, uint32_t D) {
  const uint32_t nk = std::clamp<uint32_t>(std::bit_ceil((D + lanes - 1) / lanes), 4, 32);
  for (int k = 0; k < count; ++k)
    if (out[k].nspec == 1) out[k].spec[1] = lanes, out[k].spec[2] = nk, out[k].nspec = 3;
  return count;
}

int lower_softmax(const Node& n, const Limits& lim, Dispatch* out, std::string& why) {
  if (!set_shader(out[0], "softmax", compute_of(n.compute), lim, why)) return -1;
  const bool bwd = n.as<SoftmaxArgs>().backward;
  int nt = bwd ? 3 : 2;
  for (int k = 0; k < nt; ++k)
    if (n.t[k].ndim != 3) return why = "operands must be [outer, D, inner] views", -1;
  const TensorDesc& o = n.t[SoftmaxArgs::out];
  uint64_t rows = uint64_t(o.sizes[0]) * uint64_t(o.sizes[2]);
  if (o.sizes[0] > INT32_MAX || o.sizes[1] > INT32_MAX || o.sizes[2] > INT32_MAX)
    return why = "a dimension exceeds 2^31", -1;
  if (rows == 0 || o.sizes[1] == 0) return 0;
  pc::SoftmaxParams p{};
  p.t0 = o.addr;
  p.t1 = n.t[SoftmaxArgs::in].addr;
  p.t2 = bwd ? n.t[SoftmaxArgs::fwd_out].addr : 0;
  p.outer = uint32_t(o.sizes[0]);
  p.D = uint32_t(o.sizes[1]);
  p.inner = uint32_t(o.sizes[2]);
  p.dtypes = uint32_t(o.dtype) | uint32_t(n.t[1].dtype) << 8 | (bwd ? uint32_t(n.t[2].dtype) << 16 : 0u);
  int32_t* dst[3] = {p.s0, p.s1, p.s2};
  for (int k = 0; k < nt; ++k)
    for (int d = 0; d < 3; ++d) {
      if (!fits_i32(n.t[k].strides[d])) return why = "a stride does not fit 32 bits", -1;
      dst[k][d] = int32_t(n.t[k].strides[d]);
    }
  const int64_t parts = softmax_parts(int64_t(p.D));
  if (parts > 1) {  // long rows: chunk partials, row totals, outputs (softmax.h)
    p.partials = n.as<SoftmaxArgs>().partials;
    if (!p.partials) return why = "rows over " + std::to_string(kSoftmaxChunk) + " elements need their scratch", -1;
    p.parts = uint32_t(parts);
    p.lanes = 128;
    for (uint32_t pass = 1; pass <= 3; ++pass) {
      Dispatch& d = out[pass - 1];
      p.pass = pass;
      if (!grid2(pass == 2 ? rows : rows * uint64_t(parts), lim, d)) return why = "too many groups", -1;
      put(d, p);
    }
    return spec_lanes(out, spec_dtypes(out, 3, lim, p.dtypes), 128, p.D);
  }
  p.lanes = softmax_lanes(p.D);
  const uint64_t per_group = 128 / p.lanes;
  if (!grid2((rows + per_group - 1) / per_group, lim, out[0])) return why = "too many groups", -1;
  put(out[0], p);
  return spec_lanes(out, spec_dtypes(out, 1, lim, p.dtypes), p.lanes, p.D);
}


}  // namespace vkml::vk
