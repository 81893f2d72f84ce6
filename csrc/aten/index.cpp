// The index family's gathers and data-dependent selections (docs/indexing.md):
//   index.Tensor   torch's own structured meta (make_info: masks through nonzero, broadcasting,
//                  transposition when the indexed dims are apart, its checks) builds the
//                  TensorIterator; index_stub, registered for PrivateUse1, records the node
//   index_select   torch's CPU checks; the out-of-range error of the CPU path it would take
//   gather         torch's structured meta
//   nonzero, masked_select  a count node, one read-back of the count, then the write node
//   masked_scatter_  a composite: nonzero (one read-back), then index_put_
// embedding's forward is torch's own composite: index_select.
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/IndexKernel.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/gather_meta.h>
#include <ATen/ops/index_native.h>
#include <ATen/ops/nonzero.h>
#include <torch/library.h>

#include "aten/call.h"
#include "aten/common.h"
#include "aten/composite.h"
#include "aten/index_walk.h"
#include "aten/kernels.h"
#include "aten/structured.h"
#include "graph/device_assert.h"

namespace vkml::aten {
namespace {


// index_stub for PrivateUse1: operands result, the restrided self, then the int64 indices.
void index_kernel(at::TensorIteratorBase& iter, at::IntArrayRef indexed_sizes, at::IntArrayRef indexed_strides) {
  if (iter.numel() == 0) return;
  IndexWalk w = walk_of_iter(iter, 1, 2, indexed_sizes, indexed_strides);
  w.wrap = true;
  w.error = kIndexOutOfBounds;
  record_gather(OpId::index, w, walked_of(iter, 0));
}

// Coordinates of the nonzero elements of `mask` (any dtype, any layout), or with `src` the
// elements of src (mask's shape) where mask is nonzero. One read-back: the count.
at::Tensor select_nonzero(OpId id, const at::Tensor& mask, const at::Tensor* src) {
  using A = IndexArgs;
  const char* name = op_info(id).name;
  const int64_t M = mask.numel();
  const auto long_opts = mask.options().dtype(c10::ScalarType::Long);
  if (M == 0) return src ? at::empty({0}, src->options()) : at::empty({0, mask.dim()}, long_opts);
  TORCH_CHECK_NOT_IMPLEMENTED(M < int64_t(UINT32_MAX), "vkml: ", name, " over more than 2^32-1 elements");
  IndexArgs a;
  a.ndim = uint8_t(mask.dim());
  for (int d = 0; d < mask.dim(); ++d) a.shape[d] = mask.size(d), a.strides[d] = src ? src->stride(d) : 0;
  const int64_t chunks = (M + a.chunk - 1) / a.chunk;
  at::Tensor sums = at::empty({chunks}, long_opts), total = at::empty({1}, long_opts);
  Node c;
  c.op = OpId::nonzero_count;
  c.nout = 2;
  c.nin = 1;
  c.compute = to_dtype(mask.scalar_type(), name);
  c.t[A::n_sums] = desc_of(sums, name);
  c.t[A::n_total] = desc_of(total, name);
  c.t[A::n_mask] = desc_of(mask, name);
  c.args = a;
  record(c);
  const int64_t count = total.item<int64_t>();  // the synchronisation a data-dependent size needs
  at::Tensor out = src ? at::empty({count}, src->options()) : at::empty({count, mask.dim()}, long_opts);
  if (out.numel() == 0) return out;
  Node n;
  n.op = id;
  n.nout = 1;
  n.nin = src ? 3 : 2;
  n.compute = c.compute;
  n.t[A::s_out] = desc_of(out, name);
  n.t[A::s_mask] = desc_of(mask, name);
  n.t[A::s_sums] = desc_of(sums, name);
  if (src) n.t[A::s_src] = desc_of(*src, name);
  n.args = a;
  record(n);
  return out;
}

}  // namespace

void ix_index(OpId id, Call& c) {
  const at::Tensor self = c.tensor("self");
  const c10::List<std::optional<at::Tensor>> indices = c["indices"].toOptionalTensorList();
  Structured<at::native::structured_index_out> op(kind_of(c), c.out());
  auto pre = op.meta(self, at::IOptTensorListRef(indices));
  op.impl(self, pre.sizes, pre.strides, op.out_);  // -> index_stub -> index_kernel
  c.ret(op.out_);
}

void ix_index_select(OpId id, Call& c) {
  const at::Tensor self = c.tensor("self"), index = c.tensor("index");
  int64_t dim = c["dim"].toInt();
  at::Tensor out = c.out();
  same_device({&self, &index, &out});
  // torch's index_select_out_cpu_ checks, in its order and words
  dim = at::maybe_wrap_dim(dim, self.dim());
  const int64_t numel = index.numel();
  TORCH_CHECK_INDEX(index.dim() <= 1, "index_select(): Index is supposed to be a vector");
  TORCH_CHECK(!(self.dim() == 0 && numel != 1), "index_select(): Index to scalar can have only 1 value, got ", numel,
              " value(s)");
  TORCH_CHECK(index.scalar_type() == c10::ScalarType::Long || index.scalar_type() == c10::ScalarType::Int,
              "index_select(): Expected dtype int32 or int64 for index");
  if (!out.defined()) out = at::empty({0}, self.options());
  TORCH_CHECK(self.scalar_type() == out.scalar_type(), "index_select(): self and result must have the same scalar type");
  std::vector<int64_t> size = self.sizes().vec();
  if (self.dim() > 0) size[size_t(dim)] = numel;
  at::native::resize_output(out, size);
  if (out.numel() == 0 || (self.dim() > 1 && self.numel() == 0)) return c.ret(out);
  // The CPU kernel's dim-1 fast path (contiguous result) raises RuntimeError, the others IndexError.
  const uint8_t err = self.dim() > 1 && dim == 1 && out.is_contiguous() ? kDataOutOfBounds : kIndexOutOfRange;
  IndexWalk w;
  w.set_shape(out.sizes());
  std::vector<int64_t> st(size_t(out.dim()), 0), ist(size_t(out.dim()), 0);
  for (int64_t d = 0; d < out.dim(); ++d) st[size_t(d)] = d == dim ? 0 : self.stride(d);
  if (out.dim() > 0) ist[size_t(dim)] = index.dim() ? index.stride(0) : 0;
  w.self = walked_of(self, st);
  const bool scalar = self.dim() == 0;
  w.add_index(index, ist, scalar ? 1 : self.size(dim), scalar ? 1 : self.stride(dim), int(dim));
  w.error = err;
  record_gather(id, w, walked_of(out, out.strides()));
  c.ret(out);
}

void ix_gather(OpId id, Call& c) {
  const at::Tensor self = c.tensor("self"), index = c.tensor("index");
  const int64_t dim = c["dim"].toInt();
  const at::Tensor out = c.out();
  same_device({&self, &index, &out});
  Structured<at::meta::structured_gather> op(kind_of(c), out);
  op.meta(self, dim, index, c["sparse_grad"].toBool());
  if (index.numel() > 0)
    record_gather(id, walk_along(self, at::maybe_wrap_dim(dim, self.dim()), index, kRuntimeOutOfBounds),
                  walked_of(op.out_, op.out_.strides()));
  c.ret(op.out_);
}

void ix_nonzero(OpId id, Call& c) {
  const at::Tensor self = c.tensor("self");
  at::Tensor out = c.out();
  TORCH_CHECK(!out.defined() || out.scalar_type() == c10::ScalarType::Long,
              "nonzero: Expected out tensor to have scalar type Long but got scalar type", out.scalar_type());
  to_dtype(self.scalar_type(), "nonzero");
  ret_result(c, select_nonzero(id, self, nullptr));
}

void ix_masked_select(OpId id, Call& c) {
  const at::Tensor self = c.tensor("self"), mask = c.tensor("mask");
  at::Tensor out = c.out();
  same_device({&self, &mask, &out});
  TORCH_CHECK(mask.scalar_type() == c10::ScalarType::Bool, "masked_select: expected BoolTensor for mask");
  TORCH_CHECK(!out.defined() || out.scalar_type() == self.scalar_type(),
              "masked_select(): self and result must have the same scalar type");
  auto [m, s] = at::expand_outplace(mask, self);
  ret_result(c, select_nonzero(id, *m, &*s));
}

namespace {

// torch's masked_scatter__cpu checks, then self[nonzero(mask)] = source[:count].
at::Tensor& masked_scatter(at::Tensor& self, const at::Tensor& mask, const at::Tensor& source) {
  at::assert_no_internal_overlap(self);
  TORCH_CHECK(self.scalar_type() == source.scalar_type(), "masked_scatter: expected self and source to have same dtypes but got",
              self.scalar_type(), " and ", source.scalar_type());
  TORCH_CHECK(mask.scalar_type() == c10::ScalarType::Bool,
              "masked_scatter_ only supports boolean masks, but got mask with dtype ", mask.scalar_type());
  same_device({&self, &mask, &source});
  const c10::MaybeOwned<at::Tensor> m = at::expand_inplace(self, mask, "masked_scatter_");
  const at::Tensor where = at::nonzero(*m);
  const int64_t n = where.size(0);
  TORCH_CHECK(n <= source.numel(), "Number of elements of source < number of ones in mask");
  if (n == 0) return self;
  const at::Tensor values = source.reshape({-1}).narrow(0, 0, n);
  if (self.dim() == 0) return self.copy_(values.squeeze(0));
  c10::List<std::optional<at::Tensor>> indices;
  for (int64_t d = 0; d < self.dim(); ++d) indices.push_back(where.select(1, d));
  return self.index_put_(indices, values);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { composite<masked_scatter>(m, "masked_scatter_", {}); }

}  // namespace vkml::aten

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(index_stub, &vkml::aten::index_kernel)
}  // namespace at::native
