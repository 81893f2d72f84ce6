"""Case generators for test_ops.py, one per aten-side function of the op rows (their ATEN column).

A generator gets (row, overload, dtype, rng, special) and returns a list of Case. Tensor arguments
are In(...) placeholders: a CPU base tensor plus a view function, materialized on each device by
moving the base and applying the view there, so both devices see the same strides and offsets.
`special` asks for NaN/Inf/extreme/denormal inputs instead of ordinary ones.
"""
import math
from dataclasses import dataclass, field

import torch

from helpers import resolve


@dataclass
class In:
    base: torch.Tensor
    view: object = None      # function tensor -> view of it, applied after the move
    keep_cpu: bool = False   # a CPU 0-dim tensor mixed with device tensors (allowed by PyTorch)

    def make(self, dev):
        if self.keep_cpu:
            return self.base.clone(), None
        t = self.base.clone() if dev == "cpu" else self.base.to(dev)
        return (self.view(t) if self.view else t), t

    def cpu(self):
        return self.make("cpu")[0]


@dataclass
class Case:
    desc: str
    args: list
    kwargs: dict = field(default_factory=dict)
    outs: dict = field(default_factory=dict)  # out kwarg name -> dtype, for .out overloads
    scale: object = None  # fn(cpu_args) -> list of (scale, n), one per compared output
    ref: object = None    # the CPU reference op, where torch CPU has no kernel for the overload itself


def out_names(overload):
    s = resolve(overload)._schema
    return [a.name for a in s.arguments if a.kwarg_only and a.alias_info is not None and a.alias_info.is_write]


def is_inplace(overload):
    a = resolve(overload)._schema.arguments
    return bool(a) and not a[0].kwarg_only and a[0].alias_info is not None and a[0].alias_info.is_write


def has_arg(overload, name):
    return any(a.name == name for a in resolve(overload)._schema.arguments)


# ---- values --------------------------------------------------------------------------------------

def rand(shape, dtype, rng, lo=-3.0, hi=3.0, positive=False):
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=rng).bool()
    if dtype.is_floating_point:
        x = torch.rand(shape, generator=rng, dtype=torch.float64) * (hi - lo) + lo
        if positive:
            x = x.abs() + 0.01
        return x.to(dtype)
    lo_i = 0 if (dtype == torch.uint8 or positive) else -20
    return torch.randint(lo_i, 21, shape, generator=rng).to(dtype)


def small_ints(shape, dtype, rng):
    """Few distinct values, so comparisons and arg-reductions see ties."""
    lo = 0 if dtype in (torch.uint8, torch.bool) else -2
    return torch.randint(lo, 3, shape, generator=rng).to(dtype)


def special_values(dtype, signed_zero=True, with_max=True):
    """NaN, infinities, signed zero, 1e30, 1e-30, max, smallest normal, denormals, ordinary values.

    signed_zero=False for max/min-like ops, where IEEE leaves the sign of max(-0, +0) open and torch
    CPU's answer depends on argument order and vectorization. with_max=False for sums, where
    whether max + max - max overflows depends on the (legitimately different) summation order.
    """
    if dtype.is_floating_point:
        fi = torch.finfo(dtype)
        v = [math.nan, math.inf, -math.inf, 0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 100.0, 1e30, -1e30, 1e-30,
             -1e-30, fi.smallest_normal, fi.smallest_normal / 4, -fi.smallest_normal * 0.75]
        if with_max:
            v += [fi.max, -fi.max]
        if signed_zero:
            v.append(-0.0)
        t = torch.tensor(v, dtype=torch.float64).to(dtype)
        if not signed_zero:  # -1e-30 becomes -0.0 in float16
            t = t[~((t == 0) & torch.signbit(t))]
        return t
    if dtype == torch.bool:
        return torch.tensor([False, True])
    ii = torch.iinfo(dtype)
    v = [0, 1, 2, 7, ii.max, ii.max - 1, ii.min, ii.min + 1, ii.max // 3]
    if dtype == torch.int64:
        v += [2**53, 2**53 + 1, -(2**53) - 1, 2**62 + 1]  # not representable in float64
    if ii.min < 0:
        v += [-1, -7]
    return torch.tensor(v, dtype=torch.int64).to(dtype)


def unary_inputs(dtype, rng, **kw):
    """(description, In) pairs covering layouts: contiguous, 0-dim, empty, transposed, stepped, offset."""
    r = lambda shape: rand(shape, dtype, rng, **kw)  # noqa: E731
    return [
        ("contiguous (3,5)", In(r((3, 5)))),
        ("0-dim", In(r(()))),
        ("empty (0,4)", In(r((0, 4)))),
        ("transposed (5,3).t()", In(r((5, 3)), lambda t: t.t())),
        ("stepped [1:, ::2] of (4,9)", In(r((4, 9)), lambda t: t[1:, ::2])),
        ("offset view [3:18].view(3,5)", In(r((20,)), lambda t: t[3:18].view(3, 5))),
        ("1-D 700 elements", In(r((700,)))),
    ]


def wrap_call(overload, args, desc, out_dtypes=(), scale=None, kwargs=None):
    """Adds the out= kwargs when `overload` is an out variant."""
    outs = dict(zip(out_names(overload), out_dtypes)) if out_names(overload) else {}
    if out_names(overload):
        assert len(outs) == len(out_names(overload)), f"{overload}: need dtypes for {out_names(overload)}"
    return Case(desc, list(args), dict(kwargs or {}), outs, scale)


def result_type(*xs):
    ts = [x.cpu() if isinstance(x, In) else x for x in xs]
    return torch.result_type(*ts) if len(ts) == 2 else ts[0].dtype


# ---- elementwise ---------------------------------------------------------------------------------

UNARY_DOMAIN = {"log": dict(positive=True), "sqrt": dict(positive=True), "exp": dict(lo=-10.0, hi=10.0)}


def _log_scale(args):
    return [(torch.log(args[0].double()).abs().clamp_min(1.0), 1)]


def gen_unary(row, overload, dtype, rng, special):
    float_only = row["aten"] == "ew_unary_float"
    scale = _log_scale if row["tol_kind"] == "backward-error" else None
    if special:
        ins = [("special values", In(special_values(dtype, signed_zero=row["name"] not in ("relu",))))]
    else:
        ins = unary_inputs(dtype, rng, **UNARY_DOMAIN.get(row["name"], {}))
        if float_only and dtype == torch.float32 and not is_inplace(overload):
            # int -> float32 promotion (in-place on an int tensor is an error on both devices)
            ins += [("int32 input promotes", In(torch.randint(1, 50, (3, 5), generator=rng, dtype=torch.int32))),
                    ("bool input promotes", In(torch.randint(0, 2, (6,), generator=rng).bool()))]
    cases = []
    for desc, x in ins:
        out_dt = dtype if not (float_only and not x.base.dtype.is_floating_point) else torch.float32
        cases.append(wrap_call(overload, [x], desc, [out_dt], scale))
    return cases


def binary_pairs(dtype, rng, kind, name, special):
    pos = kind == "ew_binary_float"  # denominators away from zero in ordinary cases
    r = lambda shape, dt=dtype, p=False: rand(shape, dt, rng, positive=p)  # noqa: E731
    if kind == "ew_compare":
        r = lambda shape, dt=dtype, p=False: small_ints(shape, dt, rng)  # noqa: E731  (ties)
    if special:
        v = special_values(dtype, signed_zero=name not in ("maximum", "minimum"))
        return [("special x special", In(v.repeat_interleave(len(v))), In(v.repeat(len(v))))]
    pairs = [
        ("contiguous (3,5) (3,5)", In(r((3, 5))), In(r((3, 5), p=pos))),
        ("transposed x stepped", In(r((5, 3)), lambda t: t.t()), In(r((3, 10), p=pos), lambda t: t[:, ::2])),
        ("broadcast (3,5) x (5,)", In(r((3, 5))), In(r((5,), p=pos))),
        ("broadcast (3,1) x (1,5)", In(r((3, 1))), In(r((1, 5), p=pos))),
        ("expanded view x (3,5)", In(r((5,)), lambda t: t.expand(3, 5)), In(r((3, 5), p=pos))),
        ("0-dim x (3,5)", In(r(())), In(r((3, 5), p=pos))),
        ("(3,5) x 0-dim", In(r((3, 5))), In(r((), p=pos))),
        ("empty (0,5) x (5,)", In(r((0, 5))), In(r((5,), p=pos))),
        ("(3,5) x CPU 0-dim tensor", In(r((3, 5))), In(r((), p=pos), keep_cpu=True)),
        ("1-D 700", In(r((700,))), In(r((700,), p=pos))),
    ]
    if dtype.is_floating_point:
        pairs.append(("int32 x float promotion", In(r((3, 5), torch.int32)), In(r((3, 5), p=pos))))
        if dtype in (torch.float16, torch.bfloat16):
            other = torch.bfloat16 if dtype == torch.float16 else torch.float16
            pairs.append(("mixed f16/bf16 -> float32", In(r((4,))), In(r((4,), other, p=pos))))
            pairs.append(("narrow x float32 tensor -> float32", In(r((4,))), In(r((4,), torch.float32, p=pos))))
            pairs.append(("narrow x float32 0-dim stays narrow", In(r((4,))), In(r((), torch.float32, p=pos))))
    elif dtype != torch.bool:
        pairs.append(("bool x int promotion", In(r((3, 5), torch.bool)), In(r((3, 5), p=pos))))
    if kind == "ew_binary_float" and dtype == torch.float32:
        pairs.append(("int64 / int64 true division", In(r((3, 5), torch.int64)), In(rand((3, 5), torch.int64, rng, positive=True))))
    return pairs


def binary_scalars(dtype):
    if dtype == torch.bool:
        return [True, 0, 2.5]
    return [2, -3, 2.5, 0.1, True]  # 0.1 is inexact: PyTorch rounds it to the tensor's dtype first


def gen_binary(row, overload, dtype, rng, special):
    kind, name = row["aten"], row["name"]
    scalar_ov = ".Scalar" in overload
    float_only = kind == "ew_binary_float"
    inplace = is_inplace(overload)
    cases = []
    # alpha 2 keeps self + alpha*other exact with or without a fused multiply-add (torch CPU fuses
    # only in its vectorized loop), so exact rows stay exact.
    # Not with special values: inf + 2*(-max) is inf fused but NaN unfused, so CPU is inconsistent.
    kw_variants = [{}]
    if has_arg(overload, "alpha") and dtype != torch.bool and not special:
        kw_variants.append({"alpha": 2})
    pairs = binary_pairs(dtype, rng, kind, name, special)
    if scalar_ov and not special:
        pairs = [p for p in pairs if p[0].startswith(("contiguous", "transposed", "0-dim", "empty"))]
    for a_desc, a, b in pairs:
        if inplace and torch.broadcast_shapes(a.cpu().shape, b.cpu().shape) != a.cpu().shape:
            continue  # in-place output cannot be broadcast: covered by test_errors
        if scalar_ov:
            others = binary_scalars(dtype) if not special else [2.5]
            for s in others:
                rt = torch.result_type(a.cpu(), s)
                if float_only and not rt.is_floating_point:
                    rt = torch.float32
                for kw in kw_variants:
                    cases.append(wrap_call(overload, [a, s], f"{a_desc.split(' x ')[0]} with scalar {s!r} {kw}",
                                           [rt], kwargs=kw))
            continue
        rt = torch.result_type(a.cpu(), b.cpu())
        if float_only and not rt.is_floating_point:
            rt = torch.float32
        if kind == "ew_compare":
            rt = torch.bool
        for kw in kw_variants:
            cases.append(wrap_call(overload, [a, b], f"{a_desc} {kw}", [rt], kwargs=kw))
    if kind == "ew_compare" and not scalar_ov and dtype.is_floating_point and not special:
        # equal values on both sides, NaN != NaN
        v = torch.tensor([1.0, math.nan, -0.0, math.inf], dtype=dtype)
        cases.append(wrap_call(overload, [In(v), In(torch.tensor([1.0, math.nan, 0.0, math.inf], dtype=dtype))],
                               "ties, NaN, signed zero", [torch.bool]))
    return cases


def gen_compare(row, overload, dtype, rng, special):
    return gen_binary(row, overload, dtype, rng, special)


def gen_threshold_bwd(row, overload, dtype, rng, special):
    cases = []
    thresholds = [0, 0.5] if dtype.is_floating_point else [0, 1]
    if special:
        v = special_values(dtype)
        ins = [("special grad x special self", In(v.repeat_interleave(len(v))), In(v.repeat(len(v))))]
    else:
        ins = [
            ("contiguous", In(rand((3, 5), dtype, rng)), In(small_ints((3, 5), dtype, rng))),
            ("transposed grad, stepped self", In(rand((5, 3), dtype, rng), lambda t: t.t()),
             In(small_ints((3, 10), dtype, rng), lambda t: t[:, ::2])),
            ("broadcast self (5,)", In(rand((3, 5), dtype, rng)), In(small_ints((5,), dtype, rng))),
            ("0-dim", In(rand((), dtype, rng)), In(small_ints((), dtype, rng))),
            ("empty", In(rand((0, 3), dtype, rng)), In(small_ints((0, 3), dtype, rng))),
        ]
    for desc, g, s in ins:
        for th in thresholds:
            cases.append(wrap_call(overload, [g, s, th], f"{desc}, threshold {th}", [dtype]))
    return cases


def gen_grad_bwd(row, overload, dtype, rng, special):
    """(grad_output, output-or-self) pairs: layouts, broadcasting, 0-dim, empty; special values."""
    if special:
        v = special_values(dtype)
        ins = [("special grad x special y", In(v.repeat_interleave(len(v))), In(v.repeat(len(v))))]
    else:
        ins = [
            ("contiguous", In(rand((3, 5), dtype, rng)), In(rand((3, 5), dtype, rng, 0.0, 1.0))),
            ("transposed grad, stepped y", In(rand((5, 3), dtype, rng), lambda t: t.t()),
             In(rand((3, 10), dtype, rng, 0.0, 1.0), lambda t: t[:, ::2])),
            ("broadcast y (5,)", In(rand((3, 5), dtype, rng)), In(rand((5,), dtype, rng, 0.0, 1.0))),
            ("0-dim", In(rand((), dtype, rng)), In(rand((), dtype, rng, 0.0, 1.0))),
            ("empty", In(rand((0, 3), dtype, rng)), In(rand((0, 3), dtype, rng))),
        ]
    return [wrap_call(overload, [g, y], desc, [dtype]) for desc, g, y in ins]


def gen_where(row, overload, dtype, rng, special):
    """(condition, self, other): same shapes, broadcasting on each side, strided views, a CPU
    0-dim other, integer/float promotion, empty; special values; a float condition (an error)."""
    m = lambda shape: torch.randint(0, 2, shape, generator=rng).bool()  # noqa: E731
    r = lambda shape, dt=dtype: rand(shape, dt, rng)  # noqa: E731
    if special:
        v = special_values(dtype)
        ins = [("special values", In(m(v.shape)), In(v), In(v.flip(0)))]
    else:
        ins = [("same shape (3,5)", In(m((3, 5))), In(r((3, 5))), In(r((3, 5)))),
               ("broadcast condition (5,)", In(m((5,))), In(r((3, 5))), In(r((3, 5)))),
               ("self (3,1), other (1,5)", In(m((3, 5))), In(r((3, 1))), In(r((1, 5)))),
               ("transposed self, stepped other", In(m((3, 5))), In(r((5, 3)), lambda t: t.t()),
                In(r((3, 10)), lambda t: t[:, ::2])),
               ("CPU 0-dim other", In(m((3, 5))), In(r((3, 5))), In(r(()), keep_cpu=True)),
               ("empty", In(m((0, 5))), In(r((0, 5))), In(r((5,)))),
               ("float condition", In(r((3, 5), torch.float32)), In(r((3, 5))), In(r((3, 5))))]
        if dtype.is_floating_point:
            ins.append(("int32 self, float other", In(m((3, 5))), In(r((3, 5), torch.int32)), In(r((3, 5)))))
    cases = []
    for desc, cnd, x, y in ins:
        rt = torch.result_type(x.cpu(), y.cpu())
        cases.append(wrap_call(overload, [cnd, x, y], desc, [rt]))
    return cases


def gen_clamp(row, overload, dtype, rng, special):
    """clamp (min, max, both, min > max), clamp_min, clamp_max over self's layouts and special
    values; integer self with a float bound (clamp promotes; in place it is an error). NaN bounds
    are left out: torch CPU's vectorised and scalar loops disagree on them."""
    base = overload.split(".")[0].rstrip("_")
    fl = dtype.is_floating_point
    lo, hi = (-0.5, 1.25) if fl else (-2, 3)
    if dtype == torch.uint8:
        lo = 1
    if base == "clamp":
        bounds = [({"min": lo}, [lo, None]), ({"max": hi}, [None, hi]), ({}, [lo, hi]), ({}, [hi, lo])]
    else:
        bounds = [({}, [lo]), ({}, [hi])]
    if special:
        ins = [("special values", In(special_values(dtype, signed_zero=False)))]
    else:
        ins = unary_inputs(dtype, rng)
    cases = []
    for desc, x in ins:
        for kw, pos in bounds:
            args = [x] + (pos if not kw else [])
            cases.append(wrap_call(overload, args, f"{desc} {kw or pos}", [dtype], kwargs=kw))
    if not fl and base == "clamp" and not special:  # int self, float bound: float32 result
        x = In(rand((3, 5), dtype, rng))
        cases.append(wrap_call(overload, [x, 0.5, None], "int self, float min promotes", [torch.float32]))
    if not fl and not special and dtype not in (torch.int64, torch.bool):
        # integer bounds past the dtype's range: torch 2.13 wraps or raises an overflow error, 2.15
        # saturates the side where the bound cannot matter and raises on the other
        i = torch.iinfo(dtype)
        x = In(rand((3, 5), dtype, rng))
        low, high = i.min - 5, i.max + 5
        if base == "clamp":
            extra = [[low, 3], [1, high], [low, high], [high, None], [None, low]]
        else:
            extra = [[low], [high]]
        for pos in extra:
            cases.append(wrap_call(overload, [x] + pos, f"integer bounds past the dtype's range {pos}", [dtype]))
    return cases


def gen_masked_fill(row, overload, dtype, rng, special):
    """In place on self's layouts; masks of self's shape, broadcast, 0-dim; scalar or 0-dim tensor
    values (as the overload takes); an integer mask, which torch rejects."""
    m = lambda shape: torch.randint(0, 2, shape, generator=rng).bool()  # noqa: E731
    selfs = [("contiguous (3,5)", In(rand((3, 5), dtype, rng)), In(m((3, 5)))),
             ("transposed self", In(rand((5, 3), dtype, rng), lambda t: t.t()), In(m((3, 5)))),
             ("stepped view (base kept), broadcast mask (3,)", In(rand((6, 5), dtype, rng), lambda t: t[::2, 1:4]),
              In(m((3,)))),
             ("0-dim mask", In(rand((2, 3), dtype, rng)), In(torch.tensor(True))),
             ("empty", In(rand((0, 3), dtype, rng)), In(m((0, 3))))]
    if dtype.is_floating_point:
        values = [2.5, -3, True] + ([math.nan, math.inf, -math.inf, -0.0, 1e-30, 1e30] if special else [])
    elif dtype == torch.bool:
        values = [True, 0]
    else:
        values = [7, 0, 2.5] + ([torch.iinfo(dtype).max, torch.iinfo(dtype).max + 1] if special else [])
    tensor_value = overload.endswith(".Tensor")
    cases = []
    for d, s, mk in selfs:
        for v in values:
            val = In(torch.tensor(v, dtype=torch.float64 if isinstance(v, float) else None), keep_cpu=True) \
                if tensor_value else v
            cases.append(Case(f"{d} <- {v!r}", [s, mk, val]))
    cases.append(Case("int64 mask", [In(rand((3, 5), dtype, rng)), In(torch.ones(3, 5, dtype=torch.int64)), 1]
                      if not tensor_value else [In(rand((3, 5), dtype, rng)), In(torch.ones(3, 5, dtype=torch.int64)),
                                                In(torch.tensor(1), keep_cpu=True)]))
    return cases


def gen_fill(row, overload, dtype, rng, special):
    targets = [("contiguous (3,5)", In(rand((3, 5), dtype, rng))),
               ("stepped view [::2, 1:4] (base kept)", In(rand((6, 5), dtype, rng), lambda t: t[::2, 1:4])),
               ("transposed", In(rand((5, 3), dtype, rng), lambda t: t.t())),
               ("0-dim", In(rand((), dtype, rng))),
               ("empty", In(rand((0, 3), dtype, rng)))]
    if overload == "zero_":
        return [Case(d, [t]) for d, t in targets]
    if dtype.is_floating_point:
        values = [2.5, -3, True, 0.1] + ([math.nan, math.inf, -math.inf, -0.0, 1e-30, 1e30] if special else [])
    elif dtype == torch.bool:
        values = [True, 0, 2.5]
    else:
        values = [7, 0, -1 if dtype != torch.uint8 else 255, 2.5] + ([torch.iinfo(dtype).max, torch.iinfo(dtype).min] if special else [])
    return [Case(f"{d} <- {v!r}", [t, v]) for d, t in targets for v in values]


# ---- addcmul and lerp (rows that read self as the output's old value) ---------------------------
# Their contract is torch CPU's formula evaluated in its order, each operation rounded in the compute
# type (float for float16/bfloat16): self + (value * t1) * t2, and |w| < 0.5 ? self + w * (end - self)
# : end - (end - self) * (1 - w). torch CPU's own kernels fuse multiply-adds in their vectorised
# loops (measured, torch 2.13: 21% of 100,000 float32 addcmul results differ from the unfused
# formula in the last bit; lerp calls fmadd), which Vulkan cannot promise either way. So the
# reference here is torch CPU's op for everything but the values (its errors, dtype, shape, out=
# and in-place behaviour), with the values then replaced by the formula computed with torch CPU's
# separate elementwise ops; test_composite.py compares with torch's own values within the
# multiply-add bound.

def _opmath(dt):
    return torch.float32 if dt in (torch.float16, torch.bfloat16) else dt


def _no_ftz(t):
    return t


def _ftz(t):
    """t with subnormals (of its dtype) flushed to zeros of their sign, as a flushing device's
    every instruction leaves its result."""
    if not t.dtype.is_floating_point:
        return t
    sub = (t != 0) & (t.abs() < torch.finfo(t.dtype).smallest_normal)
    return torch.where(sub, t * 0, t)


def _unfused_addcmul(self, t1, t2, value=1, common=None, ftz=_no_ftz):
    o = _opmath(common)
    if not o.is_floating_point:
        value = int(value)  # value.to<scalar_t>(): an integer dtype truncates it (2.5 -> 2)
    return self.to(o) + ftz(ftz(t1.to(o) * value) * t2.to(o))


def _unfused_addcdiv(self, t1, t2, value=1, common=None, ftz=_no_ftz):
    o = _opmath(common)
    return self.to(o) + ftz(ftz(t1.to(o) * value) / t2.to(o))


def _unfused_lerp(self, end, weight, common=None, ftz=_no_ftz):
    o = _opmath(common)
    s, e = self.to(o), end.to(o)
    w = torch.tensor(weight, dtype=o).item()  # the weight in opmath, as torch's kernel takes it
    d = ftz(e - s)
    return s + ftz(w * d) if abs(w) < 0.5 else e - ftz(d * torch.tensor(1 - w if o == torch.float64 else
                                                                     float(torch.tensor(1, dtype=o) - torch.tensor(w, dtype=o)), dtype=o).item())


def unfused_ref(overload, flush=False):
    """The CPU reference for an addcmul / lerp overload (see above); with flush, the one for a
    device that flushes subnormals (test_ops.flush_refs: its inputs are flushed already): each
    intermediate flushed too, as the oracle's alternative run does (backend/cpu/ew_ops.h ftz)."""
    real = resolve(overload)
    name = overload.split(".")[0].rstrip("_")
    functional = resolve({"addcmul": "addcmul", "addcdiv": "addcdiv", "lerp": "lerp.Scalar"}[name])
    formula = {"addcmul": _unfused_addcmul, "addcdiv": _unfused_addcdiv, "lerp": _unfused_lerp}[name]

    def ref(*args, **kwargs):
        before = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        res = real(*args, **kwargs)  # torch's errors, result dtype and shape, in-place / out= semantics
        fkw = {k: v for k, v in kwargs.items() if k != "out"}
        common = functional(*before, **fkw).dtype
        val = formula(*before, **fkw, common=common, ftz=_ftz if flush else _no_ftz)
        res.copy_(val.to(common).expand(res.shape))
        return res
    return ref


UNFUSED_REFS = {"addcmul": unfused_ref, "lerp": unfused_ref}
# The reference on a device that flushes subnormals, for the rows whose formula has intermediates
# (addcdiv's main reference is torch CPU's own: no fused multiply-add across its division).
FLUSHED_REFS = {"addcmul": lambda ov: unfused_ref(ov, True), "lerp": lambda ov: unfused_ref(ov, True),
                "addcdiv": lambda ov: unfused_ref(ov, True)}


def _ternary_inputs(dtype, rng, special, lerp, div=False):
    # tensor2 of addcdiv away from zero in ordinary cases (a divisor)
    r = lambda shape, dt=dtype, last=False: rand(shape, dt, rng, positive=div and last)  # noqa: E731
    if special:
        v = special_values(dtype)
        n = len(v)
        ins = [("special x special x special", In(v.repeat_interleave(n)), In(v.repeat(n)),
                In(v.flip(0).repeat(n)))]
        return [t[:3] for t in ins] if lerp else ins
    ins = [("contiguous (3,5)", In(r((3, 5))), In(r((3, 5))), In(r((3, 5), last=True))),
           ("transposed self, stepped t1, broadcast t2 (5,)", In(r((5, 3)), lambda t: t.t()),
            In(r((3, 10)), lambda t: t[:, ::2]), In(r((5,), last=True))),
           ("offset view self, broadcast t1 (3,1)", In(r((20,)), lambda t: t[3:18].view(3, 5)), In(r((3, 1))),
            In(r((3, 5), last=True))),
           ("broadcast self (5,)", In(r((5,))), In(r((3, 5))), In(r((1, 5), last=True))),
           ("0-dim t1", In(r((3, 5))), In(r(())), In(r((3, 5), last=True))),
           ("CPU 0-dim t1", In(r((3, 5))), In(r(()), keep_cpu=True), In(r((3, 5), last=True))),
           ("empty (0,5)", In(r((0, 5))), In(r((0, 5))), In(r((5,), last=True))),
           ("1-D 700", In(r((700,))), In(r((700,))), In(r((700,), last=True)))]
    if dtype.is_floating_point:
        other = torch.float64 if dtype != torch.float64 else torch.float32
        ins.append(("mixed dtypes: t1 " + str(other).split(".")[-1], In(r((3, 5))), In(r((3, 5), other)),
                    In(r((3, 5), last=True))))
        ins.append(("int32 self", In(r((3, 5), torch.int32)), In(r((3, 5))), In(r((3, 5), last=True))))
    if div:
        ins.append(("integer tensor1 and tensor2 (an error)", In(r((3, 5))), In(r((3, 5), torch.int64)),
                    In(rand((3, 5), torch.int64, rng, positive=True))))
    if lerp:
        ins = [(d, s, e) for d, s, e, _ in ins]
    return ins


def _addc_cases(row, overload, dtype, rng, special, lerp, div=False):
    inplace = is_inplace(overload)
    if lerp:
        scalars = [0.3, 0.8] if special else [0.1, 0.5, 0.9, -0.3, 1.7, 0.0]
    elif dtype.is_floating_point:
        scalars = [1.5] if special else [0.7, -2, 1]
    else:
        scalars = [3, -2] if not special else [3]
    cases = []
    for desc, *ts in _ternary_inputs(dtype, rng, special, lerp, div):
        shape = torch.broadcast_shapes(*[t.cpu().shape for t in ts])
        if inplace and shape != ts[0].cpu().shape:
            continue  # an in-place self cannot be broadcast: torch raises (test_errors)
        try:
            rt = (torch.lerp(ts[0].cpu(), ts[1].cpu(), 0.5) if lerp else torch.addcmul(*[t.cpu() for t in ts])).dtype
        except RuntimeError:
            rt = dtype  # an error on both sides (lerp's dtype check)
        for s in scalars:
            scale = _addcdiv_scale(s) if div else None
            kw = {} if lerp else {"value": s}
            args = ts + ([s] if lerp else [])
            cases.append(wrap_call(overload, args, f"{desc}, {'weight' if lerp else 'value'} {s!r}", [rt], scale,
                                   kwargs=kw))
    return cases


def gen_addcmul(row, overload, dtype, rng, special):
    """self + (value * t1) * t2 over self's layouts, broadcast t1/t2 (and self, out of place), 0-dim
    and CPU 0-dim t1, empty, mixed dtypes (promotion; in place into a narrower or integer self is
    an error on both sides), special values; values 0.7, -2, 1 (integers 3, -2)."""
    return _addc_cases(row, overload, dtype, rng, special, lerp=False)


def gen_lerp(row, overload, dtype, rng, special):
    """lerp(self, end, w) for w on both sides of 0.5 (two formulas), 0.5 itself, negative and > 1,
    over the layouts of gen_addcmul; end of another dtype is an error on both sides."""
    return _addc_cases(row, overload, dtype, rng, special, lerp=True)


def _addcdiv_scale(value):
    """The contract's scale for addcdiv (TOL_ADDCDIV, backward-error): |self| + |value * t1 / t2|,
    the sizes of the two terms the division's error (Vulkan's 2.5 ulp) and the add's rounding
    are relative to (args: self, tensor1, tensor2 on the CPU)."""
    def scale(args):
        s, t1, t2 = (a.double() for a in args[:3])
        return [(s.abs() + (value * t1 / t2).abs(), 1)]
    return scale


def gen_addcdiv(row, overload, dtype, rng, special):
    """self + (value * t1) / t2 over gen_addcmul's layouts and dtypes, divisors away from zero
    (special values: any), integer tensor1 and tensor2 (torch's error); within the row's
    backward-error bound against torch CPU (the GPU's division is Vulkan's 2.5 ulp)."""
    return _addc_cases(row, overload, dtype, rng, special, lerp=False, div=True)
