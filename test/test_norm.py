"""The norm family through torch's own modules and functions: nn.LayerNorm, nn.BatchNorm1d/2d
(train and eval, running statistics after several steps), nn.GroupNorm, nn.RMSNorm, forward and
backward, against torch CPU and (check mode) the oracle; unscaled inputs; grids past 65,535
workgroups; the edge cases torch CPU itself crashes on; a small model training a few steps.
Tolerances: the rows' (TOL_NORM) with scales from norm_bounds, ours + torch CPU's own."""
import contextlib
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import norm_bounds as nb
from helpers import DEV, FLOAT_DTYPES, assert_close_row, assert_exact, check_mode, row, stats

A = torch.ops.aten


def _close(name, got, ref, scale_n, what):
    sc, n = scale_n
    if torch.is_tensor(sc) and sc.numel() == got.numel():
        sc = sc.reshape(got.shape)  # norm_bounds' [A, C, S] or per-group layout
    assert_close_row(row(name), got, ref, sc, n, what=what)


def _ref_dtype(dtype):
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


# ---- modules, forward and backward ----------------------------------------------------------------

def _grad_run(mod, x, g, dev):
    m = mod.to(dev)
    xi = x.detach().to(dev).requires_grad_()
    y = m(xi)
    y.backward(g.to(dev))
    params = [p.grad.cpu() for p in m.parameters()]
    return y.detach().cpu(), xi.grad.cpu(), params


def _saved(fn, *args):
    """The statistics vkml's forward saves (mean, rstd): deterministic, so the module's own."""
    return [t.cpu() for t in fn(*[a.to(DEV) if torch.is_tensor(a) else a for a in args])[1:]]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_module(dtype, affine):
    """nn.LayerNorm forward and backward. Narrow dtypes: the reference is torch CPU in float32 on
    the same values; the backward's reference gets the statistics vkml saved (rounded to the narrow
    dtype, as torch CPU saves them too), since a 1-ulp difference there is the forward's, not the
    backward's."""
    torch.manual_seed(0)
    x = (torch.randn(3, 4, 10, dtype=torch.float64) * 2 + 1).to(dtype)
    g = torch.randn(3, 4, 10, dtype=torch.float64).to(dtype)
    mod = nn.LayerNorm([4, 10], elementwise_affine=affine, dtype=dtype)
    if affine:
        with torch.no_grad():
            mod.weight.copy_(torch.randn(4, 10))
            mod.bias.copy_(torch.randn(4, 10))
    wide = lambda t: None if t is None else t.to(_ref_dtype(dtype))  # noqa: E731
    y_ref = _copy(mod, _ref_dtype(dtype))(wide(x)).detach()
    with check_mode():
        y, dx, p = _grad_run(_copy(mod, dtype), x, g, DEV)
    w = mod.weight.detach() if affine else None
    b = mod.bias.detach() if affine else None
    mean, rstd = _saved(A.native_layer_norm, x, [4, 10], w, b, mod.eps)
    ref = A.native_layer_norm_backward(wide(g), wide(x), [4, 10], wide(mean), wide(rstd), wide(w), wide(b),
                                       [True, affine, affine])
    grp = nb.Groups(x.reshape(3, 40, 1), per_channel=False)
    e = nb.eps_of(dtype)
    _close("layer_norm", y, y_ref.to(dtype), nb.forward(grp, w, b, mod.eps, e)[0], "y")
    bw = nb.backward(grp, g.reshape(3, 40, 1), w, mean, rstd, e)
    _close("layer_norm_backward", dx, ref[0].to(dtype), bw[0], "dx")
    for got, r, s in zip(p, ref[1:], bw[1:]):
        _close("layer_norm_backward", got, r.to(dtype), s, "dw/db")


def _copy(mod, dtype):
    import copy
    return copy.deepcopy(mod).to(dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_group_norm_module(dtype):
    """nn.GroupNorm forward and backward (references as in test_layer_norm_module)."""
    torch.manual_seed(1)
    x = torch.randn(2, 6, 3, 4, dtype=torch.float64).to(dtype)
    g = torch.randn(2, 6, 3, 4, dtype=torch.float64).to(dtype)
    mod = nn.GroupNorm(3, 6, dtype=dtype)
    with torch.no_grad():
        mod.weight.copy_(torch.randn(6))
        mod.bias.copy_(torch.randn(6))
    wide = lambda t: t.to(_ref_dtype(dtype))  # noqa: E731
    y_ref = _copy(mod, _ref_dtype(dtype))(wide(x)).detach()
    with check_mode():
        y, dx, p = _grad_run(_copy(mod, dtype), x, g, DEV)
    w, b, e = mod.weight.detach(), mod.bias.detach(), nb.eps_of(dtype)
    mean, rstd = _saved(A.native_group_norm, x, w, b, 2, 6, 12, 3, mod.eps)
    ref = A.native_group_norm_backward(wide(g), wide(x), wide(mean), wide(rstd), wide(w), 2, 6, 12, 3,
                                       [True, True, True])
    grp = nb.Groups(x.reshape(2, 6, 12), per_channel=False, G=3)
    _close("group_norm", y, y_ref.to(dtype), nb.forward(grp, w, b, mod.eps, e, fold=True)[0], "y")
    bw = nb.backward(grp, g.reshape(2, 6, 12), w, mean, rstd, e)
    _close("group_norm_backward", dx, ref[0].to(dtype), bw[0], "dx")
    for got, r, s in zip(p, ref[1:], bw[1:]):
        _close("group_norm_backward", got, r.to(dtype), s, "dw/db")


def _narrow_ulp(v, dtype):
    """One ulp of a narrow dtype at v, in float32 eps units (0 for float32 / float64)."""
    if dtype not in (torch.float16, torch.bfloat16):
        return torch.zeros(v.shape, dtype=torch.float64)
    fi = torch.finfo(dtype)
    _, ex = torch.frexp(v.double().abs().clamp_min(fi.smallest_normal))
    return torch.ldexp(torch.full(v.shape, fi.eps, dtype=torch.float64), (ex - 1).to(torch.int64)) / nb.eps_of(dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape,cls", [((8, 3), nn.BatchNorm1d), ((4, 3, 5), nn.BatchNorm1d),
                                       ((2, 3, 4, 4), nn.BatchNorm2d)])
def test_batch_norm_running_stats(dtype, shape, cls):
    """Three training steps, then eval: running_mean / running_var / num_batches_tracked as on the
    CPU, in place on the module's buffers; the eval output from them."""
    torch.manual_seed(2)
    C = shape[1]
    ref_mod = cls(C, dtype=_ref_dtype(dtype))
    mod = cls(C, dtype=dtype).to(DEV)
    bufs = (mod.running_mean, mod.running_var)
    e = nb.eps_of(dtype)
    allowed_m = torch.zeros(C, dtype=torch.float64)
    allowed_v = torch.zeros(C, dtype=torch.float64)
    with check_mode():
        for step in range(3):
            x = (torch.randn(shape, dtype=torch.float64) * (step + 1) + step).to(dtype)
            rm0, rv0 = ref_mod.running_mean.clone(), ref_mod.running_var.clone()
            y_ref = ref_mod(x.to(_ref_dtype(dtype)))
            y = mod(x.to(DEV)).cpu()
            grp = nb.Groups(x.reshape(shape[0], C, -1), per_channel=True)
            s = nb.forward(grp, None, None, ref_mod.eps, e, rm0, rv0, True, ref_mod.momentum)
            _close("batch_norm", y, y_ref.to(dtype), (s[0][0].reshape(shape), 1), f"step {step} y")
            # earlier errors decay by 1 - momentum; a narrow dtype also rounds each step's value
            allowed_m = allowed_m * (1 - ref_mod.momentum) + s[3][0] + _narrow_ulp(ref_mod.running_mean, dtype)
            allowed_v = allowed_v * (1 - ref_mod.momentum) + s[4][0] + _narrow_ulp(ref_mod.running_var, dtype)
    assert mod.running_mean is bufs[0] and mod.running_var is bufs[1], "running stats not updated in place"
    assert int(mod.num_batches_tracked.cpu()) == 3
    _close("batch_norm", mod.running_mean.cpu(), ref_mod.running_mean.to(dtype), (allowed_m, 1), "running_mean")
    _close("batch_norm", mod.running_var.cpu(), ref_mod.running_var.to(dtype), (allowed_v, 1), "running_var")
    ref_mod.eval(), mod.eval()
    x = torch.randn(shape, dtype=torch.float64).to(dtype)
    with check_mode():
        y = mod(x.to(DEV)).cpu()
    with torch.no_grad():  # eval from vkml's running statistics (their own error is tested above)
        ref_mod.running_mean.copy_(mod.running_mean.cpu())
        ref_mod.running_var.copy_(mod.running_var.cpu())
    y_ref = ref_mod(x.to(_ref_dtype(dtype)))
    grp = nb.Groups(x.reshape(shape[0], C, -1), per_channel=True)
    s = nb.forward(grp, None, None, ref_mod.eps, e, mod.running_mean.cpu(), mod.running_var.cpu(), False)
    _close("batch_norm", y, y_ref.to(dtype), (s[0][0].reshape(shape), 1), "eval y")


def test_batch_norm_cumulative_average():
    """momentum=None: nn.BatchNorm passes 1 / num_batches_tracked as the momentum each step."""
    torch.manual_seed(15)
    ref, mod = nn.BatchNorm1d(3, momentum=None), nn.BatchNorm1d(3, momentum=None).to(DEV)
    allowed_m, allowed_v = torch.zeros(3, dtype=torch.float64), torch.zeros(3, dtype=torch.float64)
    e = nb.eps_of(torch.float32)
    with check_mode():
        for step in range(4):
            x = torch.randn(6, 3) * (step + 1) + step
            rm0, rv0 = ref.running_mean.clone(), ref.running_var.clone()
            ref(x), mod(x.to(DEV))
            m = 1 / (step + 1)
            s = nb.forward(nb.Groups(x.reshape(6, 3, 1), True), None, None, ref.eps, e, rm0, rv0, True, m)
            allowed_m = allowed_m * (1 - m) + s[3][0]
            allowed_v = allowed_v * (1 - m) + s[4][0]
    _close("batch_norm", mod.running_mean.cpu(), ref.running_mean, (allowed_m, 1), "running_mean")
    _close("batch_norm", mod.running_var.cpu(), ref.running_var, (allowed_v, 1), "running_var")


@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_batch_norm_module_backward(train, dtype):
    """nn.BatchNorm2d backward in train and eval (references as in test_layer_norm_module)."""
    torch.manual_seed(3)
    x = torch.randn(4, 3, 2, 5, dtype=torch.float64).to(dtype)
    g = torch.randn(4, 3, 2, 5, dtype=torch.float64).to(dtype)
    mod = nn.BatchNorm2d(3, dtype=dtype)
    with torch.no_grad():
        mod.weight.copy_(torch.randn(3))
        mod.bias.copy_(torch.randn(3))
        mod.running_mean.copy_(torch.randn(3))
        mod.running_var.copy_(torch.rand(3) + 0.5)
    mod.train(train)
    wide = lambda t: None if t is None else t.to(_ref_dtype(dtype))  # noqa: E731
    rm, rv = mod.running_mean.clone(), mod.running_var.clone()
    with check_mode():
        y, dx, p = _grad_run(_copy(mod, dtype), x, g, DEV)
    e, w, b = nb.eps_of(dtype), mod.weight.detach(), mod.bias.detach()
    grp = nb.Groups(x.reshape(4, 3, 10), per_channel=True)
    if train:
        sm, si = _saved(A.native_batch_norm, x, w, b, None, None, True, 0.1, mod.eps)
        ref = A.native_batch_norm_backward(wide(g), wide(x), wide(w), None, None, wide(sm), wide(si), True, mod.eps,
                                           [True, True, True])
        bw = nb.backward(grp, g.reshape(4, 3, 10), w, sm, si, e)
    else:
        ref = A.native_batch_norm_backward(wide(g), wide(x), wide(w), wide(rm), wide(rv), None, None, False, mod.eps,
                                           [True, True, True])
        bw = nb.backward(grp, g.reshape(4, 3, 10), w, rm, rv, e, var_given=True, eps=mod.eps, train=False)
    _close("batch_norm_backward", dx, ref[0].to(dtype), bw[0], "dx")
    for got, r, s in zip(p, ref[1:], bw[1:]):
        _close("batch_norm_backward", got, r.to(dtype), s, "dw/db")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_batch_norm_mixed_precision(dtype):
    """A float32 module on float16/bfloat16 input: torch CPU's mixed mode (float32 statistics)."""
    torch.manual_seed(4)
    mod = nn.BatchNorm1d(3)
    x = torch.randn(6, 3).to(dtype)
    ref = _copy(mod, torch.float32)
    y_ref = ref(x)
    with check_mode():
        m = _copy(mod, torch.float32).to(DEV)
        y = m(x.to(DEV)).cpu()
    assert y.dtype == y_ref.dtype == dtype and m.running_mean.dtype == torch.float32
    grp = nb.Groups(x.reshape(6, 3, 1), per_channel=True)
    s = nb.forward(grp, None, None, mod.eps, nb.eps_of(dtype), torch.zeros(3), torch.ones(3), True, 0.1)
    # torch CPU rounds the output once from float32 like us; its reference here is itself (mixed mode)
    _close("batch_norm", y, y_ref, (s[0][0].reshape(6, 3), 1), "y")
    _close("batch_norm", m.running_mean.cpu(), ref.running_mean, s[3], "running_mean")
    _close("batch_norm", m.running_var.cpu(), ref.running_var, s[4], "running_var")


# ---- RMSNorm: torch's own decomposition --------------------------------------------------------

def _rms_bound(x, N, dtype):
    """Relative bound for rms_norm against torch CPU, which runs the same decomposition (pow, mean,
    add, rsqrt, mul; torch 2.13 has no fused kernel for this device): per side, mean(x^2) within
    TOL_SUM's 2 (log2 N + 1) eps relative (its terms are >= 0), halved by the square root, + eps
    (add), 7 eps (TOL_RSQRT), 2 eps (the two products): (log2 N + 11) eps; both sides: twice."""
    return 2 * (math.log2(N) + 11) * torch.finfo(torch.float32 if dtype != torch.float64 else dtype).eps


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("affine", [True, False])
def test_rms_norm_module(dtype, affine):
    torch.manual_seed(5)
    N = 24
    x = (torch.randn(5, N, dtype=torch.float64) * 3).to(dtype)
    mod = nn.RMSNorm(N, elementwise_affine=affine, dtype=dtype)
    if affine:
        with torch.no_grad():
            mod.weight.copy_(torch.randn(N))
    y_ref = mod(x)
    with check_mode():
        y = _copy(mod, dtype).to(DEV)(x.to(DEV)).cpu()
    bound = _rms_bound(x, N, dtype)
    # narrow dtypes: torch rounds x * rsqrt(...) to the input dtype before the weight multiply,
    # so two roundings to it, each of which may fall either way: 2 of its ulps
    ulps = 2 if dtype in (torch.float16, torch.bfloat16) and affine else 1
    r = {"name": "rms_norm", "tol_kind": "relative", "tol_bound": bound}
    if ulps == 1:
        assert_close_row(r, y, y_ref, what="rms_norm")
    else:
        d = (y.double() - y_ref.double()).abs()
        allowed = bound * y_ref.double().abs() + 2 * torch.finfo(dtype).eps * y_ref.double().abs().clamp_min(
            torch.finfo(dtype).smallest_normal) * mod.weight.detach().double().abs().clamp_min(1)
        assert bool((d <= allowed).all()), f"rms_norm {dtype}: worst {float((d - allowed).max())} beyond"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_rms_norm_backward(dtype):
    """d/dx of y = x r w, r = rsqrt(mean(x^2) + eps): dx = r w dy - x r^3 mean(x w dy). Bound per
    element: 24 eps (log2 N + 1) (r |w dy| + |x| r^3 mean|x w dy|): on each side the one sum at
    TOL_SUM's 2 (log2 N + 1) and at most ten pointwise roundings (rsqrt's 7 ulp among them)."""
    torch.manual_seed(6)
    N = 24
    x = (torch.randn(4, N, dtype=torch.float64) * 2).to(dtype)
    g = torch.randn(4, N, dtype=torch.float64).to(dtype)
    w = torch.randn(N, dtype=torch.float64).to(dtype)
    xr, wr = x.clone().requires_grad_(), w.clone().requires_grad_()
    F.rms_norm(xr, [N], wr, 1e-6).backward(g)
    with check_mode():
        xv, wv = x.to(DEV).requires_grad_(), w.to(DEV).requires_grad_()
        F.rms_norm(xv, [N], wv, 1e-6).backward(g.to(DEV))
        dx, dw = xv.grad.cpu(), wv.grad.cpu()
    xd, gd, wd = x.double(), g.double(), w.double()
    rr = (xd.pow(2).mean(1, keepdim=True) + 1e-6).rsqrt()
    sc = rr * (wd * gd).abs() + xd.abs() * rr ** 3 * (xd * wd * gd).abs().mean(1, keepdim=True)
    bound = {"name": "rms_norm_backward", "tol_kind": "backward-error", "tol_bound": 24}
    assert_close_row(bound, dx, xr.grad, sc, N, what="dx")
    assert_close_row(bound, dw, wr.grad, (xd * rr * gd).abs().sum(0), 4, what="dw")


def test_fused_rms_norm_op():
    """aten._fused_rms_norm, called directly, reaches torch's composite on this device: the same
    output as F.rms_norm, and its rstd in float32 for a float16 input, as torch CPU returns it."""
    torch.manual_seed(13)
    x, w = torch.randn(3, 8).half(), torch.randn(8).half()
    y, rstd = A._fused_rms_norm(x.to(DEV), [8], w.to(DEV), 1e-6)
    y_ref, rstd_ref = A._fused_rms_norm(x, [8], w, 1e-6)
    assert (y.dtype, rstd.dtype, tuple(rstd.shape)) == (y_ref.dtype, rstd_ref.dtype, tuple(rstd_ref.shape))
    assert_exact(y.cpu(), F.rms_norm(x.to(DEV), [8], w.to(DEV), 1e-6).cpu())
    r = {"name": "rms_norm", "tol_kind": "relative", "tol_bound": _rms_bound(x, 8, torch.float16)}
    assert_close_row(r, rstd.cpu(), rstd_ref, what="rstd")


# ---- unscaled inputs: check mode (the oracle) and torch CPU in float64 ---------------------------

UNSCALED = {
    "randn*100": lambda shape: torch.randn(shape, dtype=torch.float64) * 100,
    "offset 1e4": lambda shape: torch.randn(shape, dtype=torch.float64) + 1e4,
    "constant rows": lambda shape: torch.full(shape, -37.5, dtype=torch.float64),
    "offset 1e3, tiny spread": lambda shape: 1e3 + torch.randn(shape, dtype=torch.float64) * 1e-3,
}


def _vs_f64(got, op, args, dtype):
    """torch CPU's op on the float64 versions of args, rounded to each result's dtype."""
    ref = op(*[a.double() if torch.is_tensor(a) and a.is_floating_point() else a for a in args])
    return [r.to(g.dtype) if r is not None else None for r, g in zip(ref, got)]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("kind", list(UNSCALED))
def test_unscaled_inputs(dtype, kind):
    """Forward and backward of all three norms hold TOL_NORM against the oracle (check mode) and
    against torch CPU run in float64 (float64 inputs: torch CPU in float64, with its own error
    bound added) on inputs with large magnitudes, a large mean or no variance at all."""
    torch.manual_seed(7)
    x = UNSCALED[kind]((6, 4, 10)).to(dtype)
    g = torch.randn(6, 4, 10, dtype=torch.float64).to(dtype)
    w, b = torch.randn(4, dtype=torch.float64).to(dtype), torch.randn(4, dtype=torch.float64).to(dtype)
    e, cpu = nb.eps_of(dtype), dtype == torch.float64
    cases = {
        "layer": (lambda x, w, b: A.native_layer_norm(x, [10], None, None, 1e-5), (x,), nb.Groups(x.reshape(24, 10, 1), False)),
        "group": (lambda x, w, b: A.native_group_norm(x, w, b, 6, 4, 10, 2, 1e-5), (x, w, b),
                  nb.Groups(x, False, 2)),
        "batch": (lambda x, w, b: A.native_batch_norm(x, w, b, None, None, True, 0.1, 1e-5), (x, w, b),
                  nb.Groups(x, True)),
    }
    for name, (op, args, grp) in cases.items():
        full = list(args) + [None] * (3 - len(args))
        with check_mode():
            got = [t.cpu() for t in op(*[a.to(DEV) if a is not None else None for a in full])]
        ref = _vs_f64(got, op, full, dtype)
        ww, bb = (None, None) if name == "layer" else (w, b)
        sc = nb.forward(grp, ww, bb, 1e-5, e, vs_cpu=cpu, fold=name == "group")
        shp = got[0].shape
        _close(f"{name}_norm", got[0], ref[0], (sc[0][0].reshape(shp), 1), f"{name} y")
        _close(f"{name}_norm", got[1], ref[1], (sc[1][0].reshape(got[1].shape), 1), f"{name} mean")
        _close(f"{name}_norm", got[2], ref[2], (sc[2][0].reshape(got[2].shape), 1), f"{name} rstd")
        # the backward with the forward's (float64-exact) statistics, rounded as the forward stored them
        mean, rstd = ref[1], ref[2]
        if name == "layer":
            bop = lambda dy, x, m, r: A.native_layer_norm_backward(dy, x, [10], m, r, None, None, [True, False, False])  # noqa: E731
        elif name == "group":
            bop = lambda dy, x, m, r: A.native_group_norm_backward(dy, x, m, r, w.to(dy.device, dy.dtype), 6, 4, 10, 2,  # noqa: E731
                                                                   [True, True, True])
        else:
            bop = lambda dy, x, m, r: A.native_batch_norm_backward(dy, x, w.to(dy.device, dy.dtype), None, None, m, r,  # noqa: E731
                                                                   True, 1e-5, [True, True, True])
        with check_mode():
            bgot = [t.cpu() if t is not None else None for t in bop(g.to(DEV), x.to(DEV), mean.to(DEV), rstd.to(DEV))]
        bref = _vs_f64(bgot, bop, [g, x, mean, rstd], dtype)
        dyv = g.reshape(24, 10, 1) if name == "layer" else g
        bs = nb.backward(grp, dyv, None if name == "layer" else w, mean, rstd, e, vs_cpu=cpu)
        for i, (gt, rf) in enumerate(zip(bgot, bref)):
            if gt is not None:
                _close(f"{name}_norm_backward", gt, rf, (bs[i][0].reshape(gt.shape), 1), f"{name} backward {i}")


# ---- large grids, determinism --------------------------------------------------------------------

def test_more_than_65535_groups():
    """The backward's dw/db pass over 70,000 channels, a workgroup each: a grid spread over two
    dimensions (VKML_MIN_SPEC=1 allows 65,535 per dim). Beside it 70,000 rows of 3 and 70,000
    batch-norm channels of 3, whose groups share workgroups (128 a workgroup, 547 workgroups;
    lavapipe took 37 s for the batch norm with a workgroup a channel)."""
    torch.manual_seed(8)
    x = torch.randn(70000, 3)
    g = torch.randn(70000, 3)
    with check_mode():
        y, mean, rstd = [t.cpu() for t in A.native_layer_norm(x.to(DEV), [3], None, None, 1e-5)]
        xt, gt = x.t().contiguous(), g.t().contiguous()  # (3, 70000): 70,000 columns
        w = torch.randn(70000)
        _, m2, r2 = A.native_layer_norm(xt, [70000], w, None, 1e-5)
        dx, dw, db = [t.cpu() for t in A.native_layer_norm_backward(gt.to(DEV), xt.to(DEV), [70000], m2.to(DEV),
                                                                      r2.to(DEV), w.to(DEV), w.to(DEV),
                                                                      [True, True, True])]
        yb = A.native_batch_norm(x.t().contiguous().to(DEV), None, None, None, None, True, 0.1, 1e-5)[0].cpu()
    e = nb.eps_of(torch.float32)
    grp = nb.Groups(x.reshape(70000, 3, 1), per_channel=False)
    y_ref, m_ref, r_ref = A.native_layer_norm(x, [3], None, None, 1e-5)
    s = nb.forward(grp, None, None, 1e-5, e)
    _close("layer_norm", y, y_ref, (s[0][0].reshape(y.shape), 1), "y")
    _close("layer_norm", rstd, r_ref, (s[2][0].reshape(rstd.shape), 1), "rstd")
    ref = A.native_layer_norm_backward(gt, xt, [70000], m2, r2, w, w, [True, True, True])
    bs = nb.backward(nb.Groups(xt.reshape(3, 70000, 1), False), gt.reshape(3, 70000, 1), w, m2, r2, e)
    for i, (got, r) in enumerate(zip((dx, dw, db), ref)):
        _close("layer_norm_backward", got, r, (bs[i][0].reshape(got.shape), 1), f"backward {i}")
    xb = x.t().contiguous()
    sb = nb.forward(nb.Groups(xb.reshape(3, 70000, 1), True), None, None, 1e-5, e)
    _close("batch_norm", yb, A.native_batch_norm(xb, None, None, None, None, True, 0.1, 1e-5)[0],
           (sb[0][0].reshape(yb.shape), 1), "batch norm, 70,000 channels")


def test_deterministic():
    """Same inputs, same bytes: fixed-order sums, no atomics."""
    torch.manual_seed(9)
    x, g = torch.randn(8, 300).to(DEV), torch.randn(8, 300).to(DEV)
    w = torch.randn(300).to(DEV)
    runs = []
    for _ in range(2):
        y, m, r = A.native_layer_norm(x, [300], w, w, 1e-5)
        d = A.native_layer_norm_backward(g, x, [300], m, r, w, w, [True, True, True])
        bn = A.native_batch_norm(x.reshape(8, 30, 10), None, None, None, None, True, 0.1, 1e-5)
        runs.append([t.cpu() for t in (y, m, r, *d, *bn)])
    for a, b in zip(*runs):
        assert_exact(a, b, what="second run")


# ---- edge cases, errors, other entry points ------------------------------------------------------

def test_batch_norm_backward_empty_batch():
    """An empty batch: no terms, so zero dw / db and an empty dx (torch CPU crashes here with
    SIGFPE in training and SIGSEGV in eval; CUDA returns the same zeros)."""
    x = torch.empty(0, 3, 4)
    for train in (True, False):
        dx, dw, db = A.native_batch_norm_backward(x.to(DEV), x.to(DEV), torch.ones(3).to(DEV), torch.zeros(3).to(DEV),
                                                  torch.ones(3).to(DEV), torch.zeros(3).to(DEV), torch.ones(3).to(DEV),
                                                  train, 1e-5, [True, True, True])
        assert dx.shape == (0, 3, 4)
        assert_exact(dw.cpu(), torch.zeros(3))
        assert_exact(db.cpu(), torch.zeros(3))


@pytest.mark.parametrize("mask", [[True, False, False], [False, True, False], [False, False, True],
                                  [False, True, True], [True, True, False]])
def test_backward_output_masks(mask):
    """Only the gradients asked for are computed (and returned as None otherwise), as on the CPU."""
    torch.manual_seed(10)
    x, g, w = torch.randn(4, 6), torch.randn(4, 6), torch.randn(6)
    _, m, r = A.native_layer_norm(x, [6], w, w, 1e-5)
    ref = A.native_layer_norm_backward(g, x, [6], m, r, w, w, mask)
    with check_mode():
        got = A.native_layer_norm_backward(g.to(DEV), x.to(DEV), [6], m.to(DEV), r.to(DEV), w.to(DEV), w.to(DEV), mask)
    bs = nb.backward(nb.Groups(x.reshape(4, 6, 1), False), g.reshape(4, 6, 1), w, m, r, nb.eps_of(torch.float32))
    x3 = torch.randn(3, 2, 5)
    _, sm, si = A.native_batch_norm(x3, None, None, None, None, True, 0.1, 1e-5)
    g3 = torch.randn(3, 2, 5)
    bref = A.native_batch_norm_backward(g3, x3, torch.ones(2), None, None, sm, si, True, 1e-5, mask)
    with check_mode():
        bgot = A.native_batch_norm_backward(g3.to(DEV), x3.to(DEV), torch.ones(2).to(DEV), None, None, sm.to(DEV),
                                            si.to(DEV), True, 1e-5, mask)
    bbs = nb.backward(nb.Groups(x3, True), g3, torch.ones(2), sm, si, nb.eps_of(torch.float32))
    for k in range(3):
        for name, gt, rf, s in (("layer_norm_backward", got[k], ref[k], bs[k]), ("batch_norm_backward", bgot[k],
                                                                                 bref[k], bbs[k])):
            assert (gt is None) == (rf is None) == (not mask[k]), f"{name} output {k}"
            if gt is not None:
                _close(name, gt.cpu(), rf, (s[0].reshape(rf.shape), 1), f"{name} output {k}")


def test_errors_are_torchs():
    x = torch.randn(2, 4, 3)
    d = x.to(DEV)
    cases = [
        (lambda t: A.native_layer_norm(t, [4], None, None, 1e-5), RuntimeError, "Given normalized_shape=\\[4\\]"),
        (lambda t: A.native_group_norm(t, None, None, 2, 4, 3, 3, 1e-5), RuntimeError, "divisible by num_groups"),
        (lambda t: A.native_group_norm(t, None, None, 2, 4, 4, 2, 1e-5), RuntimeError, "N \\* C \\* HxW"),
        (lambda t: A.native_batch_norm(t[0, 0], None, None, None, None, True, 0.1, 1e-5), IndexError, "out of range"),
        (lambda t: A.native_batch_norm(t[:0], None, None, None, None, True, 0.1, 1e-5), RuntimeError,
         "at least one element"),
        (lambda t: A.native_layer_norm(t.long(), [3], None, None, 1e-5), NotImplementedError, "not implemented"),
        (lambda t: A.native_layer_norm(t.half(), [3], torch.ones(3, dtype=torch.float64, device=t.device), None,
                                       1e-5), RuntimeError, "mixed dtype"),
    ]
    for f, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            f(x)
        with pytest.raises(exc, match=msg):
            f(d)
    # sizes torch CPU does not check (it reads past the end): an error on vkml, never a crash
    with pytest.raises(RuntimeError, match="weight should contain 4 elements not 3"):
        A.native_batch_norm(d, torch.ones(3, device=DEV), None, None, None, True, 0.1, 1e-5)
    with pytest.raises(RuntimeError, match="running_mean and running_var must be defined"):
        A.native_batch_norm(d, None, None, None, None, False, 0.1, 1e-5)
    for t in (x, d):  # torch's own check and message
        with pytest.raises(ValueError, match="both be None or neither"):
            A.native_batch_norm(t, None, None, torch.zeros(4, device=t.device), None, True, 0.1, 1e-5)


def test_batch_norm_strided_running_stats():
    """Running statistics that are strided views are updated in place through their strides (the
    elements between them untouched), and a stride-0 (expanded) weight is read as such."""
    torch.manual_seed(14)
    x = torch.randn(5, 3, 4)
    buf_m, buf_v = torch.randn(6), torch.rand(6) + 0.5
    w = torch.tensor([1.5]).expand(3)
    dm, dv = buf_m.to(DEV), buf_v.to(DEV)
    bm, bv = buf_m.clone(), buf_v.clone()
    ref = A.native_batch_norm(x, w, None, buf_m[::2], buf_v[::2], True, 0.1, 1e-5)
    with check_mode():
        got = A.native_batch_norm(x.to(DEV), w.to(DEV).expand(3), None, dm[::2], dv[::2], True, 0.1, 1e-5)
        got = [t.cpu() for t in got]
    grp = nb.Groups(x, True)
    s = nb.forward(grp, w, None, 1e-5, nb.eps_of(torch.float32), bm[::2], bv[::2], True, 0.1)
    _close("batch_norm", got[0], ref[0], s[0], "y")
    _close("batch_norm", dm.cpu()[::2], buf_m[::2], s[3], "running_mean")
    _close("batch_norm", dv.cpu()[::2], buf_v[::2], s[4], "running_var")
    assert_exact(dm.cpu()[1::2], bm[1::2], what="elements between the running_mean view's")
    assert_exact(dv.cpu()[1::2], bv[1::2], what="elements between the running_var view's")


def test_other_batch_norm_entry_points():
    """Ops torch.compile / export and functional code reach: each lands on the batch_norm rows."""
    torch.manual_seed(11)
    x, w, b = torch.randn(4, 3, 2), torch.randn(3), torch.randn(3)
    rm, rv = torch.randn(3), torch.rand(3) + 0.5
    dv = lambda *ts: [t.to(DEV) for t in ts]  # noqa: E731
    with check_mode():
        before = stats()["checked"]
        got = A._native_batch_norm_legit_no_training(*dv(x, w, b, rm, rv), 0.1, 1e-5)
        ref = A._native_batch_norm_legit_no_training(x, w, b, rm, rv, 0.1, 1e-5)
        assert_exact(got[0].cpu().isnan(), ref[0].isnan())
        got2 = A._batch_norm_no_update(*dv(x, w, b, rm, rv), 0.1, 1e-5)
        out = torch.empty(0, device=DEV)
        A.native_layer_norm.out(x.to(DEV), [2], None, None, 1e-5, out0=out, out1=torch.empty(0, device=DEV),
                                out2=torch.empty(0, device=DEV))
        torch.vkml.synchronize()
        assert stats()["checked"] > before
    grp = nb.Groups(x, True)
    s = nb.forward(grp, w, b, 1e-5, nb.eps_of(torch.float32), rm, rv, training=False)
    _close("batch_norm", got[0].cpu(), ref[0], (s[0][0], 1), "_native_batch_norm_legit_no_training")
    _close("batch_norm", got2[0].cpu(), ref[0], (s[0][0], 1), "_batch_norm_no_update")
    lref = A.native_layer_norm(x, [2], None, None, 1e-5)[0]
    ls = nb.forward(nb.Groups(x.reshape(12, 2, 1), False), None, None, 1e-5, nb.eps_of(torch.float32))
    _close("layer_norm", out.cpu(), lref, (ls[0][0].reshape(lref.shape), 1), "native_layer_norm.out")


# ---- a small model with norms, trained a few steps ------------------------------------------------

class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.ln = nn.Linear(8, 16), nn.LayerNorm(16)
        self.fc2, self.gn = nn.Linear(16, 12), nn.GroupNorm(2, 4)
        self.bn, self.rms, self.fc3 = nn.BatchNorm1d(12), nn.RMSNorm(12), nn.Linear(12, 3)

    def forward(self, x):
        h = torch.relu(self.ln(self.fc1(x)))
        h = self.gn(self.fc2(h).reshape(-1, 4, 3)).reshape(-1, 12)
        return self.fc3(self.rms(torch.relu(self.bn(h))))


def _train_net(net, x, t, dev, steps=3):
    net = net.to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(net(x.to(dev)), t.to(dev))
        loss.backward()
        opt.step()
        losses.append(float(loss.detach().cpu()))
    return {k: v.detach().cpu() for k, v in net.state_dict().items()}, losses


@pytest.mark.parametrize("check", [False, True], ids=["lazy", "check"])
def test_small_model_trains(check):
    """Linear + LayerNorm + GroupNorm + BatchNorm1d + RMSNorm, three SGD steps: vkml float32 must be
    as accurate as torch CPU float32, both against the same training in float64 (the ratio test of
    test_training.py: at most 4x the CPU's error plus 16 eps of the value's size), running
    statistics and num_batches_tracked included."""
    import copy
    torch.manual_seed(12)
    x, t = torch.randn(10, 8), torch.randint(0, 3, (10,))
    base = _Net()
    p64, l64 = _train_net(copy.deepcopy(base).double(), x.double(), t, "cpu")
    pc, lc = _train_net(copy.deepcopy(base), x, t, "cpu")
    with (check_mode() if check else contextlib.nullcontext()):
        pv, lv = _train_net(copy.deepcopy(base), x, t, DEV)
    eps = torch.finfo(torch.float32).eps
    for k, ref in p64.items():
        if not ref.is_floating_point():
            assert_exact(pv[k], pc[k], what=k)
            continue
        err_v = (pv[k].double() - ref).abs().max().item()
        err_c = (pc[k].double() - ref).abs().max().item()
        allowed = 4 * err_c + 16 * eps * ref.abs().max().item()
        assert err_v <= allowed, f"{k}: vkml error {err_v:.3e} vs CPU float32 error {err_c:.3e} (allowed {allowed:.3e})"
    for i, (a, b, c) in enumerate(zip(lv, lc, l64)):
        assert abs(a - c) <= 4 * abs(b - c) + 16 * eps * abs(c), f"step {i} loss {a} vs cpu {b} vs f64 {c}"
    assert lv[-1] < lv[0], f"loss did not decrease: {lv}"


# ---- variances past the compute type's range (docs/normalization.md, "Overflow") -------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64], ids=str)
def test_batch_norm_variance_overflow_as_torch(dtype):
    """A squared deviation past the compute type's range makes the variance infinite: rstd 0 and
    y = bias, as torch CPU's batch norm gives (found by the fuzzer: the oracle kept the exact,
    finite variance and check mode failed the GPU's right answer); the other channel is normal."""
    sq = 1.9e19 if dtype != torch.float64 else 1.4e154  # just above sqrt(max) of the compute type
    x = torch.ones((2, 2, 2, 2), dtype=torch.float64)
    x[:, 1] = torch.arange(8, dtype=torch.float64).reshape(2, 2, 2)
    x[0, 0, 0, 0] = sq * 4
    x = x.to(dtype)
    w, b = torch.tensor([1.5, 2.0], dtype=dtype), torch.tensor([0.25, -1.0], dtype=dtype)
    rm, rv = torch.zeros(2, dtype=dtype), torch.ones(2, dtype=dtype)
    rv_ref = rv.clone()
    ref = A.native_batch_norm(x, w, b, rm.clone(), rv_ref, True, 0.1, 1e-5)
    assert ref[2][0] == 0 and ref[2][1] > 0  # torch: rstd 0 for the overflowing channel
    for check in (False, True):
        with check_mode() if check else torch.no_grad():
            rmd, rvd = rm.to(DEV), rv.to(DEV)
            got = [t.cpu() for t in A.native_batch_norm(x.to(DEV), w.to(DEV), b.to(DEV), rmd, rvd, True, 0.1, 1e-5)]
        assert_exact(got[2][:1], ref[2][:1], what=f"rstd (check={check})")
        assert_exact(got[0][:, 0], ref[0][:, 0], what=f"y of the overflowing channel (check={check})")
        assert_exact(rvd.cpu()[:1], rv_ref[:1], what=f"running variance (check={check})")  # inf on both
        assert (got[0][:, 1] - ref[0][:, 1]).abs().max() < 0.05, "the normal channel"
        assert abs(float(got[1][0]) - float(ref[1][0])) <= 1e-2 * abs(float(ref[1][0]))


def test_layer_norm_variance_overflow():
    """Rows whose squared deviations overflow float32: vkml's rstd is 0 and y = bias (the rule batch
    norm follows on torch CPU), lazily and in check mode (the oracle agrees). torch CPU's own layer
    norm gives NaN or 0 here depending on the row length and the CPU's vector width (its Welford
    merge multiplies an overflowed square by a zero count), so it is no reference for these rows."""
    x = torch.ones((3, 9))
    x[0, 0], x[1, -1], x[2, :2] = 1e20, 3e38, torch.tensor([1e30, -1e30])
    w, b = torch.linspace(0.5, 2, 9), torch.linspace(-1, 1, 9)
    for check in (False, True):
        with check_mode() if check else torch.no_grad():
            y, mean, rstd = [t.cpu() for t in A.native_layer_norm(x.to(DEV), [9], w.to(DEV), b.to(DEV), 1e-5)]
        assert_exact(rstd.flatten(), torch.zeros(3), what=f"rstd (check={check})")
        assert_exact(y, b.expand(3, 9), what=f"y (check={check})")
        assert torch.allclose(mean.flatten()[:2], x[:2].double().mean(1).float(), rtol=1e-5)


@pytest.mark.parametrize("kind", ["layer", "group", "batch"])
def test_a_neighbour_groups_infinity_stays_out(kind):
    """Each statistics group reads only its own elements: an infinity in the element just past a
    group (the next row's first, the next group's first channel, the next channel) leaves that
    group's outputs finite and equal to torch CPU's. The mean's correction pass hides a wrong
    first-pass mean for finite values (mutation norm:180, `r < R` -> `r <= R`), not for an
    infinity, which makes it NaN."""
    g = torch.Generator().manual_seed(8)
    if kind == "layer":
        x = torch.randn(4, 7, generator=g)
        x[1, 0] = math.inf
        f = lambda t: F.layer_norm(t, (7,))  # noqa: E731
    elif kind == "group":
        x = torch.randn(2, 4, 3, generator=g)
        x[0, 2, 0] = math.inf  # the first element of sample 0's second group (2 channels a group)
        f = lambda t: F.group_norm(t, 2)  # noqa: E731
    else:
        x = torch.randn(3, 4, 2, generator=g).transpose(0, 1).contiguous().transpose(0, 1)  # channel-major
        x[0, 1, 0] = math.inf  # the first element of channel 1 in memory order
        f = lambda t: F.batch_norm(t, None, None, training=True)  # noqa: E731
    got, want = f(x.to(DEV)).cpu(), f(x)
    clean = {"layer": (slice(0, 1),), "group": (0, slice(0, 2)), "batch": (slice(None), slice(0, 1))}[kind]  # the group before it
    assert torch.isfinite(want[clean]).all(), "the reference must be finite there"
    assert torch.isfinite(got[clean]).all(), f"{kind}: the neighbour's infinity reached the group: {got[clean]}"
    assert_close_row(row(f"{kind}_norm"), got[clean], want[clean], want[clean].abs() + 1, n=x[clean].numel())


def test_batch_norm_backward_infinity_with_a_zero_weight_is_nan():
    """Training batch norm's backward where a channel's sums come out non-finite (an infinity in
    dy) takes torch CPU's formula, dx = (dy - mean(dy) - (x - mean) * k) * invstd * w: every dx of
    that channel is non-finite, and with the channel's weight 0 (ResNet's zero_init_residual) it
    is inf * 0 = NaN, as on the CPU (the mutation campaign's norm:357, * w -> / w, gave -inf: any
    other weight hides the difference, since inf * w and inf / w agree). The other channels,
    finite, one of them also weighted 0, match torch CPU within the row's tolerance."""
    g = torch.Generator().manual_seed(3)
    x, dy = torch.randn(3, 4, 5, generator=g), torch.randn(3, 4, 5, generator=g)
    dy[0, 1, 0] = math.inf
    w = torch.tensor([1.5, 0.0, -2.0, 0.0])
    mean = x.mean((0, 2))
    invstd = 1 / (x.var((0, 2), unbiased=False) + 1e-5).sqrt()
    args = (dy, x, w, None, None, mean, invstd, True, 1e-5, [True, True, True])
    ref = A.native_batch_norm_backward(*args)
    assert torch.isnan(ref[0][:, 1]).all(), "torch CPU's reference: a NaN channel"
    for check in (False, True):
        with check_mode() if check else contextlib.nullcontext():
            got = [t.cpu() for t in A.native_batch_norm_backward(*[a.to(DEV) if torch.is_tensor(a) else a for a in args])]
        for name, gt, rf in zip(("dx", "dw", "db"), got, ref):
            assert_close_row(row("batch_norm_backward"), gt, rf, rf.abs() + 1, n=15, what=f"{name} (check={check})")


def test_group_norm_backward_infinite_dy_where_x_is_zero():
    """Group norm's backward for a group whose sums are non-finite takes torch CPU's formula,
    ds = sum_c (sum_s dy * x) * w_c: an infinite dy where x = 0 makes that term inf * 0 = NaN, and
    the group's dx, dw and db are torch CPU's (NaN, infinities and finite values alike); the
    mutation campaign's norm:388, dy * x -> dy / x, made it an infinity and dx finite or infinite
    where the CPU's is NaN. Several seeds: signs of the mean, of dy's infinity and of the weights."""
    n, c, s, groups = 1, 4, 6, 2
    for seed in (0, 1, 4, 5, 6):
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(n, c, s, generator=g) - (seed % 3)
        dy = torch.randn(n, c, s, generator=g)
        x[0, seed % 4, 1] = 0.0
        dy[0, seed % 4, 1] = math.inf if seed % 2 else -math.inf
        w = torch.randn(c, generator=g)
        _, mean, rstd = A.native_group_norm(x, w, None, n, c, s, groups, 1e-5)
        args = (dy, x, mean, rstd, w, n, c, s, groups, [True, True, True])
        ref = A.native_group_norm_backward(*args)
        got = [t.cpu() for t in A.native_group_norm_backward(*[a.to(DEV) if torch.is_tensor(a) else a for a in args])]
        for name, gt, rf in zip(("dx", "dw", "db"), got, ref):
            assert_close_row(row("group_norm_backward"), gt, rf, rf.abs() + 1, n=s * c // groups,
                             what=f"{name} (seed {seed})")


def test_an_infinity_in_every_position_of_a_trip_reaches_the_mean():
    """Every loop trip's terms reach the first pass's mean: an infinity at position 200 of a row of
    1024 (the second of invocation 72's four terms in its first trip, whose rows are long enough for
    a fifth) makes the row's mean and output NaN, as torch CPU gives them. A finite term left out
    of that pass is hidden by the mean's correction pass; an infinite one is not (mutation
    norm:180, the trip loop's `u < kUnroll` -> `<=`: five terms counted, only the first pushed)."""
    x = torch.randn(3, 1024, generator=torch.Generator().manual_seed(9))
    x[1, 200] = math.inf
    y, mean, rstd = torch.native_layer_norm(x.to(DEV), [1024], None, None, 1e-5)
    wy, wmean, wrstd = torch.native_layer_norm(x, [1024], None, None, 1e-5)
    assert torch.isnan(wy[1]).all() and torch.isnan(wmean[1]).all(), "torch CPU's reference: a NaN row"
    assert torch.isnan(y.cpu()[1]).all() and torch.isnan(mean.cpu()[1]).all(), f"mean {mean.cpu()[1]}"
    assert torch.isfinite(y.cpu()[[0, 2]]).all()
    assert_close_row(row("layer_norm"), y.cpu()[[0, 2]], wy[[0, 2]], wy[[0, 2]].abs() + 1, n=1024)


@pytest.mark.parametrize("where", ["none", "x", "dy"])
def test_layer_norm_rows_sharing_a_workgroup(where):
    """Layer norm's rows take about 16 elements a lane (lower_norm.cpp norm_lanes): rows of 40 have
    4 lanes, 32 rows a workgroup, so 37 rows fill one workgroup and 5 slots of the next, whose other
    slots repeat the last row. An infinity in one row's x or dy sends that row's backward through
    torch CPU's form, whose extra totals the workgroup's other rows join (they share its barriers
    where the row's lanes are not one subgroup's); they keep their own form. Every row against torch
    CPU, forward and backward (dx, dw, db), non-finite values exactly."""
    g = torch.Generator().manual_seed(11)
    x = torch.randn(37, 40, generator=g) * 3 + 1
    dy = torch.randn(37, 40, generator=g)
    w, b = torch.randn(40, generator=g), torch.randn(40, generator=g)
    if where != "none":
        (x if where == "x" else dy)[33, 5] = math.inf
    fwd = lambda x: A.native_layer_norm(x, [40], w.to(x.device), b.to(x.device), 1e-5)  # noqa: E731
    got = [t.cpu() for t in fwd(x.to(DEV))]
    ref = fwd(x)
    e = nb.eps_of(torch.float32)
    grp = nb.Groups(x.reshape(37, 40, 1), False)
    sc = nb.forward(grp, w, b, 1e-5, e)
    for i, what in enumerate(("y", "mean", "rstd")):
        _close("layer_norm", got[i], ref[i], (sc[i][0].reshape(got[i].shape), 1), what)
    mean, rstd = ref[1], ref[2]
    bop = lambda dy, x: A.native_layer_norm_backward(dy, x, [40], mean.to(x.device), rstd.to(x.device),  # noqa: E731
                                                     w.to(x.device), b.to(x.device), [True, True, True])
    bgot = [t.cpu() for t in bop(dy.to(DEV), x.to(DEV))]
    bref = bop(dy, x)
    rows = [r for r in range(37) if r != 33 or where == "none"]  # finite rows: their bounds
    bs = nb.backward(nb.Groups(x[rows].reshape(len(rows), 40, 1), False), dy[rows].reshape(len(rows), 40, 1), w,
                     mean[rows], rstd[rows], e)
    _close("layer_norm_backward", bgot[0][rows], bref[0][rows], (bs[0][0].reshape(len(rows), 40), 1), "dx")
    if where != "none":
        assert_close_row(row("layer_norm_backward"), bgot[0][33], bref[0][33], math.inf, what="dx of the row with the infinity")
        assert not torch.isfinite(bref[0][33]).all(), "torch CPU's reference: a non-finite row"
    else:
        for i, what in ((1, "dw"), (2, "db")):
            _close("layer_norm_backward", bgot[i], bref[i], (bs[i][0].reshape(bgot[i].shape), 1), what)


@pytest.mark.parametrize("where", ["none", "x", "dy"])
def test_batch_norm_channels_sharing_a_workgroup(where):
    """Batch norm's channels take about 16 elements a lane too (lower_norm.cpp norm_lanes): a batch
    of 20 gives 2 lanes, 64 channels a workgroup, so 70 channels fill one workgroup and 6 slots of
    the next. An infinity in channel 5's x (non-finite statistics) or dy (non-finite sums: the
    backward's second pass in torch CPU's order, which the workgroup's other channels join and
    whose totals they compute again unchanged) leaves the other channels equal to torch CPU's;
    channel 5, weighted 0, gets torch's NaNs (inf * 0). Training forward (y, mean, invstd, running
    statistics) and backward (dx, dw, db), lazily and in check mode."""
    g = torch.Generator().manual_seed(12)
    x = torch.randn(20, 70, generator=g) * 2 - 1
    dy = torch.randn(20, 70, generator=g)
    w, b = torch.randn(70, generator=g), torch.randn(70, generator=g)
    w[5] = 0.0
    if where != "none":
        (x if where == "x" else dy)[7, 5] = math.inf
    rm, rv = torch.randn(70, generator=g), torch.rand(70, generator=g) + 0.5
    ref_rm, ref_rv = rm.clone(), rv.clone()
    ref = A.native_batch_norm(x, w, b, ref_rm, ref_rv, True, 0.1, 1e-5)
    bargs = (dy, x, w, None, None, ref[1], ref[2], True, 1e-5, [True, True, True])
    bref = A.native_batch_norm_backward(*bargs)
    if where == "dy":
        assert torch.isnan(bref[0][:, 5]).all(), "torch CPU's reference: dx of channel 5 is NaN"
    for check in (False, True):
        with check_mode() if check else contextlib.nullcontext():
            rmd, rvd = rm.to(DEV), rv.to(DEV)
            got = [t.cpu() for t in A.native_batch_norm(x.to(DEV), w.to(DEV), b.to(DEV), rmd, rvd, True, 0.1, 1e-5)]
            bgot = [t.cpu() for t in A.native_batch_norm_backward(*[a.to(DEV) if torch.is_tensor(a) else a for a in bargs])]
        for name, gt, rf in [*zip(("y", "mean", "invstd"), got, ref), ("running mean", rmd.cpu(), ref_rm),
                             ("running var", rvd.cpu(), ref_rv), *zip(("dx", "dw", "db"), bgot, bref)]:
            r = row("batch_norm_backward" if name in ("dx", "dw", "db") else "batch_norm")
            assert_close_row(r, gt, rf, rf.abs() + 1, n=20, what=f"{name}, infinity in {where} (check={check})")
