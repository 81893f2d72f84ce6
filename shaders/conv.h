// Blocks of the conv family (shaders/conv.comp, shaders/conv_wgrad.comp), in the roles of
// csrc/graph/families/conv.h: small S [N, C0, *Ps], big B [N, C1 * groups, *Pb], weight
// W [C0, C1, *K]. Spatial dims are always three here, outermost first; a 1-d or 2-d convolution
// has leading dims of size 1 (stride 1, padding 0, dilation 1). The geometry is 224 bytes, more
// than the 128 push-constant bytes Vulkan guarantees, so it lives in the submission's parameter
// buffer and the push constants carry its address.
#ifndef VKML_CONV_H
#define VKML_CONV_H
#include "pc.h"

#ifdef __cplusplus
namespace vkml::pc {
#endif

#define CONV_SEQUENTIAL 2u  // conv_wgrad.comp: an invocation (not a workgroup) per result element
#define CONV_FROM_PARTIALS 4u  // conv_wgrad.comp: lane t's sum is partials[t][r] (conv_wtile.comp)
#define CONV_TREE_MIN 256u  // terms per element from which a workgroup shares an element's sum

// Element strides are ordered [n, c, d0, d1, d2] (the weight's [c0, c1, k0, k1, k2]). For the
// bias gradient the lowering puts the gradient in the S role (its channels in c0) and the result
// [C] in the bias role.
PB_BEGIN(ConvGeom)
  i32 n; i32 c0; i32 c1; i32 groups;
  i32 ps[4]; i32 pb[4]; i32 k[4];  // spatial sizes of S, B, W ([3] unused)
  i32 stride[4]; i32 pad[4]; i32 dil[4];
  i32 st_s[8]; i32 st_b[8]; i32 st_w[8];
  i32 st_bias;
  u32 dtypes;  // S | B << 8 | W << 16 | bias << 24
  u32 flags;   // CONV_SEQUENTIAL
  u32 pad_;
PB_END(ConvGeom)

// The result's address is in the slot of its role (bias: the bias gradient's result).
PC_BEGIN(ConvPc)
  u64 s; u64 b; u64 w; u64 bias;  // device addresses; bias 0: none
  u64 params;                     // address of the ConvGeom (put_params)
  u64 count;                      // result elements
  u64 partials;                   // the weight gradient's lanes' sums (conv_wtile.comp), or 0
PC_END(ConvPc)

#ifdef __cplusplus
}  // namespace vkml::pc
#endif
#endif
