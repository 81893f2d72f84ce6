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

// Many samples (pc.pass 1 and 2, graph/families/nll.h): chunk p's (loss, weight) sums at
// partials + 16 p, its first bad sample (u32) after all chunks' sums. Values in the compute type.
const uint kChunk = 65536u;  // kNllChunk
#if defined(CT_F64)
#define DT_PARTIAL DT_F64
#else
#define DT_PARTIAL DT_F32
#endif
uint64_t pair_at(uint64_t p) { return pc.partials + p * 16UL; }
uint64_t first_at(uint64_t p) { return pc.partials + uint64_t(pc.parts) * 16UL + p * 4UL; }

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
  // mean / sum: one workgroup, fixed-order tree (pass 1: per chunk into partials; pass 2: the
  // chunks' partials, in order)
  uint tid = gl_LocalInvocationID.x;
  T loss = T(0), wsum = T(0);
  if (pc.pass == 2u) {
    for (uint p = tid; p < pc.parts; p += 128u) {
      loss += load_T(pair_at(p), DT_PARTIAL);
      wsum += load_T(pair_at(p) + 8UL, DT_PARTIAL);
    }
  } else {
    uint lo = 0u, hi = pc.N;
    if (pc.pass == 1u) {
      lo = uint(group_index()) * kChunk;
      hi = lo + min(pc.N - lo, kChunk);
    }
    for (uint i = lo + tid; i < hi; i += 128u) {
      int64_t t = target_of(i);
      if (t < 0L) continue;
      T w = pc.t4 != 0UL ? load_T(pc.t4 + uint64_t(t * pc.s_weight * ew), dtw) : T(1);
      loss += load_T(pc.t2 + uint64_t((int64_t(i) * pc.s_mat[0] + t * pc.s_mat[1]) * ei), dti) * w;
      wsum += w;
    }
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
  if (pc.pass == 1u) {
    store_T(pair_at(group_index()), DT_PARTIAL, s_loss[0]);
    store_T(pair_at(group_index()) + 8UL, DT_PARTIAL, s_w[0]);
    return;
  }
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

// OP_NLL_CHECK (after the op): the first sample in order whose target is out of range and not
// ignored goes into the assert block, unless an earlier check failed already. One workgroup, or
// (pass 1) one per chunk, each noting its chunk's first, then (pass 2) one for the chunks.
shared uint s_first[128];
void check_targets() {
  uint tid = gl_LocalInvocationID.x;
  uint first = 0xffffffffu;
  if (pc.pass == 2u) {
    for (uint p = tid; p < pc.parts; p += 128u) first = min(first, ld_word(first_at(p)));
  } else {
    uint lo = 0u, hi = pc.N;
    if (pc.pass == 1u) {
      lo = uint(group_index()) * kChunk;
      hi = lo + min(pc.N - lo, kChunk);
    }
    for (uint i = lo + tid; i < hi; i += 128u) {
      int64_t t = int64_t(ld_u64(pc.t3 + uint64_t(int64_t(i) * pc.s_target * 8L)));
      if (t != pc.ignore_index && (t < 0L || t >= int64_t(pc.C))) {
        first = i;
        break;
      }
    }
  }
  s_first[tid] = first;
  barrier();
  for (uint s = 64u; s > 0u; s >>= 1) {
    if (tid < s) s_first[tid] = min(s_first[tid], s_first[tid + s]);
    barrier();
  }
  if (tid != 0u) return;
  if (pc.pass == 1u) {
    st_word(first_at(group_index()), s_first[0]);
    return;
  }
  if (s_first[0] == 0xffffffffu) return;
  // The record (csrc/graph/device_assert.h): claimed unless an earlier finding holds it; value at 8.
  if (atomicCompSwap(Word(pc.asserts).w, 0u, NLL_TARGET_ASSERT) == 0u)
    st_u64(pc.asserts + 8UL, ld_u64(pc.t3 + uint64_t(int64_t(s_first[0]) * pc.s_target * 8L)));
}

void main() {
  if (OP == OP_NLL_FWD) forward();
  else if (OP == OP_NLL_BWD) backward();
  else if (OP == OP_NLL_CHECK) check_targets();
}
