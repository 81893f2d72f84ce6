// The reduce family -> shaders/reduce.comp: kept dims and reduced dims, each merged to at most 4.
#include <string>

#include "backend/vulkan/lower.h"
#include "params.h"

namespace vkml::vk {

int lower_reduce(const Node& n, const Limits& lim, Dispatch* out, std::string& why) {
  if (!set_shader(out[0], "reduce", compute_of(n.compute), lim, why)) return -1;
  const TensorDesc& o = n.t[ReduceArgs::out];
  const TensorDesc& in = n.t[ReduceArgs::in];
  const int kept = n.as<ReduceArgs>().kept;
  if (kept < 0 || kept > in.ndim) return why = "bad kept-dim count", -1;
  const int64_t* ks[1] = {in.strides};
  const int64_t* rs[1] = {in.strides + kept};
  int64_t ksz[kMaxDims], kst[1][kMaxDims], rsz[kMaxDims], rst[1][kMaxDims];
  int nk = coalesce(kept, in.sizes, ks, 1, 4, ksz, kst);
  int nr = coalesce(in.ndim - kept, in.sizes + kept, rs, 1, 4, rsz, rst);
  if (nk < 0 || nr < 0) return why = "more than 4 kept or 4 reduced dims after merging", -1;
  int64_t n_out = 1, n_red = 1;
  for (int d = 0; d < kept; ++d) n_out *= in.sizes[d];
  for (int d = kept; d < in.ndim; ++d) n_red *= in.sizes[d];
  // (a row index plus 4095 stays inside 32 bits: reduce.comp steps by 4096 from multiples of 65536)
  if (n_out > int64_t(UINT32_MAX) || n_red > int64_t(UINT32_MAX) - 2048) return why = "more than 2^32-2049 elements", -1;
  if (n_out == 0) return 0;
  pc::ReduceParams p{};
  p.dst = o.addr;
  p.src = in.addr;
  p.dtypes = uint32_t(o.dtype) | uint32_t(in.dtype) << 8;
  p.n_out = uint32_t(n_out);
  p.n_red = uint32_t(n_red);
  p.ndims = uint32_t(nk) | uint32_t(nr) << 8;
  for (int d = 0; d < nk; ++d) {
    if (!fits_i32(kst[0][d])) return why = "a stride does not fit 32 bits", -1;
    p.kshape[nk - 1 - d] = int32_t(ksz[d]);
    p.kstride[nk - 1 - d] = int32_t(kst[0][d]);
  }
  for (int d = 0; d < nr; ++d) {
    if (!fits_i32(rst[0][d])) return why = "a stride does not fit 32 bits", -1;
    p.rshape[nr - 1 - d] = int32_t(rsz[d]);
    p.rstride[nr - 1 - d] = int32_t(rst[0][d]);
  }
  // The dense fast path: one reduced dim of stride 1 and every row's start aligned for the
  // shader's 4-element loads (min(4 * size, 16) bytes; chunk starts are multiples of kMinChunk, 4096).
  const uint64_t esz = dtype_size(in.dtype), align = block4_align(in.dtype);
  bool dense = nr == 1 && rst[0][0] == 1 && in.addr % align == 0;
  for (int d = 0; d < nk && dense; ++d) dense = (uint64_t(kst[0][d]) * esz) % align == 0;
  p.flags = dense ? REDUCE_DENSE : 0u;
  const ReduceSplit split = reduce_split(in, kept);
  const uint64_t out_groups = (uint64_t(n_out) + kGroup - 1) / kGroup;  // one invocation per output
  if (split.parts > 1) {  // two passes: chunks to partials, then partials to out (reduce.h)
    const uint64_t partials = n.as<ReduceArgs>().partials;
    if (!partials) return why = "a reduction in two passes needs its scratch", -1;
    p.partials = partials;
    p.parts = uint32_t(split.parts);
    p.rows = uint32_t(split.rows ? split.rows : split.chunk);
    if (split.rows) p.flags |= REDUCE_COLUMN;
    p.pass = 1;
    // column mode: an invocation per output (and chunk, in pass 1); row mode: a group per output
    const uint64_t per_pass2 = split.rows ? out_groups : uint64_t(n_out);
    if (!grid2(per_pass2 * uint64_t(split.parts), lim, out[0])) return why = "too many groups", -1;
    put(out[0], p);
    p.pass = 2;
    if (!grid2(per_pass2, lim, out[1])) return why = "too many groups", -1;
    put(out[1], p);
    return spec_dtypes(out, 2, lim, p.dtypes);
  }
  // The shader runs one invocation per output exactly when the grid has fewer groups than outputs:
  // for short rows, and for strided ones short enough for one chunk (column mode, one pass).
  const bool per_output = (n_red <= kShortRow || split.rows) && n_out > 1;
  // Rows of up to 1,024 share workgroups (REDUCE_LANES): the power of two that gives about 16
  // elements a lane, 128 / lanes rows a workgroup (rows of 128: 8 lanes, 16 rows a workgroup),
  // as softmax and layer norm do; a workgroup a row left most of its invocations idle.
  const uint64_t lanes = per_output || n_out <= 1 ? 128 : row_lanes(uint64_t(n_red), 16);
  if (lanes < 128) {
    p.flags |= REDUCE_LANES;
    p.rows = uint32_t(lanes);
  }
  const uint64_t groups = per_output ? out_groups : (uint64_t(n_out) + 128 / lanes - 1) / (128 / lanes);
  if (!grid2(groups, lim, out[0])) return why = "too many groups", -1;
  put(out[0], p);
  return spec_dtypes(out, 1, lim, p.dtypes);
}


}  // namespace vkml::vk
