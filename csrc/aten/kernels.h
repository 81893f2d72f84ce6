// The aten side of every op row: one function per row's ATEN column (csrc/aten/<family>.cpp),
// declared here from the op rows and registered by registry.cpp. A row whose function is missing
// does not link.
#pragma once
#include <ATen/core/Tensor.h>

#include "aten/call.h"
#include "graph/node.h"

namespace at { struct TensorIteratorBase; }

namespace vkml::aten {

#define OP(NAME, FAMILY, ATEN, ...) void ATEN(OpId id, Call& c);
#include "op_rows.def"
#undef OP

// Records the nodes of one TensorIterator (any ndim; split for 32-bit indexing). nin: how many of
// its inputs the node reads (-1: all); the rest only took part in its shape and dtype rules.
void emit_elementwise(OpId id, at::TensorIteratorBase& iter, DType compute, ElementwiseArgs args, int nin = -1);
// dst <- src, both on vkml (any dtypes, layouts; src broadcast to dst).
void copy_on_device(const at::Tensor& dst, const at::Tensor& src);

}  // namespace vkml::aten
