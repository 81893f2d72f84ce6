// variants: f32 f64
// log_softmax / softmax and their backwards over rows of length D in an [outer, D, inner] view.
// One workgroup per row (rows over 65536: per chunk, then per row, then per chunk: passes 1-3);
// max-subtracted; fixed-order tree sums.
#version 460
#define PC_SOFTMAX
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"

layout(local_size_x = 128) in;

shared T s_red[128];

// Tree over the workgroup; is_max picks NaN-propagating max instead of +.
T group_reduce(T v, bool is_max) {
  uint tid = gl_LocalInvocationID.x;
  s_red[tid] = v;
  barrier();
  for (uint s = 64u; s > 0u; s >>= 1) {
    if (tid < s) s_red[tid] = is_max ? max_nan(s_red[tid], s_red[tid + s]) : s_red[tid] + s_red[tid + s];
    barrier();
  }
  T r = s_red[0];
  barrier();  // s_red is reused by the next call
  return r;
}

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

// A tile: kTile = 4096 elements of a row from t0, as 8 blocks of 128 x 4; invocation tid holds
// elements 4 (u * 128 + tid) + j (u < 8, j < 4) as x[4 u + j]. Sums run in this order on both
// paths, so they give the same bytes. SOFTMAX_DENSE (lower_softmax.cpp: the row is dense and
// aligned): a block is one 16-, 8- or 4-byte load or store (ld_block4); otherwise element by element.
const uint kTile = 4096u;
#define NV 32
bool in_tile(uint t0, uint k, uint hi) { return t0 + (k >> 2) * 512u + 4u * gl_LocalInvocationID.x + (k & 3u) < hi; }
void load_tile(uint64_t b, int64_t step, uint dt, uint t0, uint hi, out T x[NV]) {
  uint sz = dsize(dt);
  [[unroll]] for (uint u = 0u; u < 8u; ++u) {
    uint r = t0 + u * 512u + 4u * gl_LocalInvocationID.x;
    if ((pc.flags & SOFTMAX_DENSE) != 0u && r + 4u <= hi) {
      uint64_t e[4];
      ld_block4(b + uint64_t(r) * sz, sz, e);
      [[unroll]] for (uint j = 0u; j < 4u; ++j) x[4u * u + j] = bits_to_T(e[j], dt);
    } else {
      [[unroll]] for (uint j = 0u; j < 4u; ++j)
        x[4u * u + j] = r + j < hi ? load_T(b + uint64_t(int64_t(r + j) * step), dt) : T(0);
    }
  }
}
void store_tile(uint64_t b, int64_t step, uint dt, uint t0, uint hi, T x[NV]) {
  uint sz = dsize(dt);
  [[unroll]] for (uint u = 0u; u < 8u; ++u) {
    uint r = t0 + u * 512u + 4u * gl_LocalInvocationID.x;
    if ((pc.flags & SOFTMAX_DENSE) != 0u && r + 4u <= hi) {
      uint64_t e[4];
      [[unroll]] for (uint j = 0u; j < 4u; ++j) e[j] = T_to_bits(x[4u * u + j], dt);
      st_block4(b + uint64_t(r) * sz, sz, e);
    } else {
      [[unroll]] for (uint j = 0u; j < 4u; ++j)
        if (r + j < hi) store_T(b + uint64_t(int64_t(r + j) * step), dt, x[4u * u + j]);
    }
  }
}

void main() {
  const uint64_t nrows = uint64_t(pc.outer) * uint64_t(pc.inner);
  const bool chunked = pc.pass == 1u || pc.pass == 3u;  // one workgroup per chunk of a row
  uint64_t gi = group_index();
  uint64_t row = chunked ? gi / uint64_t(pc.parts) : gi;
  if (row >= nrows) return;  // whole group: uniform
  uint tid = gl_LocalInvocationID.x;
  uint o = uint(row / uint64_t(pc.inner)), in_ = uint(row % uint64_t(pc.inner));
  uint dt0 = pc.dtypes & 0xffu, dt1 = (pc.dtypes >> 8) & 0xffu, dt2 = (pc.dtypes >> 16) & 0xffu;
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
  const uint64_t row_pair = nrows * uint64_t(pc.parts) + row;  // the row totals (pass 2 -> 3)
  const bool fwd = OP == OP_LOG_SOFTMAX || OP == OP_SOFTMAX;

  if (pc.pass == 2u) {  // the row's chunk partials, in order
    T m = -inf_T();
    if (fwd) {
      for (uint p = tid; p < pc.parts; p += 128u) m = max_nan(m, pair_a(row * uint64_t(pc.parts) + p));
      m = group_reduce(m, true);
    }
    T s = T(0);
    for (uint p = tid; p < pc.parts; p += 128u) {
      uint64_t j = row * uint64_t(pc.parts) + p;
      if (!fwd) s += pair_a(j);
      else if (pair_a(j) != -inf_T() || m == -inf_T()) s += pair_b(j) * exp_T(pair_a(j) - m);  // all--inf chunks add 0
    }
    s = group_reduce(s, false);
    if (tid == 0u) put_pair(row_pair, m, s);
    return;
  }

  // Tiles of kTile elements (load_tile); a row that fits one tile is read once, into registers.
  const uint ntiles = (hi - lo + kTile - 1u) / kTile;  // hi - lo <= 65536
  const bool cached = ntiles == 1u && pc.pass != 3u;
  T x[NV];
  if (fwd) {
    T m, s;
    if (pc.pass == 3u) {
      m = pair_a(row_pair);
      s = pair_b(row_pair);
    } else {
      m = -inf_T();
      for (uint t = 0u; t < ntiles; ++t) {
        uint t0 = lo + t * kTile;
        load_tile(b1, d1, dt1, t0, hi, x);
        [[unroll]] for (uint k = 0u; k < NV; ++k) if (in_tile(t0, k, hi)) m = max_nan(m, x[k]);
      }
      m = group_reduce(m, true);
      s = T(0);
      for (uint t = 0u; t < ntiles; ++t) {
        uint t0 = lo + t * kTile;
        if (!cached) load_tile(b1, d1, dt1, t0, hi, x);
        [[unroll]] for (uint k = 0u; k < NV; ++k) if (in_tile(t0, k, hi)) s += exp_T(x[k] - m);
      }
      s = group_reduce(s, false);
      if (pc.pass == 1u) {
        if (tid == 0u) put_pair(gi, m, s);
        return;
      }
    }
    T ls = log_T(s), inv = T(1) / s;
    for (uint t = 0u; t < ntiles; ++t) {
      uint t0 = lo + t * kTile;
      if (!cached) load_tile(b1, d1, dt1, t0, hi, x);
      [[unroll]] for (uint k = 0u; k < NV; ++k) {
        T v = x[k] - m;
        x[k] = OP == OP_LOG_SOFTMAX ? v - ls : exp_T(v) * inv;
      }
      store_tile(b0, d0, dt0, t0, hi, x);
    }
  } else {  // OP_LOG_SOFTMAX_BWD, OP_SOFTMAX_BWD: t1 = grad_out, t2 = forward output
    bool lsm = OP == OP_LOG_SOFTMAX_BWD;
    T y[NV];
    T s;
    if (pc.pass == 3u) {
      s = pair_b(row_pair);  // pass 2 stores (max, sum): the sum
    } else {
      s = T(0);
      for (uint t = 0u; t < ntiles; ++t) {
        uint t0 = lo + t * kTile;
        load_tile(b1, d1, dt1, t0, hi, x);
        if (!lsm) load_tile(b2, d2, dt2, t0, hi, y);
        [[unroll]] for (uint k = 0u; k < NV; ++k) if (in_tile(t0, k, hi)) s += lsm ? x[k] : x[k] * y[k];
      }
      s = group_reduce(s, false);
      if (pc.pass == 1u) {
        if (tid == 0u) put_pair(gi, s, T(0));
        return;
      }
    }
    for (uint t = 0u; t < ntiles; ++t) {
      uint t0 = lo + t * kTile;
      if (!cached) load_tile(b1, d1, dt1, t0, hi, x);
      if (!cached || lsm) load_tile(b2, d2, dt2, t0, hi, y);
      [[unroll]] for (uint k = 0u; k < NV; ++k) x[k] = lsm ? x[k] - exp_T(y[k]) * s : y[k] * (x[k] - s);
      store_tile(b0, d0, dt0, t0, hi, x);
    }
  }
}
