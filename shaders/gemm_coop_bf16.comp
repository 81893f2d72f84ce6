// variants: f32
// spirv: KHR cooperative matrix, bfloat16 A and B
// bfloat16 matmul on cooperative matrices: gemm_coop.glsl built as gemm_coop.comp is, then
// rewritten to VK_KHR_cooperative_matrix with bfloat16 A and B types (scripts/spv_khr.py).
#version 460
#define COOP_BF16 1
#include "gemm_coop.glsl"
