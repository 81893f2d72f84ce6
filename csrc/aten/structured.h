// Runs torch's own structured meta function (its shape, dtype and argument checks, with torch's
// messages) for a vkml kernel: Structured<at::meta::structured_gather> op(...); op.meta(...);
// then op.out_ is the output, allocated, resized (out=) or checked (in place) as torch's
// generated wrappers do (op.out1_ the second one, for metas with two: max.dim, nll_loss_forward). Works for metas built on TensorIteratorBase too (index.Tensor): the
// iterator then sees the output as it would on the CPU.
#pragma once
#include <ATen/MemoryOverlap.h>
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

// The kind of a call (aten/call.h's Call): in place, out=, or functional.
template <class CallT>
OutKind kind_of(CallT& c) {
  return c.inplace() ? OutKind::inplace : c.out().defined() ? OutKind::out : OutKind::functional;
}

template <class Meta>
struct Structured final : Meta {
  // given: the out= tensor (out) or self (inplace); undefined for functional
  explicit Structured(OutKind kind, at::Tensor given = {}, at::Tensor given1 = {})
      : kind_(kind), out_(std::move(given)), out1_(std::move(given1)) {}

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
  const at::Tensor& maybe_get_output(int64_t i) override { return i ? out1_ : out_; }

  OutKind kind_;
  at::Tensor out_, out1_;

 private:
  void set(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides, const at::TensorOptions& options) {
    TORCH_INTERNAL_ASSERT(i == 0 || i == 1, "vkml: Structured holds two outputs");
    at::Tensor& o = i ? out1_ : out_;  // the output being set
    switch (kind_) {
      case OutKind::functional:
        o = strides.empty() ? at::empty(sizes, options) : at::empty_strided(sizes, strides, options);
        break;
      case OutKind::out: {  // torch's resize_out
        TORCH_CHECK(options.dtype() == o.dtype(), "Expected out tensor to have dtype ", options.dtype(),
                    ", but got ", o.dtype(), " instead");
        // an out= tensor of another device: the same-device error torch's device check raises first
        TORCH_CHECK(options.device() == o.device(), "Expected all tensors to be on the same device, but found at "
                    "least two devices, ", o.device(), " and ", options.device(), "!");
        const bool resized = at::native::resize_output(o, sizes);
        if (resized && !strides.empty()) o.as_strided_(sizes, strides);
        else if (resized && options.memory_format_opt().has_value())
          o.unsafeGetTensorImpl()->empty_tensor_restride(*options.memory_format_opt());
        break;
      }
      case OutKind::inplace:  // torch's check_inplace
        TORCH_CHECK(options.dtype() == o.dtype(), "Bad in-place call: input tensor dtype ", o.dtype(),
                    " and output tensor dtype ", options.dtype(), " should match");
        TORCH_CHECK(options.device() == o.device(), "Bad in-place call: input tensor device ", o.device(),
                    " and output tensor device ", options.device(), " should match");
        TORCH_CHECK(sizes == o.sizes(), "Bad in-place call: input tensor size ", o.sizes(),
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

// Where a kernel writes a meta's output `out`: out itself when it is fresh (functional) or, for
// out=, when its layout is the one the kernel writes (`layout_ok`, e.g. out.is_contiguous()) and
// it shares no memory with the inputs; else a contiguous temporary that finish() copies into out.
struct Dest {
  Dest(const at::Tensor& out, OutKind kind, bool layout_ok, std::initializer_list<const at::Tensor*> inputs)
      : out(out) {
    bool ok = kind == OutKind::functional || layout_ok;
    for (const at::Tensor* in : inputs)
      if (ok && in && in->defined() && at::get_overlap_status(out, *in) != at::MemOverlapStatus::No) ok = false;
    if (!ok) tmp = at::empty(out.sizes(), out.options().memory_format(at::MemoryFormat::Contiguous));
  }
  const at::Tensor& t() const { return tmp.defined() ? tmp : out; }
  void finish() const {
    if (tmp.defined()) out.copy_(tmp);
  }
  at::Tensor out, tmp;
};

}  // namespace vkml::aten
