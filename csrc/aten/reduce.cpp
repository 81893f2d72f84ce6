// Reductions: sum, mean, amax/amin (and full max/min), argmax/argmin, max.dim/min.dim.
// The input is described kept-dims-first, then reduced dims, each group coalesced to <= 4 dims.
#include <ATen/WrapDimUtils.h>
#include <ATen/ops/amax_meta.h>
#include <ATen/ops/amin_meta.h>
#include <ATen/ops/argmax_meta.h>
#include <ATen/ops/argmin_meta.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/max_meta.h>
#include <ATen/ops/mean_meta.h>
#include <ATen/ops/min_meta.h>
#include <ATen/ops/sum_meta.h>
#include <torch/library.h>

#include <memory>
#include <string>
#include <vector>

#include "aten/call.h"
#include "aten/common.h"
#include "aten/devices.h"
#include "aten/kernels.h"
#include "aten/structured.h"
#include "aten/trace.h"
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

// Records the reduction of self over the dims `red` into `result` (a meta's output; none for an
// empty result). The op computes in the result's dtype (sum/mean into out= in out's dtype, as
// torch's infer_dtype_from_optional), argmax/argmin in the input's.
void run(OpId id, const at::Tensor& self, const std::vector<bool>& red, const at::Tensor& result, OutKind kind) {
  const OpInfo& info = op_info(id);
  const bool indices = id == OpId::argmax || id == OpId::argmin;
  const c10::ScalarType ct = indices ? self.scalar_type() : result.scalar_type();
  check_dtype(id, to_dtype(ct, info.name));
  const int64_t nd = self.dim();
  std::vector<int64_t> kshape, kstride, rshape, rstride;
  for (int64_t d = 0; d < nd; ++d) {
    if (red[size_t(d)]) {
      rshape.push_back(self.size(d));
      rstride.push_back(self.stride(d));
    } else {
      kshape.push_back(self.size(d));
      kstride.push_back(self.stride(d));
    }
  }
  const Dest dest(result, kind, result.is_contiguous(), {&self});  // the node writes it densely
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
    TensorDesc& o = n.t[ReduceArgs::out];
    o.addr = addr_of(dest.t());
    o.dtype = to_dtype(result.scalar_type(), info.name);
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
    // long or strided rows: partials in scratch (freed at once: later nodes run after this one)
    const int64_t scratch_bytes = reduce_partial_bytes(t, args.kept);
    at::Tensor scratch;
    if (scratch_bytes) {
      scratch = at::empty({scratch_bytes}, self.options().dtype(c10::ScalarType::Byte));
      args.partials = addr_of(scratch);
    }
    n.args = args;
    record(n);
  }
  dest.finish();
}


OutKind out_kind(const Call& c) { return c.out().defined() ? OutKind::out : OutKind::functional; }

// values (sum, mean, amax, amin) or indices (argmax, argmin) of a reduction over some dims.
// Shapes, dtypes and argument checks are torch's structured metas' (messages included); what
// torch checks only in its CPU kernels is copied here, marked so.
void reduce(OpId id, Call& c) {
  const OpInfo& info = op_info(id);
  const at::Tensor self = c.tensor("self");
  const int64_t nd = self.dim();
  const OutKind kind = out_kind(c);
  std::optional<c10::ScalarType> dtype;
  if (c.has("dtype")) dtype = c["dtype"].toScalarType();
  const bool keepdim = c.has("keepdim") && c["keepdim"].toBool();
  // The dims named (none, or an empty list, reduces all of them).
  std::vector<int64_t> dims;
  if (c.has("dim")) {
    const c10::IValue& v = c["dim"];
    dims = v.isInt() ? std::vector<int64_t>{v.toInt()} : v.toIntVector();
  }
  at::Tensor result;
  if (id == OpId::sum) {
    Structured<at::meta::structured_sum_dim_IntList> op(kind, c.out());
    op.meta(self, c.has("dim") ? at::OptionalIntArrayRef(dims) : std::nullopt, keepdim, dtype);
    result = op.out_;
  } else if (id == OpId::mean) {
    Structured<at::meta::structured_mean_dim> op(kind, c.out());
    op.meta(self, c.has("dim") ? at::OptionalIntArrayRef(dims) : std::nullopt, keepdim, dtype);
    result = op.out_;
    // torch's CPU mean_out sums into the out tensor, then div_ raises for an integral one
    TORCH_CHECK(!c10::isIntegralType(result.scalar_type(), true), "result type ",
                c10::typeMetaToScalarType(c10::get_default_dtype()), " can't be cast to the desired output type ",
                result.scalar_type());
  } else if (id == OpId::amax || id == OpId::amin) {
    if (c.schema.name() != "aten::amax" && c.schema.name() != "aten::amin")  // max(), min(): torch's CPU kernel
      TORCH_CHECK(self.numel() > 0, id == OpId::amax ? "max" : "min",
                  "(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim "
                  "with the 'dim' argument.");
    if (id == OpId::amax) {
      Structured<at::meta::structured_amax> op(kind, c.out());
      op.meta(self, dims, keepdim);
      result = op.out_;
    } else {
      Structured<at::meta::structured_amin> op(kind, c.out());
      op.meta(self, dims, keepdim);
      result = op.out_;
    }
  } else {
    const std::optional<int64_t> dim = c.has("dim") ? std::optional<int64_t>(c["dim"].toInt()) : std::nullopt;
    if (id == OpId::argmax) {
      Structured<at::meta::structured_argmax> op(kind, c.out());
      op.meta(self, dim, keepdim);
      result = op.out_;
    } else {
      Structured<at::meta::structured_argmin> op(kind, c.out());
      op.meta(self, dim, keepdim);
      result = op.out_;
    }
    // torch's CPU kernel dispatches over all types but bool
    TORCH_CHECK(self.scalar_type() != c10::ScalarType::Bool, "\"", info.name, "_cpu\" not implemented for 'Bool'");
  }
  // Which dims are reduced (the meta has checked them).
  std::vector<bool> red(size_t(nd), dims.empty());
  for (int64_t d : dims)
    if (nd > 0) red[size_t(at::maybe_wrap_dim(d, nd))] = true;
  // A sum into another dtype (dtype= or an out=): torch's make_reduction_from_out_ty converts the
  // input to it first (float16: 7e4 becomes inf; int32: -inf becomes INT_MIN, as vkml's copy does),
  // then sums (float16 with a float accumulator); the node would only widen each term to float32,
  // or convert a float to an integer its own way. Other pairs convert alike (mean sums in float32).
  const c10::ScalarType rt = result.scalar_type(), st = self.scalar_type();
  const bool narrow = id == OpId::sum && st != rt && result.numel() > 0 &&
                      (rt == c10::ScalarType::Half || rt == c10::ScalarType::BFloat16 ||
                       (c10::isFloatingType(st) && !c10::isFloatingType(rt)));
  run(id, narrow ? self.to(rt) : self, red, result, kind);
  c.ret(result);
}

// max.dim / min.dim (and their out= overloads) return (values, indices): torch's max.dim meta
// checks and shapes both, then an amax/amin node and an argmax/argmin node (same NaN and
// first-index rules, so the pair agrees with torch's single kernel).
void extreme_dim(bool max, Call& c) {
  const at::Tensor self = c.tensor("self");
  const int64_t dim = c["dim"].toInt();
  const bool keepdim = c["keepdim"].toBool();
  const bool out = c.out().defined();  // max.dim_max(self, dim, keepdim, *, max, max_values)
  const OutKind kind = out ? OutKind::out : OutKind::functional;
  const at::Tensor vout = out ? c.arg(3).toTensor() : at::Tensor(), iout = out ? c.arg(4).toTensor() : at::Tensor();
  at::Tensor values, indices;
  if (max) {
    Structured<at::meta::structured_max_dim> op(kind, vout, iout);
    op.meta(self, dim, keepdim);
    values = op.out_, indices = op.out1_;
  } else {
    Structured<at::meta::structured_min_dim> op(kind, vout, iout);
    op.meta(self, dim, keepdim);
    values = op.out_, indices = op.out1_;
  }
  std::vector<bool> red(size_t(self.dim()), false);
  if (self.dim() > 0) red[size_t(at::maybe_wrap_dim(dim, self.dim()))] = true;
  run(max ? OpId::amax : OpId::amin, self, red, values, kind);
  // bool compares as uint8 (the argmax/argmin rows take no bool)
  const at::Tensor in = self.scalar_type() == c10::ScalarType::Bool ? self.to(c10::ScalarType::Byte) : self;
  run(max ? OpId::argmax : OpId::argmin, in, red, indices, kind);
  c.ret(values, indices);
}

// A boxed kernel as the rows' (aten/registry.cpp): traced, devices checked as torch's wrappers do.
struct ExtremeDimKernel final : c10::OperatorKernel {
  ExtremeDimKernel(bool max, const char* overload)
      : max(max), check(torch_checks_devices(overload)), method(std::string("aten::") + overload) {}
  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
    if (tracing()) trace(op, Path::native);
    if (check) check_devices(op, *stack, method.c_str());
    OnDevice on(stack_device(op, *stack));
    Call c(op, stack);
    extreme_dim(max, c);
  }
  bool max, check;
  std::string method;
};

}  // namespace

void reduce_values(OpId id, Call& c) { reduce(id, c); }
void reduce_indices(OpId id, Call& c) { reduce(id, c); }

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  for (const char* name : {"max.dim", "max.dim_max", "min.dim", "min.dim_min"})
    m.impl(name, torch::CppFunction::makeFromBoxedKernel(c10::BoxedKernel::makeFromFunctor(
                     std::make_unique<ExtremeDimKernel>(name[1] == 'a', name))));
}

}  // namespace vkml::aten
