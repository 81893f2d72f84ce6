// Specialization constant 1: the push constants' dtypes word (pc.dtypes). The lowerings set it on
// GPUs (spec_dtypes() in csrc/backend/vulkan/lower.h), so the driver folds every dtype switch of
// the loads, stores and conversions; left unset (the generic pipeline: CPU devices,
// VKML_SPECIALIZE=0) the shader reads pc.dtypes. Include after common.glsl.
layout(constant_id = 1) const uint SPEC_DTYPES = 0xffffffffu;
const bool SPEC = SPEC_DTYPES != 0xffffffffu;
#define DTYPES (SPEC ? SPEC_DTYPES : pc.dtypes)
