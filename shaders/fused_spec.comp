// variants: f32 f64 i64
// A fused chain of elementwise nodes, as fused.comp runs it, with the program's shape as
// specialization constants (csrc/backend/vulkan/lower_fused.cpp fills them; the backend compiles
// this pipeline for a program once it came Limits::specialize_after times, 1 on GPUs):
// the step count, operand count, layout and every step's op, sources, dtypes and flags. The
// driver then folds every switch of a step, unrolls the steps and keeps their results in
// registers, where fused.comp decodes each step for each element. Addresses, strides, sizes and
// scalars stay in the program in memory, so one pipeline serves every call of the same chain.
// Each step is fused.glsl's, as in fused.comp: the same bytes.
#version 460
#extension GL_EXT_control_flow_attributes : require
#define FUSED_HOISTED 1  // the program's addresses and scalars loaded once (fused.glsl)
#include "fused.glsl"

layout(constant_id = 1) const uint NSTEPS = 1u;
layout(constant_id = 2) const uint NOPS = 1u;
layout(constant_id = 3) const uint NDIM = 1u;
layout(constant_id = 4) const uint FLAGS = 0u;
#define SPEC_STEP(k, i_code, i_src, i_dts, i_fl) \
  layout(constant_id = i_code) const uint CODE##k = 0u; \
  layout(constant_id = i_src) const uint SRC##k = 0u; \
  layout(constant_id = i_dts) const uint DTS##k = 0u; \
  layout(constant_id = i_fl) const uint FL##k = 0u;
SPEC_STEP(0, 5, 6, 7, 8)
SPEC_STEP(1, 9, 10, 11, 12)
SPEC_STEP(2, 13, 14, 15, 16)
SPEC_STEP(3, 17, 18, 19, 20)
SPEC_STEP(4, 21, 22, 23, 24)
SPEC_STEP(5, 25, 26, 27, 28)
SPEC_STEP(6, 29, 30, 31, 32)
SPEC_STEP(7, 33, 34, 35, 36)
SPEC_STEP(8, 37, 38, 39, 40)
SPEC_STEP(9, 41, 42, 43, 44)
SPEC_STEP(10, 45, 46, 47, 48)
SPEC_STEP(11, 49, 50, 51, 52)
SPEC_STEP(12, 53, 54, 55, 56)
SPEC_STEP(13, 57, 58, 59, 60)
SPEC_STEP(14, 61, 62, 63, 64)
SPEC_STEP(15, 65, 66, 67, 68)
// constant_id 4 + 4 * k + 1..4: step k's code, src, dts and sflags (lower_fused.cpp's order)

// One loop body in the SPIR-V (16 inlined steps made a 1-2.5 MB blob): the trip count is a
// constant once specialized, and [[unroll]] asks the driver to unroll it, which makes each
// step's constants plain numbers.
void main() {
  const bool contiguous = (FLAGS & FUSED_CONTIGUOUS) != 0u;
  fused_hoist(NOPS, NSTEPS, NDIM, contiguous);
  const uint code[FUSED_STEPS] = uint[](CODE0, CODE1, CODE2, CODE3, CODE4, CODE5, CODE6, CODE7,
      CODE8, CODE9, CODE10, CODE11, CODE12, CODE13, CODE14, CODE15);
  const uint src[FUSED_STEPS] = uint[](SRC0, SRC1, SRC2, SRC3, SRC4, SRC5, SRC6, SRC7,
      SRC8, SRC9, SRC10, SRC11, SRC12, SRC13, SRC14, SRC15);
  const uint dts[FUSED_STEPS] = uint[](DTS0, DTS1, DTS2, DTS3, DTS4, DTS5, DTS6, DTS7,
      DTS8, DTS9, DTS10, DTS11, DTS12, DTS13, DTS14, DTS15);
  const uint fl[FUSED_STEPS] = uint[](FL0, FL1, FL2, FL3, FL4, FL5, FL6, FL7,
      FL8, FL9, FL10, FL11, FL12, FL13, FL14, FL15);
  for (uint e = 0u; e < FUSED_ELEMS; ++e) {
    if (!fused_begin(fused_index(e), NOPS, NDIM, contiguous)) return;
    [[unroll]] for (uint k = 0u; k < NSTEPS; ++k) fused_step(k, code[k], src[k], dts[k], fl[k]);
  }
}
