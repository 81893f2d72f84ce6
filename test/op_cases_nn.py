"""Case generators for reductions, GEMM, softmax and NLL rows (see op_cases.py for the model)."""
import math

import torch

from op_cases import In, is_inplace, rand, small_ints, special_values, wrap_call


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
        dims = [None] + list(range(x.cpu().dim())) + [-1] if x.cpu().dim() else [None, 0, -1]
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


def _addmv_scale(a, alpha, beta):
    c, m, v = a
    if m.numel() == 0:  # torch's CPU: an empty mat (k = 0 or m = 0) gives zeros (m,) for beta 0, else beta * self in self's shape
        return (c.double().abs() * abs(beta) if beta != 0 else torch.zeros(m.shape[0], dtype=torch.float64)), 1
    return _gemm_scale(m, v, c, alpha, beta)


def gen_gemv(row, overload, dtype, rng, special):
    """addmv and dot: the gemm node with [K] operands viewed as matrices."""
    name = row["name"]
    r = lambda shape: rand(shape, dtype, rng)  # noqa: E731
    if special:
        v = special_values(dtype, with_max=False)
        vecs = [("special values . ones", In(v), In(torch.ones_like(v)))]
    else:
        vecs = [("k=4", In(r((4,))), In(r((4,)))),
                ("stepped k=5", In(r((10,)), lambda t: t[::2]), In(r((15,)), lambda t: t[::3])),
                ("k=0", In(r((0,))), In(r((0,)))),
                ("k=300", In(r((300,))), In(r((300,))))]
    cases = []
    for desc, x, y in vecs:
        k = x.cpu().shape[0]
        if name == "dot":
            cases.append(wrap_call(overload, [x, y], desc, [dtype], lambda a: [_gemm_scale(a[0], a[1])]))
            continue
        mats = [("mat (3,k)", In(r((3, k)))), ("mat transposed (k,3).t()", In(r((k, 3)), lambda t: t.t()))]
        if special:
            mats = [("mat of the special values", In(torch.stack([x.cpu(), y.cpu()])))]
        for mdesc, m in mats:
            rows = m.cpu().shape[0]
            cs = [("c (m,)", In(r((rows,))))]
            if not is_inplace(overload):
                cs.append(("c () broadcast", In(r(()))))
            for cdesc, c in cs:
                for beta, alpha in ((1, 1), (0.5, 2), (0, 1)):
                    cases.append(wrap_call(overload, [c, m, y], f"{desc}, {mdesc}, {cdesc}, beta={beta} alpha={alpha}",
                                           [dtype], lambda a, al=alpha, be=beta: [_addmv_scale(a, al, be)],
                                           kwargs={"beta": beta, "alpha": alpha}))
    return cases


def gen_gemm(row, overload, dtype, rng, special):
    name = row["name"]
    if name in ("addmv", "dot"):
        return gen_gemv(row, overload, dtype, rng, special)
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

            sc = lambda a: softmax_backward_scale(row, a)  # noqa: E731
            cases.append(wrap_call(overload, [In(g), In(out.contiguous()), d, dtype], f"{desc} dim={d}", [dtype], sc))
    return cases


def softmax_backward_scale(row, a):
    """[(scale, n)] of _softmax_backward_data / _log_softmax_backward_data(grad, out, dim, dtype), as
    the oracle's (backend/cpu/softmax.cpp backward_row): the sum's terms, plus one smallest normal
    of absolute error (in scale units) where an exp(out) or a product below the normal range may
    come out 0 (Vulkan's precision holds for normal results only): log_softmax times |sum grad| + 1,
    softmax times D |out|."""
    gd, od, dim = a[0].double(), a[1].double(), a[2]
    if gd.dim() == 0:
        return [(gd.abs() * 2 + 1, 1)]
    n = gd.shape[dim]
    compute = torch.float64 if a[1].dtype == torch.float64 else torch.float32
    fi = torch.finfo(compute)
    flush = fi.smallest_normal / (float(row["tol_bound"]) * fi.eps * (math.log2(max(n, 1)) + 1))
    if row["name"].startswith("log_"):
        s = gd.abs() + od.exp() * gd.abs().sum(dim, keepdim=True) + flush * (gd.sum(dim, keepdim=True).abs() + 1)
    else:
        s = od.abs() * (gd.abs() + (gd * od).abs().sum(dim, keepdim=True)) + flush * n * od.abs()
    return [(s, n)]


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
    tsafe = torch.where(t2 == a[4], torch.zeros_like(t2), t2)  # an ignored target may be any value
    wt = (w.double()[tsafe] if w is not None else torch.ones(t2.shape, dtype=torch.float64))
    keep = (t2 != a[4]).double()
    picked = (x2.gather(1, tsafe[:, None])[:, 0] if x2.numel() else torch.zeros(0, dtype=torch.float64))
    terms = (wt * picked).abs() * keep
    tw = (wt * keep).sum()
    twa = (wt.abs() * keep).sum()  # a scale is a magnitude: weights may be negative
    if red == 0:
        return [(terms.reshape(t.shape), 1), (twa, max(len(t2), 1))]
    s = terms.sum() / (tw.abs() if red == 1 and tw != 0 else 1)
    return [(s, max(len(t2), 1)), (twa, max(len(t2), 1))]


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
