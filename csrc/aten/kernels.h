// The kernels of each kind (one file each), called from the table-driven registry.
#pragma once
#include <ATen/core/Tensor.h>

#include "aten/call.h"
#include "graph/op.h"

namespace at { struct TensorIteratorBase; }

namespace vkml::aten {

void elementwise_kernel(OpId id, Call& c);
void reduce_kernel(OpId id, Call& c);
void gemm_kernel(OpId id, Call& c);
void softmax_kernel(OpId id, Call& c);
void nll_kernel(OpId id, Call& c);

// Records the nodes of one TensorIterator (any ndim; split for 32-bit indexing).
void emit_elementwise(OpId id, at::TensorIteratorBase& iter, DType compute, Scalar s0, Scalar s1 = {});
// dst <- src, both on vkml (any dtypes, layouts; src broadcast to dst).
void copy_on_device(const at::Tensor& dst, const at::Tensor& src);

}  // namespace vkml::aten
