// variants: f32 f64 i64
// out[k] = REDUCE over r of in[k, r]. One workgroup per output with a fixed-order tree; rows of
// up to 1,024 share workgroups (REDUCE_LANES: pc.rows lanes a row, about 16 elements a lane, its
// own tree); when the grid has fewer groups than outputs otherwise (lower's choice for short
// rows) one invocation per output; in column mode (REDUCE_COLUMN, a strided reduced dim) one
// invocation per output and chunk.
#version 460
#define PC_REDUCE
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "spec_dtypes.glsl"

layout(local_size_x = 128) in;

shared T s_val[128];
shared uint s_idx[128];

bool is_arg() { return OP == OP_ARGMAX || OP == OP_ARGMIN; }

// Whether (x, ix) wins over (y, iy): NaN is the extreme, ties go to the first index.
bool better(T x, uint ix, T y, uint iy) {
  if (is_nan(x)) return !is_nan(y) || ix < iy;
  if (is_nan(y)) return false;
  if (x == y) return ix < iy;
  return OP == OP_ARGMAX ? x > y : x < y;
}

T identity() {
#if defined(CT_I64)
  const int64_t lo = int64_t(1UL << 63), hi = int64_t(~(1UL << 63));
#else
  T hi = inf_T(), lo = -inf_T();
#endif
  if (OP == OP_AMAX || OP == OP_ARGMAX) return lo;
  if (OP == OP_AMIN || OP == OP_ARGMIN) return hi;
  return T(0);
}

// Folds (y, iy) into (x, ix) in the op's order.
void combine(inout T x, inout uint ix, T y, uint iy) {
  if (OP == OP_AMAX) x = max_nan(x, y);
  else if (OP == OP_AMIN) x = min_nan(x, y);
  else if (is_arg()) { if (better(y, iy, x, ix)) { x = y; ix = iy; } }
  else if (OP == OP_SUM || OP == OP_MEAN) x = x + y;
}

// Offsets are straight-line code (unrolled over the 4 possible dims), and the main loop handles
// kUnroll elements per trip: llvmpipe stops any invocation after 65535 loop trips in total, and
// on real GPUs fewer trips are faster anyway.
int64_t kept_offset(uint k) {
  int64_t off = 0;
  uint nk = pc.ndims & 0xffu;
  [[unroll]] for (uint d = 0u; d < 4u; ++d) {
    if (d < nk) {
      uint n = uint(pc.kshape[d]);
      off += int64_t(k % n) * int64_t(pc.kstride[d]);
      k /= n;
    }
  }
  return off;
}
int64_t red_offset(uint r) {
  int64_t off = 0;
  uint nr = (pc.ndims >> 8) & 0xffu;
  [[unroll]] for (uint d = 0u; d < 4u; ++d) {
    if (d < nr) {
      uint n = uint(pc.rshape[d]);
      off += int64_t(r % n) * int64_t(pc.rstride[d]);
      r /= n;
    }
  }
  return off;
}
const uint kUnroll = 8u;

void finish(uint k, T v, uint idx) {
  uint dto = DTYPES & 0xffu;
  if (is_arg()) { st_u64(pc.dst + uint64_t(k) * 8UL, uint64_t(idx)); return; }
#if !defined(CT_I64)
  if (OP == OP_MEAN) v = pc.n_red == 0u ? nan_T() : v / T(pc.n_red);
#endif
  store_T(pc.dst + uint64_t(k) * dsize(dto), dto, v);
}

// Two-pass reductions (pc.pass 1 and 2, graph/families/reduce.h): partial j of output k is at
// j = k * parts + chunk (row mode) or j = chunk * n_out + k (column mode); values take 8 bytes
// in the compute type, indices 4 (after all values).
const uint kChunk = 65536u;  // kReduceChunk
#if defined(CT_F32)
#define DT_PARTIAL DT_F32
#elif defined(CT_F64)
#define DT_PARTIAL DT_F64
#else
#define DT_PARTIAL DT_I64
#endif
uint64_t partial_val(uint64_t j) { return pc.partials + j * 8UL; }
uint64_t partial_idx(uint64_t j) { return pc.partials + uint64_t(pc.n_out) * uint64_t(pc.parts) * 8UL + j * 4UL; }

// The tree over each row's L accumulators (L lanes: a power of two, uniform; 128, the whole
// workgroup, but for rows sharing it); row r's result is in s_val[r * L], s_idx[r * L]. The same
// shape as lanes.glsl's (softmax, norm), but over value-index pairs with the op's combine
// (argmax's ties and NaNs).
void tree(T acc, uint idx, uint L) {
  uint tid = gl_LocalInvocationID.x, lane = tid & (L - 1u);
  s_val[tid] = acc;
  s_idx[tid] = idx;
  barrier();
  for (uint s = L >> 1; s > 0u; s >>= 1) {
    if (lane < s) {
      T x = s_val[tid];
      uint ix = s_idx[tid];
      combine(x, ix, s_val[tid + s], s_idx[tid + s]);
      s_val[tid] = x;
      s_idx[tid] = ix;
    }
    barrier();
  }
}

// Pass 2: output k from its partials, in order.
void combine_partials(uint64_t k) {
  uint tid = gl_LocalInvocationID.x;
  T acc = identity();
  uint idx = 0xffffffffu;
  uint64_t j0 = k * uint64_t(pc.parts);
  for (uint p0 = 0u; p0 < pc.parts; p0 += 128u * kUnroll) {
    [[unroll]] for (uint u = 0u; u < kUnroll; ++u) {
      uint p = p0 + u * 128u + tid;
      if (p < pc.parts)
        combine(acc, idx, load_T(partial_val(j0 + p), DT_PARTIAL), ld_word(partial_idx(j0 + p)));
    }
  }
  tree(acc, idx, 128u);
  if (tid == 0u) finish(uint(k), s_val[0], s_idx[0]);
}

// Column mode, pass 1: invocation tid of group (tile, chunk) folds output k = 128 tile + tid over
// the reduced indices chunk * rows .. + rows - 1, in order; neighbouring invocations read
// neighbouring outputs, which are adjacent in memory (the kept dims' innermost stride is 1).
void fold_column() {
  uint tiles = (pc.n_out + 127u) / 128u;
  uint64_t g = group_index();
  uint chunk = uint(g / uint64_t(tiles));
  uint k = uint(g % uint64_t(tiles)) * 128u + gl_LocalInvocationID.x;
  if (chunk >= pc.parts || k >= pc.n_out) return;
  uint dti = (DTYPES >> 8) & 0xffu;
  int64_t esz = int64_t(dsize(dti));
  uint64_t base = pc.src + uint64_t(kept_offset(k) * esz);
  uint lo = chunk * pc.rows, hi = min(pc.n_red - lo, pc.rows) + lo;  // lo < n_red (reduce.h)
  bool one = ((pc.ndims >> 8) & 0xffu) == 1u;  // one reduced dim: no index arithmetic
  int64_t rstep = int64_t(pc.rstride[0]) * esz;
  T acc = identity();
  uint idx = 0xffffffffu;
  for (uint r0 = lo; r0 < hi; r0 += kUnroll) {
    [[unroll]] for (uint u = 0u; u < kUnroll; ++u) {
      uint r = r0 + u;
      if (r < hi) {
        int64_t off = one ? int64_t(r) * rstep : red_offset(r) * esz;
        combine(acc, idx, load_T(base + uint64_t(off), dti), r);
      }
    }
  }
  uint64_t j = uint64_t(chunk) * uint64_t(pc.n_out) + k;  // chunk-major: neighbours write neighbours
  store_T(partial_val(j), DT_PARTIAL, acc);
  st_word(partial_idx(j), idx);
}

// Column mode, pass 2: one invocation per output folds its chunks' partials in chunk order
// (chunk-major, as pass 1 wrote them: neighbouring invocations read neighbouring partials).
void column_partials() {
  uint64_t k = global_index();
  if (k >= uint64_t(pc.n_out)) return;
  T acc = identity();
  uint idx = 0xffffffffu;
  for (uint c0 = 0u; c0 < pc.parts; c0 += 4u) {  // parts <= 65536: at most 16384 trips
    [[unroll]] for (uint u = 0u; u < 4u; ++u) {
      uint64_t j = uint64_t(c0 + u) * uint64_t(pc.n_out) + k;
      if (c0 + u < pc.parts) combine(acc, idx, load_T(partial_val(j), DT_PARTIAL), ld_word(partial_idx(j)));
    }
  }
  finish(uint(k), acc, idx);
}

void main() {
  uint dti = (DTYPES >> 8) & 0xffu;
  uint64_t esz = uint64_t(dsize(dti));
  uint64_t groups = uint64_t(gl_NumWorkGroups.x) * uint64_t(gl_NumWorkGroups.y);
  if (pc.pass == 2u && (pc.flags & REDUCE_COLUMN) != 0u) {
    column_partials();
    return;
  }
  if (pc.pass == 2u) {
    uint64_t k = group_index();
    if (k < uint64_t(pc.n_out)) combine_partials(k);
    return;
  }
  const bool lanes = (pc.flags & REDUCE_LANES) != 0u;
  if (pc.pass == 0u && groups < uint64_t(pc.n_out) && !lanes) {  // one invocation per output, sequential
    uint64_t k = global_index();
    if (k >= uint64_t(pc.n_out)) return;
    uint64_t base = pc.src + uint64_t(kept_offset(uint(k)) * int64_t(esz));
    T acc = identity();
    uint idx = 0xffffffffu;
    for (uint r = 0u; r < pc.n_red; ++r)
      combine(acc, idx, load_T(base + uint64_t(red_offset(r) * int64_t(esz)), dti), r);
    finish(uint(k), acc, idx);
    return;
  }
  if ((pc.flags & REDUCE_COLUMN) != 0u) {  // column mode, pass 1 (reduce.h)
    fold_column();
    return;
  }
  // one workgroup per output (pass 0) or per chunk of an output's row (pass 1); or, with
  // REDUCE_LANES, 128 / L rows a workgroup (pass 0), L lanes each: a workgroup's last slots past
  // the last row repeat it and store nothing, so that every invocation meets the tree's barriers
  const uint L = lanes ? pc.rows : 128u, tid = gl_LocalInvocationID.x, lane = tid & (L - 1u);
  uint64_t g = group_index();
  uint64_t k = pc.pass == 1u ? g / uint64_t(pc.parts) : g;
  bool live = true;
  if (lanes) {
    const uint64_t first = g * uint64_t(128u / L);
    if (first >= uint64_t(pc.n_out)) return;  // whole group: uniform
    k = first + uint64_t(tid / L);
    live = k < uint64_t(pc.n_out);
    if (!live) k = uint64_t(pc.n_out - 1u);
  }
  if (k >= uint64_t(pc.n_out)) return;  // whole group: uniform
  uint lo = 0u, hi = pc.n_red;
  if (pc.pass == 1u) {
    lo = uint(g % uint64_t(pc.parts)) * pc.rows;  // chunks of pc.rows, at most kChunk (reduce.h)
    hi = min(pc.n_red - lo, pc.rows) + lo;
  }
  uint64_t base = pc.src + uint64_t(kept_offset(uint(k)) * int64_t(esz));
  T acc = identity();
  uint idx = 0xffffffffu;
  // The order is the same on both paths (so their results are the same bytes): trips of kUnroll
  // blocks of 4 L elements (512 for a workgroup a row); lane l folds elements 4 l .. 4 l + 3 of
  // each block into its accumulator, in order. REDUCE_DENSE (the reduced dim is dense and every
  // row's start aligned, lower_reduce.cpp): a block's 4 elements are one 16-byte (or 8- or
  // 4-byte) load.
  const bool dense = (pc.flags & REDUCE_DENSE) != 0u;
  const uint step = 4u * L * kUnroll, trips = (hi - lo + step - 1u) / step;  // hi - lo <= 65536
  for (uint t = 0u; t < trips; ++t) {
    uint r0 = lo + t * step;  // a multiple of 4096 below 2^32 - 2048: r0 + 4095 does not wrap
    [[unroll]] for (uint u = 0u; u < kUnroll; ++u) {
      uint r = r0 + u * 4u * L + 4u * lane;
      if (dense && r + 4u <= hi) {
        uint64_t e[4];
        ld_block4(base + uint64_t(r) * esz, uint(esz), e);
        [[unroll]] for (uint j = 0u; j < 4u; ++j) combine(acc, idx, bits_to_T(e[j], dti), r + j);
      } else {
        [[unroll]] for (uint j = 0u; j < 4u; ++j)
          if (r + j < hi) combine(acc, idx, load_T(base + uint64_t(red_offset(r + j) * int64_t(esz)), dti), r + j);
      }
    }
  }
  tree(acc, idx, L);
  if (lane != 0u || !live) return;
  if (pc.pass == 1u) {
    store_T(partial_val(g), DT_PARTIAL, s_val[0]);
    st_word(partial_idx(g), s_idx[0]);
  } else {
    finish(uint(k), s_val[tid], s_idx[tid]);
  }
}
