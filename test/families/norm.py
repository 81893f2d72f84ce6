"""Test parameters of the norm family: layer, group and batch norm, forward and backward.

Inputs cover contiguous, transposed and channels_last layouts, weights absent, multi-dim
normalized shapes, empty batches and empty groups, groups longer than a workgroup, unscaled and
offset values (x * 100 + 300, constant rows), and float16/bfloat16 inputs with float32
parameters (torch's CPU "mixed" mode). Scales come from norm_bounds (ours + torch CPU's own).
"""
import math

import torch

import norm_bounds as nb
from helpers import resolve
from op_cases import In, out_names, rand, wrap_call

A = torch.ops.aten
EPS = 1e-5


def _call(overload, named):
    """Positional arguments of `overload` in schema order from a dict (out= tensors excluded)."""
    s = resolve(overload)._schema
    return [named[a.name] for a in s.arguments if not (a.kwarg_only and a.alias_info is not None)]


def _r(shape, dtype, rng, lo=-3.0, hi=3.0):
    return rand(shape, dtype, rng, lo=lo, hi=hi)


def _values(dtype, rng, shape, kind):
    if kind == "offset":  # unscaled: |mean| >> std
        return (torch.randn(shape, generator=rng, dtype=torch.float64) * 100 + 300).to(dtype)
    if kind == "constant":  # variance 0 (within each row / group)
        return torch.full(shape, 7.25, dtype=torch.float64).to(dtype)
    return _r(shape, dtype, rng)


def _special(dtype, shape):
    """NaN, infinities and tiny values in some rows (each statistics group's result follows)."""
    x = torch.linspace(-2, 2, math.prod(shape), dtype=torch.float64).reshape(shape)
    flat = x.view(-1)
    flat[0], flat[-1] = math.nan, math.inf
    return x.to(dtype)


# ---- layer norm ----------------------------------------------------------------------------------

def _ln_inputs(dtype, rng, special):
    p = lambda n: _r(n, dtype, rng)  # noqa: E731
    if special:
        return [("NaN and inf rows (4,6)", In(_special(dtype, (4, 6))), [6], In(p((6,))), In(p((6,)))),
                ("tiny values (3,5)", In((_r((3, 5), torch.float64, rng) * 1e-30).to(dtype)), [5], None, None)]
    cases = [
        ("(4,7) w b", In(p((4, 7))), [7], In(p((7,))), In(p((7,)))),
        ("(2,3,5) over [3,5]", In(p((2, 3, 5))), [3, 5], In(p((3, 5))), In(p((3, 5)))),
        ("(3,6) no weight, no bias", In(p((3, 6))), [6], None, None),
        ("transposed (6,4).t()", In(p((6, 4)), lambda t: t.t()), [6], In(p((6,))), In(p((6,)))),
        ("weight transposed (5,3).t()", In(p((2, 3, 5))), [3, 5], In(p((5, 3)), lambda t: t.t()), None),
        ("empty batch (0,5)", In(p((0, 5))), [5], In(p((5,))), In(p((5,)))),
        ("zero-size normalized dim (3,0)", In(p((3, 0))), [0], In(p((0,))), In(p((0,)))),
        ("long rows (2,300)", In(p((2, 300))), [300], In(p((300,))), In(p((300,)))),
        ("offset x*100+300 (3,40)", In(_values(dtype, rng, (3, 40), "offset")), [40], In(p((40,))), In(p((40,)))),
        ("constant rows (3,8)", In(_values(dtype, rng, (3, 8), "constant")), [8], In(p((8,))), In(p((8,)))),
    ]
    if dtype in (torch.float16, torch.bfloat16):
        cases.append(("float32 weight and bias (mixed)", In(p((3, 6))), [6], In(_r((6,), torch.float32, rng)),
                      In(_r((6,), torch.float32, rng))))
    return cases


def _stat_dtype(x, *params):
    ps = [q.cpu() for q in params if q is not None]
    return torch.float32 if ps and x.cpu().dtype != ps[0].dtype else x.cpu().dtype


def gen_layer_norm(row, overload, dtype, rng, special):
    cases = []
    for desc, x, shape, w, b in _ln_inputs(dtype, rng, special):
        def sc(args, shape=shape):
            x, w, b = args[0], args[2], args[3]
            axis = x.dim() - len(shape)
            grp = nb.Groups(x.reshape(math.prod(x.shape[:axis]), math.prod(shape), 1), per_channel=False)
            stat = tuple(x.shape[:axis]) + (1,) * len(shape)
            return nb.shaped(nb.forward(grp, w, b, EPS, nb.eps_of(x.dtype)), [x.shape, stat, stat])
        sdt = _stat_dtype(x, w, b)
        cases.append(wrap_call(overload, [x, shape, w, b, EPS], desc, [dtype, sdt, sdt], sc))
    return cases


def gen_layer_norm_backward(row, overload, dtype, rng, special):
    cases = []
    for desc, x, shape, w, b in _ln_inputs(dtype, rng, False):
        xc = x.cpu()
        wc, bc = (w.cpu() if w is not None else None), (b.cpu() if b is not None else None)
        _, mean, rstd = A.native_layer_norm(xc, shape, wc, bc, EPS)
        g = (torch.randn(xc.shape, generator=rng, dtype=torch.float64) * (1e3 if special else 1)).to(dtype)
        def sc(args, shape=shape):
            dy, x, _, mean, rstd, w, b = args[:7]
            axis = x.dim() - len(shape)
            M, N = math.prod(x.shape[:axis]), math.prod(shape)
            grp = nb.Groups(x.reshape(M, N, 1), per_channel=False)
            s = nb.backward(grp, dy.reshape(M, N, 1), w, mean, rstd, nb.eps_of(x.dtype))
            return nb.shaped(s, [x.shape, None if w is None else w.shape, None if b is None else b.shape])
        gin = In(g.t().contiguous(), lambda t: t.t()) if g.dim() == 2 and g.shape[0] > 1 else In(g)
        cases.append(wrap_call(overload, [gin, x, shape, In(mean), In(rstd), w, b, [True, True, True]], desc,
                               [dtype, dtype, dtype], sc))
    return cases


# ---- group norm ----------------------------------------------------------------------------------

def _gn_inputs(dtype, rng, special):
    p = lambda n: _r(n, dtype, rng)  # noqa: E731
    cl = lambda t: t.contiguous(memory_format=torch.channels_last)  # noqa: E731
    if special:
        return [("NaN and inf (2,4,3) G=2", In(_special(dtype, (2, 4, 3))), 2, In(p((4,))), In(p((4,))))]
    cases = [
        ("(2,6,5) G=3", In(p((2, 6, 5))), 3, In(p((6,))), In(p((6,)))),
        ("channels_last (2,4,3,3) G=2", In(p((2, 4, 3, 3)), cl), 2, In(p((4,))), In(p((4,)))),
        ("(3,4) G=2 (HxW=1)", In(p((3, 4))), 2, In(p((4,))), None),
        ("(2,4,5) G=4 no weight", In(p((2, 4, 5))), 4, None, None),
        ("empty batch (0,4,2)", In(p((0, 4, 2))), 2, In(p((4,))), In(p((4,)))),
        ("empty groups (2,4,0)", In(p((2, 4, 0))), 2, In(p((4,))), In(p((4,)))),
        ("long groups (1,4,200) G=1", In(p((1, 4, 200))), 1, In(p((4,))), In(p((4,)))),
        ("offset x*100+300 (2,4,10)", In(_values(dtype, rng, (2, 4, 10), "offset")), 2, In(p((4,))), In(p((4,)))),
        ("constant (2,4,6)", In(_values(dtype, rng, (2, 4, 6), "constant")), 2, None, None),
    ]
    if dtype in (torch.float16, torch.bfloat16):
        cases.append(("float32 weight (mixed)", In(p((2, 4, 3))), 2, In(_r((4,), torch.float32, rng)), None))
    return cases


def _nchw(x):
    N, C = x.shape[0], x.shape[1]
    return N, C, x.numel() // max(N * C, 1) if N * C else math.prod(x.shape[2:])


def gen_group_norm(row, overload, dtype, rng, special):
    cases = []
    for desc, x, G, w, b in _gn_inputs(dtype, rng, special):
        N, C, HxW = _nchw(x.cpu())

        def sc(args):
            x, w, b, N, C, HxW, G = args[:7]
            s = nb.forward(nb.Groups(x.reshape(N, C, HxW), False, G), w, b, EPS, nb.eps_of(x.dtype), fold=True)
            return nb.shaped(s, [x.shape, (N, G), (N, G)])
        sdt = _stat_dtype(x, w, b)
        cases.append(wrap_call(overload, [x, w, b, N, C, HxW, G, EPS], desc, [dtype, sdt, sdt], sc))
    return cases


def gen_group_norm_backward(row, overload, dtype, rng, special):
    cases = []
    for desc, x, G, w, b in _gn_inputs(dtype, rng, False):
        xc = x.cpu()
        N, C, HxW = _nchw(xc)
        try:
            _, mean, rstd = A.native_group_norm(xc, w.cpu() if w is not None else None, None, N, C, HxW, G, EPS)
        except RuntimeError:
            continue  # a forward this torch refuses (2.15: empty groups) has no backward to test
        g = (torch.randn(xc.shape, generator=rng, dtype=torch.float64) * (1e3 if special else 1)).to(dtype)
        gview = x.view  # grad_out in the input's layout

        def sc(args):
            dy, x, mean, rstd, w, N, C, HxW, G = args[:9]
            s = nb.backward(nb.Groups(x.reshape(N, C, HxW), False, G), dy.reshape(N, C, HxW), w, mean, rstd,
                            nb.eps_of(x.dtype))
            return nb.shaped(s, [x.shape, (C,), (C,)])
        cases.append(wrap_call(overload, [In(g, gview), x, In(mean), In(rstd), w, N, C, HxW, G, [True, True, True]],
                               desc, [dtype, dtype, dtype], sc))
    return cases


# ---- batch norm ----------------------------------------------------------------------------------

def _bn_inputs(dtype, rng, special):
    """(desc, x, w, b, running_mean, running_var, training)."""
    p = lambda n: _r(n, dtype, rng)  # noqa: E731
    pos = lambda n: (torch.rand(n, generator=rng, dtype=torch.float64) + 0.5).to(dtype)  # noqa: E731
    cl = lambda t: t.contiguous(memory_format=torch.channels_last)  # noqa: E731
    if special:
        return [("NaN and inf (4,3,2)", In(_special(dtype, (4, 3, 2))), In(p((3,))), In(p((3,))), In(p((3,))),
                 In(pos((3,))), True)]
    cases = []
    for training in (True, False):
        t = "train" if training else "eval"
        cases += [
            (f"{t} (4,3)", In(p((4, 3))), In(p((3,))), In(p((3,))), In(p((3,))), In(pos((3,))), training),
            (f"{t} (2,3,4,4)", In(p((2, 3, 4, 4))), In(p((3,))), In(p((3,))), In(p((3,))), In(pos((3,))), training),
            (f"{t} channels_last (2,3,2,3)", In(p((2, 3, 2, 3)), cl), In(p((3,))), In(p((3,))), In(p((3,))),
             In(pos((3,))), training),
            (f"{t} no weight (3,2,5)", In(p((3, 2, 5))), None, None, In(p((2,))), In(pos((2,))), training),
            (f"{t} offset x*100+300 (5,2,6)", In(_values(dtype, rng, (5, 2, 6), "offset")), In(p((2,))), In(p((2,))),
             In(p((2,))), In(pos((2,))), training),
        ]
    cases += [
        ("train no running stats (3,2,5)", In(p((3, 2, 5))), In(p((2,))), In(p((2,))), None, None, True),
        ("train long channels (64,2,5)", In(p((64, 2, 5))), In(p((2,))), In(p((2,))), In(p((2,))), In(pos((2,))), True),
        ("train constant (4,2,3)", In(_values(dtype, rng, (4, 2, 3), "constant")), None, None, In(p((2,))),
         In(pos((2,))), True),
        ("train one element per channel (1,3)", In(p((1, 3))), In(p((3,))), In(p((3,))), In(p((3,))), In(pos((3,))),
         True),
        ("eval empty batch (0,3,2)", In(p((0, 3, 2))), In(p((3,))), In(p((3,))), In(p((3,))), In(pos((3,))), False),
        ("train empty batch: error", In(p((0, 3))), None, None, In(p((3,))), In(pos((3,))), True),
        ("1-D input: error", In(p((4,))), None, None, None, None, True),
    ]
    if dtype in (torch.float16, torch.bfloat16):
        f = lambda n: _r(n, torch.float32, rng)  # noqa: E731
        cases.append(("train float32 parameters (mixed)", In(p((4, 2, 3))), In(f((2,))), In(f((2,))), In(f((2,))),
                      In((torch.rand(2, generator=rng) + 0.5)), True))
    return cases


def gen_batch_norm(row, overload, dtype, rng, special):
    name = overload.split(".")[0]
    stats_required = name in ("_native_batch_norm_legit", "_batch_norm_with_update") and "no_stats" not in overload
    no_stats = "no_stats" in overload
    cases = []
    for desc, x, w, b, rm, rv, training in _bn_inputs(dtype, rng, special):
        if (stats_required and rm is None) or (no_stats and rm is not None and not training):
            continue
        if (name == "_batch_norm_with_update" and not training) or (name == "_batch_norm_no_update" and training):
            continue
        if out_names(overload) and "channels_last" in desc:
            continue  # torch 2.13 CPU's out= kernels write a channels_last result into a contiguous out
            # in the wrong order (its functional kernel is right); test_norm.py checks ours against that
        if no_stats:
            rm = rv = None
        named = {"input": x, "weight": w, "bias": b, "running_mean": rm, "running_var": rv, "training": training,
                 "momentum": 0.1, "eps": EPS}

        def sc(args, training=training, has_stats=rm is not None):
            names = [a.name for a in resolve(overload)._schema.arguments if not a.kwarg_only]
            d = dict(zip(names, args))
            x = d["input"]
            grp = nb.Groups(x.reshape(x.shape[0], x.shape[1], math.prod(x.shape[2:])), per_channel=True)
            s = nb.forward(grp, d["weight"], d["bias"], EPS, nb.eps_of(x.dtype), d.get("running_mean"),
                           d.get("running_var"), training)[:3]
            s = nb.shaped(s, [x.shape, None, None])
            if not training:
                s = s[:1] + [(None, 1), (None, 1)]  # empty save_mean / save_invstd
            return s + [(None, 1)]  # _batch_norm_with_update's reserve (uint8, empty)
        sdt = _stat_dtype(x, w, b, rm, rv)
        outs = [dtype, sdt, sdt] + ([torch.uint8] if len(out_names(overload)) == 4 else [])
        cases.append(wrap_call(overload, _call(overload, named), desc, outs, None if "error" in desc else sc))
    return cases


def gen_batch_norm_backward(row, overload, dtype, rng, special):
    new = overload.startswith("batch_norm_backward")
    cases = []
    for desc, x, w, b, rm, rv, training in _bn_inputs(dtype, rng, False):
        xc = x.cpu()
        if xc.numel() == 0 or xc.dim() < 2 or (not training and rm is None):
            continue  # torch CPU's backward crashes on an empty input (SIGFPE); test_norm.py covers it
        if new and w is None:
            continue  # batch_norm_backward's weight is not optional
        wc = w.cpu() if w is not None else None
        rmc, rvc = (rm.cpu(), rv.cpu()) if rm is not None else (None, None)
        _, sm, si = A.native_batch_norm(xc, wc, None, rmc.clone() if rmc is not None else None,
                                        rvc.clone() if rvc is not None else None, training, 0.1, EPS)
        g = (torch.randn(xc.shape, generator=rng, dtype=torch.float64) * (1e3 if special else 1)).to(dtype)
        named = {"grad_out": In(g, x.view), "input": x, "weight": w, "running_mean": rm, "running_var": rv,
                 "save_mean": In(sm), "save_invstd": In(si), "save_var": In(si), "train": training,
                 "update": training, "eps": EPS, "output_mask": [True, True, True],
                 "reserve": In(torch.empty(0, dtype=torch.uint8))}

        def sc(args, training=training):
            names = [a.name for a in resolve(overload)._schema.arguments]
            d = dict(zip(names, args))
            x = d["input"]
            grp = nb.Groups(x.reshape(x.shape[0], x.shape[1], math.prod(x.shape[2:])), per_channel=True)
            dy = d["grad_out"].reshape(grp.A, grp.C, grp.S)
            if training:
                s = nb.backward(grp, dy, d["weight"], d["save_mean"], d.get("save_invstd", d.get("save_var")),
                                nb.eps_of(x.dtype))
            else:
                s = nb.backward(grp, dy, d["weight"], d["running_mean"], d["running_var"], nb.eps_of(x.dtype),
                                var_given=True, eps=EPS, train=False)
            return nb.shaped(s, [x.shape, None, None])
        pdt = wc.dtype if wc is not None else _stat_dtype(x, rm)
        cases.append(wrap_call(overload, _call(overload, named), desc, [dtype, pdt, pdt], sc))
    return cases


GENERATORS = {
    "norm_layer": gen_layer_norm, "norm_layer_backward": gen_layer_norm_backward,
    "norm_group": gen_group_norm, "norm_group_backward": gen_group_norm_backward,
    "norm_batch": gen_batch_norm, "norm_batch_backward": gen_batch_norm_backward,
}

# Arguments torch 2.13's CPU kernels read as dense whatever their strides (measured: a stepped or
# transposed one gives other numbers, not an error): the batch norm out= kernels' input, layer
# norm backward's mean and rstd, group norm's weight and bias and its backward's every tensor,
# batch norm backward's weight and statistics. The fuzzer's reference gets contiguous copies of
# them (fuzz_cases._dense_ref); vkml gets the strided ones. native_group_norm's non-contiguous
# input is torch's error instead ("Expected X.is_contiguous(memory_format)"), and vkml's.
_BN_OUT = ("native_batch_norm.out", "_native_batch_norm_legit.out", "_native_batch_norm_legit.no_stats_out",
           "_batch_norm_with_update.out")
FUZZ_DENSE = {ov: (0,) for ov in _BN_OUT} | {
    "native_layer_norm_backward": (3, 4),
    "native_group_norm": (1, 2),
    "native_group_norm_backward": (0, 1, 2, 3, 4),
    "native_batch_norm_backward": (2, 3, 4, 5, 6),
    "batch_norm_backward": (2, 3, 4, 5, 6),
}
