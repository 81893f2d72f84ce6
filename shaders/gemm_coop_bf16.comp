// variants: f32
// spirv: KHR cooperative matrix, bfloat16
// bfloat16 matmul on subgroup-scope cooperative matrices: gemm_coop.glsl with COOP_BF16, rewritten
// to VK_KHR_cooperative_matrix with bfloat16 matrices (scripts/spv_khr.py).
#version 460
#define COOP_BF16 1
#include "gemm_coop.glsl"
