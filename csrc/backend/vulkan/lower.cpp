// Graph node -> shader dispatches: picks the family's blob for the compute type, the opcode from
// the op table, and fills the family's push-constant block (shaders/params.h).
#include "backend/vulkan/lower.h"

#include <cstring>
#include <string>

#include "backend/vulkan/spirv.h"
#include "op_codes.h"
#include "params.h"
#include "util/env.h"

namespace vkml::vk {
namespace {

constexpr uint32_t kGroup = 128;    // local size of every shader
constexpr uint32_t kGemmTile = 32;  // BM = BN in shaders/gemm.comp
constexpr uint32_t kShortRow = 32;  // reduce: rows this short get one invocation per output

int32_t opcode_of(OpId id) {
  static const int32_t codes[] = {
#define OP(NAME, KIND, OPCODE, ...) OPCODE,
#include "graph/ops.def"
#undef OP
  };
  return codes[unsigned(id)];
}

const char* family_name(Family f) {
  switch (f) {
    case Family::elementwise: return "elementwise";
    case Family::reduce: return "reduce";
    case Family::gemm: return "gemm";
    case Family::softmax: return "softmax";
    case Family::nll: return "nll";
    case Family::transfer: return nullptr;
  }
  return nullptr;
}

const char* variant_name(Compute c) {
  return c == Compute::f64 ? "f64" : c == Compute::i64 ? "i64" : "f32";
}

uint64_t raw_scalar(const Scalar& s, Compute c) {
  if (c == Compute::i64) return uint64_t(s.i);
  if (c == Compute::f64) { uint64_t u; std::memcpy(&u, &s.f, 8); return u; }
  float f = float(s.f);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

bool fits_i32(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }

// The compute type a node's shader runs in (graph/node.h and the brief fix which operand decides).
Compute compute_for(const Node& n, const Limits& lim) {
  switch (op_info(n.op).kind) {
    case K_ARGREDUCE: return compute_of(n.t[1].dtype);
    case K_NLL: return compute_of(n.t[2].dtype);
    case K_COPY:
      // float64 storage must work without shaderFloat64 (printing runs .to(float64)): same-dtype
      // copies move raw bits, float <-> f64 is exact in software in the f32 variant, and
      // integer <-> f64 in the i64 variant.
      if (compute_of(DType(n.p[0])) == Compute::f64 && !lim.float64) {
        DType other = n.t[0].dtype == DType::f64 ? n.t[1].dtype : n.t[0].dtype;
        return is_float(other) ? Compute::f32 : Compute::i64;
      }
      break;
    default: break;
  }
  if (family_of(op_info(n.op).kind) == Family::elementwise) return compute_of(DType(n.p[0]));
  return compute_of(n.t[0].dtype);
}

// Spreads `groups` over a 2-D grid within the device's group-count limits.
bool grid2(uint64_t groups, const Limits& lim, Dispatch& d) {
  uint64_t x = groups < lim.max_workgroup_count[0] ? groups : lim.max_workgroup_count[0];
  uint64_t y = x ? (groups + x - 1) / x : 0;
  if (y > lim.max_workgroup_count[1]) return false;
  d.groups[0] = uint32_t(x);
  d.groups[1] = uint32_t(y);
  d.groups[2] = 1;
  return true;
}

template <class P>
void put(Dispatch& d, const P& p) {
  static_assert(sizeof(P) <= sizeof(d.pc));
  std::memcpy(d.pc, &p, sizeof(P));
  d.pc_size = sizeof(P);
}

// Dims (outermost first) of tensors sharing `sizes`, size-1 dims dropped and neighbours merged
// when every operand is dense across them. Returns the count, or -1 past `max`.
int coalesce(int ndim, const int64_t* sizes, const int64_t* const* strides, int nops, int max,
             int64_t* osz, int64_t (*ost)[kMaxDims]) {
  int m = 0;
  for (int d = 0; d < ndim; ++d) {
    if (sizes[d] == 1) continue;
    bool merge = m > 0;
    for (int k = 0; k < nops && merge; ++k) merge = ost[k][m - 1] == strides[k][d] * sizes[d];
    if (merge) {
      osz[m - 1] *= sizes[d];
      for (int k = 0; k < nops; ++k) ost[k][m - 1] = strides[k][d];
      continue;
    }
    osz[m] = sizes[d];
    for (int k = 0; k < nops; ++k) ost[k][m] = strides[k][d];
    ++m;
  }
  return m <= max ? m : -1;
}

using Why = std::string;

int lower_ew(const Node& n, Compute c, const Limits& lim, Dispatch* out, Why& why) {
  Kind kind = op_info(n.op).kind;
  const TensorDesc& o = n.t[0];
  bool has_a = kind != K_FILL && n.nin >= 1;
  bool scalar_b = (n.flags & kScalarB) != 0;
  bool has_b = n.nin >= 2 && !scalar_b;
  const TensorDesc* ops[3] = {&o, has_a ? &n.t[1] : nullptr, has_b ? &n.t[2] : nullptr};
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
  p.a = has_a ? n.t[1].addr : 0;
  p.b = has_b ? n.t[2].addr : 0;
  p.numel = uint32_t(numel);
  uint32_t dt[3] = {uint32_t(o.dtype), has_a ? uint32_t(n.t[1].dtype) : 0, has_b ? uint32_t(n.t[2].dtype) : 0};
  p.dtypes = dt[0] | dt[1] << 8 | dt[2] << 16 | uint32_t(n.p[0]) << 24;  // compute dtype last
  p.ndim = uint32_t(nd);
  bool contiguous = nd <= 1;
  for (int k = 0; k < nops && nd == 1; ++k) contiguous = contiguous && st[k][0] == 1;
  for (int k = 0, slot = 0; k < 3; ++k) {
    if (!ops[k]) continue;
    int64_t esz = int64_t(dtype_size(ops[k]->dtype)), span = 0;
    int32_t* dst = k == 0 ? p.st_out : k == 1 ? p.st_a : p.st_b;
    for (int d = 0; d < nd; ++d) {
      int64_t s = st[slot][d] * esz;  // bytes
      span += (sz[d] - 1) * (s < 0 ? -s : s);
      dst[nd - 1 - d] = int32_t(s);
    }
    // the contiguous path indexes in 64 bits; the strided one in 32
    if (!contiguous && !fits_i32(span)) return why = "byte offsets do not fit 32 bits", -1;
    ++slot;
  }
  for (int d = 0; d < nd; ++d) p.shape[nd - 1 - d] = int32_t(sz[d]);
  p.flags = (scalar_b ? EW_SCALAR_B : 0u) | (contiguous ? EW_CONTIGUOUS : 0u);
  p.alpha = raw_scalar(n.s[0], c);
  p.bscalar = raw_scalar(n.s[1], c);
  if (!grid2((uint64_t(numel) + kGroup - 1) / kGroup, lim, out[0])) return why = "too many groups", -1;
  put(out[0], p);
  return 1;
}

int lower_reduce(const Node& n, const Limits& lim, Dispatch* out, Why& why) {
  const TensorDesc& o = n.t[0];
  const TensorDesc& in = n.t[1];
  int kept = int(n.p[0]);
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
  if (n_out > int64_t(UINT32_MAX) || n_red > int64_t(UINT32_MAX)) return why = "more than 2^32-1 elements", -1;
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
  // The shader runs one invocation per output exactly when the grid has fewer groups than outputs.
  uint64_t groups = n_red <= kShortRow && n_out > 1 ? (uint64_t(n_out) + kGroup - 1) / kGroup : uint64_t(n_out);
  if (!grid2(groups, lim, out[0])) return why = "too many groups", -1;
  put(out[0], p);
  return 1;
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

int lower_gemm(const Node& n, Compute c, const Limits& lim, Dispatch* out, Why& why) {
  int64_t cs[3], cst[3], as[3], ast[3], bs[3], bst[3];
  if (!view3(n.t[0], cs, cst) || !view3(n.t[1], as, ast) || !view3(n.t[2], bs, bst))
    return why = "operands must be 2-D or 3-D", -1;
  int64_t B = cs[0], M = cs[1], N = cs[2], K = as[2];
  if (as[1] != M || bs[2] != N || bs[1] != K || (as[0] != B && as[0] != 1) || (bs[0] != B && bs[0] != 1))
    return why = "operand shapes do not match", -1;
  if (B * M * N == 0) return 0;
  bool has_bias = n.t[3].addr != 0 && n.s[1].f != 0;  // beta == 0 ignores bias (NaN included)
  int64_t xst[3] = {0, 0, 0};
  if (has_bias) {  // broadcast to [B,M,N]: missing leading dims get stride 0
    const TensorDesc& x = n.t[3];
    if (x.ndim > 3) return why = "bias has more than 3 dims", -1;
    for (int d = 0; d < x.ndim; ++d) {
      xst[3 - x.ndim + d] = x.sizes[d] == 1 ? 0 : x.strides[d];
    }
  }
  pc::GemmParams p{};
  p.c = n.t[0].addr;
  p.a = n.t[1].addr;
  p.b = n.t[2].addr;
  p.bias = has_bias ? n.t[3].addr : 0;
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
  p.dtypes = uint32_t(n.t[0].dtype) | uint32_t(n.t[1].dtype) << 8 | uint32_t(n.t[2].dtype) << 16 |
             (has_bias ? uint32_t(n.t[3].dtype) << 24 : 0u);
  p.alpha = raw_scalar(n.s[0], c);
  p.beta = raw_scalar(n.s[1], c);
  if (env().mutate == op_info(n.op).name && p.K > 0) p.K -= 1;  // test hook: drop the last k
  uint64_t gx = (uint64_t(N) + kGemmTile - 1) / kGemmTile, gy = (uint64_t(M) + kGemmTile - 1) / kGemmTile;
  if (gx > lim.max_workgroup_count[0] || gy > lim.max_workgroup_count[1] || uint64_t(B) > lim.max_workgroup_count[2])
    return why = "too many groups", -1;
  out[0].groups[0] = uint32_t(gx);
  out[0].groups[1] = uint32_t(gy);
  out[0].groups[2] = uint32_t(B);
  put(out[0], p);
  return 1;
}

int lower_softmax(const Node& n, const Limits& lim, Dispatch* out, Why& why) {
  bool bwd = op_info(n.op).kind == K_SOFTMAX_BWD;
  int nt = bwd ? 3 : 2;
  for (int k = 0; k < nt; ++k)
    if (n.t[k].ndim != 3) return why = "operands must be [outer, D, inner] views", -1;
  const TensorDesc& o = n.t[0];
  uint64_t rows = uint64_t(o.sizes[0]) * uint64_t(o.sizes[2]);
  if (o.sizes[0] > INT32_MAX || o.sizes[1] > INT32_MAX || o.sizes[2] > INT32_MAX)
    return why = "a dimension exceeds 2^31", -1;
  if (rows == 0 || o.sizes[1] == 0) return 0;
  pc::SoftmaxParams p{};
  p.t0 = o.addr;
  p.t1 = n.t[1].addr;
  p.t2 = bwd ? n.t[2].addr : 0;
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
  if (!grid2(rows, lim, out[0])) return why = "too many groups", -1;
  put(out[0], p);
  return 1;
}

int lower_nll(const Node& n, const Limits& lim, Dispatch* out, Why& why) {
  bool bwd = op_info(n.op).kind == K_NLL_BWD;
  const TensorDesc& mat = bwd ? n.t[0] : n.t[2];  // [N, C]
  const TensorDesc& tgt = bwd ? n.t[2] : n.t[3];
  const TensorDesc& w = bwd ? n.t[3] : n.t[4];
  const TensorDesc& vec = bwd ? n.t[1] : n.t[0];  // [N] or 0-d
  if (mat.ndim != 2) return why = "input must be [N, C]", -1;
  if (tgt.dtype != DType::i64) return why = "target must be int64", -1;
  pc::NllParams p{};
  p.t0 = n.t[0].addr;
  p.t1 = n.t[1].addr;
  p.t2 = n.t[2].addr;
  p.t3 = n.t[3].addr;
  p.t4 = n.t[4].addr;
  int64_t N = mat.sizes[0], C = mat.sizes[1];
  if (N > INT32_MAX || C > INT32_MAX) return why = "a dimension exceeds 2^31", -1;
  p.N = uint32_t(N);
  p.C = uint32_t(C);
  p.reduction = uint32_t(n.p[0]);
  p.ignore_index = n.p[1];
  p.dtypes = bwd ? uint32_t(n.t[0].dtype) | uint32_t(n.t[1].dtype) << 8 | (w.addr ? uint32_t(w.dtype) << 16 : 0u)
                 : uint32_t(n.t[0].dtype) | uint32_t(n.t[2].dtype) << 8 | (w.addr ? uint32_t(w.dtype) << 16 : 0u);
  int64_t s[5] = {mat.strides[0], mat.strides[1], vec.ndim == 1 ? vec.strides[0] : 0,
                  tgt.ndim == 1 ? tgt.strides[0] : 0, w.addr && w.ndim == 1 ? w.strides[0] : 0};
  for (int64_t v : s)
    if (!fits_i32(v)) return why = "a stride does not fit 32 bits", -1;
  p.s_mat[0] = int32_t(s[0]);
  p.s_mat[1] = int32_t(s[1]);
  p.s_vec = int32_t(s[2]);
  p.s_target = int32_t(s[3]);
  p.s_weight = int32_t(s[4]);
  if (env().mutate == op_info(n.op).name && p.N > 0) p.N -= 1;  // test hook: drop the last sample
  // forward mean/sum is one workgroup; otherwise one invocation per sample (forward none also
  // writes total_weight, so it always runs)
  uint64_t groups = (!bwd && p.reduction != 0) ? 1 : (uint64_t(N) + kGroup - 1) / kGroup;
  if (bwd && groups == 0) return 0;
  if (groups == 0) groups = 1;
  if (!grid2(groups, lim, out[0])) return why = "too many groups", -1;
  put(out[0], p);
  return 1;
}

// Opcode a mutated node runs instead (VKML_MUTATE): a sibling whose result differs.
int32_t mutant(int32_t op) {
  switch (op) {
    case OP_SUM: return OP_MEAN;
    case OP_MEAN: return OP_SUM;
    case OP_AMAX: return OP_AMIN;
    case OP_AMIN: return OP_AMAX;
    case OP_ARGMAX: return OP_ARGMIN;
    case OP_ARGMIN: return OP_ARGMAX;
    case OP_LOG_SOFTMAX: return OP_SOFTMAX;
    case OP_SOFTMAX: return OP_LOG_SOFTMAX;
    case OP_LOG_SOFTMAX_BWD: return OP_SOFTMAX_BWD;
    case OP_SOFTMAX_BWD: return OP_LOG_SOFTMAX_BWD;
    case OP_GEMM: case OP_NLL_FWD: case OP_NLL_BWD: return op;  // mutated through K / N instead
    default: return OP_EW_MUTANT;
  }
}

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

int build(const Node& n, const Limits& lim, Dispatch* out, Why& why) {
  Family fam = family_of(op_info(n.op).kind);
  const char* fname = family_name(fam);
  if (!fname) return why = "transfers are copied by the runtime, not lowered", -1;
  Compute c = compute_for(n, lim);
  if (c == Compute::f64 && !lim.float64) return why = "float64 compute needs shaderFloat64, which this device lacks", -1;
  std::string blob = std::string(fname) + "_" + variant_name(c);
  if (c != Compute::i64 && lim.float_controls) blob += "_ieee";
  if (spirv(blob.c_str()).empty()) return why = "no shader " + blob, -1;
  int count;
  switch (fam) {
    case Family::elementwise: count = lower_ew(n, c, lim, out, why); break;
    case Family::reduce: count = lower_reduce(n, lim, out, why); break;
    case Family::gemm: count = lower_gemm(n, c, lim, out, why); break;
    case Family::softmax: count = lower_softmax(n, lim, out, why); break;
    default: count = lower_nll(n, lim, out, why); break;
  }
  int32_t code = opcode_of(n.op);
  if (env().mutate == op_info(n.op).name) code = mutant(code);
  for (int i = 0; i < count; ++i) {
    std::strncpy(out[i].shader, blob.c_str(), sizeof(out[i].shader) - 1);
    out[i].opcode = code;
  }
  return count;
}

}  // namespace

Result<int> lower(const Node& n, const Limits& lim, Dispatch* out) {
  Why why;
  int count = build(n, lim, out, why);
  if (count < 0) return fail(Err::unsupported, "vkml: cannot run " + describe(n) + " on Vulkan: " + why);
  return count;
}

bool can_lower(const Node& n, const Limits& lim) {
  Dispatch scratch[kMaxDispatchesPerNode];
  Why why;
  return build(n, lim, scratch, why) >= 0;
}

}  // namespace vkml::vk
