// What the norm family's aten kernels (norm.cpp, batch_norm.cpp) share: the [A, C, S] view of an
// input, 1-D views of parameters and statistics, and the node they record.
#pragma once
#include <ATen/core/Tensor.h>
#include <ATen/native/cpu/mixed_data_type.h>

#include "aten/call.h"
#include "graph/node.h"

namespace vkml::aten::norm {

// t viewed as [A, C, S] (dims [0, c0) merged into A, [c0, c1) into C, the rest into S), strides
// kept; false when some merged dims do not walk memory as one (then the caller makes t dense).
bool view3(const at::Tensor& t, int c0, int c1, TensorDesc& d, const char* op);

// t as a 3-D view: t itself when its strides allow, else a dense copy in t's memory format.
at::Tensor viewable(const at::Tensor& t, int c0, int c1, TensorDesc& d, const char* op);

// A 1-D descriptor of t's numel elements (made contiguous first when t is not 1-D); absent when
// t is undefined or empty. `keep` receives the tensor the descriptor points into.
TensorDesc vec(const at::Tensor& t, at::Tensor& keep, const char* op);

at::Tensor opt(Call& c, const char* name);  // an optional tensor argument (undefined if None)

// The parameter dtype torch's CPU kernels use: float for a reduced-precision input with float
// parameters (checked as torch checks them), else the input's dtype.
template <class... T>
c10::ScalarType param_type(const at::Tensor& input, const T&... params);

// Records one norm node: nout outputs, nin inputs; absent operands have addr 0.
void record_node(OpId id, const at::Tensor& input, NormArgs args, const TensorDesc* t, int nout, int nin);

template <class... T>
c10::ScalarType param_type(const at::Tensor& input, const T&... params) {
  const bool mixed = at::native::is_mixed_type(input, params...);
  if (mixed) at::native::check_mixed_data_type(input, params...);
  return at::native::param_scalar_type(input, mixed);
}
}  // namespace vkml::aten::norm
