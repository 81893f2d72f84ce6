"""Fuzz cases: random calls of op-table rows, described by plain data and built into test_ops Cases.

A case is a dict of Python literals ("params"), so a failure prints a reproducer that can be pasted
into test_fuzz_regressions.py and replayed with build(params):
  {"row": "add", "ov": "add.Tensor", "dt": "float16", "args": [spec, ...], "kwargs": {name: spec}}
A spec is a plain value, or a tensor {"T": shape, "dt": dtype, "lay": layout, "v": values, "seed": n}:
  lay   ["c"] contiguous; ["t", perm] stored permuted; ["n", dim, off, extra] a slice of a longer
        dim; ["s", dim, step, off] every step-th element; ["e", dims] broadcast from size 1 along
        dims (stride 0); ["cpu"] a CPU tensor (0-dim ones are allowed by torch next to device ones).
  v     [kind, special] kind: "normal" (uniform in [-3, 3]), "pos", "wide" (log-uniform magnitudes
        over the dtype's whole range), "ties" (few distinct small values), "bool", ["index", C, ign]
        (int64 in [0, C), with some entries = ign), ["softmax"|"log_softmax", dim, kind] (a forward
        output of values of that kind); special: the fraction of elements replaced by NaN, +-inf,
        +-0, subnormals, huge and tiny values, the dtype's limits.
Builders (FUZZ below, registered per aten function by test/families/<family>.py) draw params with
hypothesis; a row whose aten function has no builder is fuzzed from its test generator's cases
(fuzz_generated), so a new row is fuzzed without editing this file.
"""
import math

import torch
from hypothesis import strategies as st

from helpers import ALL_DTYPES, FLOAT_DTYPES, dtype_of, resolve
from op_cases import Case, In, is_inplace, out_names, wrap_call
from op_cases_nn import _addmv_scale, _gemm_scale, _nll_scale, _softmax_scale, _sum_scale

MAX_NUMEL = 4096  # lavapipe is a CPU: keep a case to milliseconds
SIZES = (0, 1, 1, 2, 2, 3, 3, 4, 5, 7, 8, 16, 33, 130, 700, 1500)


# ---- values --------------------------------------------------------------------------------------

def _big(dt, bounded):
    """The largest magnitude drawn: the dtype's max, or for sums and products (bounded) one whose
    products and sums of a few thousand cannot overflow, since whether max + max - max overflows
    depends on the (legitimately different) order of the terms."""
    fi = torch.finfo(dt)
    return math.sqrt(fi.max) / 4096 if bounded else fi.max


def _specials(dt, bounded=False, signed_zero=True):
    if dt.is_floating_point:
        fi = torch.finfo(dt)
        f32 = torch.finfo(torch.float32)
        big = _big(dt, bounded)
        v = [math.nan, math.inf, -math.inf, 0.0, fi.tiny, -fi.tiny, fi.tiny / 4,
             -fi.tiny / 2, 1e-30, 88.7, -100.0, -104.0, 1.0, -1.0, big, -big / 3]  # exp(-100): subnormal
        if signed_zero:
            v.append(-0.0)
        if not bounded:
            v += [1e30, -1e30]
        if dt in (torch.float32, torch.float64, torch.bfloat16):
            v += [f32.tiny / 8, -f32.tiny / 64, 2.0 ** -149]  # float32 subnormals (bfloat16's too)
        if dt == torch.float64:
            v += [5e-324, -1e-310] + ([] if bounded else [1e300, -1e300])
        return torch.tensor(v, dtype=torch.float64).to(dt)
    if dt == torch.bool:
        return torch.tensor([False, True])
    ii = torch.iinfo(dt)
    v = [0, 1, -1, ii.max, ii.min, ii.max - 1, ii.min + 1, 7]
    if dt == torch.int64:
        v += [2 ** 53 + 1, -(2 ** 62) - 3]
    return torch.tensor([x for x in v if ii.min <= x <= ii.max], dtype=torch.int64).to(dt)


def values(shape, dt, v, seed):
    """Deterministic values of kind v = [kind, special] (see the module docstring)."""
    g = torch.Generator().manual_seed(seed)
    kind, special = v[0], v[1]
    opts = v[2] if len(v) > 2 else ""  # "b": bounded magnitudes (sums, products); "z": no -0.0; "f": finite
    if kind == "const":  # special is the value
        return torch.full(shape, float(special), dtype=torch.float64).to(dt)
    if isinstance(kind, list) and kind[0] == "index":
        c, ign = kind[1], kind[2]
        t = torch.randint(0, max(c, 1), shape, generator=g)
        if ign is not None and special:
            t = torch.where(torch.rand(shape, generator=g) < special, torch.full_like(t, ign), t)
        return t.to(dt)
    if isinstance(kind, list):  # a softmax / log_softmax output along dim
        x = values(shape, torch.float64, [kind[2], special, opts], seed + 1)
        if len(shape) == 0 or x.numel() == 0:
            y = x
        else:
            fn = torch.log_softmax if kind[0] == "log_softmax" else torch.softmax
            y = fn(x, kind[1])
        return y.to(dt)
    if dt == torch.bool or kind == "bool":
        t = torch.rand(shape, generator=g) < 0.5
        return t.to(dt)
    if kind == "ties":
        t = torch.randint(-2 if dt != torch.uint8 else 0, 3, shape, generator=g)
    elif dt.is_floating_point:
        u = torch.rand(shape, generator=g, dtype=torch.float64)
        if kind == "wide":
            fi = torch.finfo(dt)
            lo, hi = math.log(fi.tiny / 8), math.log(_big(dt, "b" in opts))
            t = torch.exp(lo + torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo))
            t = torch.where(u < 0.5, -t, t)
        elif kind == "pos":
            t = u * 3 + 0.01
        else:
            t = u * 6 - 3
    else:
        ii = torch.iinfo(dt)
        lo, hi = (0, 21) if kind == "pos" else (-20, 21)
        if kind == "wide":
            lo, hi = ii.min, ii.max
        lo = max(lo, ii.min)
        t = torch.randint(lo, hi, shape, generator=g, dtype=torch.int64) if hi > lo else torch.zeros(shape)
    t = t.to(dt)
    if special and t.numel():
        sp = _specials(dt, "b" in opts, "z" not in opts)
        if "f" in opts:
            sp = sp[sp.isfinite()] if dt.is_floating_point else sp
        pick = torch.randint(0, len(sp), shape, generator=g)
        t = torch.where(torch.rand(shape, generator=g) < special, sp[pick], t)
    return t


# ---- layouts -------------------------------------------------------------------------------------

def _source_shape(shape, lay):
    return [1 if (lay[0] == "e" and d in lay[1]) else s for d, s in enumerate(shape)]


def _storage(logical, lay, seed):
    """(storage tensor, view fn) with view(storage) == logical (bitwise)."""
    kind = lay[0]
    if kind == "t":
        perm = lay[1]
        inv = [perm.index(i) for i in range(len(perm))]
        return logical.permute(perm).contiguous(), (lambda t: t.permute(inv))
    if kind in ("n", "s"):
        d = lay[1]
        sz = list(logical.shape)
        n = sz[d]
        if kind == "n":
            off, extra = lay[2], lay[3]
            sz[d] = n + off + extra
            view = lambda t: t.narrow(d, off, n)  # noqa: E731
        else:
            step, off = lay[2], lay[3]
            sz[d] = off + ((n - 1) * step + 1 if n else 0)
            idx = (slice(None),) * d + (slice(off, None, step),)
            view = lambda t: t[idx]  # noqa: E731
        base = values(sz, logical.dtype, ["normal", 0.5], seed + 7)  # junk outside the view
        view(base).copy_(logical)
        return base, view
    if kind == "e":
        src = logical[tuple(slice(0, 1) if d in lay[1] else slice(None) for d in range(logical.dim()))]
        shape = list(logical.shape)
        return src.contiguous(), (lambda t: t.expand(shape))
    return logical, None


def make_tensor(spec):
    shape, dt, lay = list(spec["T"]), dtype_of(spec["dt"]), spec.get("lay", ["c"])
    src = values(_source_shape(shape, lay), dt, spec.get("v", ["normal", 0.0]), spec.get("seed", 0))
    logical = src.expand(shape) if lay[0] == "e" else src
    if lay[0] == "cpu":
        return In(logical.clone(), keep_cpu=True)
    base, view = _storage(logical, lay, spec.get("seed", 0))
    return In(base, view)


def build_value(spec):
    return make_tensor(spec) if isinstance(spec, dict) and "T" in spec else spec


# ---- drawing shapes, layouts and tensors ---------------------------------------------------------

def draw_shape(draw, max_dims=6, min_dims=0):
    nd = draw(st.integers(min_dims, max_dims))
    shape = [draw(st.sampled_from(SIZES)) for _ in range(nd)]
    while math.prod(max(s, 1) for s in shape) > MAX_NUMEL:  # shrink the largest dim until it fits
        i = shape.index(max(shape))
        shape[i] = max(1, shape[i] // 4)
    return shape


def draw_layout(draw, shape, writable=False, cpu_ok=False):
    nd = len(shape)
    kinds = ["c", "c", "t", "n", "s"] + ([] if writable else ["e"]) + (["cpu"] if cpu_ok and nd == 0 else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "t" and nd >= 2:
        return ["t", draw(st.permutations(list(range(nd))))]
    if kind in ("n", "s") and nd >= 1:
        d = draw(st.integers(0, nd - 1))
        if kind == "n":
            return ["n", d, draw(st.integers(0, 3)), draw(st.integers(0, 2))]
        return ["s", d, draw(st.integers(2, 3)), draw(st.integers(0, 2))]
    if kind == "e" and nd >= 1:
        return ["e", sorted(draw(st.sets(st.integers(0, nd - 1), min_size=1, max_size=nd)))]
    if kind == "cpu":
        return ["cpu"]
    return ["c"]


def draw_values(draw, dt, kinds=("normal", "normal", "pos", "wide", "ties")):
    kind = "bool" if dt == torch.bool else draw(st.sampled_from(kinds))
    return [kind, draw(st.sampled_from((0.0, 0.0, 0.1, 0.5, 1.0)))]


def draw_tensor(draw, shape, dt, writable=False, cpu_ok=False, v=None):
    return {"T": list(shape), "dt": str(dt).split(".")[-1], "lay": draw_layout(draw, shape, writable, cpu_ok),
            "v": v if v is not None else draw_values(draw, dt), "seed": draw(st.integers(0, 2 ** 31 - 1))}


def draw_other_dtype(draw, dt, p_other=0.15, pool=ALL_DTYPES):
    """Mostly dt; sometimes another dtype, for promotion (or torch's dtype errors)."""
    return draw(st.sampled_from(pool)) if draw(st.floats(0, 1)) < p_other else dt


def draw_bcast_shape(draw, shape):
    """A shape that broadcasts to `shape`: leading dims dropped, some sizes replaced by 1."""
    drop = draw(st.integers(0, len(shape)))
    return [1 if draw(st.floats(0, 1)) < 0.3 else s for s in shape[drop:]]


def draw_scalar(draw, dt):
    pool = [0, 1, -1, 2, -3, 7, True, False, 2.5, 0.1, -0.0, 1e-3, 1e30, -1e30, math.nan, math.inf, -math.inf,
            1e-40, 3.4e38, 1e300, 2 ** 31, -(2 ** 63), 127, 255, 65504.0]
    return draw(st.sampled_from(pool))


def dtname(dt):
    return str(dt).split(".")[-1]


# ---- out= dtypes ---------------------------------------------------------------------------------

def _functional(overload):
    """The overload without out= arguments that takes the same other arguments (add.out -> add.Tensor)."""
    s = resolve(overload)._schema
    outs = set(out_names(overload))
    want = [(a.name, str(a.type)) for a in s.arguments if a.name not in outs]
    name = overload.split(".")[0]
    packet = getattr(torch.ops.aten, name)
    for ov in packet.overloads():
        f = getattr(packet, ov)
        if out_names(f"{name}.{ov}"):
            continue
        if [(a.name, str(a.type)) for a in f._schema.arguments] == want:
            return f
    return None


def out_dtypes(draw, p):
    """The dtypes torch gives the functional variant on these inputs (or, sometimes, another one,
    which torch casts to or rejects)."""
    ov = p["ov"]
    names = out_names(ov)
    if not names:
        return {}
    dts = [dtype_of(p["dt"])] * len(names)
    f = _functional(ov)
    if f is not None:
        try:
            args = [build_value(a) for a in p["args"]]
            args = [a.cpu() if isinstance(a, In) else a for a in args]
            kw = {k: (build_value(v).cpu() if isinstance(build_value(v), In) else v) for k, v in p["kwargs"].items()}
            r = f(*args, **kw)
            r = list(r) if isinstance(r, (tuple, list)) else [r]
            dts = [t.dtype for t in r][:len(names)]
        except Exception:
            pass  # the case is an error: torch raises the same with any out dtype, or we see it
    if draw(st.floats(0, 1)) < 0.1:
        dts[0] = draw(st.sampled_from(ALL_DTYPES))
    return {n: dtname(d) for n, d in zip(names, dts)}


# ---- builders, one per aten function of the rows -------------------------------------------------

def _tensor_dtype(draw, r, a, dt):
    if a.name in ("mask", "condition"):
        return torch.bool if draw(st.floats(0, 1)) < 0.9 else draw(st.sampled_from(ALL_DTYPES))
    return draw_other_dtype(draw, dt)


def fuzz_elementwise(draw, r, ov, dt):
    """Any elementwise overload, from its schema: tensors broadcastable to one drawn shape (self
    keeps it when written in place), scalars from a pool of ordinary and extreme values."""
    dt = dtype_of(dt)
    s = resolve(ov)._schema
    outs = set(out_names(ov))
    inplace = is_inplace(ov)
    shape = draw_shape(draw)
    cpu_ok = r["family"] not in CPU_OPERANDS_CRASH
    args, kwargs = [], {}
    for i, a in enumerate(s.arguments):
        if a.name in outs:
            continue
        ty = str(a.type)
        if ty == "Tensor":
            if i == 0 and (inplace or draw(st.floats(0, 1)) < 0.6):
                t = draw_tensor(draw, shape, dt if inplace else _tensor_dtype(draw, r, a, dt), writable=inplace)
            elif ov.startswith("masked_fill") and a.name == "value":
                t = draw_tensor(draw, [], draw_other_dtype(draw, dt), cpu_ok=True)
            else:
                sub = draw_bcast_shape(draw, shape)
                t = draw_tensor(draw, sub, _tensor_dtype(draw, r, a, dt),
                                cpu_ok=cpu_ok and bool(args) and a.name not in ("mask", "condition"))
            val = t
        elif ty in ("number", "Optional[number]"):  # Scalar, Scalar?
            if ty.startswith("Optional") and draw(st.floats(0, 1)) < 0.3:
                val = None
            elif a.name == "alpha":
                val = draw(st.sampled_from([1, 2, -1, 0.5, -4, True]))  # powers of 2: a + alpha*b exact, fused or not
            else:
                val = draw_scalar(draw, dt)
                if r["name"] == "clamp" and isinstance(val, float) and math.isnan(val):
                    val = 0.5  # NaN bounds: torch CPU's vectorised and scalar loops disagree (gen_clamp)
        else:
            raise AssertionError(f"fuzz_elementwise: {ov} argument {a.name}: {ty} not handled")
        if a.kwarg_only:
            if a.name == "alpha" and draw(st.booleans()):
                continue  # the default
            kwargs[a.name] = val
        else:
            args.append(val)
    p = {"row": r["name"], "ov": ov, "dt": dtname(dt), "args": args, "kwargs": kwargs}
    p["outs"] = out_dtypes(draw, p)
    return p


def _dims_arg(draw, ty, nd):
    """A dim argument of type int[1], int[1]? or int?: in range mostly, rarely out of range."""
    lim = max(nd, 1)
    lst = "List" in ty
    if ty.startswith("Optional") and draw(st.floats(0, 1)) < 0.3:
        return None
    if draw(st.floats(0, 1)) < 0.03:
        return [lim] if lst else -lim - 1  # an error on both sides
    if lst:
        ds = draw(st.lists(st.integers(0, lim - 1), unique=True, max_size=lim))
        return [d - lim if draw(st.booleans()) else d for d in ds]
    d = draw(st.integers(0, lim - 1))
    return d - lim if draw(st.booleans()) else d


def fuzz_reduce(draw, r, ov, dt):
    dt = dtype_of(dt)
    s = resolve(ov)._schema
    outs = set(out_names(ov))
    shape = draw_shape(draw)
    if r["name"] in ("argmax", "argmin", "amax", "amin") and math.prod(shape) > 1024:
        shape = shape[:2]
    x = draw_tensor(draw, shape, draw_other_dtype(draw, dt, 0.1),
                    v=draw_values(draw, dt, ("normal", "pos", "wide", "ties", "ties")))
    args, kwargs = [], {}
    for a in s.arguments:
        if a.name in outs:
            continue
        ty = str(a.type)
        if a.name == "self":
            val = x
        elif a.name == "dim":
            val = _dims_arg(draw, ty, len(shape))
        elif a.name == "keepdim":
            val = draw(st.booleans())
        elif a.name == "dtype":
            if draw(st.floats(0, 1)) < 0.8:
                continue
            val = draw(st.sampled_from((torch.float32, torch.float64, torch.int64, torch.float16, torch.int32)))
        else:
            raise AssertionError(f"fuzz_reduce: {ov} argument {a.name}: {ty} not handled")
        if a.kwarg_only:
            kwargs[a.name] = val
        else:
            args.append(val)
    p = {"row": r["name"], "ov": ov, "dt": dtname(dt), "args": args, "kwargs": kwargs}
    p["outs"] = out_dtypes(draw, p)
    return p


def fuzz_gemm(draw, r, ov, dt):
    dt = dtype_of(dt)
    base = ov.split(".")[0].rstrip("_")
    sz = lambda: draw(st.sampled_from((0, 1, 2, 3, 5, 8, 17, 33, 70)))  # noqa: E731
    m, n, k, b = sz(), sz(), sz(), draw(st.sampled_from((0, 1, 2, 3)))
    if draw(st.floats(0, 1)) < 0.03:
        kb = k + 1  # mismatched inner sizes: an error on both sides
    else:
        kb = k
    odt = lambda: draw_other_dtype(draw, dt, 0.05, FLOAT_DTYPES + (torch.int64,))  # noqa: E731
    t = lambda shape, w=False: draw_tensor(draw, shape, odt(), writable=w, v=draw_values(draw, dt, ("normal", "wide", "ties")))  # noqa: E731
    inplace = is_inplace(ov)
    kwargs = {}
    if base == "mm":
        args = [t([m, k]), t([kb, n])]
    elif base == "bmm":
        args = [t([b, m, k]), t([b, kb, n])]
    elif base == "dot":
        args = [t([k]), t([kb])]
    elif base == "addmv":
        c = [m] if inplace or draw(st.booleans()) else draw(st.sampled_from(([1], [])))
        args = [t(c, inplace), t([m, k]), t([kb])]
    elif base == "addmm":
        c = [m, n] if inplace or draw(st.booleans()) else draw(st.sampled_from(([n], [1, n], [m, 1], [])))
        args = [t(c, inplace), t([m, k]), t([kb, n])]
    else:
        raise AssertionError(f"fuzz_gemm: {ov} not handled")
    if base in ("addmm", "addmv"):
        for name in ("beta", "alpha"):
            if draw(st.booleans()):
                kwargs[name] = draw(st.sampled_from((0, 1, 2, 0.5, -1, 1.5)))
    p = {"row": r["name"], "ov": ov, "dt": dtname(dt), "args": args, "kwargs": kwargs}
    p["outs"] = out_dtypes(draw, p)
    return p


def fuzz_softmax(draw, r, ov, dt):
    dt = dtype_of(dt)
    shape = draw_shape(draw)
    nd = len(shape)
    dim = draw(st.integers(-max(nd, 1), max(nd, 1) - 1))
    vkind = draw(st.sampled_from(("normal", "wide", "wide", "pos")))
    sp = draw(st.sampled_from((0.0, 0.0, 0.1, 0.5)))
    if r["aten"] == "softmax_forward":
        args = [draw_tensor(draw, shape, draw_other_dtype(draw, dt, 0.05), v=[vkind, sp]), dim,
                draw(st.floats(0, 1)) < 0.05]
    else:
        log = r["name"].startswith("log_")
        fwd = ["log_softmax" if log else "softmax", dim, vkind]
        # finite gradients: with an infinite one, g - exp(y) * sum(g) is NaN or inf depending on
        # whether exp(y) underflowed to 0, which Vulkan's exp precision leaves open near underflow
        g = draw_values(draw, dt)
        args = [draw_tensor(draw, shape, dt, v=[g[0], g[1], "f"]), draw_tensor(draw, shape, dt, v=[fwd, sp]), dim,
                draw_other_dtype(draw, dt, 0.05, FLOAT_DTYPES)]
    p = {"row": r["name"], "ov": ov, "dt": dtname(dt), "args": args, "kwargs": {}}
    p["outs"] = out_dtypes(draw, p)
    return p


def fuzz_nll(draw, r, ov, dt):
    """Targets in range or ignored (out-of-range targets are issue 7 finding 5's own test)."""
    dt = dtype_of(dt)
    n, c = draw(st.sampled_from((0, 1, 2, 3, 7, 33, 200))), draw(st.sampled_from((1, 2, 3, 5, 17)))
    one = draw(st.floats(0, 1)) < 0.15  # a 1-D input, 0-dim target
    ign = draw(st.sampled_from((-100, -100, 0, c - 1)))
    red = draw(st.sampled_from((0, 1, 2)))
    xs = [c] if one else [n, c]
    ts = [] if one else [n]
    sp = draw(st.sampled_from((0.0, 0.0, 0.1, 0.5)))
    x = draw_tensor(draw, xs, dt, v=[["log_softmax", -1, draw(st.sampled_from(("normal", "wide")))], sp])
    tgt = draw_tensor(draw, ts, torch.int64, v=[["index", c, ign], draw(st.sampled_from((0.0, 0.3, 1.0)))])
    tgt["lay"] = draw_layout(draw, ts)
    w = None
    if draw(st.booleans()):
        w = draw_tensor(draw, [c], dt, v=[draw(st.sampled_from(("pos", "normal", "wide"))), sp])
    if r["aten"] == "nll_forward":
        args = [x, tgt, w, red, ign]
    else:
        xc, tc = make_tensor(x).cpu(), make_tensor(tgt).cpu()
        wc = make_tensor(w).cpu() if w is not None else None
        try:
            _, tw = torch.ops.aten.nll_loss_forward.default(xc.double(), tc, None if wc is None else wc.double(), red, ign)
            tw = tw.item()
        except Exception:
            tw = 1.0
        gshape = ts if red == 0 else []
        args = [draw_tensor(draw, gshape, dt), x, tgt, w, red, ign,
                {"T": [], "dt": dtname(dt), "lay": ["c"], "v": ["const", tw]}]
    p = {"row": r["name"], "ov": ov, "dt": dtname(dt), "args": args, "kwargs": {}}
    p["outs"] = out_dtypes(draw, p)
    return p


# Rows where IEEE leaves the sign of max(-0, +0) open and torch CPU's answer depends on argument
# order and vectorisation (as test_ops' special_values(signed_zero=False) says): no -0.0 drawn.
SIGN_OF_ZERO_OPEN = {"maximum", "minimum", "clamp", "amax", "amin"}


def finish(p, r):
    """Value options that hold for the whole row: bounded magnitudes for rows with a
    backward-error tolerance (sums and products), no -0.0 where its sign in the result is open."""
    # alpha other than 1: torch CPU fuses a + alpha*b in its vectorised loop only, so whether
    # alpha*b overflows depends on the loop (gen_binary says so too): magnitudes bounded then
    scaled = p.get("kwargs", {}).get("alpha", 1) not in (1, True)
    opts = ("b" if r["tol_kind"] == "backward-error" or scaled else "") + (
        "z" if r["name"] in SIGN_OF_ZERO_OPEN else "")
    if not opts:
        return p

    def fix(a):
        if isinstance(a, dict) and "T" in a and a.get("v") and a["v"][0] != "const":
            a["v"] = list(a["v"][:2]) + [(a["v"][2] if len(a["v"]) > 2 else "") + opts]
        return a
    p["args"] = [fix(a) for a in p.get("args", [])]
    p["kwargs"] = {k: fix(v) for k, v in p.get("kwargs", {}).items()}
    return p


def fuzz_generated(draw, r, ov, dt):
    """Any row: one of its test generator's cases, with each tensor re-laid out (transposed,
    sliced, stepped) and, for tensors of the row's dtype, some values replaced by extreme ones."""
    from generators import GENERATORS
    rng_seed = draw(st.integers(0, 2 ** 31 - 1))
    special = draw(st.booleans())
    n = len(GENERATORS[r["aten"]](r, ov, dtype_of(dt), torch.Generator().manual_seed(rng_seed), special))
    i = draw(st.integers(0, max(n - 1, 0)))
    lays = [draw_layout(draw, [2] * 6, writable=True) for _ in range(8)]
    vals = draw(st.sampled_from((0.0, 0.1, 0.5)))
    # rows with a backward-error tolerance (sums and products): bounded magnitudes, as finish()
    # gives the built cases (whether max * 2 - max overflows depends on order and on fusing)
    opts = "b" if r["tol_kind"] == "backward-error" else ""
    return {"row": r["name"], "ov": ov, "dt": dt, "gen": [rng_seed, special, i, lays, vals, opts]}


# ---- params -> Case ------------------------------------------------------------------------------

def _scale_for(p):
    """fn(cpu_args) -> [(scale, n)] for backward-error rows; a scale that cannot be computed (the
    inputs are ones torch rejects, or empty) is None, which only an inexact result would need."""
    fn = _scale_fn(p)
    if fn is None:
        return None

    def safe(a):
        try:
            return fn(a)
        except Exception:
            return [(None, 1), (None, 1)]
    return safe


def _scale_fn(p):
    """The same scales as test_ops' generators."""
    from helpers import row as table_row
    r = table_row(p["row"])
    if r["tol_kind"] != "backward-error":
        return None
    aten, base = r["aten"], p["ov"].split(".")[0].rstrip("_")
    kw = p["kwargs"]
    if aten == "reduce_values":
        def sc(a):
            dims = a[1] if len(a) > 1 else None
            if dims is not None and not isinstance(dims, (list, tuple)):
                dims = [dims]
            keep = a[2] if len(a) > 2 else False
            x = a[0]
            dims = None if dims is None else [d % max(x.dim(), 1) for d in dims]
            return [_sum_scale(x, dims, keep, r["name"] == "mean")]
        return sc
    if aten == "gemm":
        al, be = kw.get("alpha", 1), kw.get("beta", 1)
        if base == "addmm":
            return lambda a: [_gemm_scale(a[1].double(), a[2].double(), a[0], al, be)]
        if base == "addmv":
            return lambda a: [_addmv_scale(a, al, be)]
        return lambda a: [_gemm_scale(a[0].double(), a[1].double())]
    if aten == "softmax_forward":
        return lambda a: [_softmax_scale(a[0], a[1])]
    if aten == "softmax_backward":
        from op_cases_nn import softmax_backward_scale
        return lambda a: softmax_backward_scale(r, a)
    if aten == "nll_forward":
        return _nll_scale
    if r["name"] == "log":
        return lambda a: [(torch.log(a[0].double()).abs().clamp_min(1.0), 1)]
    if aten == "ew_addcdiv":
        from op_cases import _addcdiv_scale
        return lambda a: _addcdiv_scale(kw.get("value", 1))(a)
    raise AssertionError(f"no backward-error scale for fuzzed row {p['row']} ({aten})")


def _relayout(x, lay, vals, seed, opts=""):
    base = x.cpu()
    if vals and base.dtype.is_floating_point and base.numel():
        g = torch.Generator().manual_seed(seed)
        base = torch.where(torch.rand(base.shape, generator=g) < vals,
                           values(list(base.shape), base.dtype, ["wide", 1.0, opts], seed + 1), base)
    lay = lay if lay[0] != "t" or len(lay[1]) == base.dim() else ["c"]
    if lay[0] in ("n", "s") and lay[1] >= base.dim():
        lay = ["c"]
    if lay[0] == "e":
        lay = ["c"]
    storage, view = _storage(base, lay, seed)
    return In(storage, view, x.keep_cpu) if not x.keep_cpu else x


class NoCase(Exception):
    """Nothing to run: test_fuzz counts it apart, as it does NotImplementedError."""


def _generated_case(p):
    from generators import GENERATORS
    from helpers import row as table_row
    r = table_row(p["row"])
    seed, special, i, lays, vals = p["gen"][:5]
    opts = p["gen"][5] if len(p["gen"]) > 5 else ""  # older params: unbounded values
    cases = GENERATORS[r["aten"]](r, p["ov"], dtype_of(p["dt"]), torch.Generator().manual_seed(seed), special)
    if not cases:  # the family's generator has nothing for this overload, dtype and mode
        raise NoCase(f"{p['ov']} {p['dt']}: the generator gives no case")
    c = cases[i % len(cases)]
    dt = dtype_of(p["dt"])
    args, j = [], 0
    for a in c.args:
        if isinstance(a, In) and not a.keep_cpu and torch.is_tensor(a.cpu()):  # index lists: as generated
            lay = lays[j % len(lays)]
            if lay[0] == "t":
                nd = a.cpu().dim()
                lay = ["t", [q for q in lay[1] if q < nd]] if nd >= 2 else ["c"]
            a = _relayout(a, lay, vals if a.base.dtype == dt else 0.0, seed + 13 * j, opts)
            j += 1
        args.append(a)
    return Case(f"generated case {i}: {c.desc}", args, c.kwargs, c.outs, c.scale, _dense_ref(p["ov"], c.ref))


def _dense_ref(overload, ref):
    """The CPU reference, given contiguous copies of the arguments that torch CPU's kernel for this
    overload reads as dense whatever their strides (FUZZ_DENSE in test/families/<family>.py: it
    returns other numbers for a strided one, measured), so the reference is torch's answer for the
    same values while vkml still gets the strided tensors."""
    from generators import FUZZ_DENSE
    dense = FUZZ_DENSE.get(overload)
    if not dense:
        return ref
    op = ref or resolve(overload)

    def run(*args, **kwargs):
        return op(*[a.contiguous() if k in dense and torch.is_tensor(a) else a for k, a in enumerate(args)], **kwargs)
    return run


def build(p):
    """params -> test_ops Case."""
    if "gen" in p:
        return _generated_case(p)
    args = [build_value(a) for a in p["args"]]
    kwargs = {k: build_value(v) for k, v in p["kwargs"].items()}
    outs = {k: dtype_of(v) for k, v in p.get("outs", {}).items()}
    return Case(describe(p), args, kwargs, outs, _scale_for(p))


def describe(p):
    def one(a):
        if isinstance(a, dict) and "T" in a:
            lay = a.get("lay", ["c"])
            return f"{a['dt']}{list(a['T'])}{'' if lay == ['c'] else lay}"
        return repr(a)
    parts = [one(a) for a in p["args"]] + [f"{k}={one(v)}" for k, v in p["kwargs"].items()]
    outs = p.get("outs") or {}
    return f"{p['ov']}({', '.join(parts)})" + (f" out={outs}" if outs else "")


# Families whose ops still take a CPU tensor's pointer as a device address (issue 7 finding 1: a
# crash, not an error). The fuzzer gives their rows no CPU operands until that is fixed.
CPU_OPERANDS_CRASH = {"gemm", "nll", "softmax"}

FUZZ = {}  # aten function -> builder; filled from test/families/<family>.py (FUZZ there)
