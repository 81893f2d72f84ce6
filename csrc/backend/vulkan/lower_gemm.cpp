// The gemm family -> one of its pipelines (docs/performance.md): shaders/gemm_gemv.comp for
// m == 1 or n == 1, gemm.comp (32x32 tiles) for small outputs, gemm_large.comp (128x64 tiles) for
// large ones, gemm_coop.comp / gemm_coop_bf16.comp (cooperative matrix) for float16 / bfloat16
// where the device has it; a long K over few outputs is split (graph/families/gemm.h) and summed
// in order by a second dispatch.
#include <string>

#include "backend/vulkan/lower.h"
#include "op_codes.h"
#include "params.h"

namespace vkml::vk {
namespace {
// shaders/gemm_common.glsl: pc.parts holds the chunk count, and layout flags above it.
constexpr uint32_t kPartsMask = 0xfffff, kFlagShift = 20;
constexpr uint32_t GEMM_A_K = 1, GEMM_A_M = 2, GEMM_B_N = 4, GEMM_B_K = 8, GEMM_GEMV_COLS = 16;

struct Tile {
  uint32_t bm, bn;
  const char* shader;
};
constexpr Tile kTiles[] = {{0, 0, ""}, {32, 32, "gemm"}, {128, 64, "gemm_large"}, {128, 128, "gemm_coop"}};  // by GemmPipe

constexpr uint32_t kCoopShared = 24576;  // shaders/gemm_coop.comp: two 10 KiB slices + 4 KiB staging
constexpr uint32_t kCoopWgShared = 20480;  // gemm_coop_wg.comp: two 10 KiB slices

// The subgroup-scope coopmat kernel for float16 (bfloat16) operands on this device, or nullptr:
// where there is one the large tile runs as coopmat (pick()).
const char* coop_sg_shader(const Limits& lim, DType da, DType db) {
  if (lim.max_shared_memory < kCoopShared) return nullptr;
  if (da == DType::f16 && db == DType::f16 && lim.cooperative_matrix) return "gemm_coop";
  if (da == DType::bf16 && db == DType::bf16 && lim.cooperative_matrix_bf16) return "gemm_coop_bf16";
  return nullptr;
}

// The workgroup-scope kernel where the device has it and the product is one it runs
// (shaders/gemm_coop.glsl: whole 128x128 tiles stored straight to C as matrices): a C of the
// operands' dtype with contiguous rows, 16-byte aligned rows and layers, alpha 1, no bias, K in
// one part; and every k slice of A and B in a fast layout (aligned, a contiguous dimension,
// K % 32 == 0), the only loads it has. Else nullptr (and the subgroup-scope kernel runs it).
// VKML_GEMM_PIPE=coopmat_sg keeps to the subgroup-scope kernels. The tile is rounded to the
// output dtype by the matrix conversion, whose rounding SPIR-V leaves to the driver. NVIDIA's
// rounds float32 to float16 to nearest even, as torch does (test_gemm.py's rounding cases), but
// truncates to bfloat16 (docs/performance.md, fourteenth session): so gemm_coop_wg_bf16 rounds
// each element of the float32 tile to nearest even at bfloat16 precision first (per-element
// operations, scripts/spv_khr.py rne), and takes bfloat16 only where the device has those
// (Limits::cooperative_matrix_wg_bf16).
const char* coop_wg_shader(const Limits& lim, const pc::GemmParams& p, DType dc, DType da, DType db,
                           const GemmArgs& args, bool has_bias, int64_t parts, uint32_t flags) {
  if (lim.max_shared_memory < kCoopWgShared + lim.cooperative_matrix_wg_reserved ||
      gemm_forced() == GemmForce::coopmat_sg)
    return nullptr;
  const char* s = nullptr;
  if (da == DType::f16 && db == DType::f16 && lim.cooperative_matrix_wg) s = "gemm_coop_wg";
  if (da == DType::bf16 && db == DType::bf16 && lim.cooperative_matrix_wg_bf16) s = "gemm_coop_wg_bf16";
  const bool plain = dc == da && args.alpha.f == 1.0 && !has_bias && parts == 1;
  const bool whole = p.M % 128 == 0 && p.N % 128 == 0;
  const bool rows = p.sc[2] == 1 && p.sc[1] % 8 == 0 && p.sc[0] % 8 == 0 && p.c % 16 == 0;
  // every slice in a fast layout: the kernel has no other loads
  const bool fast = (flags & (GEMM_A_K | GEMM_A_M)) && (flags & (GEMM_B_N | GEMM_B_K)) && p.K % 32 == 0;
  return s && plain && whole && rows && fast ? s : nullptr;
}

// The pipeline the shape asked for, where the device can run it: the large tile runs as coopmat
// for float16 (bfloat16) operands where the device has cooperative matrices of them and the
// shared memory the kernel takes (coop_sg_shader), forced or not; so not under VKML_MIN_SPEC's
// 16 KiB. The other tiles fit the 16 KiB / 128-invocation floor.
GemmPipe pick(GemmPipe shape, const Limits& lim, Compute c, DType da, DType db, int64_t K) {
  const bool coop = c == Compute::f32 && coop_sg_shader(lim, da, db) != nullptr;
  const bool forced = gemm_forced() == GemmForce::coopmat || gemm_forced() == GemmForce::coopmat_sg;
  if (shape == GemmPipe::large && coop && (K >= 32 || forced)) return GemmPipe::coopmat;
  return shape;
}

// Flags for an operand [rows, cols] with element strides st (batch, rows, cols) whose tile loads
// can read `vec` elements at once along the contiguous dimension: that stride 1, the other
// strides multiples of vec, the address aligned to vec * esize. f_cols: the flag for a stride-1
// column dimension (A's k, B's n), f_rows for a stride-1 row dimension (A's m, B's k).
uint32_t layout_flags(uint64_t addr, const int32_t st[3], int vec, int esize, uint32_t f_cols, uint32_t f_rows) {
  if (addr % uint64_t(vec * esize) != 0 || st[0] % vec != 0) return 0;
  if (st[2] == 1 && st[1] % vec == 0) return f_cols;
  if (st[1] == 1 && st[2] % vec == 0) return f_rows;
  return 0;
}

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
  const DType da = n.t[A::a].dtype, db = n.t[A::b].dtype;
  p.dtypes = uint32_t(n.t[A::c].dtype) | uint32_t(da) << 8 | uint32_t(db) << 16 |
             (has_bias ? uint32_t(n.t[A::bias].dtype) << 24 : 0u);
  p.alpha = raw_scalar(args.alpha, c);
  p.beta = raw_scalar(args.beta, c);
  const int64_t parts = gemm_parts(B, M, N, K, lim.max_loop_trips);  // as aten sized the scratch
  if (parts > int64_t(kPartsMask)) return why = "K is too long", -1;
  if (parts > 1) {
    p.partials = args.partials;
    if (!p.partials) return why = "a split K needs its scratch", -1;
  }
  const GemmPipe pipe = pick(gemm_shape_pipe(M, N), lim, c, da, db, K);
  uint32_t flags = 0;
  uint64_t groups = 0;
  const uint64_t layers = uint64_t(B) * uint64_t(parts);
  if (pipe == GemmPipe::gemv) {
    // consecutive outputs (n fastest, then m) contiguous in the matrix operand: column layout
    if ((N > 1 && p.sb[2] == 1) || (N == 1 && M > 1 && p.sa[1] == 1)) flags |= GEMM_GEMV_COLS;
    const uint64_t outs = flags & GEMM_GEMV_COLS ? 32 : 4;
    groups = (layers * uint64_t(M) * uint64_t(N) + outs - 1) / outs;
    if (!set_shader(out[0], "gemm_gemv", c, lim, why)) return -1;
  } else {
    const Tile t = kTiles[int(pipe)];
    // Whole aligned words along a contiguous dimension (the shaders' fast loads): 4 elements of
    // float32 (16 bytes) or float16 / bfloat16 (8 bytes) for the large tile, 16-byte units of 8
    // halves for coopmat.
    if (pipe == GemmPipe::large && c == Compute::f32) {
      auto vec4_size = [](DType d) { return d == DType::f32 ? 4 : d == DType::f16 || d == DType::bf16 ? 2 : 0; };
      if (const int e = vec4_size(da)) flags |= layout_flags(p.a, p.sa, 4, e, GEMM_A_K, GEMM_A_M);
      if (const int e = vec4_size(db)) flags |= layout_flags(p.b, p.sb, 4, e, GEMM_B_N, GEMM_B_K);
    } else if (pipe == GemmPipe::coopmat) {
      flags |= layout_flags(p.a, p.sa, 8, 2, GEMM_A_K, GEMM_A_M);
      flags |= layout_flags(p.b, p.sb, 8, 2, GEMM_B_N, GEMM_B_K);
    }
    groups = ((uint64_t(N) + t.bn - 1) / t.bn) * ((uint64_t(M) + t.bm - 1) / t.bm) * layers;
    const char* shader = t.shader;
    if (pipe == GemmPipe::coopmat) {
      shader = coop_wg_shader(lim, p, n.t[A::c].dtype, da, db, args, has_bias, parts, flags);
      if (!shader) shader = coop_sg_shader(lim, da, db);
    }
    if (!set_shader(out[0], shader, c, lim, why)) return -1;
  }
  p.parts = uint32_t(parts) | flags << kFlagShift;
  if (!grid2(groups, lim, out[0])) return why = "too many groups", -1;
  put(out[0], p);
  if (parts > 1) {
    // Then one invocation per output sums its chunks in order (shaders/gemm.comp OP_GEMM_SUM).
    if (!set_shader(out[1], "gemm", c, lim, why)) return -1;
    out[1].opcode = OP_GEMM_SUM;
    if (!grid2((uint64_t(B) * uint64_t(M) * uint64_t(N) + kGroup - 1) / kGroup, lim, out[1]))
      return why = "too many groups", -1;
    put(out[1], p);
  }
  const int count = spec_dtypes(out, parts > 1 ? 2 : 1, lim, p.dtypes);
  // Wherever coopmat's constant 1 is set, its layout flags are constant 2 (shaders/gemm_coop.glsl
  // SPEC_GEMM_FLAGS): a specialized coopmat pipeline without them reads flags 0, every slice
  // element by element (right, but slow).
  if (pipe == GemmPipe::coopmat && out[0].nspec == 1) out[0].spec[1] = flags, out[0].nspec = 2;
  return count;
}


}  // namespace vkml::vk
