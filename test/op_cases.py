"""Case generators for test_ops.py, one per op-table kind.

A generator gets (row, overload, dtype, rng, special) and returns a list of Case. Tensor arguments
are In(...) placeholders: a CPU base tensor plus a view function, materialized on each device by
moving the base and applying the view there, so both devices see the same strides and offsets.
`special` asks for NaN/Inf/extreme/denormal inputs instead of ordinary ones.
"""
import math
from dataclasses import dataclass, field

import torch

from helpers import FLOAT_DTYPES, INT_DTYPES, resolve


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
        return torch.tensor(v, dtype=torch.float64).to(dtype)
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
    float_only = row["kind"] == "K_UNARY_FLOAT"
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
    pos = kind == "K_BINARY_FLOAT"  # denominators away from zero in ordinary cases
    r = lambda shape, dt=dtype, p=False: rand(shape, dt, rng, positive=p)  # noqa: E731
    if kind == "K_COMPARE":
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
    if kind == "K_BINARY_FLOAT" and dtype == torch.float32:
        pairs.append(("int64 / int64 true division", In(r((3, 5), torch.int64)), In(rand((3, 5), torch.int64, rng, positive=True))))
    return pairs


def binary_scalars(dtype):
    if dtype == torch.bool:
        return [True, 0, 2.5]
    return [2, -3, 2.5, 0.5, True]


def gen_binary(row, overload, dtype, rng, special):
    kind, name = row["kind"], row["name"]
    scalar_ov = ".Scalar" in overload
    float_only = kind == "K_BINARY_FLOAT"
    inplace = is_inplace(overload)
    cases = []
    # alpha 2 keeps self + alpha*other exact with or without a fused multiply-add (torch CPU fuses
    # only in its vectorized loop), so exact rows stay exact.
    kw_variants = [{}]
    if has_arg(overload, "alpha") and dtype != torch.bool:
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
        if kind == "K_COMPARE":
            rt = torch.bool
        for kw in kw_variants:
            cases.append(wrap_call(overload, [a, b], f"{a_desc} {kw}", [rt], kwargs=kw))
    if kind == "K_COMPARE" and not scalar_ov and dtype.is_floating_point and not special:
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


# ---- reductions ----------------------------------------------------------------------------------

def _sum_scale(x, dims, keepdim, mean):
    xa = x.double().abs()
    if dims is None or dims == []:
        dims = list(range(x.dim()))
    n = 1
    for d in dims:
        n *= x.shape[d] if x.dim() else 1
    s = xa.sum(dim=dims, keepdim=keepdim) if x.dim() else xa
    return (s / max(n, 1) if mean else s), n


def reduce_inputs(dtype, rng, special, name):
    if special:
        v = special_values(dtype, signed_zero=name not in ("amax", "amin"), with_max=name not in ("sum", "mean"))
        return [("special values (1-D)", In(v)), ("special values as (4,n/4) rows",
                In(v[: (len(v) // 4) * 4].reshape(4, -1)))]
    gen = small_ints if name in ("amax", "amin") and not dtype.is_floating_point else rand
    return [
        ("contiguous (3,4,5)", In(gen((3, 4, 5), dtype, rng))),
        ("transposed (5,4,3)->(3,4,5)", In(gen((5, 4, 3), dtype, rng), lambda t: t.permute(2, 1, 0))),
        ("stepped [:, ::2] of (3,8,5)", In(gen((3, 8, 5), dtype, rng), lambda t: t[:, ::2])),
        ("0-dim", In(gen((), dtype, rng))),
        ("empty (0,4,5)", In(gen((0, 4, 5), dtype, rng))),
        ("long (3,1000)", In(gen((3, 1000), dtype, rng))),
    ]


def gen_reduce(row, overload, dtype, rng, special):
    name = row["name"]
    base = overload.split(".")[0]
    full_only = "." not in overload and base in ("sum", "mean", "max", "min")
    mean = name == "mean"
    use_scale = row["tol_kind"] == "backward-error"
    ins = reduce_inputs(dtype, rng, special, name)
    if name == "sum" and dtype == torch.int64 and not special:
        ins.append(("bool input sums to int64", In(rand((3, 4, 5), torch.bool, rng))))
    cases = []
    for desc, x in ins:
        xc = x.cpu()
        out_dt = xc.dtype
        if name == "sum" and not xc.dtype.is_floating_point:
            out_dt = torch.int64
        dim_sets = [None] if full_only else ([[1], [0, 2], [-1], []] if xc.dim() == 3 else
                                             [[0], []] if xc.dim() <= 1 else [[1], [0], []])
        for dims in dim_sets:
            for keepdim in ([False] if full_only else [False, True]):
                def sc(args, dims=dims, keepdim=keepdim):
                    return [_sum_scale(args[0], None if dims is None else list(dims), keepdim, mean)]
                args = [x] if full_only else [x, dims, keepdim]
                cases.append(wrap_call(overload, args, f"{desc} dim={dims} keepdim={keepdim}", [out_dt],
                                       sc if use_scale else None))
    if name == "sum" and not full_only and dtype == torch.float32 and not special:
        cases.append(wrap_call(overload, [In(rand((3, 4), torch.int32, rng)), [1], False],
                               "int32 with dtype=float32", [torch.float32], kwargs={"dtype": torch.float32},
                               scale=lambda a: [_sum_scale(a[0], [1], False, False)]))
    return cases


def gen_argreduce(row, overload, dtype, rng, special):
    cases = []
    if special:
        v = special_values(dtype)
        ins = [("special (NaN first wins)", In(v)), ("special reversed", In(v.flip(0)))]
    else:
        ins = [("ties (3,4,5)", In(small_ints((3, 4, 5), dtype, rng))),
               ("random (3,4,5)", In(rand((3, 4, 5), dtype, rng))),
               ("transposed", In(small_ints((5, 4, 3), dtype, rng), lambda t: t.permute(2, 1, 0))),
               ("stepped", In(rand((3, 9), dtype, rng), lambda t: t[:, ::2])),
               ("0-dim", In(rand((), dtype, rng))),
               ("long 1-D 1000", In(rand((1000,), dtype, rng)))]
    for desc, x in ins:
        dims = [None] + list(range(x.cpu().dim())) + ([-1] if x.cpu().dim() else [])
        for d in dims:
            for keepdim in (False, True):
                cases.append(wrap_call(overload, [x, d, keepdim], f"{desc} dim={d} keepdim={keepdim}", [torch.int64]))
    cases.append(wrap_call(overload, [In(rand((0, 3), dtype, rng)), 1, False], "empty rows, dim 1 (0,3)", [torch.int64]))
    cases.append(wrap_call(overload, [In(rand((0, 3), dtype, rng)), None, False], "empty full: error", [torch.int64]))
    return cases


# ---- GEMM ------------------------------------------------------------------------------------------

def _gemm_scale(a, b, c=None, alpha=1, beta=1):
    s = abs(alpha) * (a.double().abs() @ b.double().abs())
    if c is not None and beta != 0:
        s = s + abs(beta) * c.double().abs()
    return s, a.shape[-1]


def gen_gemm(row, overload, dtype, rng, special):
    name = row["name"]
    r = lambda shape: rand(shape, dtype, rng)  # noqa: E731
    if special:
        v = special_values(dtype, with_max=False)
        a = torch.stack([v, torch.ones_like(v)])          # (2, n)
        mats = [("special rows @ ones", In(a), In(torch.ones((len(v), 3), dtype=dtype)))]
    else:
        mats = [("(3,4)@(4,5)", In(r((3, 4))), In(r((4, 5)))),
                ("transposed a @ stepped b", In(r((4, 3)), lambda t: t.t()), In(r((4, 10)), lambda t: t[:, ::2])),
                ("k=0 (3,0)@(0,5)", In(r((3, 0))), In(r((0, 5)))),
                ("m=0 (0,4)@(4,5)", In(r((0, 4))), In(r((4, 5)))),
                ("(1,1)@(1,1)", In(r((1, 1))), In(r((1, 1)))),
                ("k=300 (2,300)@(300,3)", In(r((2, 300))), In(r((300, 3))))]
    cases = []
    for desc, a, b in mats:
        m, n = a.cpu().shape[0], b.cpu().shape[1]
        if name == "mm":
            cases.append(wrap_call(overload, [a, b], desc, [dtype], lambda x: [_gemm_scale(x[0], x[1])]))
        elif name == "bmm":
            a3 = In(torch.stack([a.cpu(), a.cpu() * 2]), lambda t: t)
            b3t = In(torch.stack([b.cpu(), -b.cpu()]).transpose(1, 2).contiguous(), lambda t: t.transpose(1, 2))
            cases.append(wrap_call(overload, [a3, b3t], f"batch 2 of {desc}, b transposed in 3-D", [dtype],
                                   lambda x: [_gemm_scale(x[0], x[1])]))
        else:
            inplace = is_inplace(overload)
            cs = [("c (m,n)", In(r((m, n))))]
            if not inplace:
                cs += [("c (n,) broadcast", In(r((n,)))), ("c (m,1) broadcast", In(r((m, 1))))]
            else:
                cs += [("c transposed (n,m).t()", In(r((n, m)), lambda t: t.t()))]
            for cdesc, c in cs:
                for beta, alpha in ((1, 1), (0.5, 2), (0, 1)):
                    cases.append(wrap_call(overload, [c, a, b], f"{desc}, {cdesc}, beta={beta} alpha={alpha}", [dtype],
                                           lambda x, al=alpha, be=beta: [_gemm_scale(x[1], x[2], x[0], al, be)],
                                           kwargs={"beta": beta, "alpha": alpha}))
    if name == "addmm" and not is_inplace(overload) and not special:
        nan_c = In(torch.full((3, 5), math.nan, dtype=dtype))
        cases.append(wrap_call(overload, [nan_c, In(r((3, 4))), In(r((4, 5)))], "beta=0 ignores NaN in self",
                               [dtype], lambda x: [_gemm_scale(x[1], x[2])], kwargs={"beta": 0}))
    return cases


# ---- softmax, NLL ----------------------------------------------------------------------------------

def _softmax_inputs(dtype, rng, special):
    if special:
        v = torch.tensor([[0.0, -math.inf, 1.0, 2.0], [-math.inf] * 4, [1e30, 1.0, 0.0, -1e30],
                          [math.nan, 0.0, 1.0, 2.0], [88.0, 89.0, -100.0, 0.0]], dtype=torch.float64).to(dtype)
        return [("special rows", In(v), [1])]
    r = lambda shape: rand(shape, dtype, rng, lo=-10, hi=10)  # noqa: E731
    return [("(4,7)", In(r((4, 7))), [1, 0, -1]),
            ("(2,3,5) transposed", In(r((2, 5, 3)), lambda t: t.transpose(1, 2)), [1, 2]),
            ("stepped (4,14)[:, ::2]", In(r((4, 14)), lambda t: t[:, ::2]), [1]),
            ("1-D (7,)", In(r((7,))), [0]),
            ("0-dim", In(r(())), [0]),
            ("empty (0,7)", In(r((0, 7))), [1]),
            ("long rows (2,1000)", In(r((2, 1000))), [1])]


def _softmax_scale(x, dim):
    if x.dim() == 0:
        return torch.tensor(1.0, dtype=torch.float64), 1
    n = x.shape[dim]
    xd = x.double()
    finite = torch.where(xd.isfinite(), xd.abs(), torch.zeros_like(xd))
    return finite.amax(dim=dim, keepdim=True) + math.log(max(n, 1)), n


def gen_softmax(row, overload, dtype, rng, special):
    cases = []
    for desc, x, dims in _softmax_inputs(dtype, rng, special):
        for d in dims:
            cases.append(wrap_call(overload, [x, d, False], f"{desc} dim={d}", [dtype],
                                   lambda a: [_softmax_scale(a[0], a[1])]))
    return cases


def gen_softmax_bwd(row, overload, dtype, rng, special):
    log = row["name"].startswith("log_")
    fwd = torch.ops.aten._log_softmax.default if log else torch.ops.aten._softmax.default
    cases = []
    for desc, x, dims in _softmax_inputs(dtype, rng, special):
        for d in dims:
            xc = x.cpu()
            out = fwd(xc, d, False)
            g = rand(tuple(xc.shape), dtype, rng)

            def sc(a):
                gd, od, dim = a[0].double(), a[1].double(), a[2]
                if gd.dim() == 0:
                    return [(gd.abs() * 2 + 1, 1)]
                n = gd.shape[dim]
                if log:
                    s = gd.abs() + od.exp() * gd.abs().sum(dim, keepdim=True)
                else:
                    s = od.abs() * (gd.abs() + (gd * od).abs().sum(dim, keepdim=True))
                return [(s, n)]
            cases.append(wrap_call(overload, [In(g), In(out.contiguous()), d, dtype], f"{desc} dim={d}", [dtype], sc))
    return cases


def _nll_inputs(dtype, rng, special):
    n, c = 6, 4
    lp = torch.log_softmax(rand((n, c), torch.float64, rng, lo=-4, hi=4), 1).to(dtype)
    tgt = torch.randint(0, c, (n,), generator=rng)
    tgt[0] = 1
    w = (torch.rand(c, generator=rng, dtype=torch.float64) + 0.1).to(dtype)
    out = [("(6,4)", In(lp), In(tgt), None, -100),
           ("(6,4) weighted", In(lp), In(tgt), In(w), -100),
           ("(6,4) weighted, ignore_index=1", In(lp), In(tgt), In(w), 1),
           ("transposed (4,6).t()", In(lp.t().contiguous(), lambda t: t.t()), In(tgt), None, -100),
           ("1-D (4,) with 0-dim target", In(lp[0]), In(tgt[0]), In(w), -100),
           ("empty batch (0,4)", In(lp[:0]), In(tgt[:0]), None, -100)]
    if special:
        sp = lp.clone()
        sp[0, 1], sp[2, tgt[2]] = -math.inf, math.nan
        out = [("-inf and NaN log-probs", In(sp), In(tgt), None, -100),
               ("all targets ignored (mean is NaN)", In(lp), In(torch.full((n,), 2)), None, 2)]
    return out


def _nll_scale(a):
    x, t, w, red = a[0].double(), a[1], a[2], a[3]
    x2 = x.reshape(-1, x.shape[-1]) if x.dim() else x
    t2 = t.reshape(-1)
    wt = (w.double()[t2] if w is not None else torch.ones(t2.shape, dtype=torch.float64))
    keep = (t2 != a[4]).double()
    tsafe = torch.where(t2 == a[4], torch.zeros_like(t2), t2)
    picked = (x2.gather(1, tsafe[:, None])[:, 0] if x2.numel() else torch.zeros(0, dtype=torch.float64))
    terms = (wt * picked).abs() * keep
    tw = (wt * keep).sum()
    if red == 0:
        return [(terms.reshape(t.shape), 1), (tw, max(len(t2), 1))]
    s = terms.sum() / (tw if red == 1 and tw != 0 else 1)
    return [(s, max(len(t2), 1)), (tw, max(len(t2), 1))]


def gen_nll(row, overload, dtype, rng, special):
    cases = []
    for desc, x, t, w, ign in _nll_inputs(dtype, rng, special):
        for red in (0, 1, 2):
            cases.append(wrap_call(overload, [x, t, w, red, ign], f"{desc} reduction={red} ignore={ign}",
                                   [dtype, dtype], _nll_scale))
    return cases


def gen_nll_bwd(row, overload, dtype, rng, special):
    cases = []
    for desc, x, t, w, ign in _nll_inputs(dtype, rng, special):
        for red in (0, 1, 2):
            xc, tc = x.cpu(), t.cpu()
            wc = w.cpu() if w is not None else None
            _, tw = torch.ops.aten.nll_loss_forward.default(xc, tc, wc, red, ign)
            g = rand(tuple(tc.shape) if red == 0 else (), dtype, rng)
            cases.append(wrap_call(overload, [In(g), x, t, w, red, ign, In(tw)],
                                   f"{desc} reduction={red} ignore={ign}", [dtype]))
    return cases


GENERATORS = {
    "K_UNARY": gen_unary, "K_UNARY_FLOAT": gen_unary, "K_BINARY": gen_binary, "K_BINARY_FLOAT": gen_binary,
    "K_COMPARE": gen_compare, "K_THRESHOLD_BWD": gen_threshold_bwd, "K_FILL": gen_fill,
    "K_REDUCE": gen_reduce, "K_ARGREDUCE": gen_argreduce, "K_GEMM": gen_gemm, "K_SOFTMAX": gen_softmax,
    "K_SOFTMAX_BWD": gen_softmax_bwd, "K_NLL": gen_nll, "K_NLL_BWD": gen_nll_bwd,
}

__all__ = ["In", "Case", "GENERATORS", "FLOAT_DTYPES", "INT_DTYPES", "out_names", "is_inplace"]
