#include "aten/index_walk.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/scalar_tensor.h>

#include <cstring>

#include "core/coalesce.h"
#include "graph/device_assert.h"

namespace vkml::aten {
namespace {

constexpr int64_t kChunk = 1024;  // elements per prefix-sum chunk (the shader's 128 x 8)

TensorDesc desc(const Walked& o, const IndexWalk& w) {
  TensorDesc d;
  d.addr = o.addr;
  d.dtype = o.dtype;
  d.ndim = uint8_t(w.ndim);
  for (int i = 0; i < w.ndim; ++i) d.sizes[i] = w.shape[i], d.strides[i] = o.strides[i];
  return d;
}

TensorDesc flat(const IndexWalk& w, int64_t extent) {
  TensorDesc d;
  d.addr = extent > 0 ? w.self.addr : 0;
  d.dtype = w.self.dtype;
  d.ndim = 1;
  d.sizes[0] = extent > 0 ? extent : 0;
  d.strides[0] = 1;
  return d;
}

IndexArgs args_of(const IndexWalk& w) {
  IndexArgs a;
  a.ndim = uint8_t(w.ndim);
  for (int d = 0; d < w.ndim; ++d) a.shape[d] = w.shape[d], a.strides[d] = w.self.strides[d];
  a.nidx = uint8_t(w.nidx);
  for (int k = 0; k < w.nidx; ++k) a.isize[k] = w.isize[k], a.istride[k] = w.istride[k], a.idim[k] = w.idim[k];
  a.wrap = w.wrap;
  a.error = w.error;
  if (w.error) {
    auto r = device().assert_record();
    if (!r.ok()) raise(r.error());
    a.assert_addr = r.value();
  }
  a.chunk = uint32_t(kChunk);
  return a;
}

at::TensorOptions scratch(c10::ScalarType t) {
  return at::TensorOptions().dtype(t).device(c10::Device(c10::DeviceType::PrivateUse1, c10::DeviceIndex(device().index())));
}

void put_indices(Node& n, int first, const IndexWalk& w) {
  for (int k = 0; k < w.nidx; ++k) n.t[first + k] = desc(w.idx[k], w);
}

}  // namespace

int64_t IndexWalk::numel() const {
  int64_t m = 1;
  for (int d = 0; d < ndim; ++d) m *= shape[d];
  return m;
}

int64_t IndexWalk::extent() const {
  int64_t last = 0;
  for (int d = 0; d < ndim; ++d) last += (shape[d] - 1) * self.strides[d];
  for (int k = 0; k < nidx; ++k) last += (isize[k] > 0 ? isize[k] - 1 : 0) * istride[k];
  return last + 1;
}

void IndexWalk::set_shape(at::IntArrayRef sizes) {
  TORCH_CHECK_NOT_IMPLEMENTED(sizes.size() <= size_t(kMaxDims), "vkml: indexing over more than ", kMaxDims,
                              " dims is not supported (got ", sizes.size(), ")");
  ndim = int(sizes.size());
  for (int d = 0; d < ndim; ++d) shape[d] = sizes[size_t(d)];
}

void IndexWalk::add_index(const at::Tensor& index, at::IntArrayRef strides, int64_t size, int64_t stride, int dim) {
  TORCH_CHECK_NOT_IMPLEMENTED(nidx < kMaxDims, "vkml: more than ", kMaxDims, " index tensors");
  Walked& ix = idx[nidx];
  ix = walked_of(index, strides);
  isize[nidx] = size;
  istride[nidx] = stride;
  idim[nidx] = uint8_t(dim);
  ++nidx;
}

void IndexWalk::coalesce(std::initializer_list<Walked*> others, const char* op) {
  Walked* ops[2 * kMaxDims + 2];
  int nops = 0;
  ops[nops++] = &self;
  for (int k = 0; k < nidx; ++k) ops[nops++] = &idx[k];
  for (Walked* o : others) ops[nops++] = o;
  const int64_t* st[2 * kMaxDims + 2];
  for (int k = 0; k < nops; ++k) st[k] = ops[k]->strides;
  int64_t osz[kMaxDims], ost[2 * kMaxDims + 2][kMaxDims];
  const int m = vkml::coalesce(ndim, shape, st, nops, kMaxDims, osz, ost);
  TORCH_CHECK_NOT_IMPLEMENTED(m >= 0, "vkml: ", op, " walks more than ", kMaxDims, " dims");
  ndim = m;
  for (int d = 0; d < m; ++d) {
    shape[d] = osz[d];
    for (int k = 0; k < nops; ++k) ops[k]->strides[d] = ost[k][d];
  }
}

Walked walked_of(const at::TensorIteratorBase& iter, int arg) {
  Walked w;
  w.addr = reinterpret_cast<uint64_t>(iter.data_ptr(arg));
  w.dtype = to_dtype(iter.dtype(arg), "index");
  const int nd = iter.ndim();
  const int64_t es = int64_t(dtype_size(w.dtype));
  const auto st = iter.strides(arg);
  for (int j = 0; j < nd && j < kMaxDims; ++j) w.strides[j] = st[size_t(nd - 1 - j)] / es;
  return w;
}

Walked walked_of(const at::Tensor& t, at::IntArrayRef strides) {
  Walked w;
  w.addr = t.numel() ? addr_of(t) : 0;
  w.dtype = to_dtype(t.scalar_type(), "index");
  for (size_t j = 0; j < strides.size() && j < size_t(kMaxDims); ++j) w.strides[j] = strides[j];
  return w;
}

IndexWalk walk_of_iter(const at::TensorIteratorBase& iter, int self, int first_idx, at::IntArrayRef indexed_sizes,
                       at::IntArrayRef indexed_strides) {
  IndexWalk w;
  std::vector<int64_t> shape(iter.shape().rbegin(), iter.shape().rend());
  w.set_shape(shape);
  w.self = walked_of(iter, self);
  const int64_t es = int64_t(dtype_size(w.self.dtype));
  for (int k = 0; first_idx + k < iter.ntensors(); ++k) {
    TORCH_CHECK_NOT_IMPLEMENTED(k < kMaxDims, "vkml: more than ", kMaxDims, " index tensors");
    w.idx[k] = walked_of(iter, first_idx + k);
    w.isize[k] = indexed_sizes[size_t(k)];
    w.istride[k] = indexed_strides[size_t(k)] / es;
    w.idim[k] = uint8_t(k);  // torch names the index tensor's position
    w.nidx = k + 1;
  }
  return w;
}

IndexWalk walk_along(const at::Tensor& self, int64_t dim, const at::Tensor& index, uint8_t error) {
  IndexWalk w;
  w.set_shape(index.sizes());
  std::vector<int64_t> st(size_t(index.dim()), 0);
  for (int64_t d = 0; d < index.dim(); ++d)
    st[size_t(d)] = d == dim || d >= self.dim() ? 0 : self.stride(d);
  w.self = walked_of(self, st);
  const bool scalar = self.dim() == 0;
  w.add_index(index, index.strides(), scalar ? 1 : self.size(dim), scalar ? 1 : self.stride(dim), int(dim));
  w.error = error;
  return w;
}

void record_gather(OpId id, IndexWalk w, Walked out) {
  using A = IndexArgs;
  w.coalesce({&out}, op_info(id).name);
  if (w.numel() == 0) return;
  check_dtype(id, w.self.dtype);
  Node n;
  n.op = id;
  n.nout = 1;
  n.nin = uint8_t(1 + w.nidx);
  n.compute = w.self.dtype;
  n.t[A::g_out] = desc(out, w);
  n.t[A::g_src] = flat(w, w.extent());
  put_indices(n, A::g_idx, w);
  n.args = args_of(w);
  record(n);
}

namespace {

// Puts and accumulation group elements by destination: slot = destination when the flat range is
// small (D <= 2M), else a hash table of a power of two >= 2M slots. Scratch: 4 bytes per slot
// (8 hashed) and per element, so it never grows with a large self written in few places.
at::Tensor scratch_for(IndexArgs& a, int64_t D, int64_t M, bool accumulate, const char* name) {
  uint64_t hashed = 64;
  while (hashed < 2 * uint64_t(M)) hashed <<= 1;
  a.direct = uint64_t(D) <= hashed;
  const uint64_t slots = a.direct ? uint64_t(D) : hashed;
  TORCH_CHECK_NOT_IMPLEMENTED(M < int64_t(UINT32_MAX) && slots < uint64_t(UINT32_MAX), "vkml: ", name,
                              " over more than 2^32-2 elements is not supported");
  a.slots = uint32_t(slots);
  at::Tensor t = at::empty({int64_t(index_scratch(a, M, accumulate).words)}, scratch(c10::ScalarType::Int));
  a.scratch = addr_of(t);
  return t;
}

}  // namespace

void record_put(OpId id, IndexWalk w, const Walked* values, uint64_t value_bits) {
  using A = IndexArgs;
  Walked v = values ? *values : Walked{};
  if (values) w.coalesce({&v}, op_info(id).name);
  else w.coalesce({}, op_info(id).name);
  const int64_t M = w.numel();
  if (M == 0) return;
  check_dtype(id, w.self.dtype);
  const int64_t D = w.extent();
  IndexArgs a = args_of(w);
  a.scalar_value = !values;
  a.value_bits = value_bits;
  const at::Tensor keep = scratch_for(a, D, M, false, op_info(id).name);  // until recorded
  Node n;
  n.op = id;
  n.nout = 1;
  n.nin = uint8_t(1 + w.nidx);
  n.compute = w.self.dtype;
  n.t[A::p_self] = flat(w, D);
  if (values) n.t[A::p_values] = desc(v, w);
  put_indices(n, A::p_idx, w);
  n.args = a;
  record(n);
}

void record_accumulate(OpId id, IndexWalk w, Walked values, const AccumOptions& opt) {
  using A = IndexArgs;
  w.coalesce({&values}, op_info(id).name);
  const int64_t M = w.numel();
  if (M == 0) return;
  check_dtype(id, w.self.dtype);
  const int64_t D = w.extent();
  IndexArgs a = args_of(w);
  a.alpha = opt.alpha;
  a.has_skip = opt.has_skip;
  a.skip = opt.skip;
  a.by_freq = opt.by_freq;
  const at::Tensor keep = scratch_for(a, D, M, true, op_info(id).name);  // shared by both nodes
  Node c;  // groups the contributions by destination: scratch only, nothing to compare
  c.op = OpId::index_count;
  c.nout = 0;
  c.nin = uint8_t(w.nidx);
  c.compute = w.self.dtype;
  put_indices(c, A::c_idx, w);
  c.args = a;
  record(c);
  Node n;
  n.op = id;
  n.nout = 1;
  n.nin = uint8_t(1 + w.nidx);
  n.compute = w.self.dtype;
  n.t[A::a_self] = flat(w, D);
  n.t[A::a_values] = desc(values, w);
  put_indices(n, A::a_idx, w);
  n.args = a;
  record(n);
}

void same_device(std::initializer_list<const at::Tensor*> ts) {
  const at::Tensor* first = nullptr;
  for (const at::Tensor* t : ts) {
    if (!t->defined()) continue;
    if (!first) first = t;
    TORCH_CHECK(t->device() == first->device(), "Expected all tensors to be on the same device, but found at least two devices, ",
                first->device(), " and ", t->device(), "!");
  }
}

uint64_t scalar_bits(const c10::Scalar& v, c10::ScalarType t) {
  const at::Tensor s = at::scalar_tensor(v, at::TensorOptions().dtype(t));
  uint64_t bits = 0;
  std::memcpy(&bits, s.const_data_ptr(), size_t(s.element_size()));
  return bits;
}

}  // namespace vkml::aten
