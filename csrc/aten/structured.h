// Runs torch's own structured meta function (its shape, dtype and argument checks, with torch's
// messages) for a vkml kernel: Structured<at::meta::structured_gather> op(...); op.meta(...);
// then op.out_ is the output, allocated, resized (out=) or checked (in place) as torch's
// generated wrappers do. Works for metas built on TensorIteratorBase too (index.Tensor): the
// iterator then sees the output as it would on the CPU.
#pragma once
#include <ATen/TensorIterator.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>

#include <type_traits>

// torch 2.11's set_output_* take dimension names; torch 2.13 has no named tensors.
#if __has_include(<ATen/core/Dimname.h>)
#include <ATen/core/Dimname.h>
#define VKML_DIMNAMES 1
#endif

namespace vkml::aten {

enum class OutKind { functional, out, inplace };

template <class Meta>
struct Structured final : Meta {
  // given: the out= tensor (out) or self (inplace); undefined for functional
  explicit Structured(OutKind kind, at::Tensor given = {}) : kind_(kind), out_(std::move(given)) {}

  // torch 2.13 passes (i, sizes, strides, options); torch 2.11 adds the dim names. Both are
  // declared without `override`: the one matching the installed torch overrides.
  void set_output_strided(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides,
                          at::TensorOptions options) {
    set(i, sizes, strides, options);
  }
  void set_output_raw_strided(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides,
                              at::TensorOptions options) {
    set(i, sizes, strides, options);
  }
#ifdef VKML_DIMNAMES
  void set_output_strided(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides,
                          at::TensorOptions options, at::DimnameList) {
    set(i, sizes, strides, options);
  }
  void set_output_raw_strided(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides,
                              at::TensorOptions options, at::DimnameList) {
    set(i, sizes, strides, options);
  }
#endif
  const at::Tensor& maybe_get_output(int64_t) override { return out_; }

  OutKind kind_;
  at::Tensor out_;

 private:
  void set(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides, const at::TensorOptions& options) {
    switch (kind_) {
      case OutKind::functional:
        out_ = strides.empty() ? at::empty(sizes, options) : at::empty_strided(sizes, strides, options);
        break;
      case OutKind::out: {  // torch's resize_out
        TORCH_CHECK(options.dtype() == out_.dtype(), "Expected out tensor to have dtype ", options.dtype(),
                    ", but got ", out_.dtype(), " instead");
        TORCH_CHECK(options.device() == out_.device(), "Expected out tensor to have device ", options.device(),
                    ", but got ", out_.device(), " instead");
        const bool resized = at::native::resize_output(out_, sizes);
        if (resized && !strides.empty()) out_.as_strided_(sizes, strides);
        else if (resized && options.memory_format_opt().has_value())
          out_.unsafeGetTensorImpl()->empty_tensor_restride(*options.memory_format_opt());
        break;
      }
      case OutKind::inplace:  // torch's check_inplace
        TORCH_CHECK(options.dtype() == out_.dtype(), "Bad in-place call: input tensor dtype ", out_.dtype(),
                    " and output tensor dtype ", options.dtype(), " should match");
        TORCH_CHECK(options.device() == out_.device(), "Bad in-place call: input tensor device ", out_.device(),
                    " and output tensor device ", options.device(), " should match");
        TORCH_CHECK(sizes == out_.sizes(), "Bad in-place call: input tensor size ", out_.sizes(),
                    " and output tensor size ", sizes, " should match");
        break;
    }
    if constexpr (std::is_base_of_v<at::TensorIteratorBase, Meta>) {
#ifdef VKML_DIMNAMES
      if constexpr (requires(Meta& m) { m.Meta::set_output_raw_strided(i, sizes, strides, options, at::DimnameList{}); })
        Meta::set_output_raw_strided(i, sizes, strides, options, at::DimnameList{});
      else
#endif
        Meta::set_output_raw_strided(i, sizes, strides, options);
    }
  }
};

}  // namespace vkml::aten
