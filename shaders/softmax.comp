// variants: f32 f64
// log_softmax / softmax and their backwards over rows of length D in an [outer, D, inner] view.
// One workgroup per row; max-subtracted; fixed-order tree sums.
#version 460
#define PC_SOFTMAX
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

void main() {
  uint64_t row = group_index();
  if (row >= uint64_t(pc.outer) * uint64_t(pc.inner)) return;  // whole group: uniform
  uint tid = gl_LocalInvocationID.x;
  uint o = uint(row / uint64_t(pc.inner)), in_ = uint(row % uint64_t(pc.inner));
  uint dt0 = pc.dtypes & 0xffu, dt1 = (pc.dtypes >> 8) & 0xffu, dt2 = (pc.dtypes >> 16) & 0xffu;
  int64_t e0 = int64_t(dsize(dt0)), e1 = int64_t(dsize(dt1)), e2 = int64_t(dsize(dt2));
  uint64_t b0 = pc.t0 + uint64_t((int64_t(o) * pc.s0[0] + int64_t(in_) * pc.s0[2]) * e0);
  uint64_t b1 = pc.t1 + uint64_t((int64_t(o) * pc.s1[0] + int64_t(in_) * pc.s1[2]) * e1);
  uint64_t b2 = pc.t2 + uint64_t((int64_t(o) * pc.s2[0] + int64_t(in_) * pc.s2[2]) * e2);
  int64_t d0 = int64_t(pc.s0[1]) * e0, d1 = int64_t(pc.s1[1]) * e1, d2 = int64_t(pc.s2[1]) * e2;
  uint D = pc.D;

  if (OP == OP_LOG_SOFTMAX || OP == OP_SOFTMAX) {
    T m = -inf_T();
    for (uint d = tid; d < D; d += 128u) m = max_nan(m, load_T(b1 + uint64_t(int64_t(d) * d1), dt1));
    m = group_reduce(m, true);
    T s = T(0);
    for (uint d = tid; d < D; d += 128u) s += exp_T(load_T(b1 + uint64_t(int64_t(d) * d1), dt1) - m);
    s = group_reduce(s, false);
    T ls = log_T(s), inv = T(1) / s;
    for (uint d = tid; d < D; d += 128u) {
      T x = load_T(b1 + uint64_t(int64_t(d) * d1), dt1) - m;
      store_T(b0 + uint64_t(int64_t(d) * d0), dt0, OP == OP_LOG_SOFTMAX ? x - ls : exp_T(x) * inv);
    }
  } else {  // OP_LOG_SOFTMAX_BWD, OP_SOFTMAX_BWD: t1 = grad_out, t2 = forward output
    bool lsm = OP == OP_LOG_SOFTMAX_BWD;
    T s = T(0);
    for (uint d = tid; d < D; d += 128u) {
      T g = load_T(b1 + uint64_t(int64_t(d) * d1), dt1);
      s += lsm ? g : g * load_T(b2 + uint64_t(int64_t(d) * d2), dt2);
    }
    s = group_reduce(s, false);
    for (uint d = tid; d < D; d += 128u) {
      T g = load_T(b1 + uint64_t(int64_t(d) * d1), dt1);
      T y = load_T(b2 + uint64_t(int64_t(d) * d2), dt2);
      store_T(b0 + uint64_t(int64_t(d) * d0), dt0, lsm ? g - exp_T(y) * s : y * (g - s));
    }
  }
}
