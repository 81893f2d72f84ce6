// Blocks and constants of the random family (shaders/random.comp; csrc/backend/vulkan/
// lower_random.cpp fills the block; csrc/backend/cpu/random.cpp, the oracle, uses the constants).
// Operand slots: csrc/graph/families/random.h. Dims here are outermost first, as TensorDesc's.
// The transforms' constants are bit patterns, so that the shader and the oracle use the same
// values whatever their compilers' decimal parsing does (the stream is defined by them:
// docs/random.md).
#ifndef VKML_RNG_H
#define VKML_RNG_H
#include "pc.h"

#ifdef __cplusplus
namespace vkml::pc {
#endif

#define RNG_HAS_IN 1u      // slot 2 (dropout's x) or slot 1 (bernoulli's p tensor) is present
#define RNG_CONTIGUOUS 2u  // every operand is dense in row-major order: element offset = index
#define RNG_BLOCK4 4u      // and each operand's address is aligned for blocks of 4 elements: one
                           // invocation per 4 elements, loaded and stored as whole words
#define RNG_MAX_DIMS 8

PB_BEGIN(RngParams)
  u64 addr[3]; u64 pad0;  // operand addresses by slot (0: absent)
  u64 numel; u64 seed; u64 offset;
  u64 a; u64 b; u64 c;    // the node's parameters: raw scalars of the compute type (int64 for random)
  u32 dt[3]; u32 ndim;    // dtypes by slot; coalesced dims
  u32 flags; u32 pad1; u32 pad2; u32 pad3;
  i64 size[RNG_MAX_DIMS];
  i64 st[3 * RNG_MAX_DIMS];  // element strides, slot-major: st[slot * 8 + dim]
PB_END(RngParams)

PC_BEGIN(RngPc)
  u64 params;  // device address of this dispatch's RngParams
PC_END(RngPc)

// log(1 + f) = 2 atanh(s) = 2 (s + s z (c0 + z (c1 + ...))), s = f / (2 + f), z = s^2: c_k = 1/(2k+3)
#define RNG_LOG_F32 0x3eaaaaabu, 0x3e4ccccdu, 0x3e124925u, 0x3de38e39u, 0x3dba2e8cu
#define RNG_LOG_F64 0x3fd5555555555555UL, 0x3fc999999999999aUL, 0x3fc2492492492492UL, 0x3fbc71c71c71c71cUL, 0x3fb745d1745d1746UL, 0x3fb3b13b13b13b14UL, 0x3fb1111111111111UL, 0x3fae1e1e1e1e1e1eUL, 0x3faaf286bca1af28UL, 0x3fa8618618618618UL, 0x3fa642c8590b2164UL
// sin t = t + t z (s0 + z (s1 + ...)), cos t = 1 + z (c0 + z (c1 + ...)): Taylor, +-1/n!
#define RNG_SIN_F32 0xbe2aaaabu, 0x3c088889u, 0xb9500d01u, 0x3638ef1du, 0xb2d7322bu
#define RNG_COS_F32 0xbf000000u, 0x3d2aaaabu, 0xbab60b61u, 0x37d00d01u, 0xb493f27eu, 0x310f76c7u
#define RNG_SIN_F64 0xbfc5555555555555UL, 0x3f81111111111111UL, 0xbf2a01a01a01a01aUL, 0x3ec71de3a556c734UL, 0xbe5ae64567f544e4UL, 0x3de6124613a86d09UL, 0xbd6ae7f3e733b81fUL, 0x3ce952c77030ad4aUL, 0xbc62f49b46814157UL
#define RNG_COS_F64 0xbfe0000000000000UL, 0x3fa5555555555555UL, 0xbf56c16c16c16c17UL, 0x3efa01a01a01a01aUL, 0xbe927e4fb7789f5cUL, 0x3e21eed8eff8d898UL, 0xbda93974a8c07c9dUL, 0x3d2ae7f3e733b81fUL, 0xbca6827863b97d97UL, 0x3c1e542ba4020225UL
// pi/4, sqrt(2), ln 2 split in a high part with trailing zeros (e * hi is exact) and the rest
#define RNG_PI4_F32 0x3f490fdbu
#define RNG_PI4_F64 0x3fe921fb54442d18UL
#define RNG_SQRT2_F32 0x3fb504f3u
#define RNG_SQRT2_F64 0x3ff6a09e667f3bcdUL
#define RNG_LN2HI_F32 0x3f317200u
#define RNG_LN2LO_F32 0x35bfbe8eu
#define RNG_LN2HI_F64 0x3fe62e42fee00000UL
#define RNG_LN2LO_F64 0x3dea39ef35793c76UL

#ifdef __cplusplus
}  // namespace vkml::pc
#endif
#endif
