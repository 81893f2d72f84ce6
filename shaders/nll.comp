// variants: f32 f64
// nll_loss forward and backward; operands as graph/node.h documents (t0..t4). total_weight has
// the dtype of t0 (forward: out; backward: grad_input), as in aten.
#version 460
#define PC_NLL
#include "common.glsl"

layout(local_size_x = 128) in;

shared T s_loss[128];
shared T s_w[128];

// Class of sample i, or -1 when ignored (out-of-range targets are rejected by aten; skipped here).
int64_t target_of(uint i) {
  uint64_t base = OP == OP_NLL_FWD ? pc.t3 : pc.t2;
  int64_t t = int64_t(ld_u64(base + uint64_t(int64_t(i) * pc.s_target * 8L)));
  if (t == pc.ignore_index || t < 0L || t >= int64_t(pc.C)) return -1L;
  return t;
}

void forward() {
  uint dto = pc.dtypes & 0xffu, dti = (pc.dtypes >> 8) & 0xffu, dtw = (pc.dtypes >> 16) & 0xffu;
  int64_t ei = int64_t(dsize(dti)), ew = int64_t(dsize(dtw));
  if (pc.reduction == 0u) {
    uint64_t i = global_index();
    if (i == 0UL) store_T(pc.t1, dto, T(0));  // total_weight is 0 for reduction none, as torch
    if (i >= uint64_t(pc.N)) return;
    int64_t t = target_of(uint(i));
    T r = T(0);
    if (t >= 0L) {
      T w = pc.t4 != 0UL ? load_T(pc.t4 + uint64_t(t * pc.s_weight * ew), dtw) : T(1);
      T x = load_T(pc.t2 + uint64_t((int64_t(i) * pc.s_mat[0] + t * pc.s_mat[1]) * ei), dti);
      r = -x * w;
    }
    store_T(pc.t0 + uint64_t(int64_t(i) * pc.s_vec * int64_t(dsize(dto))), dto, r);
    return;
  }
  // mean / sum: a single workgroup, fixed-order tree
  uint tid = gl_LocalInvocationID.x;
  T loss = T(0), wsum = T(0);
  for (uint i = tid; i < pc.N; i += 128u) {
    int64_t t = target_of(i);
    if (t < 0L) continue;
    T w = pc.t4 != 0UL ? load_T(pc.t4 + uint64_t(t * pc.s_weight * ew), dtw) : T(1);
    loss += load_T(pc.t2 + uint64_t((int64_t(i) * pc.s_mat[0] + t * pc.s_mat[1]) * ei), dti) * w;
    wsum += w;
  }
  s_loss[tid] = loss;
  s_w[tid] = wsum;
  barrier();
  for (uint s = 64u; s > 0u; s >>= 1) {
    if (tid < s) {
      s_loss[tid] += s_loss[tid + s];
      s_w[tid] += s_w[tid + s];
    }
    barrier();
  }
  if (tid != 0u) return;
  T total = -s_loss[0], tw = s_w[0];
  store_T(pc.t0, dto, pc.reduction == 1u ? div_ieee(total, tw) : total);  // mean: 0/0 = NaN
  store_T(pc.t1, dto, tw);
}

void backward() {
  uint64_t i = global_index();
  if (i >= uint64_t(pc.N)) return;
  int64_t t = target_of(uint(i));
  if (t < 0L) return;  // grad_input was zeroed by a fill node
  uint dtg = pc.dtypes & 0xffu, dtgo = (pc.dtypes >> 8) & 0xffu, dtw = (pc.dtypes >> 16) & 0xffu;
  T w = pc.t3 != 0UL ? load_T(pc.t3 + uint64_t(t * pc.s_weight * int64_t(dsize(dtw))), dtw) : T(1);
  T v;
  if (pc.reduction == 0u) {
    v = -w * load_T(pc.t1 + uint64_t(int64_t(i) * pc.s_vec * int64_t(dsize(dtgo))), dtgo);
  } else {  // as aten: grad = -(mean ? g / total_weight : g); w * grad
    T g = load_T(pc.t1, dtgo);
    if (pc.reduction == 1u) g = div_ieee(g, load_T(pc.t4, dtg));
    v = w * -g;
  }
  int64_t o = int64_t(i) * pc.s_mat[0] + t * pc.s_mat[1];
  store_T(pc.t0 + uint64_t(o * int64_t(dsize(dtg))), dtg, v);
}

void main() {
  if (OP == OP_NLL_FWD) forward();
  else if (OP == OP_NLL_BWD) backward();
}
