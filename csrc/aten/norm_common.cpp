#include "aten/norm_common.h"

#include "aten/common.h"

namespace vkml::aten::norm {

namespace {
// Dims [lo, hi) as one (size, stride); false when they do not walk memory as one.
bool merge(const at::Tensor& t, int lo, int hi, int64_t& size, int64_t& stride) {
  size = 1;
  stride = 1;
  bool first = true;
  for (int d = hi - 1; d >= lo; --d) {  // innermost first
    const int64_t n = t.size(d), s = t.stride(d);
    if (n == 1) continue;
    if (first) stride = s, first = false;
    else if (s != stride * size) return false;
    size *= n;
  }
  return true;
}
}  // namespace

bool view3(const at::Tensor& t, int c0, int c1, TensorDesc& d, const char* op) {
  d = TensorDesc{};
  d.dtype = to_dtype(t.scalar_type(), op);
  d.ndim = 3;
  const int nd = int(t.dim());
  if (!merge(t, 0, c0, d.sizes[0], d.strides[0]) || !merge(t, c0, c1, d.sizes[1], d.strides[1]) ||
      !merge(t, c1, nd, d.sizes[2], d.strides[2]))
    return false;
  for (int k = 0; k < 3; ++k)
    TORCH_CHECK(d.strides[k] >= 0 || d.sizes[k] <= 1, "vkml: ", op, ": negative strides are not supported");
  d.addr = t.numel() ? addr_of(t) : 0;
  return true;
}

at::Tensor viewable(const at::Tensor& t, int c0, int c1, TensorDesc& d, const char* op) {
  if (view3(t, c0, c1, d, op)) return t;
  at::Tensor dense = t.contiguous(t.suggest_memory_format());
  if (!view3(dense, c0, c1, d, op)) {
    dense = t.contiguous();
    view3(dense, c0, c1, d, op);  // a contiguous tensor always merges
  }
  return dense;
}

TensorDesc vec(const at::Tensor& t, at::Tensor& keep, const char* op) {
  if (!t.defined() || t.numel() == 0) return {};
  keep = t.dim() == 1 ? t : t.contiguous().view(-1);
  TensorDesc d = desc_of(keep, op);
  return d;
}

at::Tensor opt(Call& c, const char* name) { return c.has(name) ? c.tensor(name) : at::Tensor(); }

void record_node(OpId id, const at::Tensor& input, NormArgs args, const TensorDesc* t, int nout, int nin) {
  Node n;
  n.op = id;
  n.nout = uint8_t(nout);
  n.nin = uint8_t(nin);
  n.compute = to_dtype(input.scalar_type(), op_info(id).name);
  n.reduction = 1;  // the oracle's scale carries the whole bound, growth with the group size included
  n.args = args;
  for (int i = 0; i < nout + nin; ++i) n.t[i] = t[i];
  record(n);
}

}  // namespace vkml::aten::norm
