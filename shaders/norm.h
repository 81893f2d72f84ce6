// Parameter blocks of the norm family (shaders/norm.comp, csrc/backend/vulkan/lower_norm.cpp).
// Operand slots are NormArgs::Fwd / NormArgs::Bwd (csrc/graph/families/norm.h). The 3-D operands
// (x, y, dy, dx) are [A, C, S] views with element strides (a, c, s) at st[3 * slot]; 1-D operands
// have their stride at st[3 * slot].
#ifndef VKML_NORM_H
#define VKML_NORM_H
#include "pc.h"

#ifdef __cplusplus
namespace vkml::pc {
#endif

#define NORM_SLOTS 10
#define NORM_PER_CHANNEL 1u  // batch norm: a statistics group per channel, over (a, s)
#define NORM_TRAINING 2u     // statistics from the batch (batch norm), not from run_mean / run_var
#define NORM_VAR_GIVEN 4u    // backward: the bstat slot holds a variance, not an rstd
#define NORM_BACKWARD 8u
#define NORM_TORCH_DX 64u  // group norm backward: torch's sums per channel first in the non-finite dx (lower_norm.cpp)
#define NORM_TORCH_DW 32u  // group norm backward: a non-finite dw in torch CPU's per-sample form (lower_norm.cpp)
#define NORM_LAYER 16u     // layer norm (the backward: its dw formula for non-finite statistics; the forward: not folded)
#define NORM_ROWS 128u     // a group is one sample's channels (S = 1), strides within 2^31 bytes: rows addressing (norm.comp set_rows)

PB_BEGIN(NormParams)
  u64 t[NORM_SLOTS];       // operand addresses by slot; 0 = absent
  i64 st[3 * NORM_SLOTS];  // element strides by slot
  u64 eps; u64 momentum;   // raw scalars of the compute type (as EwParams' alpha)
  u32 dt[NORM_SLOTS];      // dtype codes by slot
  u32 A; u32 C; u32 S; u32 G;  // G: statistics groups per sample (per-sample mode; K = C / G)
  u32 flags; u32 lanes; u32 pad_[2];  // lanes: invocations a statistics group (a power of two to 128)
PB_END(NormParams)

PC_BEGIN(NormPc)
  u64 params;  // device address of this dispatch's NormParams
PC_END(NormPc)

#ifdef __cplusplus
}  // namespace vkml::pc
#endif
#endif
