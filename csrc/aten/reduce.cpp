// Reductions: sum, mean, amax/amin (and full max/min), argmax/argmin.
// The input is described kept-dims-first, then reduced dims, each group coalesced to <= 4 dims.
#include <ATen/WrapDimUtils.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/amin.h>
#include <ATen/ops/argmax.h>
#include <ATen/ops/argmin.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include <vector>

#include "aten/call.h"
#include "aten/common.h"
#include "aten/composite.h"
#include "aten/kernels.h"
#include "core/coalesce.h"

namespace vkml::aten {
namespace {

constexpr int kGroupDims = 4;

struct Dims {
  std::vector<int64_t> sizes, strides;
};

// The dims merged as core/coalesce.h does (size-1 dims dropped, dense neighbours merged).
Dims merged(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  int64_t osz[kMaxDims], ost[1][kMaxDims];
  const int64_t* st[1] = {strides.data()};
  const int m = vkml::coalesce(int(sizes.size()), sizes.data(), st, 1, kMaxDims, osz, ost);
  Dims d;
  for (int i = 0; i < m; ++i) d.sizes.push_back(osz[i]), d.strides.push_back(ost[0][i]);
  return d;
}

c10::ScalarType out_dtype(OpId id, bool indices, const at::Tensor& self, std::optional<c10::ScalarType> dtype) {
  if (indices) return c10::ScalarType::Long;
  if (id == OpId::sum) {
    if (dtype) return *dtype;
    return c10::isIntegralType(self.scalar_type(), true) ? c10::ScalarType::Long : self.scalar_type();
  }
  if (id == OpId::mean) {
    c10::ScalarType t = dtype ? *dtype : self.scalar_type();
    TORCH_CHECK(c10::isFloatingType(t) || c10::isComplexType(t),
                "mean(): could not infer output dtype. ",
                dtype ? "Optional dtype" : "Input dtype",
                " must be either a floating point or complex dtype. Got: ", c10::toString(t));
    return t;
  }
  return self.scalar_type();
}

// values (sum, mean, amax, amin) or indices (argmax, argmin) of a reduction over some dims.
void reduce(OpId id, Call& c, bool indices) {
  const OpInfo& info = op_info(id);
  at::Tensor self = c.tensor("self");
  const at::Tensor out = c.out();
  const int64_t nd = self.dim();
  if (out.defined() && (id == OpId::amax || id == OpId::amin))  // torch's amax/amin meta, before dims
    TORCH_CHECK(self.scalar_type() == out.scalar_type(), "Expected the dtype for input and out to match, but got ",
                self.scalar_type(), " for input's dtype and ", out.scalar_type(), " for out's dtype.");
  std::optional<c10::ScalarType> dtype;
  if (c.has("dtype")) dtype = c["dtype"].toScalarType();
  c10::ScalarType odt = out_dtype(id, indices, self, dtype);  // torch's meta checks mean's dtype before dims
  if (indices)  // before the dims, as torch
    TORCH_CHECK(self.scalar_type() != c10::ScalarType::Bool, info.name, "(): does not support bool input");
  // Which dims are reduced: none given (or an empty list) means all of them.
  std::vector<bool> red(size_t(nd), false);
  bool all = true;
  if (c.has("dim")) {
    const c10::IValue& v = c["dim"];
    // A 0-dim tensor accepts dim 0 / -1 and reduces its one element.
    std::vector<int64_t> dims = v.isInt() ? std::vector<int64_t>{v.toInt()} : v.toIntVector();
    for (int64_t d : dims) {
      size_t w = size_t(at::maybe_wrap_dim(d, nd));
      all = false;
      if (nd == 0) continue;
      TORCH_CHECK(!red[w], "dim ", w, " appears multiple times in the list of dims");
      red[w] = true;
    }
  }
  if (all) std::fill(red.begin(), red.end(), true);
  const bool keepdim = c.has("keepdim") && c["keepdim"].toBool();

  // sum/mean into an out tensor without dtype= compute in the out tensor's dtype, as torch's
  // infer_dtype_from_optional (after mean's check of the input dtype above)
  if (out.defined() && !dtype && (id == OpId::sum || id == OpId::mean)) {
    TORCH_CHECK(id != OpId::mean || c10::canCast(odt, out.scalar_type()), "result type ", odt,
                " can't be cast to the desired output type ", out.scalar_type());
    odt = out.scalar_type();
  }
  const c10::ScalarType ct = indices ? self.scalar_type() : odt;  // the dtype the op computes in
  check_dtype(id, to_dtype(ct, info.name));

  // Empty reductions that have no identity are errors, as on the CPU.
  if (indices || id == OpId::amax || id == OpId::amin) {
    const char* name = c.schema.name() == "aten::max" ? "max" : c.schema.name() == "aten::min" ? "min" : info.name;
    if (all) {  // torch raises IndexError for argmax/argmin, RuntimeError for the others
      const bool ok = self.numel() > 0;
      if (indices) {
        TORCH_CHECK_INDEX(ok, name, "(): Expected reduction dim to be specified for input.numel() == 0.");
      } else {
        TORCH_CHECK(ok, name, "(): Expected reduction dim to be specified for input.numel() == 0. "
                    "Specify the reduction dim with the 'dim' argument.");
      }
    }
    for (int64_t d = 0; d < nd; ++d)
      TORCH_CHECK_INDEX(!red[size_t(d)] || self.size(d) > 0, name, "(): Expected reduction dim ", d,
                  " to have non-zero size.");
  }

  std::vector<int64_t> oshape, kshape, kstride, rshape, rstride;
  for (int64_t d = 0; d < nd; ++d) {
    if (red[size_t(d)]) {
      if (keepdim) oshape.push_back(1);
      rshape.push_back(self.size(d));
      rstride.push_back(self.stride(d));
    } else {
      oshape.push_back(self.size(d));
      kshape.push_back(self.size(d));
      kstride.push_back(self.stride(d));
    }
  }
  at::Tensor result = at::empty(oshape, self.options().dtype(odt));
  if (result.numel() > 0) {
    at::Tensor in = self;
    Dims k = merged(kshape, kstride), r = merged(rshape, rstride);
    if (int(k.sizes.size()) > kGroupDims || int(r.sizes.size()) > kGroupDims) {
      in = self.contiguous();
      std::vector<int64_t> ks, rs;
      for (int64_t d = 0; d < nd; ++d) (red[size_t(d)] ? rs : ks).push_back(in.stride(d));
      k = merged(kshape, ks);
      r = merged(rshape, rs);
    }
    TORCH_CHECK_NOT_IMPLEMENTED(int(k.sizes.size()) <= kGroupDims && int(r.sizes.size()) <= kGroupDims,
                                "vkml: ", signature(info.name, {&self}), ": too many non-adjacent dims");
    Node n;
    n.op = id;
    n.nout = 1;
    n.nin = 1;
    n.compute = to_dtype(ct, info.name);
    n.reduction = std::max<int64_t>(1, self.numel() / std::max<int64_t>(1, result.numel()));
    ReduceArgs args;
    args.kept = int(k.sizes.size());
    // long rows: partials in scratch (freed at once: later nodes run after this one)
    const int64_t scratch_bytes = reduce_partial_bytes(result.numel(), self.numel() / result.numel());
    at::Tensor scratch;
    if (scratch_bytes) {
      scratch = at::empty({scratch_bytes}, self.options().dtype(c10::ScalarType::Byte));
      args.partials = addr_of(scratch);
    }
    n.args = args;
    TensorDesc& o = n.t[ReduceArgs::out];
    o.addr = addr_of(result);
    o.dtype = to_dtype(odt, info.name);
    o.ndim = uint8_t(k.sizes.size());
    int64_t st = 1;
    for (int i = o.ndim - 1; i >= 0; --i) {
      o.sizes[i] = k.sizes[size_t(i)];
      o.strides[i] = st;
      st *= k.sizes[size_t(i)];
    }
    TensorDesc& t = n.t[ReduceArgs::in];
    t.addr = in.numel() ? addr_of(in) : 0;
    t.dtype = to_dtype(in.scalar_type(), info.name);
    t.ndim = uint8_t(k.sizes.size() + r.sizes.size());
    for (size_t i = 0; i < k.sizes.size(); ++i) t.sizes[i] = k.sizes[i], t.strides[i] = k.strides[i];
    for (size_t i = 0; i < r.sizes.size(); ++i)
      t.sizes[k.sizes.size() + i] = r.sizes[i], t.strides[k.sizes.size() + i] = r.strides[i];
    if (in.numel() == 0) {  // empty reduction: sum 0, mean NaN; shaders see n_red == 0
      t.ndim = o.ndim + 1;
      t.sizes[o.ndim] = 0;
      t.strides[o.ndim] = 1;
    }
    record(n);
  }
  ret_result(c, result);
}

}  // namespace

void reduce_values(OpId id, Call& c) { reduce(id, c, false); }
void reduce_indices(OpId id, Call& c) { reduce(id, c, true); }

}  // namespace vkml::aten

// max.dim / min.dim return (values, indices): the amax/amin and argmax/argmin rows, one node each
// (same NaN and first-index rules, so the pair agrees with torch's single kernel).
namespace vkml::aten {
namespace {

template <bool kMax>
std::tuple<at::Tensor, at::Tensor> extreme_dim(const at::Tensor& self, int64_t dim, bool keepdim) {
  const char* name = kMax ? "max" : "min";
  dim = at::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK_INDEX(self.numel() > 0 || self.dim() == 0 || self.size(dim) > 0, name, "(): Expected reduction dim ",
                    dim, " to have non-zero size.");
  at::Tensor values = kMax ? at::amax(self, {dim}, keepdim) : at::amin(self, {dim}, keepdim);
  at::Tensor indices = kMax ? at::argmax(self, dim, keepdim) : at::argmin(self, dim, keepdim);
  return {values, indices};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  composite<extreme_dim<true>>(m, "max.dim", {"max.dim_max"});
  composite<extreme_dim<false>>(m, "min.dim", {"min.dim_min"});
}

}  // namespace vkml::aten
