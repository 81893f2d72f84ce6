// The ops every PrivateUse1 device must provide: allocation, views, resize/set_, copies, item().
#include <ATen/EmptyTensor.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/ExpandUtils.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/core/op_registration/adaption.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/cat_meta.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/view_native.h>
#include <c10/util/Half.h>
#include <c10/util/BFloat16.h>
#include <torch/library.h>

#include <cstring>
#include <mutex>
#include <set>

#include "aten/common.h"
#include "aten/devices.h"
#include "aten/kernels.h"
#include "aten/pinned.h"
#include "aten/structured.h"
#include "aten/trace.h"
#include "util/env.h"

namespace vkml::aten {
namespace {

constexpr c10::DispatchKeySet kKeys{c10::DispatchKey::PrivateUse1};

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                               std::optional<c10::Layout> layout, std::optional<c10::Device> dev,
                               std::optional<bool> pin, std::optional<c10::MemoryFormat> mf) {
  const auto st = c10::dtype_or_default(dtype);
  to_dtype(st, "empty");
  if (dev) check_device_index(dev->index());
  OnDevice on(dev ? dev->index() : -1);  // "vkml:1" allocates there; "vkml" on the current device
  return at::detail::empty_generic(size, allocator(), kKeys, st, mf);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<c10::ScalarType> dtype,
                         std::optional<c10::Layout> layout, std::optional<c10::Device> dev,
                         std::optional<bool> pin) {
  const auto st = c10::dtype_or_default(dtype);
  to_dtype(st, "empty_strided");
  if (dev) check_device_index(dev->index());
  OnDevice on(dev ? dev->index() : -1);
  return at::detail::empty_strided_generic(size, stride, allocator(), kKeys, st);
}

// Grows the storage (keeping its bytes) so that it holds `need` bytes, on the storage's device.
void ensure_storage(const at::Tensor& self, size_t need) {
  c10::StorageImpl* s = self.unsafeGetTensorImpl()->unsafe_storage().unsafeGetStorageImpl();
  if (need <= s->nbytes()) return;
  OnDevice on(s->device().type() == c10::DeviceType::PrivateUse1 ? s->device().index() : -1);
  TORCH_CHECK(s->resizable(), "Trying to resize storage that is not resizable");
  c10::DataPtr fresh = allocator()->allocate(need);
  if (s->nbytes()) allocator()->copy_data(fresh.get(), s->data(), s->nbytes());
  s->set_data_ptr_noswap(std::move(fresh));
  s->set_nbytes(need);
}

const at::Tensor& resize_(const at::Tensor& self, c10::IntArrayRef size, std::optional<c10::MemoryFormat> mf) {
  auto* impl = self.unsafeGetTensorImpl();
  if (self.sizes() == size && !mf) return self;
  impl->set_sizes_contiguous(size);
  if (mf) {
    TORCH_CHECK(*mf != c10::MemoryFormat::Preserve, "Unsupported memory format", *mf);
    impl->empty_tensor_restride(*mf);
  }
  ensure_storage(self, at::detail::computeStorageNbytes(size, self.strides(), self.itemsize(),
                                                        size_t(self.storage_offset())));
  return self;
}

at::Tensor& set_storage(at::Tensor& self, c10::Storage src, int64_t offset, c10::IntArrayRef size,
                        c10::IntArrayRef stride) {
  TORCH_CHECK(offset >= 0, "Tensor: invalid storage offset ", offset);
  auto* impl = self.unsafeGetTensorImpl();
  // torch's check (at::native::checkSetStorage): a CPU storage's pointer is no device address
  TORCH_CHECK(impl->storage().is_alias_of(src) || self.storage().device() == src.device(),
              "Attempted to set the storage of a tensor on device \"", self.storage().device(),
              "\" to a storage on different device \"", src.device(),
              "\".  This is no longer allowed; the devices must match.");
  if (!impl->storage().is_alias_of(src)) impl->set_storage_keep_dtype(std::move(src));
  impl->set_storage_offset(offset);
  if (stride.empty()) impl->set_sizes_contiguous(size);
  else impl->set_sizes_and_strides(size, stride);
  ensure_storage(self, at::detail::computeStorageNbytes(self.sizes(), self.strides(), self.itemsize(),
                                                        size_t(offset)));
  return self;
}

at::Tensor& set_source_storage_offset(at::Tensor& self, c10::Storage src, int64_t offset, c10::IntArrayRef size,
                                      c10::IntArrayRef stride) {
  return set_storage(self, std::move(src), offset, size, stride);
}

at::Tensor& set_source_storage(at::Tensor& self, c10::Storage src) {
  const int64_t n = int64_t(src.nbytes() / self.itemsize());
  return set_storage(self, std::move(src), 0, {n}, {});
}

at::Tensor& set_source_tensor(at::Tensor& self, const at::Tensor& src) {
  if (self.is_same(src)) return self;
  return set_storage(self, src.storage(), src.storage_offset(), src.sizes(), src.strides());
}

at::Tensor& set_empty(at::Tensor& self) {
  OnDevice on(self);
  c10::Storage s(c10::Storage::use_byte_size_t(), 0, allocator(), true);
  return set_storage(self, std::move(s), 0, {0}, {});
}

c10::Scalar local_scalar_dense(const at::Tensor& self) {
  TORCH_CHECK(self.numel() > 0, "vkml: item() on an empty tensor");
  uint8_t b[8] = {};
  OnDevice on(self);
  check(device().download(addr_of(self), b, self.itemsize()));
  auto get = [&](auto v) { std::memcpy(&v, b, sizeof(v)); return v; };
  switch (self.scalar_type()) {
    case c10::ScalarType::Float: return c10::Scalar(double(get(float{})));
    case c10::ScalarType::Double: return c10::Scalar(get(double{}));
    case c10::ScalarType::Half: return c10::Scalar(get(c10::Half{}));
    case c10::ScalarType::BFloat16: return c10::Scalar(get(c10::BFloat16{}));
    case c10::ScalarType::Byte: return c10::Scalar(int64_t(get(uint8_t{})));
    case c10::ScalarType::Char: return c10::Scalar(int64_t(get(int8_t{})));
    case c10::ScalarType::Short: return c10::Scalar(int64_t(get(int16_t{})));
    case c10::ScalarType::Int: return c10::Scalar(int64_t(get(int32_t{})));
    case c10::ScalarType::Long: return c10::Scalar(get(int64_t{}));
    case c10::ScalarType::Bool: return c10::Scalar(b[0] != 0);
    default: TORCH_CHECK(false, "vkml: item() does not support ", self.dtype());
  }
}

bool on_vkml(const at::Tensor& t) { return t.device().type() == c10::DeviceType::PrivateUse1; }

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  TORCH_CHECK_TYPE(!self.is_complex() && !dst.is_complex(),
                   "vkml: complex dtypes are not supported (copy from ", self.dtype(), " to ", dst.dtype(), ")");
  to_dtype(self.scalar_type(), "copy_");
  to_dtype(dst.scalar_type(), "copy_");
  if (dst.numel() == 0) return dst;
  // torch's copy_ checks overlap in its TensorIterator, which it builds only after handing copies
  // that involve another backend to _copy_from: the same checks (and early exit) as the CPU's.
  if (dst.is_alias_of(self) && dst.storage_offset() == self.storage_offset() && dst.sizes() == self.sizes() &&
      dst.strides() == self.strides() && dst.scalar_type() == self.scalar_type())
    return dst;
  at::assert_no_internal_overlap(dst);
  at::assert_no_partial_overlap(dst, self);
  // On the destination's device, or the source's for copies to the host.
  OnDevice on(on_vkml(dst) ? dst : self);
  if (on_vkml(self) && on_vkml(dst) && self.device() != dst.device()) {
    // Between two vkml devices: through the host (their memory is not shared).
    copy_from(self.to(c10::kCPU), dst, false);
  } else if (on_vkml(self) && on_vkml(dst)) {
    copy_on_device(dst, self);
  } else if (on_vkml(dst)) {  // cpu -> vkml: convert on the CPU (its casts are the reference)
    at::Tensor src = self.to(dst.scalar_type()).expand(dst.sizes()).contiguous();
    const size_t bytes = size_t(src.nbytes());
    // From pinned memory without blocking (as CUDA: the source must not change until a sync): the
    // GPU copies from it directly. Otherwise its bytes are captured now, into a staging buffer.
    // (Pinned blocks belong to vkml:0: another device cannot read them.)
    const uint64_t pinned = non_blocking && dst.device().index() == 0 ? pinned_device_address(src.const_data_ptr(), bytes) : 0;
    if (pinned && dst.is_contiguous()) {
      check(device().upload_from_host_block(addr_of(dst), pinned, bytes));
    } else if (dst.is_contiguous()) {
      check(device().upload(addr_of(dst), src.const_data_ptr(), bytes));
    } else {
      at::Tensor tmp = at::empty(dst.sizes(), dst.options());
      check(device().upload(addr_of(tmp), src.const_data_ptr(), size_t(src.nbytes())));
      copy_on_device(dst, tmp);
    }
  } else {  // vkml -> cpu
    at::Tensor src = self.is_contiguous() ? self : self.contiguous();
    if (dst.is_contiguous() && dst.scalar_type() == src.scalar_type() && dst.sizes() == src.sizes()) {
      // Into pinned memory (vkml:0's): the GPU writes it directly, no staging copy on the host.
      const size_t bytes = size_t(src.nbytes());
      const uint64_t pinned = self.device().index() == 0 ? pinned_device_address(dst.data_ptr(), bytes) : 0;
      if (pinned) check(device().download_to_host_block(addr_of(src), pinned, bytes));
      else check(device().download(addr_of(src), dst.data_ptr(), bytes));
    } else {
      at::Tensor tmp = at::empty(src.sizes(), src.options().device(c10::kCPU));
      if (tmp.numel()) check(device().download(addr_of(src), tmp.data_ptr(), size_t(src.nbytes())));
      dst.copy_(tmp);
    }
  }
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  if (dst.sizes() != self.sizes()) dst.resize_(self.sizes());
  return copy_from(self, dst, false);
}

// cat: one strided copy per input into its slice of the output (printing large tensors needs it).
// Checks, dtype promotion, the output's shape and memory format, out= resizing: torch's meta.
at::Tensor cat_impl(const at::ITensorListRef& tensors, int64_t dim, const at::Tensor& given) {
  std::optional<c10::Device> common;  // torch's wrapper check (cat.out is not NoCheck)
  if (given.defined()) c10::impl::check_and_update_common_device(common, given, "aten::cat.out", "out");
  c10::impl::check_and_update_common_device(common, tensors, given.defined() ? "aten::cat.out" : "aten::cat", "tensors");
  OnDevice on(given.defined() ? OnDevice::index_of(given) : -1);
  Structured<at::meta::structured_cat> op(given.defined() ? OutKind::out : OutKind::functional, given);
  const auto pre = op.meta(tensors, dim);
  const at::Tensor& out = op.out_;
  int64_t at0 = 0;
  for (const at::Tensor& t : tensors) {
    if (t.dim() == 1 && t.numel() == 0) continue;  // legacy rule, as torch's: 1-D empty tensors are skipped
    copy_on_device(out.narrow(pre.dim, at0, t.size(pre.dim)), t);
    at0 += t.size(pre.dim);
  }
  return out;
}

at::Tensor& cat_out(const at::ITensorListRef& tensors, int64_t dim, at::Tensor& out) {
  cat_impl(tensors, dim, out);
  return out;
}

at::Tensor cat(const at::ITensorListRef& tensors, int64_t dim) {
  std::optional<c10::Device> dev;
  for (const at::Tensor& t : tensors)
    if (!dev && on_vkml(t)) dev = t.device();
  OnDevice on(dev ? dev->index() : -1);
  return cat_impl(tensors, dim, {});
}

void fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& name = op.schema().operator_name();
  if (tracing()) trace(op, env().cpu_fallback ? Path::cpu_fallback : Path::missing);
  TORCH_CHECK_NOT_IMPLEMENTED(env().cpu_fallback, "vkml: ", name,
                              " is not implemented for the vkml device. Set VKML_CPU_FALLBACK=1 to run "
                              "unsupported ops on the CPU instead (slow; warns once per op).");
  static std::mutex mu;
  static std::set<std::string> warned;
  {
    std::lock_guard<std::mutex> g(mu);
    if (warned.insert(c10::toString(name)).second)
      TORCH_WARN("vkml: ", name, " is not implemented for vkml; running it on the CPU (VKML_CPU_FALLBACK=1)");
  }
  at::native::cpu_fallback(op, stack);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", TORCH_FN(empty_memory_format));
  m.impl("empty_strided", TORCH_FN(empty_strided));
  m.impl("as_strided", TORCH_FN(at::native::as_strided_tensorimpl));
  m.impl("view", TORCH_FN(at::native::view));
  m.impl("_reshape_alias", TORCH_FN(at::native::_reshape_alias));
  m.impl("resize_", TORCH_FN(resize_));
  m.impl("set_.source_Storage", TORCH_FN(set_source_storage));
  m.impl("set_.source_Storage_storage_offset", TORCH_FN(set_source_storage_offset));
  m.impl("set_.source_Tensor", TORCH_FN(set_source_tensor));
  m.impl("set_", TORCH_FN(set_empty));
  m.impl("_local_scalar_dense", TORCH_FN(local_scalar_dense));
  m.impl("_copy_from", TORCH_FN(copy_from));
  m.impl("_copy_from_and_resize", TORCH_FN(copy_from_and_resize));
  m.impl("cat", TORCH_FN(cat));
  m.impl("cat.out", TORCH_FN(cat_out));
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) { m.fallback(torch::CppFunction::makeFromBoxedFunction<&fallback>()); }

}  // namespace vkml::aten
