// variants: f32 f64
// log_softmax / softmax and their backwards over rows of length D in an [outer, D, inner] view.
// Each row has pc.lanes invocations (a power of two up to 128, chosen from D on the host:
// lower_softmax.cpp), so a workgroup holds 128 / lanes rows: short rows do not leave most of a
// workgroup idle. Rows over 65536 take one workgroup per chunk, then per row, then per chunk
// (passes 1-3, lanes = 128). Max-subtracted; fixed-order tree sums over a row's lanes. A row of
// up to lanes * NC elements (pass 0) is read once, into registers (NC per invocation, unrolled so
// that all its loads are in flight together); its elements are visited in the same order either
// way, so both give the same bytes. The trees are lanes.glsl's.
#version 460
#define PC_SOFTMAX
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "spec_dtypes.glsl"

layout(local_size_x = 128) in;

// Specialization constants 2 and 3, set with constant 1 (the dtypes, spec_dtypes.glsl): pc.lanes,
// and the register cache's elements per lane (4, 8, 16 or 32: the power of two that holds a row,
// lower_softmax.cpp). A cache sized for the row leaves registers for more rows in flight.
layout(constant_id = 2) const uint SPEC_LANES = 0u;
layout(constant_id = 3) const uint SPEC_NK = 32u;
#define LANES (SPEC ? SPEC_LANES : pc.lanes)
#include "lanes.glsl"  // lanes_reduce: the tree over each row's lanes (max_nan or +)

// Long rows (pc.pass 1-3, graph/families/softmax.h): chunk j = row * parts + chunk has the pair
// (a, b) at partials + 16 j; row totals follow all chunks' pairs. Values in the compute type.
const uint kChunk = 65536u;  // kSoftmaxChunk
#if defined(CT_F64)
#define DT_PARTIAL DT_F64
#else
#define DT_PARTIAL DT_F32
#endif
uint64_t pair_at(uint64_t j) { return pc.partials + j * 16UL; }
void put_pair(uint64_t j, T a, T b) {
  store_T(pair_at(j), DT_PARTIAL, a);
  store_T(pair_at(j) + 8UL, DT_PARTIAL, b);
}
T pair_a(uint64_t j) { return load_T(pair_at(j), DT_PARTIAL); }
T pair_b(uint64_t j) { return load_T(pair_at(j) + 8UL, DT_PARTIAL); }

// Element d = lane + lanes k (k < NC) of the row: cached rows hold it at c[k]. a: the address of
// element lane, q: the step to the lane's next element (lanes elements on).
#define NC 32
const uint NK = SPEC && SPEC_NK < NC ? SPEC_NK : NC;  // the cache's elements a lane
void load_row(uint64_t a, int64_t q, uint dt, uint lane, uint hi, out T c[NC]) {
  [[unroll]] for (uint k = 0u; k < NK; ++k) {
    uint d = lane + LANES * k;
    c[k] = d < hi ? load_T(a, dt) : T(0);
    a += uint64_t(q);
  }
}

void main() {
  const uint64_t nrows = uint64_t(pc.outer) * uint64_t(pc.inner);
  const bool chunked = pc.pass == 1u || pc.pass == 3u;  // one workgroup per chunk of a row
  const uint64_t gi = group_index();
  const uint tid = gl_LocalInvocationID.x, L = LANES, lane = tid & (L - 1u);
  uint64_t row = chunked ? gi / uint64_t(pc.parts) : gi * uint64_t(128u / L) + uint64_t(tid / L);
  // A workgroup past the last row returns whole; a row past it within one (short rows) repeats
  // the last row, unstored, so that every invocation meets the barriers.
  if (row - uint64_t(tid / L) >= nrows) return;
  const bool live = row < nrows;
  if (!live) row = nrows - 1UL;
  // The row's place: 32-bit division where the rows fit 32 bits (a 64-bit one is a long
  // subroutine on GPUs, and per invocation, for 4 elements of a row of 128, it cost as much as
  // they did), none where inner is 1 (softmax over the last dimension).
  uint o, in_;
  if (pc.inner == 1u) {
    o = uint(row);
    in_ = 0u;
  } else if (nrows <= 0xffffffffUL) {
    o = uint(row) / pc.inner;
    in_ = uint(row) - o * pc.inner;
  } else {
    o = uint(row / uint64_t(pc.inner));
    in_ = uint(row % uint64_t(pc.inner));
  }
  uint dt0 = DTYPES & 0xffu, dt1 = (DTYPES >> 8) & 0xffu, dt2 = (DTYPES >> 16) & 0xffu;
  int64_t e0 = int64_t(dsize(dt0)), e1 = int64_t(dsize(dt1)), e2 = int64_t(dsize(dt2));
  uint64_t b0 = pc.t0 + uint64_t((int64_t(o) * pc.s0[0] + int64_t(in_) * pc.s0[2]) * e0);
  uint64_t b1 = pc.t1 + uint64_t((int64_t(o) * pc.s1[0] + int64_t(in_) * pc.s1[2]) * e1);
  uint64_t b2 = pc.t2 + uint64_t((int64_t(o) * pc.s2[0] + int64_t(in_) * pc.s2[2]) * e2);
  int64_t d0 = int64_t(pc.s0[1]) * e0, d1 = int64_t(pc.s1[1]) * e1, d2 = int64_t(pc.s2[1]) * e2;
  uint lo = 0u, hi = pc.D;  // the elements of the row this workgroup reads
  if (chunked) {
    lo = uint(gi % uint64_t(pc.parts)) * kChunk;
    hi = lo + min(pc.D - lo, kChunk);
  }
  // Each lane walks its elements d = lo + lane, + L, ...: from the first one's address by a step
  // (a 64-bit add an element instead of a 64-bit product).
  const uint d1st = lo + lane;
  const uint64_t a0 = b0 + uint64_t(int64_t(d1st) * d0), a1 = b1 + uint64_t(int64_t(d1st) * d1),
                 a2 = b2 + uint64_t(int64_t(d1st) * d2);
  const int64_t q0 = int64_t(L) * d0, q1 = int64_t(L) * d1, q2 = int64_t(L) * d2;
  const uint64_t row_pair = nrows * uint64_t(pc.parts) + row;  // the row totals (pass 2 -> 3)
  const bool fwd = OP == OP_LOG_SOFTMAX || OP == OP_SOFTMAX;

  if (pc.pass == 2u) {  // the row's chunk partials, in order
    T m = -inf_T();
    if (fwd) {
      for (uint p = tid; p < pc.parts; p += 128u) m = max_nan(m, pair_a(row * uint64_t(pc.parts) + p));
      m = lanes_reduce(m, true);
    }
    T s = T(0);
    for (uint p = tid; p < pc.parts; p += 128u) {
      uint64_t j = row * uint64_t(pc.parts) + p;
      if (!fwd) s += pair_a(j);
      else if (pair_a(j) != -inf_T() || m == -inf_T()) s += pair_b(j) * exp_T(pair_a(j) - m);  // all--inf chunks add 0
    }
    s = lanes_reduce(s, false);
    if (tid == 0u) put_pair(row_pair, m, s);
    return;
  }

  // Only in the dtype-specialized pipeline (GPUs): unspecialized, each of the NC unrolled loads
  // is a switch over every dtype, and lavapipe took 5 s to compile the shader (0.2 s without).
  const bool cached = SPEC && pc.pass == 0u && hi <= L * NK;
  T c[NC], c2[NC];
  if (fwd) {
    T m, s;
    if (pc.pass == 3u) {
      m = pair_a(row_pair);
      s = pair_b(row_pair);
    } else {
      m = -inf_T();
      if (cached) {
        load_row(a1, q1, dt1, lane, hi, c);
        [[unroll]] for (uint k = 0u; k < NK; ++k) if (lane + L * k < hi) m = max_nan(m, c[k]);
      } else {
        uint64_t a = a1;
        for (uint d = d1st; d < hi; d += L, a += uint64_t(q1)) m = max_nan(m, load_T(a, dt1));
      }
      m = lanes_reduce(m, true);
      s = T(0);
      if (cached) {
        [[unroll]] for (uint k = 0u; k < NK; ++k) if (lane + L * k < hi) s += exp_T(c[k] - m);
      } else {
        uint64_t a = a1;
        for (uint d = d1st; d < hi; d += L, a += uint64_t(q1)) s += exp_T(load_T(a, dt1) - m);
      }
      s = lanes_reduce(s, false);
      if (pc.pass == 1u) {
        if (tid == 0u) put_pair(gi, m, s);
        return;
      }
    }
    T ls = log_T(s), inv = T(1) / s;
    if (cached) {
      uint64_t o0 = a0;
      [[unroll]] for (uint k = 0u; k < NK; ++k) {
        uint d = lane + L * k;
        T x = c[k] - m;
        if (live && d < hi) store_T(o0, dt0, OP == OP_LOG_SOFTMAX ? x - ls : exp_T(x) * inv);
        o0 += uint64_t(q0);
      }
      return;
    }
    uint64_t i1 = a1, o0 = a0;
    for (uint d = d1st; d < hi; d += L, i1 += uint64_t(q1), o0 += uint64_t(q0)) {
      T x = load_T(i1, dt1) - m;
      if (live) store_T(o0, dt0, OP == OP_LOG_SOFTMAX ? x - ls : exp_T(x) * inv);
    }
  } else {  // OP_LOG_SOFTMAX_BWD, OP_SOFTMAX_BWD: t1 = grad_out (c), t2 = forward output (c2)
    bool lsm = OP == OP_LOG_SOFTMAX_BWD;
    T s;
    if (pc.pass == 3u) {
      s = pair_b(row_pair);  // pass 2 stores (max, sum): the sum
    } else {
      s = T(0);
      if (cached) {
        load_row(a1, q1, dt1, lane, hi, c);
        load_row(a2, q2, dt2, lane, hi, c2);
        [[unroll]] for (uint k = 0u; k < NK; ++k) if (lane + L * k < hi) s += lsm ? c[k] : c[k] * c2[k];
      } else {
        uint64_t i1 = a1, i2 = a2;
        for (uint d = d1st; d < hi; d += L, i1 += uint64_t(q1), i2 += uint64_t(q2)) {
          T g = load_T(i1, dt1);
          s += lsm ? g : g * load_T(i2, dt2);
        }
      }
      s = lanes_reduce(s, false);
      if (pc.pass == 1u) {
        if (tid == 0u) put_pair(gi, s, T(0));
        return;
      }
    }
    if (cached) {
      uint64_t o0 = a0;
      [[unroll]] for (uint k = 0u; k < NK; ++k) {
        uint d = lane + L * k;
        if (live && d < hi) store_T(o0, dt0, lsm ? c[k] - exp_T(c2[k]) * s : c2[k] * (c[k] - s));
        o0 += uint64_t(q0);
      }
      return;
    }
    uint64_t i1 = a1, i2 = a2, o0 = a0;
    for (uint d = d1st; d < hi; d += L, i1 += uint64_t(q1), i2 += uint64_t(q2), o0 += uint64_t(q0)) {
      T g = load_T(i1, dt1);
      T y = load_T(i2, dt2);
      if (live) store_T(o0, dt0, lsm ? g - exp_T(y) * s : y * (g - s));
    }
  }
}
