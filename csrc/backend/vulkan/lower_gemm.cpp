// The gemm family -> shaders/gemm.comp: 32x32 output tiles, numbered over the grid.
#include <string>

#include "backend/vulkan/lower.h"
#include "op_codes.h"
#include "params.h"

namespace vkml::vk {
namespace {
constexpr uint32_t kGemmTile = 32;  // BM = BN in shaders/gemm.comp

// [B,M,N]-style view of a 2-D or 3-D operand: strides (batch, row, col), batch stride 0 for 2-D.
bool view3(const TensorDesc& t, int64_t sz[3], int64_t st[3]) {
  if (t.ndim < 2 || t.ndim > 3) return false;
  int off = 3 - t.ndim;
  sz[0] = 1;
  st[0] = 0;
  for (int d = 0; d < t.ndim; ++d) {
    sz[d + off] = t.sizes[d];
    st[d + off] = t.strides[d];
  }
  return true;
}

}  // namespace

int lower_gemm(const Node& n, const Limits& lim, Dispatch* out, std::string& why) {
  using A = GemmArgs;
  const A& args = n.as<A>();
  const Compute c = compute_of(n.compute);
  if (!set_shader(out[0], "gemm", c, lim, why)) return -1;
  int64_t cs[3], cst[3], as[3], ast[3], bs[3], bst[3];
  if (!view3(n.t[A::c], cs, cst) || !view3(n.t[A::a], as, ast) || !view3(n.t[A::b], bs, bst))
    return why = "operands must be 2-D or 3-D", -1;
  int64_t B = cs[0], M = cs[1], N = cs[2], K = as[2];
  if (as[1] != M || bs[2] != N || bs[1] != K || (as[0] != B && as[0] != 1) || (bs[0] != B && bs[0] != 1))
    return why = "operand shapes do not match", -1;
  if (B * M * N == 0) return 0;
  bool has_bias = n.t[A::bias].addr != 0 && args.beta.f != 0;  // beta == 0 ignores bias (NaN included)
  int64_t xst[3] = {0, 0, 0};
  if (has_bias) {  // broadcast to [B,M,N]: missing leading dims get stride 0
    const TensorDesc& x = n.t[A::bias];
    if (x.ndim > 3) return why = "bias has more than 3 dims", -1;
    for (int d = 0; d < x.ndim; ++d) {
      xst[3 - x.ndim + d] = x.sizes[d] == 1 ? 0 : x.strides[d];
    }
  }
  pc::GemmParams p{};
  p.c = n.t[A::c].addr;
  p.a = n.t[A::a].addr;
  p.b = n.t[A::b].addr;
  p.bias = has_bias ? n.t[A::bias].addr : 0;
  p.M = uint32_t(M);
  p.N = uint32_t(N);
  p.K = uint32_t(K);
  p.batch = uint32_t(B);
  for (int d = 0; d < 3; ++d) {
    int64_t v[4] = {cst[d], as[0] == 1 && d == 0 ? 0 : ast[d], bs[0] == 1 && d == 0 ? 0 : bst[d], xst[d]};
    for (int64_t s : v)
      if (!fits_i32(s)) return why = "a stride does not fit 32 bits", -1;
    p.sc[d] = int32_t(v[0]);
    p.sa[d] = int32_t(v[1]);
    p.sb[d] = int32_t(v[2]);
    p.sbias[d] = int32_t(v[3]);
  }
  if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX) return why = "a dimension exceeds 2^31", -1;
  p.dtypes = uint32_t(n.t[A::c].dtype) | uint32_t(n.t[A::a].dtype) << 8 | uint32_t(n.t[A::b].dtype) << 16 |
             (has_bias ? uint32_t(n.t[A::bias].dtype) << 24 : 0u);
  p.alpha = raw_scalar(args.alpha, c);
  p.beta = raw_scalar(args.beta, c);
  // One workgroup per 32x32 tile of each batch (and K chunk), numbered over a 2-D grid: any
  // M, N and batch fit the 65,535 groups per dimension.
  const int64_t parts = gemm_parts(K, lim.max_loop_trips);
  p.parts = uint32_t(parts);
  const uint64_t tiles = ((uint64_t(N) + kGemmTile - 1) / kGemmTile) * ((uint64_t(M) + kGemmTile - 1) / kGemmTile);
  if (!grid2(tiles * uint64_t(B) * uint64_t(parts), lim, out[0])) return why = "too many groups", -1;
  if (parts > 1) {
    p.partials = args.partials;
    if (!p.partials) return why = "a split K needs its scratch", -1;
    put(out[0], p);
    out[1].opcode = OP_GEMM_SUM;  // then one invocation per output sums its chunks
    if (!grid2((uint64_t(B) * uint64_t(M) * uint64_t(N) + kGroup - 1) / kGroup, lim, out[1]))
      return why = "too many groups", -1;
    put(out[1], p);
    return 2;
  }
  put(out[0], p);
  return 1;
}


}  // namespace vkml::vk
