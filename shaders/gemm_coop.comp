// variants: f32
// spirv: KHR cooperative matrix
// float16 matmul on subgroup-scope cooperative matrices: gemm_coop.glsl, rewritten to
// VK_KHR_cooperative_matrix (scripts/spv_khr.py).
#version 460
#include "gemm_coop.glsl"
