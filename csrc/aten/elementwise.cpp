// The elementwise family's aten side: TensorIterator computes broadcast shape, type promotion and
// the output (exactly as for CPU tensors); each iteration becomes one node of at most 4 dims.
// One function per way of building the iterator (the rows' ATEN column).
#include <ATen/TensorIterator.h>
#include <ATen/ScalarOps.h>
#include <ATen/ExpandUtils.h>
#include <ATen/native/BinaryOps.h>
#include <ATen/native/TypeProperties.h>
#include <ATen/EmptyTensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/addcdiv.h>
#include <ATen/ops/addcmul.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/lerp.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/result_type.h>

#include <limits>
#include <optional>

#include "aten/call.h"
#include "aten/common.h"
#include "aten/devices.h"
#include "aten/kernels.h"
#include "aten/structured.h"  // VKML_DIMNAMES (torch 2.11)
#include "aten/torch_version.h"  // clamp's integer bounds (torch 2.15)
#include "util/half.h"

namespace vkml::aten {
namespace {

constexpr int kEwDims = 4;  // dims the elementwise push constants carry

// The operands' descriptors of an iteration of at most kEwDims dims (innermost first).
void set_operands(Node& n, const at::TensorIteratorBase& iter, const uint64_t* base, int nt) {
  const int nd = iter.ndim();
  const auto shape = iter.shape();
  for (int a = 0; a < nt; ++a) {
    TensorDesc& t = n.t[a];
    t.addr = base[a];
    t.ndim = uint8_t(nd);
    const auto st = iter.strides(a);
    const int64_t es = int64_t(dtype_size(t.dtype));
    for (int j = 0; j < nd; ++j) {
      t.sizes[j] = shape[size_t(nd - 1 - j)];
      t.strides[j] = base[a] ? st[size_t(nd - 1 - j)] / es : 0;
    }
  }
}

// An iteration of more than kEwDims dims: the outer dims peeled into separate nodes, each built
// from n (its op, dtypes and arguments) and recorded.
void emit_peeled(const Node& n, const at::TensorIteratorBase& iter, const uint64_t* base, int nt) {
  const int nd = iter.ndim();
  const auto shape = iter.shape();
  at::IntArrayRef st[kMaxOperands];
  for (int a = 0; a < nt; ++a) st[a] = iter.strides(a);
  // Recursion over outer indices, innermost 4 dims per node.
  std::vector<int64_t> idx(size_t(nd - kEwDims), 0);
  while (true) {
    uint64_t b[kMaxOperands];
    for (int a = 0; a < nt; ++a) {
      b[a] = base[a];
      if (!base[a]) continue;
      for (int d = kEwDims; d < nd; ++d) b[a] += uint64_t(idx[size_t(d - kEwDims)] * st[a][size_t(d)]);
    }
    Node m = n;
    for (int a = 0; a < nt; ++a) {
      TensorDesc& t = m.t[a];
      t.addr = b[a];
      t.ndim = kEwDims;
      const int64_t es = int64_t(dtype_size(t.dtype));
      for (int j = 0; j < kEwDims; ++j) {
        t.sizes[j] = shape[size_t(kEwDims - 1 - j)];
        t.strides[j] = base[a] ? st[a][size_t(kEwDims - 1 - j)] / es : 0;
      }
    }
    record(m);
    int d = 0;
    for (; d < nd - kEwDims; ++d) {
      if (++idx[size_t(d)] < shape[size_t(d + kEwDims)]) break;
      idx[size_t(d)] = 0;
    }
    if (d == nd - kEwDims) return;
  }
}

}  // namespace

// A CPU scalar operand as torch's CPU kernels use it: integers wrap to the common dtype; add/sub
// and the comparisons round it to a float16/bfloat16 common dtype first (mul/div do not: they keep
// it in float; the comparisons found by the fuzzer: bfloat16 max != 3.4e38 is False on the CPU).
Scalar scalar_operand(OpId id, const at::TensorBase& t, DType compute) {
  Scalar s = to_scalar(at::Tensor(t).item());
  switch (compute) {
    case DType::u8: s.i = int64_t(uint8_t(s.i)); break;
    case DType::i8: s.i = int64_t(int8_t(s.i)); break;
    case DType::i16: s.i = int64_t(int16_t(s.i)); break;
    case DType::i32: s.i = int64_t(int32_t(s.i)); break;
    case DType::b8: s.i = s.f != 0; break;
    case DType::f16: case DType::bf16:
      if (id == OpId::add || id == OpId::sub || id == OpId::eq || id == OpId::ne || id == OpId::lt ||
          id == OpId::le || id == OpId::gt || id == OpId::ge) {
        float f = float(s.f);
        s.f = compute == DType::f16 ? f16_to_f32(f32_to_f16(f)) : bf16_to_f32(f32_to_bf16(f));
      }
      break;
    default: break;
  }
  if (!is_float(compute)) s.f = double(s.i);
  return s;
}

void emit_elementwise(OpId id, at::TensorIteratorBase& iter, DType compute, ElementwiseArgs args, int nin) {
  if (iter.numel() == 0) return;
  if (!iter.can_use_32bit_indexing()) {
    for (auto& sub : iter.with_32bit_indexing()) emit_elementwise(id, sub, compute, args, nin);
    return;
  }
  uint64_t base[kMaxOperands] = {};
  DType dtypes[kMaxOperands] = {};
  at::Tensor scalar_a;  // keeps a CPU-scalar first operand's device copy until the node is recorded
  const int nt = nin < 0 ? iter.ntensors() : 1 + nin;
  for (int a = 0; a < nt; ++a) {
    dtypes[a] = to_dtype(iter.dtype(a), op_info(id).name);
    // (is_cpu_scalar, a call, tests the shape, then the device: the device first, inline, rules out
    // device operands at once; the same answer)
    if (a > 0 && iter.device(a).is_cpu() && iter.is_cpu_scalar(a)) {
      if (a == ElementwiseArgs::b) {  // the shader reads it from the push constants
        args.scalar_b = true;
        args.s1 = scalar_operand(id, iter.tensor_base(a), compute);
        continue;
      }
      // A CPU scalar first operand (1 - x, torch.where(c, 0., x)): a one-element device copy, read
      // with stride 0. Freeing it when this returns is safe: nodes run in recording order.
      at::Tensor t = at::empty({}, at::TensorOptions().dtype(iter.dtype(a)).device(iter.tensor_base(0).device()));
      t.fill_(at::Tensor(iter.tensor_base(a)).item());
      scalar_a = t;
      base[a] = addr_of(t);
      continue;
    }
    base[a] = reinterpret_cast<uint64_t>(iter.data_ptr(a));
  }
  // Everything that can allocate or raise is done: the node is written where it is recorded.
  auto head = [&](Node& n) {
    n.op = id;
    n.nout = 1;
    n.nin = uint8_t(nt - 1);
    n.compute = compute;
    for (int a = 0; a < nt; ++a) n.t[a].dtype = dtypes[a];
    n.args = args;
  };
  if (iter.ndim() <= kEwDims) {
    record_in_place([&](Node& n) {
      head(n);
      set_operands(n, iter, base, nt);
    });
    return;
  }
  Node n;
  head(n);
  emit_peeled(n, iter, base, nt);
}

namespace {

// A tensor argument is borrowed, not copied: the stack outlives the kernel's use of it, and a copy
// of a tensor that only its Python object holds would take the GIL (aten/registry.cpp).
c10::MaybeOwned<at::Tensor> wrap(const c10::IValue& v) {
  if (v.isTensor()) return c10::MaybeOwned<at::Tensor>::borrowed(v.toTensor());
  at::Tensor t = c10::scalar_to_tensor(v.toScalar());
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return c10::MaybeOwned<at::Tensor>::owned(std::move(t));
}

}  // namespace

// fill_ of a value the dtype cannot hold raises, as on the CPU ("value cannot be converted to
// type c10::Half without overflow").
void check_fits(const c10::Scalar& v, c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Half: (void)v.toHalf(); break;
    case c10::ScalarType::BFloat16: (void)v.toBFloat16(); break;
    case c10::ScalarType::Float: (void)v.toFloat(); break;
    case c10::ScalarType::Byte: (void)v.toByte(); break;
    case c10::ScalarType::Char: (void)v.toChar(); break;
    case c10::ScalarType::Short: (void)v.toShort(); break;
    case c10::ScalarType::Int: (void)v.toInt(); break;
    case c10::ScalarType::Long: (void)v.toLong(); break;
    default: break;
  }
}

// Argument checks torch's own kernels make for these ops (same messages).
void torch_checks(OpId id, Call& c) {
  if (id != OpId::sub && id != OpId::neg) return;
  const bool self_bool = c.tensor("self").scalar_type() == c10::ScalarType::Bool;
  if (id == OpId::sub) {
    // torch's own check: its error type changed (RuntimeError to NotImplementedError in 2.15).
    const c10::IValue& o = c["other"];
    if (o.isTensor()) at::native::sub_check(c.tensor("self"), o.toTensor());
    else at::native::sub_check(c.tensor("self"), o.toScalar());
  } else if (id == OpId::neg) {
    TORCH_CHECK(!self_bool, "Negation, the `-` operator, on a bool tensor is not supported. "
                "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.");
  }
}

namespace {

// What every row does once its iterator is built: the common dtype against the row's dtypes,
// alpha (add/sub), the nodes, the result.
void run(OpId id, Call& c, at::TensorIteratorBase& iter, ElementwiseArgs args) {
  const c10::ScalarType common = iter.common_dtype();
  if (const int ai = c.index("alpha"); ai >= 0 && !c.arg(ai).isNone()) {
    const c10::Scalar alpha = c.arg(ai).toScalar();
    at::native::alpha_check(common, alpha);  // torch's own (its add/sub metas'), before vkml's dtype limits
    // a bool add takes alpha as a bool, as torch's kernel does (alpha=-1: a or b, not a - b)
    args.s0 = to_scalar(common == c10::ScalarType::Bool ? c10::Scalar(alpha.to<bool>()) : alpha);
  }
  const DType ct = to_dtype(common, op_info(id).name);
  check_dtype(id, ct);
  emit_elementwise(id, iter, ct, args);
  c.ret(iter.output());
}

// The in-place self or the out= tensor (borrowed, as wrap()), or an undefined tensor.
c10::MaybeOwned<at::Tensor> out_of(Call& c) {
  if (c.inplace()) return c10::MaybeOwned<at::Tensor>::borrowed(c.tensor("self"));
  const auto& args = c.schema.arguments();
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].is_out()) return c10::MaybeOwned<at::Tensor>::borrowed(c.arg(int(i)).toTensor());
  return c10::MaybeOwned<at::Tensor>::owned(at::Tensor());
}

// at::TensorIterator, but a result it allocates comes from the vkml allocator directly, as torch's
// structured CPU kernels allocate theirs, not through the dispatcher (at::empty: BackendSelect,
// then our empty kernel), which is most of what recording a tiny op costs beyond torch CPU's.
// An output that was given (out=, in place) is resized as at::TensorIterator resizes it.
struct Iter final : at::TensorIteratorBase {
  const at::Tensor& maybe_get_output(int64_t i) override { return output(i); }
  // torch 2.13's signature; torch 2.11 adds dimension names (aten/structured.h says more).
  // Declared without `override`: the one matching the installed torch overrides.
  void set_output_raw_strided(int64_t i, c10::IntArrayRef sizes, c10::IntArrayRef strides,
                              c10::TensorOptions options) {
    set(i, sizes, strides, options);
  }
#ifdef VKML_DIMNAMES
  void set_output_raw_strided(int64_t i, c10::IntArrayRef sizes, c10::IntArrayRef strides,
                              c10::TensorOptions options, at::DimnameList) {
    set(i, sizes, strides, options);
  }
#endif
  void set(int64_t i, c10::IntArrayRef sizes, c10::IntArrayRef strides, const c10::TensorOptions& options) {
    auto& op = operands_[size_t(i)];
    if (!op.tensor_base().defined()) {
      op.tensor(c10::MaybeOwned<at::TensorBase>::owned(allocate(sizes, strides, options)));
      op.current_dtype = op.target_dtype;
    } else if (op.will_resize) {
      at::native::resize_output(op.tensor(), sizes);
      if (!strides.empty()) op.tensor().as_strided_(sizes, strides);
      else if (const auto mf = options.memory_format_opt()) op.tensor_base().unsafeGetTensorImpl()->empty_tensor_restride(*mf);
    }
  }
  static at::Tensor allocate(c10::IntArrayRef sizes, c10::IntArrayRef strides, const c10::TensorOptions& o) {
    if (o.device().type() != c10::DeviceType::PrivateUse1)  // not ours: as at::TensorIterator
      return strides.empty() ? at::empty(sizes, o) : at::empty_strided(sizes, strides, o);
    constexpr c10::DispatchKeySet keys{c10::DispatchKey::PrivateUse1};  // as aten/basic.cpp's empty
    const c10::ScalarType st = c10::typeMetaToScalarType(o.dtype());
    to_dtype(st, "empty");  // the same error as there (complex results)
    OnDevice on(o.device().index());
    return strides.empty() ? at::detail::empty_generic(sizes, allocator(), keys, st, o.memory_format_opt())
                           : at::detail::empty_strided_generic(sizes, strides, allocator(), keys, st);
  }
};

}  // namespace

// A fill value as the dtype holds it: for bool any nonzero value (NaN too) is true, as torch's
// conversion (to_scalar would truncate 0.5 to 0).
static Scalar fill_value(const c10::Scalar& v, c10::ScalarType t) {
  if (t != c10::ScalarType::Bool) return to_scalar(v);
  const bool b = v.isBoolean() ? v.toBool() : v.isIntegral(false) ? v.toLong() != 0 : !(v.toDouble() == 0.0);
  return Scalar{b ? 1.0 : 0.0, b ? 1 : 0};
}

void ew_fill(OpId id, Call& c) {
  at::Tensor self = c.tensor("self");
  ElementwiseArgs args;
  if (c.has("value")) {
    const c10::Scalar v = c["value"].toScalar();
    // torch's 1-element fast path skips the overflow check for float16 and bfloat16 only (measured,
    // torch 2.13: a 1-element float16 fill_(1e5) gives inf; float32 fill_(1e39) raises at any size)
    const c10::ScalarType t = self.scalar_type();
    if (self.numel() != 1 || !(t == c10::ScalarType::Half || t == c10::ScalarType::BFloat16)) check_fits(v, t);
    args.s0 = fill_value(v, self.scalar_type());
  }
  auto iter = at::TensorIteratorConfig().add_output(self).resize_outputs(false).check_all_same_dtype(false).build();
  emit_elementwise(id, iter, to_dtype(self.scalar_type(), "fill_"), args);
  c.ret(self);
}

// In place: self = mask ? value : self (mask broadcast to self).
void ew_masked_fill(OpId id, Call& c) {
  at::Tensor self = c.tensor("self");
  const at::Tensor& mask = c.tensor("mask");
  TORCH_CHECK(mask.scalar_type() == c10::ScalarType::Bool,
              "masked_fill_ only supports boolean masks, but got mask with dtype ", mask.scalar_type());
  c10::Scalar v;
  if (c["value"].isTensor()) {
    const at::Tensor& vt = c.tensor("value");
    TORCH_CHECK(vt.dim() == 0, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
                vt.dim(), " dimension(s).");
    v = vt.item();  // as torch's CUDA kernel: the value is read back (one synchronisation if on vkml)
  } else {
    v = c["value"].toScalar();
  }
  check_fits(v, self.scalar_type());
  auto iter = at::TensorIteratorConfig().set_check_mem_overlap(false).check_all_same_dtype(false)
                  .resize_outputs(false).add_output(self).add_const_input(self).add_const_input(mask).build();
  ElementwiseArgs args;
  args.s0 = fill_value(v, self.scalar_type());
  emit_elementwise(id, iter, to_dtype(self.scalar_type(), "masked_fill_"), args);
  c.ret(self);
}

// addcmul, addcdiv and lerp.Scalar, every overload: out = self + (value * t1) * t2,
// self + (value * t1) / t2, lerp(self, end, w), as torch's ternary TensorIterator (its shape, promotion and safe-casting rules and
// messages; a 0-dim CPU tensor1 or end is accepted as a CPU scalar). One node that reads self as
// the output's old value (reads_out): in place, on self; otherwise self is first copied into the
// result (broadcast, in the result's dtype), a node the fusion joins with it. An out= tensor that
// is tensor1 or tensor2 gets a temporary, copied in after. The arguments are borrowed, not
// copied (Adam records these per parameter: a copy's reference count may take the GIL).
void ew_addc(OpId id, Call& c, const at::Tensor& self, const at::Tensor& t1, const at::Tensor* t2,
             const c10::Scalar& s) {
  const bool lerp = t2 == nullptr;
  at::Tensor o = c.inplace() ? self : c.out();
  if (o.defined() && !c.inplace() && !o.is_same(self) &&
      (o.is_alias_of(t1) || (t2 && o.is_alias_of(*t2)) || o.is_alias_of(self))) {
    at::Tensor r = lerp ? at::lerp(self, t1, s)
                 : id == OpId::addcdiv ? at::addcdiv(self, t1, *t2, s) : at::addcmul(self, t1, *t2, s);
    at::native::resize_output(o, r.sizes());
    o.copy_(r);
    c.ret(o);
    return;
  }
  Iter iter;
  at::TensorIteratorConfig cfg;
  cfg.add_output(o).add_const_input(t1);
  if (t2) cfg.add_const_input(*t2);
  cfg.add_const_input(self).allow_cpu_scalars(true);
  if (!lerp) cfg.promote_inputs_to_common_dtype(true).enforce_safe_casting_to_output(true);  // build_ternary_op
  // (lerp's meta checks that all dtypes are the same, TensorIterator's default)
  iter.build(cfg);
  const c10::ScalarType common = iter.common_dtype();
  const DType ct = to_dtype(common, op_info(id).name);
  check_dtype(id, ct);
  // torch's kernels take the scalar as value.to<opmath_t>() (float for float16/bfloat16), which
  // raises where it overflows (1e30 for uint8)
  check_fits(s, common == c10::ScalarType::Half || common == c10::ScalarType::BFloat16 ? c10::ScalarType::Float : common);
  const at::Tensor& dst = iter.output();
  if (!dst.is_same(self)) {
    if (self.device() == dst.device()) copy_on_device(dst, self);
    else dst.copy_(self);  // a 0-dim CPU self
  }
  ElementwiseArgs args;
  args.reads_out = true;
  args.s0 = to_scalar(s);
  emit_elementwise(id, iter, ct, args, lerp ? 1 : 2);
  c.ret(dst);
}

void ew_addcmul(OpId id, Call& c) {
  const at::Tensor &self = c.tensor("self"), &t1 = c.tensor("tensor1"), &t2 = c.tensor("tensor2");
  ew_addc(id, c, self, t1, &t2, c["value"].toScalar());
}

void ew_addcdiv(OpId id, Call& c) {
  const at::Tensor &self = c.tensor("self"), &t1 = c.tensor("tensor1"), &t2 = c.tensor("tensor2");
  TORCH_CHECK(!(c10::isIntegralType(t1.scalar_type(), true) && c10::isIntegralType(t2.scalar_type(), true)),
              "Integer division with addcdiv is no longer supported, and in a future release addcdiv will "
              "perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented "
              "as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as "
              "(input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter "
              "implementation: (input + value * tensor1 / tensor2), for all dtypes.");  // torch's addcdiv meta
  ew_addc(id, c, self, t1, &t2, c["value"].toScalar());
}

void ew_lerp(OpId id, Call& c) {
  const at::Tensor &self = c.tensor("self"), &end = c.tensor("end");
  TORCH_CHECK(self.scalar_type() == end.scalar_type(), "expected dtype ", self.scalar_type(),
              " for `end` but got dtype ", end.scalar_type());
  TORCH_CHECK(c10::isFloatingType(self.scalar_type()), "lerp: expected a floating point tensor, got ",
              self.scalar_type());  // vkml's message: torch CPU has no integer lerp kernel
  ew_addc(id, c, self, end, nullptr, c["weight"].toScalar());
}

// out = other (broadcast), then out = condition ? self : out (two nodes).
void ew_where(OpId id, Call& c) {
  at::Tensor cond = c.tensor("condition");
  at::Tensor x = c.tensor("self"), y = c.tensor("other");
  if (cond.scalar_type() == c10::ScalarType::Byte) {  // deprecated, still accepted by torch 2.13
    TORCH_WARN_ONCE("where received a uint8 condition tensor. This behavior is deprecated and will be removed "
                    "in a future version of PyTorch. Use a boolean condition instead.");
    cond = cond.to(c10::ScalarType::Bool);
  }
  TORCH_CHECK(cond.scalar_type() == c10::ScalarType::Bool,
              "where expected condition to be a boolean tensor, but got a tensor with dtype ", cond.scalar_type());
  const c10::ScalarType rt = at::result_type(x, y);
  const c10::Device dev = x.device().type() == c10::DeviceType::PrivateUse1 ? x.device()
                        : y.device().type() == c10::DeviceType::PrivateUse1 ? y.device() : cond.device();
  auto on_dev = [&](at::Tensor t, c10::ScalarType st) {  // 0-dim CPU ones move, as TensorIterator allows
    if (t.device() != dev && !(t.is_cpu() && t.dim() == 0)) wrong_device(t);
    return t.to(dev, st);
  };
  cond = on_dev(cond, c10::ScalarType::Bool);
  x = on_dev(x, rt);
  y = on_dev(y, rt);
  const auto shape = at::infer_size_dimvector(at::infer_size_dimvector(cond.sizes(), x.sizes()), y.sizes());
  at::Tensor o = c.out();
  if (o.defined()) {
    TORCH_CHECK(o.scalar_type() == rt, "Expected out type to be ", rt, " but got ", o.scalar_type());
    if (o.sizes() != c10::IntArrayRef(shape)) o.resize_(shape);
  }
  const bool alias = o.defined() && (o.is_alias_of(x) || o.is_alias_of(y) || o.is_alias_of(cond));
  at::Tensor dst = o.defined() && !alias ? o : at::empty(shape, x.options());
  copy_on_device(dst, y.expand(shape));
  auto iter = at::TensorIteratorConfig().set_check_mem_overlap(false).check_all_same_dtype(false)
                  .resize_outputs(false).add_output(dst).add_const_input(x).add_const_input(cond).build();
  ElementwiseArgs args;
  args.reads_out = true;
  emit_elementwise(id, iter, to_dtype(rt, "where"), args);
  if (alias) o.copy_(dst);
  c.ret(o.defined() ? o : dst);
}

// torch's clamp meta: integer self promotes with the bounds (not in place); clamp_min and
// clamp_max too (measured on torch 2.13: clamp_max(int16 tensor, 2.5) is float32).
void ew_clamp(OpId id, Call& c) {
  at::Tensor self = c.tensor("self");
  const std::optional<c10::Scalar> lo = c.has("min") ? std::optional(c["min"].toScalar()) : std::nullopt;
  const std::optional<c10::Scalar> hi = c.has("max") ? std::optional(c["max"].toScalar()) : std::nullopt;
  TORCH_CHECK(lo || hi, "torch.clamp: At least one of 'min' or 'max' must not be None");
  c10::ScalarType rt = self.scalar_type();
  if (!c10::isFloatingType(rt)) {
    at::native::ResultTypeState st{};
    st = at::native::update_result_type_state(self, st);
    if (lo) st = at::native::update_result_type_state(*lo, st);
    if (hi) st = at::native::update_result_type_state(*hi, st);
    rt = at::native::result_type(st);
    TORCH_CHECK(rt == self.scalar_type() || !c.inplace(), "result type ", rt,
                " can't be cast to the desired output type ", self.scalar_type());
    if (rt != self.scalar_type()) self = self.to(rt);
  }
  const bool flt = c10::isFloatingType(rt);
  const double inf = std::numeric_limits<double>::infinity();
  // An absent bound is the widest the result dtype holds (the shader narrows bounds to it).
  auto int_range = [](c10::ScalarType t) -> std::pair<int64_t, int64_t> {
    switch (t) {
      case c10::ScalarType::Byte: return {0, 255};
      case c10::ScalarType::Char: return {-128, 127};
      case c10::ScalarType::Short: return {-32768, 32767};
      case c10::ScalarType::Int: return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
      default: return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
    }
  };
  const auto [imin, imax] = int_range(rt);
  ElementwiseArgs args;
  args.s0 = flt ? Scalar{-inf, 0} : Scalar{double(imin), imin};
  args.s1 = flt ? Scalar{inf, 0} : Scalar{double(imax), imax};
#if VKML_TORCH_AT_LEAST_2_15
  // torch 2.15: an integer bound past the dtype's range on the side it cannot matter saturates,
  // one on the other side raises (measured: uint8 clamp(-5, 300) is clamp(0, 255), clamp(260, 270)
  // raises "Clamp min value 260 is outside the representable range of Byte"). 2.13 wraps -5 to 251.
  if (!flt && rt != c10::ScalarType::Bool) {
    if (lo) {
      TORCH_CHECK(lo->toLong() <= imax, "Clamp min value ", *lo, " is outside the representable range of ", rt);
      args.s0 = to_scalar(lo->toLong() < imin ? c10::Scalar(imin) : *lo);
    }
    if (hi) {
      TORCH_CHECK(hi->toLong() >= imin, "Clamp max value ", *hi, " is outside the representable range of ", rt);
      args.s1 = to_scalar(hi->toLong() > imax ? c10::Scalar(imax) : *hi);
    }
  } else
#endif
  {
    if (lo) check_fits(*lo, rt), args.s0 = to_scalar(*lo);
    if (hi) check_fits(*hi, rt), args.s1 = to_scalar(*hi);
  }
  args.scalar_b = true;  // b is the upper bound
  args.round_scalars = true;
  at::TensorIterator iter;
  iter.build_unary_op(*out_of(c), self);
  run(id, c, iter, args);
}

// The iterators borrow their operands (as torch's structured kernels do): out and the arguments
// on the stack outlive them, and Call::ret takes the result before popping the arguments.
void ew_unary(OpId id, Call& c) {
  torch_checks(id, c);
  const auto out = out_of(c);
  Iter iter;
  iter.build_borrowing_unary_op(*out, c.tensor("self"));
  run(id, c, iter, {});
}

void ew_unary_float(OpId id, Call& c) {
  const auto out = out_of(c);
  Iter iter;
  iter.build_borrowing_unary_float_op(*out, c.tensor("self"));
  run(id, c, iter, {});
}

// a ^ s: s = -1 (all ones) for integers, 1 for bool (logical not).
void ew_bitwise_not(OpId id, Call& c) {
  const auto out = out_of(c);
  Iter iter;
  iter.build_borrowing_unary_op(*out, c.tensor("self"));
  ElementwiseArgs args;
  args.s0 = iter.common_dtype() == c10::ScalarType::Bool ? Scalar{1.0, 1} : Scalar{-1.0, -1};
  run(id, c, iter, args);
}

void ew_binary(OpId id, Call& c) {  // the second argument is `other`, or clamp_min/max's bound
  torch_checks(id, c);
  const auto out = out_of(c), other = wrap(c.arg(1));
  Iter iter;
  iter.build_borrowing_binary_op(*out, c.tensor("self"), *other);
  ElementwiseArgs args;
  args.s0 = Scalar{1.0, 1};  // alpha, unless given
  run(id, c, iter, args);
}

void ew_binary_float(OpId id, Call& c) {
  const auto out = out_of(c), other = wrap(c["other"]);
  Iter iter;
  iter.build_borrowing_binary_float_op(*out, c.tensor("self"), *other);
  ElementwiseArgs args;
  args.s0 = Scalar{1.0, 1};
  run(id, c, iter, args);
}

void ew_compare(OpId id, Call& c) {
  const auto out = out_of(c), other = wrap(c["other"]);
  Iter iter;
  iter.build_borrowing_comparison_op(*out, c.tensor("self"), *other);
  run(id, c, iter, {});
}

// out = self <= threshold ? 0 : grad_output   (a = self, b = grad_output)
void ew_threshold_bwd(OpId id, Call& c) {
  const at::Tensor self = c.tensor("self"), grad = c.tensor("grad_output");
  const auto out = out_of(c);
  auto iter = at::TensorIteratorConfig().set_check_mem_overlap(false).add_output(*out)
                  .add_const_input(self).add_const_input(grad)
                  .allow_cpu_scalars(true).promote_inputs_to_common_dtype(true)
                  .cast_common_dtype_to_outputs(true).enforce_safe_casting_to_output(true).build();
  ElementwiseArgs args;
  // torch converts it to the common dtype's opmath type with an overflow check (float for
  // float16/bfloat16: 2^31 passes there, 1e300 does not)
  const c10::ScalarType ct = iter.common_dtype();
  check_fits(c["threshold"].toScalar(),
             ct == c10::ScalarType::Half || ct == c10::ScalarType::BFloat16 ? c10::ScalarType::Float : ct);
  const bool reduced = ct == c10::ScalarType::Half || ct == c10::ScalarType::BFloat16;
  // float16/bfloat16: torch's CPU kernel compares float(x) <= threshold.to<float>() (1e30 stays
  // finite); the shader rounds OP_THRESHOLD_BWD's scalar to float there, the oracle gets it so
  args.s0 = to_scalar(reduced ? c10::Scalar(double(c["threshold"].toScalar().to<float>())) : c["threshold"].toScalar());
  args.round_scalars = !reduced;
  run(id, c, iter, args);
}

// (grad_output, output) or (grad_output, self): a = grad_output, b = the other.
void ew_grad_bwd(OpId id, Call& c) {
  const at::Tensor grad = c.tensor("grad_output");
  const at::Tensor other = c.has("output") ? c.tensor("output") : c.tensor("self");
  const auto out = out_of(c);
  at::TensorIterator iter;
  iter.build_borrowing_binary_op(*out, grad, other);
  run(id, c, iter, {});
}

// The copy rule: compute in f64 if either side is f64, integers in i64, else f32.
DType copy_compute(DType dst, DType src) {
  if (dst == DType::f64 || src == DType::f64) return DType::f64;
  if (!is_float(dst) && !is_float(src)) return DType::i64;
  return DType::f32;
}

void copy_on_device(const at::Tensor& dst, const at::Tensor& src) {
  if (dst.numel() == 0) return;
  if (dst.scalar_type() == src.scalar_type() && dst.is_contiguous() && src.is_contiguous() &&
      dst.sizes() == src.sizes()) {
    if (addr_of(dst) == addr_of(src)) return;
    allocator()->copy_data(dst.data_ptr(), src.const_data_ptr(), size_t(dst.nbytes()));
    return;
  }
  auto iter = at::TensorIteratorConfig().add_output(dst).add_const_input(src).resize_outputs(false)
                  .check_all_same_dtype(false).build();
  DType d = to_dtype(dst.scalar_type(), "copy_"), s = to_dtype(src.scalar_type(), "copy_");
  emit_elementwise(OpId::copy, iter, copy_compute(d, s), {});
}

}  // namespace vkml::aten
