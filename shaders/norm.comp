// variants: f32 f64
// Layer, group and batch norm over [A, C, S] views (shaders/norm.h). Each statistics group has
// LANES invocations, 128 / LANES groups a workgroup (per-sample mode: group a * G + g over C/G
// channels x S; per-channel mode: channel c over A x S; LANES from the group size:
// lower_norm.cpp's norm_lanes); OP_NORM_BWD_AFFINE: one workgroup per channel for the weight and
// bias gradients of the per-sample mode. Sums are pairwise within an invocation, then a fixed
// tree over the group's lanes (lanes.glsl): the same bytes every run, and an error that grows
// with log2 of the group size (docs/normalization.md).
#version 460
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "norm.h"

layout(local_size_x = 128) in;

// Slots (csrc/graph/families/norm.h): forward, then backward.
const uint Y = 0u, MEAN = 1u, RSTD = 2u, NEW_MEAN = 3u, NEW_VAR = 4u, X = 5u, W = 6u, B = 7u, RMEAN = 8u, RVAR = 9u;
const uint DX = 0u, DW = 1u, DB = 2u, DY = 3u, BX = 4u, BW = 5u, BMEAN = 6u, BSTAT = 7u;

NormParams p;
uint lane;  // this invocation's lane in its group's LANES
bool live;  // the group exists (a workgroup's last groups may not; they store nothing)
// The operands' addresses and strides and the sizes S and G, loaded once per invocation (main):
// read from the parameter block where used, each element's address cost a dozen loads, and after
// a store the compiler may not reuse one (the block is memory a store could change). Indexed by
// constant slots, they stay in registers. (lavapipe, layer_norm 256x1024: 68 ms against 99-119.)
uint64_t h_t[NORM_SLOTS];
int64_t h_st[3 * NORM_SLOTS];
uint h_S, h_G;

// Specialization constant 1 (GPUs: lower_norm.cpp): the dtypes of slots 0-7, 4 bits each, so the
// driver folds the dtype switches of their loads and stores; unset (CPU devices,
// VKML_SPECIALIZE=0), and for slots 8-9, the parameter block's.
layout(constant_id = 1) const uint SPEC_DTYPES = 0xffffffffu;
// Constants 2 and 3, set with constant 1 (lower_norm.cpp): the trips of a group the forward's
// register cache holds (1, 2, 4 or 8: what holds a group of the dispatch) and the pairwise
// counter's levels (enough for the most terms an invocation pushes). Sized to the dispatch, the
// unused registers go; a row of 512 (a transformer's layer norm) needed the registers of 4,096
// and of 2^20 terms. The sums are the same either way (same order), so the same bytes.
layout(constant_id = 2) const uint SPEC_CACHE_TRIPS = 8u;
layout(constant_id = 3) const uint SPEC_LEVELS = 20u;
// Constant 4, set with them: the lanes of a statistics group (NormParams::lanes; 0: unset).
layout(constant_id = 4) const uint SPEC_LANES = 0u;
uint LN;  // lanes of a statistics group: SPEC_LANES, else p.lanes (main)
#define LANES LN
#include "lanes.glsl"
uint dt_of(uint k) { return SPEC_DTYPES != 0xffffffffu && k < 8u ? (SPEC_DTYPES >> (4u * k)) & 15u : p.dt[k]; }
bool per_channel;
uint K;  // channels per group (per-sample mode)

// ---- pairwise accumulation of two sums at once ------------------------------------------------
// A binary counter: pa[l] holds the sum of 2^l terms; adding a term merges equal-sized partials,
// so the total is a pairwise sum of depth <= log2(count) + 1. Straight-line code (unrolled),
// so the partials stay in registers. The lowering keeps each invocation under 2^kLevels terms.
const uint kLevels = 20u;
const uint kLv = SPEC_LEVELS < kLevels ? SPEC_LEVELS : kLevels;  // the levels used (constant 3)
T pa[kLevels], pb[kLevels];
uint pn;

void acc_push(T a, T b) {
  bool placed = false;
  [[unroll]] for (uint l = 0u; l < kLv; ++l) {
    if (!placed) {
      if ((pn & (1u << l)) != 0u) { a = pa[l] + a; b = pb[l] + b; }
      else { pa[l] = a; pb[l] = b; placed = true; }
    }
  }
  ++pn;
}

// The group's totals: each invocation's partials low to high, then the tree over the group's
// lanes (lanes.glsl; LN is uniform, so every invocation meets every barrier). two: b too.
void acc_total2(out T a, out T b, bool two) {
  a = T(0);
  b = T(0);
  [[unroll]] for (uint l = 0u; l < kLv; ++l)
    if ((pn & (1u << l)) != 0u) { a = a + pa[l]; b = b + pb[l]; }
  lanes_reduce2(a, b, false, two);
}
void acc_total(out T a, out T b) { acc_total2(a, b, true); }

// Whether c holds for any invocation of the workgroup: a uniform branch for paths with more
// totals, where a workgroup's groups (LN < 128) may disagree but share the trees' barriers.
shared uint s_any;
bool wg_any(bool c) {
  if (gl_LocalInvocationIndex == 0u) s_any = 0u;
  barrier();
  if (c) s_any = 1u;
  barrier();
  return s_any != 0u;
}

// ---- operands ---------------------------------------------------------------------------------
bool has(uint k) { return h_t[k] != 0UL; }
uint64_t addr3(uint k, uint a, uint c, uint s) {
  int64_t off = int64_t(a) * h_st[3u * k] + int64_t(c) * h_st[3u * k + 1u] + int64_t(s) * h_st[3u * k + 2u];
  return h_t[k] + uint64_t(off * int64_t(dsize(dt_of(k))));
}
uint64_t addr1(uint k, uint i) { return h_t[k] + uint64_t(int64_t(i) * h_st[3u * k] * int64_t(dsize(dt_of(k)))); }
T ld3(uint k, uint a, uint c, uint s) { return load_T(addr3(k, a, c, s), dt_of(k)); }
T ld1(uint k, uint i) { return load_T(addr1(k, i), dt_of(k)); }
T ld1_or(uint k, uint i, T dflt) { return has(k) ? ld1(k, i) : dflt; }
void st3(uint k, uint a, uint c, uint s, T v) { if (live) store_T(addr3(k, a, c, s), dt_of(k), v); }
void st1(uint k, uint i, T v) { if (live && has(k)) store_T(addr1(k, i), dt_of(k), v); }

// 1/sqrt(v) with IEEE special cases (GLSL leaves inversesqrt(v <= 0) undefined).
T rsqrt_T(T v) {
  if (is_nan(v) || v < T(0)) return nan_T();
  if (v == T(0)) return inf_T();
  if (is_inf(v)) return T(0);
  return inversesqrt(v);
}

// Element r of statistics group g: its sample a, channel c and position s.
void locate(uint g, uint r, out uint a, out uint c, out uint s) {
  uint q = h_S == 1u ? r : r / h_S;  // S = 1: layer norm, no division
  s = r - q * h_S;
  if (per_channel) { a = q; c = g; }
  else { a = g / h_G; c = (g % h_G) * K + q; }
}

// Element r of group g where the group is one sample's channels (NORM_ROWS: per-sample mode with
// S = 1, every operand's strides within 2^31 bytes; lower_norm.cpp): at rb[k] + r * rs[k], the
// group's base found once (set_rows) and a 32 x 32 -> 64-bit product an element, for the 3-D
// operands and the channel-indexed 1-D ones (w, b). Elsewhere locate() and addr3: 32-bit
// divisions and three 64-bit products an element, which on the H100 cost a 512-element row
// more than its memory traffic (docs/performance.md, ninth session).
bool rows_mode;
uint64_t rb[NORM_SLOTS];
int rs[NORM_SLOTS];
void set_rows(uint g, bool bwd) {
  rows_mode = (p.flags & NORM_ROWS) != 0u;
  if (!rows_mode) return;
  const uint a = g / h_G, c0 = (g % h_G) * K;
  [[unroll]] for (uint k = 0u; k < NORM_SLOTS; ++k) {
    const bool three = bwd ? (k == DX || k == DY || k == BX) : (k == Y || k == X);
    const bool chan = bwd ? k == BW : (k == W || k == B);
    if (three) {
      rb[k] = addr3(k, a, c0, 0u);
      rs[k] = int(h_st[3u * k + 1u] * int64_t(dsize(dt_of(k))));
    } else if (chan) {
      rb[k] = addr1(k, c0);
      rs[k] = int(h_st[3u * k] * int64_t(dsize(dt_of(k))));
    }
  }
}
uint64_t at_row(uint k, uint r) { return rb[k] + uint64_t(int64_t(int(r)) * int64_t(rs[k])); }
// Element r of group g of the 3-D operand k, and its channel's value of the 1-D operand k (w, b).
T lde(uint k, uint g, uint r) {
  if (rows_mode) return load_T(at_row(k, r), dt_of(k));
  uint a, c, s;
  locate(g, r, a, c, s);
  return ld3(k, a, c, s);
}
void ste(uint k, uint g, uint r, T v) {
  if (rows_mode) {
    if (live) store_T(at_row(k, r), dt_of(k), v);
    return;
  }
  uint a, c, s;
  locate(g, r, a, c, s);
  st3(k, a, c, s, v);
}
T ldc(uint k, uint g, uint r, T dflt) {
  if (!has(k)) return dflt;
  if (rows_mode) return load_T(at_row(k, r), dt_of(k));
  uint a, c, s;
  locate(g, r, a, c, s);
  return ld1(k, c);
}

const uint kUnroll = 4u;  // elements per loop trip (llvmpipe caps an invocation's loop trips)

// One loop trip's terms (the valid ones are a prefix: r grows with u), added pairwise and pushed
// once: the counter's 20 unrolled levels per push were more than half of a layer norm's time on
// the H200 (docs/performance.md). A trip's own tree has depth <= 2, so an invocation's sum keeps
// its depth bound (backend/cpu/norm_bounds.h). Written for kUnroll == 4.
T q_a[kUnroll], q_b[kUnroll];
void push_trip(uint nv) {
  if (nv == 0u) return;
  T a = q_a[0], b = q_b[0];
  if (nv == 4u) { a = (q_a[0] + q_a[1]) + (q_a[2] + q_a[3]); b = (q_b[0] + q_b[1]) + (q_b[2] + q_b[3]); }
  else if (nv == 3u) { a = (q_a[0] + q_a[1]) + q_a[2]; b = (q_b[0] + q_b[1]) + q_b[2]; }
  else if (nv == 2u) { a = q_a[0] + q_a[1]; b = q_b[0] + q_b[1]; }
  acc_push(a, b);
}

// ---- forward ----------------------------------------------------------------------------------
const uint kCacheTrips = 8u;  // groups of up to 8 trips (4,096 elements) are read once
const uint kCt = SPEC_CACHE_TRIPS < kCacheTrips ? SPEC_CACHE_TRIPS : kCacheTrips;  // constant 2
T xc[kCacheTrips * kUnroll];
bool cached = false;

// Group norm folds the statistics into a scale and bias per channel, as torch does (so an
// infinite weight gives torch's NaNs); layer and batch norm keep (x - mean) * rstd * w + b,
// torch CUDA's batch norm form (more accurate than the CPU's folded one for a large mean).
T norm_out(T x, T mean, T rstd, T w, T b, bool folded) {
  if (folded) {  // group norm: torch's CPU and CUDA kernels alike, y = x * scale + bias
    precise T sc = rstd * w;
    precise T bi = -sc * mean + b;
    precise T yf = sc * x + bi;
    return yf;
  }
  return (x - mean) * rstd * w + b;
}

void forward(uint g, uint R) {
  set_rows(g, false);
  const T eps = from_raw(p.eps);
  T mean, rstd;
  if (per_channel && (p.flags & NORM_TRAINING) == 0u) {  // eval batch norm: the running statistics
    mean = ld1(RMEAN, g);
    rstd = rsqrt_T(ld1(RVAR, g) + eps);
  } else {
    // Corrected two-pass: mean m0, then sums of d = x - m0 and d^2; the correction removes the
    // error of m0 from both the mean and the variance (Chan, Golub, LeVeque). A group of up to
    // kCacheTrips trips is read once, into registers (all its loads issued together); the
    // elements are visited in the same order either way.
    // Only in the dtype-specialized pipeline (GPUs, SPEC_DTYPES set): unspecialized, each of the
    // 32 unrolled loads and stores is a switch over every dtype, and lavapipe took 61 s to compile
    // the shader (3.5 s without the cached path).
    cached = SPEC_DTYPES != 0xffffffffu && R <= kCt * LN * kUnroll;
    pn = 0u;
    if (cached) {
      [[unroll]] for (uint i = 0u; i < kCt * kUnroll; ++i) {
        uint r = (i / kUnroll) * LN * kUnroll + (i % kUnroll) * LN + lane;
        xc[i] = T(0);
        if (r < R) xc[i] = lde(X, g, r);
      }
      [[unroll]] for (uint t = 0u; t < kCt; ++t) {
        uint nv = 0u;
        [[unroll]] for (uint u = 0u; u < kUnroll; ++u)
          if (t * LN * kUnroll + u * LN + lane < R) { q_a[u] = xc[t * kUnroll + u]; q_b[u] = T(0); ++nv; }
        push_trip(nv);
      }
    } else {
      for (uint r0 = 0u; r0 < R; r0 += LN * kUnroll) {
        uint nv = 0u;
        [[unroll]] for (uint u = 0u; u < kUnroll; ++u) {
          uint r = r0 + u * LN + lane;
          if (r < R) { q_a[u] = lde(X, g, r); q_b[u] = T(0); ++nv; }
        }
        push_trip(nv);
      }
    }
    T s1, unused;
    acc_total2(s1, unused, false);
    const T m0 = s1 / T(R);
    pn = 0u;
    if (cached) {
      [[unroll]] for (uint t = 0u; t < kCt; ++t) {
        uint nv = 0u;
        [[unroll]] for (uint u = 0u; u < kUnroll; ++u)
          if (t * LN * kUnroll + u * LN + lane < R) {
            T d = xc[t * kUnroll + u] - m0;
            q_a[u] = d;
            q_b[u] = d * d;
            ++nv;
          }
        push_trip(nv);
      }
    } else {
      for (uint r0 = 0u; r0 < R; r0 += LN * kUnroll) {
        uint nv = 0u;
        [[unroll]] for (uint u = 0u; u < kUnroll; ++u) {
          uint r = r0 + u * LN + lane;
          if (r < R) {
            T d = lde(X, g, r) - m0;
            q_a[u] = d;
            q_b[u] = d * d;
            ++nv;
          }
        }
        push_trip(nv);
      }
    }
    T t1, t2;
    acc_total(t1, t2);
    // The squares overflowed (an |x - m0| or their sum past the type's range): the variance is
    // infinite and rstd 0, as torch CPU's batch norm gives it, and the mean stays m0 (the
    // correction would be inf - inf). t1 * (t1 / R): t1^2 alone may overflow where t2 does not.
    const bool over = is_inf(t2);
    // A non-finite m0 (an infinity in the group): layer / group norm's mean is NaN as torch's
    // Welford update makes it (inf - inf), batch norm's the plain sum's (inf), as on torch's CPU.
    mean = is_inf(m0) || is_nan(m0) ? (per_channel ? m0 : nan_T()) : over ? m0 : m0 + t1 / T(R);
    T ss = over ? inf_T() : t2 - t1 * (t1 / T(R));  // R * biased variance
    if (ss < T(0)) ss = T(0);     // rounding; NaN stays NaN (GLSL's max would drop it)
    const T var = ss / T(R);
    // batch norm's invstd is 0 for a zero variance with eps 0 (torch's InvStd)
    rstd = per_channel && var == T(0) && eps == T(0) ? T(0) : rsqrt_T(var + eps);
    if (lane == 0u) {
      st1(MEAN, g, mean);
      st1(RSTD, g, rstd);
      if (per_channel) {
        const T mom = from_raw(p.momentum);
        if (has(NEW_MEAN)) st1(NEW_MEAN, g, mom * mean + (T(1) - mom) * ld1(RMEAN, g));
        if (has(NEW_VAR)) {
          const T unbiased = R > 1u ? ss / T(R - 1u) : nan_T();
          st1(NEW_VAR, g, mom * unbiased + (T(1) - mom) * ld1(RVAR, g));
        }
      }
    }
  }
  const T wc = per_channel ? ld1_or(W, g, T(1)) : T(1), bc = per_channel ? ld1_or(B, g, T(0)) : T(0);
  const bool folded = !per_channel && (p.flags & NORM_LAYER) == 0u;
  if (cached) {
    [[unroll]] for (uint i = 0u; i < kCt * kUnroll; ++i) {
      uint r = (i / kUnroll) * LN * kUnroll + (i % kUnroll) * LN + lane;
      if (r < R)
        ste(Y, g, r, norm_out(xc[i], mean, rstd, per_channel ? wc : ldc(W, g, r, T(1)),
                              per_channel ? bc : ldc(B, g, r, T(0)), folded));
    }
    return;
  }
  for (uint r0 = 0u; r0 < R; r0 += LN * kUnroll)
    [[unroll]] for (uint u = 0u; u < kUnroll; ++u) {
      uint r = r0 + u * LN + lane;
      if (r < R)
        ste(Y, g, r, norm_out(lde(X, g, r), mean, rstd, per_channel ? wc : ldc(W, g, r, T(1)),
                              per_channel ? bc : ldc(B, g, r, T(0)), folded));
    }
}

// ---- backward ---------------------------------------------------------------------------------
// The statistics of group g as the backward gets them.
void stats_of(uint g, out T mean, out T rstd) {
  mean = ld1(BMEAN, g);
  rstd = (p.flags & NORM_VAR_GIVEN) != 0u ? rsqrt_T(ld1(BSTAT, g) + from_raw(p.eps)) : ld1(BSTAT, g);
}

// Per statistics group: with a = dy * w (per-sample) or dy (per-channel), xh = (x - mean) * rstd,
//   dx = rstd * w' * (a - sum(a) / R - xh * sum(a * xh) / R)     (w' = w per channel, else 1)
// and eval batch norm's dx = dy * w * rstd. Per channel also dw = sum(dy * xh), db = sum(dy).
void backward(uint g, uint R) {
  set_rows(g, true);
  const bool train = !per_channel || (p.flags & NORM_TRAINING) != 0u;
  T mean, rstd;
  stats_of(g, mean, rstd);
  uint a, c, s;
  T sa = T(0), sb = T(0);
  // Batch norm given a non-finite invstd: torch CPU's order, dotp = sum(dy * (x - mean)) first and
  // invstd after (dw = dotp * invstd), where ours would make infinities of both signs (NaN). The
  // same for training batch norm whose sums came out non-finite (an infinity in dy): a second pass
  // takes dotp, since ours, sum(dy * xh), has xh = 0 where (x - mean) * invstd underflows.
  bool torch_bn = per_channel && (is_inf(rstd) || is_nan(rstd));
  if (train || (per_channel && (has(DW) || has(DB)))) {
    for (uint pass = 0u; pass < 2u; ++pass) {
      pn = 0u;
      for (uint r0 = 0u; r0 < R; r0 += LN * kUnroll) {
        uint nv = 0u;
        [[unroll]] for (uint u = 0u; u < kUnroll; ++u) {
          uint r = r0 + u * LN + lane;
          if (r < R) {
            T ai = lde(DY, g, r);
            if (!per_channel) ai *= ldc(BW, g, r, T(1));
            const T d = lde(BX, g, r) - mean;
            q_a[u] = ai;
            q_b[u] = torch_bn ? ai * d : ai * (d * rstd);
            ++nv;
          }
        }
        push_trip(nv);
      }
      acc_total(sa, sb);
      // A second pass where a training batch norm's sums came out non-finite. Uniform: where the
      // workgroup's channels share the trees' barriers, all of them take it when one needs it, and
      // the others sum the same terms in the same order again (the same totals).
      const bool again =
          per_channel && train && !torch_bn && (is_inf(sa) || is_nan(sa) || is_inf(sb) || is_nan(sb));
      if (!(LN < 128u ? wg_any(again) : again)) break;
      torch_bn = torch_bn || again;
    }
  }
  if (per_channel && lane == 0u) {
    st1(DW, g, torch_bn ? sb * rstd : sb);
    st1(DB, g, sa);
  }
  if (torch_bn && train && has(DX)) {  // torch: k = dotp * invstd * invstd / N, dx = (dy - mean(dy) - (x - mean) * k) * invstd * w
    const T wb = ld1_or(BW, g, T(1));
    precise T k = sb * rstd;
    k = k * rstd;
    k = k / T(R);
    const T mdy = sa / T(R);
    for (uint r0 = 0u; r0 < R; r0 += LN * kUnroll)
      [[unroll]] for (uint u = 0u; u < kUnroll; ++u) {
        uint r = r0 + u * LN + lane;
        if (r < R) {
          locate(g, r, a, c, s);
          st3(DX, a, c, s, (ld3(DY, a, c, s) - mdy - (ld3(BX, a, c, s) - mean) * k) * rstd * wb);
        }
      }
    return;
  }
  if (!has(DX)) return;
  const T wg = per_channel ? ld1_or(BW, g, T(1)) : T(1);
  const T ma = sa / T(R), mb = sb / T(R);
  // Layer / group norm with an Inf or NaN among the group's sums or statistics: torch CPU's own
  // formula, dx = rstd * a + b * x + c, whose b * x + c is NaN where the infinite b * x and c
  // cancel (x and mean of one sign); ours, b * (x - mean), would be an infinity there. Finite
  // groups keep the form above (no cancellation for |mean| >> std). sa, sb, mean: uniform over
  // the group; where the workgroup's groups share barriers, all of them take the extra totals
  // when one needs them, and the finite ones then keep their form.
  const bool nonfinite = !per_channel && (is_inf(sa) || is_nan(sa) || is_inf(sb) || is_nan(sb) || is_inf(mean) ||
                                          is_nan(mean) || is_inf(rstd) || is_nan(rstd));
  // (per_channel: uniform over the dispatch; a batch norm channel that took torch's order above
  // has returned, so its workgroup's others must not meet wg_any's barriers)
  if (!per_channel && (LN < 128u ? wg_any(nonfinite) : nonfinite)) {
    T ds, db = sa;
    if ((p.flags & NORM_TORCH_DX) != 0u) {
      // group norm: torch sums each channel first, ds = sum_c (sum_s dy * x) * w_c and db likewise
      // (an infinite w_c times one sum is one infinity; times each term, infinities of both signs)
      ds = T(0);
      db = T(0);
      const uint n0 = g / h_G, c0 = (g % h_G) * K;
      for (uint j = 0u; j < K; ++j) {
        pn = 0u;
        for (uint s0 = 0u; s0 < h_S; s0 += LN) {
          const uint sj = s0 + lane;
          if (sj < h_S) {
            const T dy = ld3(DY, n0, c0 + j, sj);
            acc_push(dy * ld3(BX, n0, c0 + j, sj), dy);
          }
        }
        T dsc, dbc;
        acc_total(dsc, dbc);
        const T wc = ld1_or(BW, c0 + j, T(1));
        ds += dsc * wc;
        db += dbc * wc;
      }
    } else {
      pn = 0u;
      for (uint r0 = 0u; r0 < R; r0 += LN * kUnroll)
        [[unroll]] for (uint u = 0u; u < kUnroll; ++u) {
          uint r = r0 + u * LN + lane;
          if (r < R) {
            locate(g, r, a, c, s);
            acc_push(ld3(DY, a, c, s) * ld3(BX, a, c, s) * ld1_or(BW, c, T(1)), T(0));  // torch's dy * x * w
          }
        }
      T unused;
      acc_total(ds, unused);
    }
    if (nonfinite) {
      const T scale = T(1) / T(R);
      // precise: torch's left-to-right order; rstd * rstd first would underflow for a tiny rstd
      precise T tb = (db * mean - ds) * rstd;
      tb = tb * rstd;
      tb = tb * rstd;
      tb = tb * scale;
      precise T tc = -tb * mean - (db * rstd) * scale;
      for (uint r0 = 0u; r0 < R; r0 += LN * kUnroll)
        [[unroll]] for (uint u = 0u; u < kUnroll; ++u) {
          uint r = r0 + u * LN + lane;
          if (r < R) {
            locate(g, r, a, c, s);
            st3(DX, a, c, s, rstd * (ld3(DY, a, c, s) * ld1_or(BW, c, T(1))) + tb * ld3(BX, a, c, s) + tc);
          }
        }
      return;
    }
  }
  for (uint r0 = 0u; r0 < R; r0 += LN * kUnroll)
    [[unroll]] for (uint u = 0u; u < kUnroll; ++u) {
      uint r = r0 + u * LN + lane;
      if (r < R) {
        T ai = lde(DY, g, r);
        T dx;
        if (train) {
          if (!per_channel) ai *= ldc(BW, g, r, T(1));
          const T xh = (lde(BX, g, r) - mean) * rstd;
          dx = rstd * wg * ((ai - ma) - xh * mb);
        } else {
          dx = ai * wg * rstd;
        }
        ste(DX, g, r, dx);
      }
    }
}

// Per channel c of the per-sample mode: dw = sum(dy * xh), db = sum(dy) over (a, s), each
// element with the statistics of its own group.
void affine(uint c, uint R) {
  pn = 0u;
  for (uint r0 = 0u; r0 < R; r0 += LN * kUnroll) {
    uint nv = 0u;
    [[unroll]] for (uint u = 0u; u < kUnroll; ++u) {
      uint r = r0 + u * LN + lane;
      if (r < R) {
        uint a = r / h_S, s = r - a * h_S;
        T mean, rstd;
        stats_of(a * h_G + c / K, mean, rstd);
        const T dy = ld3(DY, a, c, s), x = ld3(BX, a, c, s);
        // layer norm with a non-finite mean or rstd: torch CPU's dy * (rstd * x - rstd * mean)
        // (NaN for rstd = inf, mean = 0, where (x - mean) * rstd is an infinity)
        const bool torch_form = (p.flags & NORM_LAYER) != 0u &&
                                (is_inf(mean) || is_nan(mean) || is_inf(rstd) || is_nan(rstd));
        q_a[u] = dy;
        q_b[u] = dy * (torch_form ? rstd * x + (-rstd * mean) : (x - mean) * rstd);
        ++nv;
      }
    }
    push_trip(nv);
  }
  T sa, sb;
  acc_total(sa, sb);
  // Group norm whose dw came out non-finite: torch CPU's form, sum over the samples of
  // (sum_s dy * x - sum_s dy * mean) * rstd, whose inf - inf cancellations decide where it is NaN
  // (an invocation per sample; the lowering sets the flag only where its loop fits). sb: uniform.
  if ((p.flags & NORM_TORCH_DW) != 0u && (is_inf(sb) || is_nan(sb))) {
    pn = 0u;
    for (uint a = lane; a < p.A; a += LN) {
      T mean, rstd;
      stats_of(a * h_G + c / K, mean, rstd);
      T ds = T(0), db = T(0);
      for (uint s = 0u; s < h_S; ++s) {
        const T dy = ld3(DY, a, c, s);
        ds += dy * ld3(BX, a, c, s);
        db += dy;
      }
      acc_push((ds - db * mean) * rstd, T(0));
    }
    T unused;
    acc_total(sb, unused);
  }
  if (lane == 0u) {
    st1(DW, c, sb);
    st1(DB, c, sa);
  }
}

void main() {
  p = NormParams(pc.params);
  [[unroll]] for (uint k = 0u; k < NORM_SLOTS; ++k) {
    h_t[k] = p.t[k];
    [[unroll]] for (uint j = 0u; j < 3u; ++j) h_st[3u * k + j] = p.st[3u * k + j];
  }
  h_S = p.S;
  h_G = p.G;
  LN = SPEC_LANES != 0u ? SPEC_LANES : p.lanes;
  const uint vt = gl_LocalInvocationID.x;
  lane = vt & (LN - 1u);
  live = true;
  per_channel = (p.flags & NORM_PER_CHANNEL) != 0u;
  K = p.C / h_G;
  const uint64_t wg = group_index(), per_wg = uint64_t(128u / LN);
  if (OP == OP_NORM_BWD_AFFINE) {  // 128 lanes (lower_norm.cpp)
    if (wg >= uint64_t(p.C)) return;  // whole group: uniform
    affine(uint(wg), p.A * h_S);
    return;
  }
  const uint groups = per_channel ? p.C : p.A * h_G;
  if (wg * per_wg >= uint64_t(groups)) return;  // the whole workgroup: uniform
  // A group past the last (the workgroup's last slots) repeats the last group, storing nothing,
  // so that every invocation meets the barriers.
  uint64_t g = wg * per_wg + uint64_t(vt / LN);
  live = g < uint64_t(groups);
  if (!live) g = uint64_t(groups - 1u);
  const uint R = per_channel ? p.A * h_S : K * h_S;
  // OP_NORM_FWD / OP_NORM_BWD, or the row's opcode with the direction in the flags
  const bool bwd = OP == OP_NORM_BWD || (OP != OP_NORM_FWD && (p.flags & NORM_BACKWARD) != 0u);
  if (bwd) backward(uint(g), R);
  else forward(uint(g), R);
}
