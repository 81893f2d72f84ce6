// variants: f32
// spirv: KHR cooperative matrix, bfloat16, rne
// bfloat16 matmul on workgroup-scope cooperative matrices (VK_NV_cooperative_matrix2):
// gemm_coop.glsl with COOP_WG and COOP_BF16, rewritten as gemm_coop_bf16.comp is. The float32 tile
// is rounded to nearest even element by element (NV_cooperative_matrix2's per-element operation,
// scripts/spv_khr.py rne) before its conversion to bfloat16, which NVIDIA's driver truncates.
#version 460
#define COOP_WG 1
#define COOP_BF16 1
#include "gemm_coop.glsl"
