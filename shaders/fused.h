// Blocks of the fused family (shaders/fused.comp): a fused elementwise program built at flush
// time by csrc/plan/fuse.cpp. Up to 16 steps (one per original elementwise node) over up to 12
// memory operands sharing one iteration space; too big for the 128 push-constant bytes, so the
// program lives in the submission's parameter buffer and the push constants carry its address.
#ifndef VKML_FUSED_H
#define VKML_FUSED_H
#include "pc.h"

#ifdef __cplusplus
namespace vkml::pc {
#endif

#define FUSED_STEPS 16
#define FUSED_OPERANDS 12
#define FUSED_NONE 255u      // a step source or store slot that is absent
#define FUSED_REG 128u       // source FUSED_REG | k: the result of step k (kept in a register)
#define FUSED_ELEMS 4u       // elements an invocation takes, 128 apart (fused.glsl fused_index)
#define FUSED_CONTIGUOUS 1u  // every operand is dense in the same order: offsets are i * size
#define FUSED_SCALAR_B 1u    // step flag: b is the scalar s1 (EW_SCALAR_B)
#define FUSED_HAS_A 2u       // step flag: the node has operand a
#define FUSED_KEEP 4u        // step flag: a step after the next one reads its result (reg[k])

PB_BEGIN(FusedProgram)
  u32 ndim; u32 nops; u32 nsteps; u32 flags;
  i32 shape[4];                        // innermost first
  u64 addr[FUSED_OPERANDS];            // the fused node's operands t[0..nops)
  u32 dtype[FUSED_OPERANDS];
  i32 strides[FUSED_OPERANDS * 4];     // bytes, [operand * 4 + dim], innermost first
  u32 code[FUSED_STEPS];               // OP_* of each step (its row's)
  u32 src[FUSED_STEPS];                // a | b << 8 | old output (where) << 16 | store operand << 24
  u32 dts[FUSED_STEPS];                // out | a << 8 | b << 16 | compute << 24 (dtype codes)
  u32 sflags[FUSED_STEPS];             // FUSED_SCALAR_B, FUSED_HAS_A, FUSED_KEEP
  u64 s0[FUSED_STEPS]; u64 s1[FUSED_STEPS];  // raw scalars, as EwParams alpha / bscalar
  u64 scratch;  // check mode: step k stores its result at scratch + k * numel * 8 + i * size, dense
PB_END(FusedProgram)

PC_BEGIN(FusedPc)
  u64 params;  // address of the FusedProgram (put_params)
  u32 numel; u32 pad_;
PC_END(FusedPc)

#ifdef __cplusplus
}  // namespace vkml::pc
#endif
#endif
