// The torch release this build compiles against, for the few behaviours that changed between
// the releases vkml supports (2.11 to 2.15). Each use says what changed.
#pragma once
#if __has_include(<torch/headeronly/version.h>)
#include <torch/headeronly/version.h>
#endif
#if defined(TORCH_VERSION_MAJOR) && (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 13))
#define VKML_TORCH_AT_LEAST_2_13 1
#else
#define VKML_TORCH_AT_LEAST_2_13 0
#endif
#if defined(TORCH_VERSION_MAJOR) && (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 15))
#define VKML_TORCH_AT_LEAST_2_15 1
#else
#define VKML_TORCH_AT_LEAST_2_15 0
#endif
