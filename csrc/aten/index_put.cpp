// The index family's writes (docs/indexing.md):
//   _index_put_impl_  torch's own (masked_fill for a mask and a CPU scalar, make_info, its checks);
//                     index_put_stub, registered for PrivateUse1, records the nodes
//   scatter, scatter_add, index_add  torch's structured metas, then our nodes
//   embedding_dense_backward  torch's CPU checks; out-of-range indices are skipped, as there
// Puts keep the last write per destination (in iteration order); accumulations sum each
// destination's contributions in ascending source position: the same bytes every run.
#include <ATen/TensorUtils.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/ExpandUtils.h>
#include <ATen/native/IndexKernel.h>
#include <ATen/native/TensorAdvancedIndexing.h>
#include <ATen/native/TensorAdvancedIndexingUtils.h>
#include <ATen/ops/_index_put_impl_native.h>
#include <ATen/ops/index_add_meta.h>
#include <ATen/ops/scatter_add_meta.h>
#include <ATen/ops/scatter_meta.h>
#include <ATen/ops/zeros.h>

#include "aten/call.h"
#include "aten/common.h"
#include "aten/index_walk.h"
#include "aten/kernels.h"
#include "aten/structured.h"
#include "graph/device_assert.h"

namespace vkml::aten {
namespace {

at::Tensor given_of(Call& c) { return c.inplace() ? c.tensor("self") : c.out(); }

// index_put_stub for PrivateUse1: operands the restrided self (output), values, the indices.
void index_put_kernel(at::TensorIterator& iter, at::IntArrayRef indexed_sizes, at::IntArrayRef indexed_strides,
                      bool accumulate) {
  if (iter.numel() == 0) return;
  IndexWalk w = walk_of_iter(iter, 0, 2, indexed_sizes, indexed_strides);
  w.wrap = true;
  w.error = kIndexOutOfBounds;
  const Walked values = walked_of(iter, 1);
  if (accumulate) record_accumulate(OpId::index_put_acc, w, values, AccumOptions{});
  else record_put(OpId::index_put, w, &values, 0);
}

// torch's make_info (TensorAdvancedIndexingUtils.h) and AdvancedIndex constructor, whose symbol
// libtorch does not export: the indices broadcast, masks through nonzero, self transposed when the
// indexed dims are apart; then self restrided (0 over the indexed dims) and the indices reshaped
// to the result's rank. int32 indices stay int32 (the kernel reads both).
struct Advanced {
  at::Tensor src;
  std::vector<at::Tensor> indices;
  std::vector<int64_t> sizes, strides;  // strides in bytes, as index_put_stub takes them
};

Advanced advanced_index(at::Tensor self, const c10::List<std::optional<at::Tensor>>& orig) {
  at::native::checkIndexTensorTypes(orig, /*allow_int*/ true);
  std::vector<at::Tensor> indices = at::native::expandTensors(self, orig, /*ensure_same_device=*/true);
  try {
    indices = at::expand_outplace(indices);
  } catch (std::exception&) {
    TORCH_CHECK_INDEX(false, "shape mismatch: indexing tensors could not be broadcast together with shapes ",
                      at::native::shapes_as_str(indices));
  }
  while (indices.size() < size_t(self.dim())) indices.emplace_back();
  if (!at::native::hasContiguousSubspace(indices)) std::tie(self, indices) = at::native::transposeToFront(self, indices);
  Advanced r;
  int64_t before = 0, after = 0, indexed = 0;
  at::IntArrayRef replacement;
  for (size_t d = 0; d < indices.size(); ++d) {
    if (!indices[d].defined()) {
      (indexed == 0 ? before : after) += 1;
      continue;
    }
    ++indexed;
    replacement = indices[d].sizes();
    r.sizes.push_back(self.size(int64_t(d)));
    r.strides.push_back(self.stride(int64_t(d)) * int64_t(self.element_size()));
  }
  if (std::find(r.sizes.begin(), r.sizes.end(), 0) != r.sizes.end() &&
      std::find(replacement.begin(), replacement.end(), 0) == replacement.end())
    TORCH_CHECK_INDEX(false, "index is out of bounds for dimension with size 0");
  std::vector<int64_t> shape = self.sizes().vec(), st = self.strides().vec();
  shape.erase(shape.begin() + before, shape.begin() + before + indexed);
  st.erase(st.begin() + before, st.begin() + before + indexed);
  shape.insert(shape.begin() + before, replacement.begin(), replacement.end());
  st.insert(st.begin() + before, replacement.size(), 0);
  r.src = self.as_strided(shape, st);
  for (const at::Tensor& ix : indices) {
    if (!ix.defined()) continue;
    std::vector<int64_t> s(size_t(before), 1);
    s.insert(s.end(), ix.sizes().begin(), ix.sizes().end());
    s.insert(s.end(), size_t(after), 1);
    r.indices.push_back(ix.reshape(s));
  }
  return r;
}

// index_put_with_sort_stub for PrivateUse1: torch sends accumulate (and deterministic) puts here,
// after its masked_fill and overlap checks; make_index_put_iterator's checks, then the kernel.
void index_put_sorted_kernel(at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices,
                             const at::Tensor& value, bool accumulate, bool) {
  TORCH_CHECK(value.device() == self.device(), "expected device ", self.device(), " but got device ", value.device(),
              " for value tensor");
  Advanced info = advanced_index(self, indices);
  TORCH_CHECK(at::is_expandable_to(value.sizes(), info.src.sizes()), "shape mismatch: value tensor of shape ",
              value.sizes(), " cannot be broadcast to indexing result of shape ", info.src.sizes());
  TORCH_CHECK(value.scalar_type() == info.src.scalar_type(), "Index put requires the source and destination dtypes "
              "match, got ", info.src.scalar_type(), " for the destination and ", value.scalar_type(), " for the source.");
  at::TensorIteratorConfig config;
  config.set_check_mem_overlap(false).resize_outputs(false).check_all_same_dtype(false);
  config.add_output(info.src).add_const_input(value);
  for (const at::Tensor& ix : info.indices) config.add_const_input(ix);
  at::TensorIterator iter = config.build();
  index_put_kernel(iter, info.sizes, info.strides, accumulate);
}

}  // namespace

void ix_index_put(OpId, Call& c) {
  at::Tensor self = c.tensor("self");
  const at::Tensor values = c.tensor("values");
  at::native::_index_put_impl_(self, c["indices"].toOptionalTensorList(), values, c["accumulate"].toBool(),
                               c["unsafe"].toBool());
  c.ret(self);
}

void ix_scatter(OpId id, Call& c) {
  const at::Tensor self = c.tensor("self"), index = c.tensor("index");
  const int64_t dim = c["dim"].toInt();
  const bool has_src = c.index("src") >= 0;
  const at::Tensor src = has_src ? c.tensor("src") : at::Tensor(), given = given_of(c);
  same_device({&self, &index, &src, &given});
  at::Tensor result;
  if (has_src) {
    Structured<at::meta::structured_scatter_src> op(kind_of(c), given);
    op.meta(self, dim, index, src);
    result = op.out_;
  } else {
    Structured<at::meta::structured_scatter_value> op(kind_of(c), given);
    op.meta(self, dim, index, c["value"].toScalar());
    result = op.out_;
  }
  if (!result.is_same(self)) result.copy_(self);
  if (index.numel() > 0) {
    const IndexWalk w = walk_along(result, at::maybe_wrap_dim(dim, self.dim()), index, kRuntimeOutOfBounds);
    if (has_src) {
      const Walked v = walked_of(src, src.strides());
      record_put(id, w, &v, 0);
    } else {
      record_put(id, w, nullptr, scalar_bits(c["value"].toScalar(), self.scalar_type()));
    }
  }
  c.ret(result);
}

void ix_scatter_add(OpId id, Call& c) {
  const at::Tensor self = c.tensor("self"), index = c.tensor("index"), src = c.tensor("src"), given = given_of(c);
  const int64_t dim = c["dim"].toInt();
  same_device({&self, &index, &src, &given});
  Structured<at::meta::structured_scatter_add> op(kind_of(c), given);
  op.meta(self, dim, index, src);
  at::Tensor result = op.out_;
  if (!result.is_same(self)) result.copy_(self);
  if (index.numel() > 0)
    record_accumulate(id, walk_along(result, at::maybe_wrap_dim(dim, self.dim()), index, kRuntimeOutOfBounds),
                      walked_of(src, src.strides()), AccumOptions{});
  c.ret(result);
}

void ix_index_add(OpId id, Call& c) {
  const at::Tensor self = c.tensor("self"), index = c.tensor("index"), source = c.tensor("source"), given = given_of(c);
  const c10::Scalar alpha = c["alpha"].toScalar();
  same_device({&self, &index, &source, &given});
  Structured<at::meta::structured_index_add> op(kind_of(c), given);
  const int64_t dim = op.meta(self, c["dim"].toInt(), index, source, alpha).dim;
  at::Tensor result = op.out_;
  if (!result.is_same(self)) result.copy_(self);
  if (index.numel() > 0 && (result.dim() <= 1 || self.numel() > 0)) {
    // Which error torch's CPU kernel raises: it runs scatter_add (RuntimeError naming the dim)
    // for an outer or inner dim with alpha 1, int64 indices and matching slices, else a loop
    // with "index out of range in self" (IndexError).
    bool via_scatter = result.dim() > 1 && (dim == 0 || dim == result.dim() - 1) && alpha.equal(1.0) &&
                       index.scalar_type() == c10::ScalarType::Long;
    for (int64_t d = 0; via_scatter && d < result.dim(); ++d) via_scatter = d == dim || result.size(d) == source.size(d);
    IndexWalk w;
    const int64_t numel = index.numel();
    std::vector<int64_t> shape, st, ist, vst;  // iteration: result's dims, `dim` numel long
    if (result.dim() <= 1) {  // torch's element loop
      TORCH_CHECK(source.dim() <= 1, "source.dim() (", source.dim(), ") must one or zero for given self.dim() (",
                  self.dim(), ")");
      shape = {numel}, st = {0}, ist = {index.dim() ? index.stride(0) : 0};
      vst = {source.dim() ? source.stride(dim) : 1};
    } else {  // torch's slice adds: source.select(dim, i) broadcast to result.select(dim, k)
      std::vector<int64_t> rs = result.sizes().vec(), ss = source.sizes().vec();
      rs.erase(rs.begin() + dim);
      if (!ss.empty()) ss.erase(ss.begin() + std::min<int64_t>(dim, int64_t(ss.size()) - 1));
      const std::vector<int64_t> bs = at::infer_size(rs, ss);
      TORCH_CHECK(at::IntArrayRef(bs) == at::IntArrayRef(rs), "output with shape ", rs,
                  " doesn't match the broadcast shape ", bs);
      for (int64_t d = 0, k = 0; d < result.dim(); ++d) {
        shape.push_back(d == dim ? numel : result.size(d));
        st.push_back(d == dim ? 0 : result.stride(d));
        ist.push_back(d == dim && index.dim() ? index.stride(0) : 0);
        if (d == dim) {
          vst.push_back(source.dim() ? source.stride(dim) : 0);
          continue;
        }
        const int64_t p = k++ - int64_t(rs.size() - ss.size());  // the source slice's dim, right-aligned
        const int64_t sd = p < 0 ? -1 : (p < dim ? p : p + 1);
        vst.push_back(sd >= 0 && source.size(sd) == result.size(d) ? source.stride(sd) : 0);
      }
    }
    w.set_shape(shape);
    w.self = walked_of(result, st);
    const bool scalar = result.dim() == 0;
    w.add_index(index, ist, scalar ? 1 : result.size(dim), scalar ? 1 : result.stride(dim), int(dim));
    w.error = via_scatter ? kRuntimeOutOfBounds : kIndexOutOfRange;
    AccumOptions opt;
    opt.alpha = to_scalar(alpha);
    record_accumulate(id, w, walked_of(source, vst), opt);
  }
  c.ret(result);
}

void ix_embedding_backward(OpId id, Call& c) {
  const at::Tensor grad = c.tensor("grad_output"), indices = c.tensor("indices");
  const int64_t num_weights = c["num_weights"].toInt();
  same_device({&grad, &indices});
  at::checkScalarTypes("embedding_backward", at::TensorArg(indices, "indices", 2), {at::kLong, at::kInt});
  at::Tensor weight = at::zeros({num_weights, grad.size(-1)}, grad.options());
  const int64_t numel = indices.numel();
  if (numel > 0 && weight.numel() > 0) {
    const at::Tensor idx = indices.reshape({numel}), g = grad.reshape({numel, grad.size(-1)});
    IndexWalk w;
    w.set_shape(g.sizes());
    w.self = walked_of(weight, {0, weight.stride(1)});
    w.add_index(idx, {idx.stride(0), 0}, num_weights, weight.stride(0), 0);
    w.error = kAssertNone;  // torch's CPU kernel skips out-of-range indices silently
    AccumOptions opt;
    opt.has_skip = true;  // torch compares every raw index with padding_idx
    opt.skip = c["padding_idx"].toInt();
    opt.by_freq = c["scale_grad_by_freq"].toBool();
    record_accumulate(id, w, walked_of(g, g.strides()), opt);
  }
  ret_result(c, weight);
}

}  // namespace vkml::aten

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(index_put_stub, &vkml::aten::index_put_kernel)
REGISTER_PRIVATEUSE1_DISPATCH(index_put_with_sort_stub, &vkml::aten::index_put_sorted_kernel)
}  // namespace at::native
