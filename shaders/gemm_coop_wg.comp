// variants: f32
// spirv: KHR cooperative matrix
// float16 matmul on workgroup-scope cooperative matrices (VK_NV_cooperative_matrix2):
// gemm_coop.glsl with COOP_WG, written with NV types and rewritten to VK_KHR_cooperative_matrix
// (scripts/spv_khr.py).
#version 460
#define COOP_WG 1
#include "gemm_coop.glsl"
