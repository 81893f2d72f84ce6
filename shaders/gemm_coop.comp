// variants: f32
// float16 matmul on cooperative matrices (VK_NV_cooperative_matrix): gemm_coop.glsl.
#version 460
#include "gemm_coop.glsl"
