// variants: f32
// spirv: KHR cooperative matrix, bfloat16
// bfloat16 matmul on workgroup-scope cooperative matrices (VK_NV_cooperative_matrix2):
// gemm_coop.glsl with COOP_WG and COOP_BF16, rewritten as gemm_coop_bf16.comp is.
#version 460
#define COOP_WG 1
#define COOP_BF16 1
#include "gemm_coop.glsl"
