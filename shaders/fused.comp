// variants: f32 f64 i64
// A fused chain of elementwise nodes (csrc/plan/fuse.cpp): each invocation runs every step for
// one element, in program order, keeping results in registers; a step stores only where its
// result is still needed in memory. Each step computes exactly as elementwise.comp does for its
// node (ew_ops.glsl), and a register holds what a reload from the stored dtype would give, so
// the bytes are the unfused ones.
// Each step carries its own op. The pipeline's OP (specialization constant 0) is OP_FUSED for any
// program, or OP_FUSED_NATIVE for one whose operands and steps all hold and compute in the
// variant's own dtype (float32 for f32, ...; lower_fused.cpp picks it): the dtype switches of
// every load, store and rounding then fold away when the pipeline is made. That matters most
// where a branch costs both sides (lavapipe runs SIMD lanes masked, so a switch on a value it
// cannot prove uniform runs every case); on a GPU the branches are uniform and cheap anyway.
#version 460
#include "common.glsl"
#include "ew_ops.glsl"
#include "fused.h"

#if defined(CT_F32)
#define DT_NATIVE DT_F32
#elif defined(CT_F64)
#define DT_NATIVE DT_F64
#else
#define DT_NATIVE DT_I64
#endif
const bool NATIVE = OP == OP_FUSED_NATIVE;

layout(local_size_x = 128) in;

void main() {
  uint64_t i = global_index();
  if (i >= uint64_t(pc.numel)) return;
  FusedProgram p = FusedProgram(pc.params);
  const uint nops = p.nops;
  uint64_t off[FUSED_OPERANDS];
  if ((p.flags & FUSED_CONTIGUOUS) != 0u) {
    for (uint j = 0u; j < nops; ++j) off[j] = i * dsize(NATIVE ? DT_NATIVE : p.dtype[j]);
  } else {  // byte offsets fit in 32 bits (the plan checks)
    int so[FUSED_OPERANDS];
    for (uint j = 0u; j < nops; ++j) so[j] = 0;
    uint rem = uint(i);
    for (uint d = 0u; d < p.ndim; ++d) {
      uint n = uint(p.shape[d]);
      int c = int(rem % n);
      rem /= n;
      for (uint j = 0u; j < nops; ++j) so[j] += c * p.strides[j * 4u + d];
    }
    for (uint j = 0u; j < nops; ++j) off[j] = uint64_t(int64_t(so[j]));
  }
  // The previous step's result stays in a plain variable (most chains read it next); reg[] is
  // dynamically indexed (local memory on a GPU), so only steps read later than that go there.
  T reg[FUSED_STEPS];
  T prev = T(0);
  const uint nsteps = p.nsteps;
  const uint64_t scratch = p.scratch;
  for (uint k = 0u; k < nsteps; ++k) {
    const uint src = p.src[k], dts = p.dts[k], fl = p.sflags[k];
    const uint dto = NATIVE ? DT_NATIVE : dts & 0xffu, dta = NATIVE ? DT_NATIVE : (dts >> 8) & 0xffu;
    const uint dtb = NATIVE ? DT_NATIVE : (dts >> 16) & 0xffu, dtc = NATIVE ? DT_NATIVE : dts >> 24;
    const uint sa = src & 0xffu, sb = (src >> 8) & 0xffu, sc = (src >> 16) & 0xffu, st = src >> 24;
    const uint last = FUSED_REG + k - 1u;  // (k = 0: 127, no operand index)
    T a = T(0), b = T(0), old = T(0);
    if (sa == last) a = prev;
    else if (sa != FUSED_NONE) a = sa >= FUSED_REG ? reg[sa - FUSED_REG] : load_T(p.addr[sa] + off[sa], dta);
    if ((fl & FUSED_SCALAR_B) != 0u) b = from_raw(p.s1[k]);
    else if (sb == last) b = prev;
    else if (sb != FUSED_NONE) b = sb >= FUSED_REG ? reg[sb - FUSED_REG] : load_T(p.addr[sb] + off[sb], dtb);
    if (sa != FUSED_NONE && dta != dtc) a = round_T(a, dtc);
    if ((fl & FUSED_SCALAR_B) == 0u && sb != FUSED_NONE && dtb != dtc) b = round_T(b, dtc);
    if (sc == last) old = prev;
    else if (sc != FUSED_NONE) old = sc >= FUSED_REG ? reg[sc - FUSED_REG] : load_T(p.addr[sc] + off[sc], dto);
    T r = ew_apply(int(p.code[k]), a, b, p.s0[k], p.s1[k], old, (fl & FUSED_HAS_A) != 0u, dto, dtc);
    if (dto != dtc) r = round_T(r, dtc);
    if (st != FUSED_NONE) store_T(p.addr[st] + off[st], dto, r);
    if (scratch != 0UL) store_T(scratch + uint64_t(k) * uint64_t(pc.numel) * 8UL + i * dsize(dto), dto, r);
    prev = reload_T(r, dto);
    if ((fl & FUSED_KEEP) != 0u) reg[k] = prev;
  }
}
