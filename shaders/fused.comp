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
#include "fused.glsl"

void main() {
  const uint nsteps = p.nsteps;
  for (uint e = 0u; e < FUSED_ELEMS; ++e) {
    if (!fused_begin(fused_index(e), p.nops, p.ndim, (p.flags & FUSED_CONTIGUOUS) != 0u)) return;
    for (uint k = 0u; k < nsteps; ++k) fused_step(k, p.code[k], p.src[k], p.dts[k], p.sflags[k]);
  }
}
