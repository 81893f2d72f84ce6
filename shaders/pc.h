// What every family's parameter header (shaders/params.h, shaders/<family>.h) is written with:
// one text read by both C++ (csrc/backend/vulkan) and GLSL.
//   PC_BEGIN(Name) ... PC_END(Name)  a push-constant block, at most the 128 bytes Vulkan 1.3
//                                    guarantees (static_assert on the C++ side); GLSL calls it `pc`
//   PB_BEGIN(Name) ... PB_END(Name)  a parameter block in the submission's parameter buffer (for
//                                    what does not fit 128 bytes), at most 1024 bytes; GLSL reads it
//                                    through a buffer reference: Name p = Name(pc.params);
//                                    C++ fills it with put_params(dispatch, block, offsetof(Pc, params))
// Conventions: addresses are buffer-device addresses; dtype codes are core/dtype.h's (DT_*);
// shapes list dim 0 as the innermost (fastest varying) dimension unless a block says otherwise.
#ifndef VKML_PC_H
#define VKML_PC_H

#ifdef __cplusplus
#include <cstdint>
namespace vkml::pc {
using u64 = uint64_t; using u32 = uint32_t; using i32 = int32_t; using i64 = int64_t;
#define PC_BEGIN(name) struct name {
#define PC_END(name) }; static_assert(sizeof(name) <= 128, #name " exceeds 128 bytes");
#define PB_BEGIN(name) struct alignas(16) name {
#define PB_END(name) }; static_assert(sizeof(name) <= 1024, #name " exceeds the 1024-byte parameter slot");
#else
#define u64 uint64_t
#define u32 uint
#define i32 int
#define i64 int64_t
#define PC_BEGIN(name) layout(push_constant, std430) uniform name {
#define PC_END(name) } pc;
#define PB_BEGIN(name) layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer name {
#define PB_END(name) };
#endif

#define DT_U8 0
#define DT_I8 1
#define DT_I16 2
#define DT_I32 3
#define DT_I64 4
#define DT_F16 5
#define DT_F32 6
#define DT_F64 7
#define DT_BOOL 11
#define DT_BF16 15

#ifdef __cplusplus
}  // namespace vkml::pc
#endif
#endif
