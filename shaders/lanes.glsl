// Fixed-order sums and NaN-propagating maxima over each row's lanes, for kernels whose 128-wide
// workgroups hold 128 / LANES rows of LANES invocations each (softmax.comp, norm.comp): row r has
// invocations [r * LANES, (r + 1) * LANES). Include after common.glsl, with LANES defined (a
// power of two from 1 to 128, uniform: every invocation meets every barrier).
//
// A tree through shared memory, lane i adding lane i + s for s = LANES / 2 .. 1, a barrier a
// level: a balanced tree of depth log2(LANES) in a fixed order, so the same bytes every run (the
// oracle's bounds count the depth: backend/cpu/norm_bounds.h). Subgroup shuffles instead (no
// barrier for a row within a subgroup) measured no faster on the H100 for rows of 64 to 512, and
// 23% slower for rows of 4,096 (docs/performance.md, ninth session).
#ifndef VKML_LANES_GLSL
#define VKML_LANES_GLSL

shared T s_lane_a[128], s_lane_b[128];

T lanes_op(T x, T y, bool is_max) { return is_max ? max_nan(x, y) : x + y; }

// Reduces a (and b, where two) over the row's lanes; every lane gets the totals.
void lanes_reduce2(inout T a, inout T b, bool is_max, bool two) {
  const uint L = LANES, tid = gl_LocalInvocationID.x, lane = tid & (L - 1u);
  s_lane_a[tid] = a;
  if (two) s_lane_b[tid] = b;
  barrier();
  for (uint s = L >> 1; s > 0u; s >>= 1) {
    if (lane < s) {
      s_lane_a[tid] = lanes_op(s_lane_a[tid], s_lane_a[tid + s], is_max);
      if (two) s_lane_b[tid] = lanes_op(s_lane_b[tid], s_lane_b[tid + s], is_max);
    }
    barrier();
  }
  a = s_lane_a[tid - lane];
  if (two) b = s_lane_b[tid - lane];
  barrier();  // s_lane_* are reused by the next call
}

T lanes_reduce(T v, bool is_max) {
  T unused = T(0);
  lanes_reduce2(v, unused, is_max, false);
  return v;
}

#endif
