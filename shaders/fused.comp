// variants: f32 f64 i64
// A fused chain of elementwise nodes (csrc/plan/fuse.cpp): each invocation runs every step for
// one element, in program order, keeping results in registers; a step stores only where its
// result is still needed in memory. Each step computes exactly as elementwise.comp does for its
// node (ew_ops.glsl), and a register holds what a reload from the stored dtype would give, so
// the bytes are the unfused ones.
// The row's opcode OP_FUSED is unused here: each step carries its own.
#version 460
#include "common.glsl"
#include "ew_ops.glsl"
#include "fused.h"

layout(local_size_x = 128) in;

void main() {
  uint64_t i = global_index();
  if (i >= uint64_t(pc.numel)) return;
  FusedProgram p = FusedProgram(pc.params);
  const uint nops = p.nops;
  uint64_t off[FUSED_OPERANDS];
  if ((p.flags & FUSED_CONTIGUOUS) != 0u) {
    for (uint j = 0u; j < nops; ++j) off[j] = i * dsize(p.dtype[j]);
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
  T reg[FUSED_STEPS];
  const uint nsteps = p.nsteps;
  for (uint k = 0u; k < nsteps; ++k) {
    const uint src = p.src[k], dts = p.dts[k], fl = p.sflags[k];
    const uint dto = dts & 0xffu, dta = (dts >> 8) & 0xffu, dtb = (dts >> 16) & 0xffu, dtc = dts >> 24;
    const uint sa = src & 0xffu, sb = (src >> 8) & 0xffu, sc = (src >> 16) & 0xffu, st = src >> 24;
    T a = T(0), b = T(0), old = T(0);
    if (sa != FUSED_NONE) a = sa >= FUSED_REG ? reg[sa - FUSED_REG] : load_T(p.addr[sa] + off[sa], dta);
    if ((fl & FUSED_SCALAR_B) != 0u) b = from_raw(p.s1[k]);
    else if (sb != FUSED_NONE) b = sb >= FUSED_REG ? reg[sb - FUSED_REG] : load_T(p.addr[sb] + off[sb], dtb);
    if (sa != FUSED_NONE && dta != dtc) a = round_T(a, dtc);
    if ((fl & FUSED_SCALAR_B) == 0u && sb != FUSED_NONE && dtb != dtc) b = round_T(b, dtc);
    if (sc != FUSED_NONE) old = sc >= FUSED_REG ? reg[sc - FUSED_REG] : load_T(p.addr[sc] + off[sc], dto);
    T r = ew_apply(int(p.code[k]), a, b, p.s0[k], p.s1[k], old, (fl & FUSED_HAS_A) != 0u, dto, dtc);
    if (dto != dtc) r = round_T(r, dtc);
    if (st != FUSED_NONE) store_T(p.addr[st] + off[st], dto, r);
    if (p.scratch != 0UL) store_T(p.scratch + uint64_t(k) * uint64_t(pc.numel) * 8UL + i * dsize(dto), dto, r);
    reg[k] = reload_T(r, dto);
  }
}
