// The index family, one element at a time in iteration order (graph/families/index.h): a put's
// last write wins, an accumulation adds its contributions in ascending source position in double
// and rounds once. An index out of range fails with torch's error (the GPU reports the same one
// through the device assert record) or, for rows that skip silently, is skipped.
#include <cmath>
#include <cstring>
#include <span>
#include <vector>

#include "backend/cpu/access.h"
#include "backend/cpu/index.h"
#include "graph/device_assert.h"

namespace vkml::cpu {
namespace {

using A = IndexArgs;

struct Walk {
  const Node& n;
  const A& a;
  int idx_slot;  // first index operand
  int64_t numel = 1;

  Walk(const Node& n, int idx_slot) : n(n), a(n.as<A>()), idx_slot(idx_slot) {
    for (int d = 0; d < a.ndim; ++d) numel *= a.shape[d];
  }

  // Element offset of a walked operand (its sizes are the iteration's) at iteration element j.
  static int64_t offset(const TensorDesc& t, int64_t j) { return offset_of(t, j); }

  // The indexed tensor's element offset at j; false when skipped or out of range (then *err is
  // set when the row reports it).
  bool locate(int64_t j, int64_t* off, Result<void>* err) const {
    int64_t coord[kMaxDims];
    for (int d = a.ndim - 1; d >= 0; --d) {
      coord[d] = j % a.shape[d];
      j /= a.shape[d];
    }
    int64_t so = 0;
    for (int d = 0; d < a.ndim; ++d) so += coord[d] * a.strides[d];
    for (int k = 0; k < a.nidx; ++k) {
      const TensorDesc& ix = n.t[idx_slot + k];
      int64_t io = 0;
      for (int d = 0; d < a.ndim; ++d) io += coord[d] * ix.strides[d];
      const int64_t v = load<int64_t>(at(ix, io), ix.dtype);
      if (a.has_skip && v == a.skip) return false;
      const int64_t w = v < 0 && a.wrap ? v + a.isize[k] : v;
      if (w < 0 || w >= a.isize[k]) {
        if (a.error && err->ok()) *err = assert_error(DeviceAssert{a.error, a.idim[k], v, a.isize[k]});
        return false;
      }
      so += w * a.istride[k];
    }
    *off = so;
    return true;
  }
};

Result<void> check(const Node& n, int idx_slot, int flat_slot, std::initializer_list<int> walked) {
  if (!std::holds_alternative<A>(n.args)) return node_error(Err::invalid, n, "not index arguments");
  const A& a = n.as<A>();
  if (a.ndim > kMaxDims || a.nidx > kMaxDims || idx_slot + a.nidx > n.nout + n.nin)
    return node_error(Err::invalid, n, "bad index arguments");
  for (int i = 0; i < n.nout + n.nin; ++i)
    if (n.t[i].addr && !valid_dtype(n.t[i].dtype)) return node_error(Err::unsupported, n, "bad dtype code");
  auto same = [&](const TensorDesc& t) {
    if (t.ndim != a.ndim) return false;
    for (int d = 0; d < a.ndim; ++d)
      if (t.sizes[d] != a.shape[d]) return false;
    return true;
  };
  for (int s : walked)
    if (n.t[s].addr && !same(n.t[s])) return node_error(Err::invalid, n, "an operand's shape is not the iteration's");
  for (int k = 0; k < a.nidx; ++k) {
    const TensorDesc& ix = n.t[idx_slot + k];
    if (!same(ix) || (ix.dtype != DType::i64 && ix.dtype != DType::i32))
      return node_error(Err::invalid, n, "index tensors must be int64/int32 of the iteration's shape");
  }
  if (flat_slot >= 0) {  // every in-range index must land inside the flat range
    const TensorDesc& f = n.t[flat_slot];
    int64_t last = 0;
    for (int d = 0; d < a.ndim; ++d) last += (a.shape[d] - 1) * a.strides[d];
    for (int k = 0; k < a.nidx; ++k) last += (a.isize[k] - 1) * a.istride[k];
    if (f.ndim != 1 || f.strides[0] != 1 || last >= f.sizes[0])
      return node_error(Err::invalid, n, "the indexed tensor's flat range is too short");
  }
  return {};
}

}  // namespace

Result<void> or_gather(const Node& n, std::vector<double>*) {
  VKML_TRY(check(n, A::g_idx, A::g_src, {A::g_out}));
  const Walk w(n, A::g_idx);
  const TensorDesc &out = n.t[A::g_out], &src = n.t[A::g_src];
  const size_t es = dtype_size(src.dtype);
  if (out.dtype != src.dtype) return node_error(Err::invalid, n, "gather: out and src dtypes differ");
  Result<void> err;
  for (int64_t j = 0; j < w.numel; ++j) {
    int64_t so;
    if (w.locate(j, &so, &err)) std::memcpy(at(out, Walk::offset(out, j)), at(src, so), es);
  }
  return err;
}

Result<void> or_put(const Node& n, std::vector<double>*) {
  VKML_TRY(check(n, A::p_idx, A::p_self, {A::p_values}));
  const Walk w(n, A::p_idx);
  const A& a = w.a;
  const TensorDesc &self = n.t[A::p_self], &val = n.t[A::p_values];
  const size_t es = dtype_size(self.dtype);
  if (!a.scalar_value && val.dtype != self.dtype) return node_error(Err::invalid, n, "put: values dtype differs from self");
  Result<void> err;
  for (int64_t j = 0; j < w.numel; ++j) {  // ascending: the last write wins, as on the GPU
    int64_t so;
    if (!w.locate(j, &so, &err)) continue;
    std::memcpy(at(self, so), a.scalar_value ? reinterpret_cast<const uint8_t*>(&a.value_bits) : at(val, Walk::offset(val, j)), es);
  }
  return err;
}

// index_count has no outputs (its scratch holds no result); what it can find is a bad index.
Result<void> or_count(const Node& n, std::vector<double>*) {
  VKML_TRY(check(n, A::c_idx, -1, {}));
  const Walk w(n, A::c_idx);
  Result<void> err;
  int64_t so;
  for (int64_t j = 0; j < w.numel && err.ok(); ++j) w.locate(j, &so, &err);
  return err;
}

Result<void> or_accum(const Node& n, std::vector<double>* scale) {
  VKML_TRY(check(n, A::a_idx, A::a_self, {A::a_values}));
  const Walk w(n, A::a_idx);
  const A& a = w.a;
  const TensorDesc &self = n.t[A::a_self], &val = n.t[A::a_values];
  const int64_t D = self.sizes[0];
  if (val.dtype != self.dtype) return node_error(Err::invalid, n, "accumulate: values dtype differs from self");
  if (!(op_info(n.op).dtypes & bit(self.dtype))) return node_error(Err::unsupported, n, "dtype not supported");
  const bool want = wants_scale(n, scale);
  if (want) scale->assign(size_t(D), 0.0);
  if (w.numel == 0) return {};
  // contributions per destination, in ascending j (a stable counting sort)
  std::vector<int64_t> key(size_t(w.numel), -1), first(size_t(D) + 1, 0);
  Result<void> err;
  for (int64_t j = 0; j < w.numel; ++j) {
    int64_t so;
    if (w.locate(j, &so, &err)) key[size_t(j)] = so, ++first[size_t(so) + 1];
  }
  for (int64_t d = 0; d < D; ++d) first[size_t(d) + 1] += first[size_t(d)];
  std::vector<int64_t> order(size_t(first[size_t(D)])), cursor(first.begin(), first.end() - 1);
  for (int64_t j = 0; j < w.numel; ++j)
    if (key[size_t(j)] >= 0) order[size_t(cursor[size_t(key[size_t(j)])]++)] = j;
  const bool ints = compute_of(self.dtype) == Compute::i64;
  for (int64_t d = 0; d < D; ++d) {
    const std::span<const int64_t> js(order.data() + first[size_t(d)], size_t(first[size_t(d) + 1] - first[size_t(d)]));
    if (js.empty()) {
      if (want) (*scale)[size_t(d)] = std::fabs(load<double>(at(self, d), self.dtype));
      continue;
    }
    const int64_t cnt = int64_t(js.size());
    if (ints) {  // wrapping int64, as the i64 shader; by_freq: int(1.0 / count), bool(1.0 / count), as torch
      const int64_t al = a.by_freq && self.dtype != DType::b8 && cnt != 1 ? 0 : a.alpha.i;
      uint64_t acc = uint64_t(load<int64_t>(at(self, d), self.dtype));
      for (int64_t j : js) acc += uint64_t(load<int64_t>(at(val, Walk::offset(val, j)), val.dtype)) * uint64_t(al);
      store<int64_t>(at(self, d), self.dtype, int64_t(acc));
      continue;
    }
    const double al = a.alpha.f * (a.by_freq ? 1.0 / double(cnt) : 1.0);
    double acc = load<double>(at(self, d), self.dtype), mag = std::fabs(acc);
    for (int64_t j : js) {
      const double t = load<double>(at(val, Walk::offset(val, j)), val.dtype) * al;
      acc += t;
      mag += std::fabs(t);
    }
    store<double>(at(self, d), self.dtype, acc);
    // k terms: the old value and cnt more; each of the cnt products and partial sums may also be a
    // subnormal that the device flushes (off by less than the smallest normal each).
    if (want) (*scale)[size_t(d)] = double(cnt + 1) * mag + abs_as_scale(n, 2.0 * double(cnt) * tiny_of(n));
  }
  return err;
}

// nonzero_count: chunk prefix and total; nonzero: coordinates; masked_select: values. Nonzero
// means != 0 (-0.0 is zero, NaN is not), as torch's nonzero and masked_select read it.
Result<void> or_nonzero(const Node& n, std::vector<double>*) {
  const bool counting = n.op == OpId::nonzero_count;
  const int mask_slot = counting ? A::n_mask : A::s_mask;
  if (n.op == OpId::masked_select) VKML_TRY(check(n, 0, -1, {A::s_mask, A::s_src}));
  else VKML_TRY(check(n, 0, -1, {mask_slot}));
  const A& a = n.as<A>();
  const TensorDesc& mask = n.t[mask_slot];
  int64_t numel = 1;
  for (int d = 0; d < a.ndim; ++d) numel *= a.shape[d];
  if (numel == 0) return {};
  const int64_t C = a.chunk, chunks = (numel + C - 1) / C;
  const TensorDesc& sums = n.t[counting ? A::n_sums : A::s_sums];
  if (sums.numel() != chunks || sums.dtype != DType::i64) return node_error(Err::invalid, n, "nonzero: bad sums operand");
  auto nz = [&](int64_t j) { return load<double>(at(mask, offset_of(mask, j)), mask.dtype) != 0.0; };
  int64_t total = 0;
  if (counting) {
    const TensorDesc& tot = n.t[A::n_total];
    if (tot.numel() != 1 || tot.dtype != DType::i64) return node_error(Err::invalid, n, "nonzero: bad total operand");
    for (int64_t j = 0; j < numel; ++j) {
      if (j % C == 0) store<int64_t>(at(sums, j / C), DType::i64, total);
      total += nz(j);
    }
    store<int64_t>(at(tot, 0), DType::i64, total);
    return {};
  }
  for (int64_t j = 0; j < numel; ++j) total += nz(j);
  const TensorDesc& out = n.t[A::s_out];
  const bool coords = n.op == OpId::nonzero;
  if (coords ? (out.dtype != DType::i64 || out.numel() != total * a.ndim || (a.ndim && !out.contiguous()))
             : (out.numel() != total || out.dtype != n.t[A::s_src].dtype || !out.contiguous()))
    return node_error(Err::invalid, n, "nonzero: bad output operand");
  int64_t row = 0;
  for (int64_t j = 0; j < numel; ++j) {
    if (!nz(j)) continue;
    if (coords) {
      int64_t rem = j;
      for (int d = a.ndim - 1; d >= 0; --d) {
        store<int64_t>(at(out, row * a.ndim + d), DType::i64, rem % a.shape[d]);
        rem /= a.shape[d];
      }
    } else {
      const TensorDesc& src = n.t[A::s_src];
      int64_t rem = j, so = 0;
      for (int d = a.ndim - 1; d >= 0; --d) {
        so += (rem % a.shape[d]) * a.strides[d];
        rem /= a.shape[d];
      }
      std::memcpy(at(out, offset_of(out, row)), at(src, so), dtype_size(src.dtype));
    }
    ++row;
  }
  return {};
}

}  // namespace vkml::cpu
