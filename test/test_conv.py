"""Convolutions through torch's own front doors (F.conv1d/2d/3d, F.conv_transpose1d/2d/3d,
nn.Conv2d), their gradients, and a small CNN trained on vkml, against torch CPU and, in check mode,
the oracle (test_ops.py runs the two aten rows directly through test/families/conv.py).

Tolerance: the rows' backward-error bound (TOL_GEMM, see docs/convolution.md): an element may be
off by 2 * eps * (log2 n + 1) * scale, with scale the sum of the magnitudes of its terms (the same
convolution on absolute values, in float64) and n the number of terms, plus one ulp of a float16
or bfloat16 result. The CPU reference for float16 and bfloat16 is computed in float32 and rounded
once, which is the contract (torch CPU's own narrow kernels round differently).
"""
import contextlib
import copy
import math

import pytest
import torch
import torch.nn.functional as F

from families.conv import _rounded_products_conv, cpu_native
from helpers import DEV, NARROW, assert_close_row, assert_exact, check_mode, row, stats

FWD, BWD = row("convolution"), row("convolution_backward")
DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)
A = torch.ops.aten


def _rand(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(shape, generator=g, dtype=torch.float64) * 4 - 2).to(dtype)


def _wide(t):
    return t.float() if t is not None and t.dtype in NARROW else t


def _abs64(t):
    return None if t is None else t.double().abs()


# (id, functional, input shape, weight shape, bias, keyword arguments, transposed)
CASES = [
    ("conv1d", F.conv1d, (2, 3, 11), (4, 3, 3), True, dict(stride=2, padding=1, dilation=2), False),
    ("conv1d groups", F.conv1d, (1, 4, 7), (6, 2, 2), False, dict(groups=2), False),
    ("conv2d", F.conv2d, (2, 3, 7, 6), (5, 3, 3, 2), True, dict(stride=(2, 1), padding=(1, 0)), False),
    ("conv2d dilation", F.conv2d, (1, 2, 8, 8), (3, 2, 3, 3), True, dict(dilation=(2, 3), padding=2), False),
    ("conv2d depthwise", F.conv2d, (2, 4, 6, 5), (4, 1, 3, 3), True, dict(groups=4, padding=1), False),
    ("conv2d depthwise x3", F.conv2d, (1, 2, 5, 5), (6, 1, 2, 2), False, dict(groups=2, stride=2), False),
    ("conv2d padding same", F.conv2d, (1, 3, 5, 6), (2, 3, 3, 3), True, dict(padding="same"), False),
    ("conv2d padding valid", F.conv2d, (1, 3, 5, 6), (2, 3, 3, 3), True, dict(padding="valid"), False),
    ("conv3d", F.conv3d, (1, 2, 4, 5, 3), (3, 2, 2, 3, 2), True, dict(stride=(1, 2, 1), padding=1), False),
    ("conv3d groups dilation", F.conv3d, (1, 4, 5, 4, 4), (2, 2, 2, 2, 2), False,
     dict(groups=2, dilation=(2, 1, 2)), False),
    ("conv_transpose1d", F.conv_transpose1d, (2, 3, 5), (3, 2, 4), True,
     dict(stride=3, padding=1, output_padding=2), True),
    ("conv_transpose2d", F.conv_transpose2d, (2, 4, 3, 4), (4, 3, 3, 3), True,
     dict(stride=2, padding=1, output_padding=1), True),
    ("conv_transpose2d groups dilation", F.conv_transpose2d, (1, 4, 3, 3), (4, 1, 2, 3), True,
     dict(groups=2, dilation=(2, 1), stride=(1, 2), output_padding=(0, 1)), True),
    ("conv_transpose3d", F.conv_transpose3d, (1, 2, 2, 3, 2), (2, 3, 2, 2, 3), True,
     dict(stride=(2, 1, 2), padding=(0, 1, 1), output_padding=(1, 0, 0)), True),
]


def _terms(w, kw, transposed):
    """Products behind one output element (a bound: transposed ones reach fewer kernel taps)."""
    groups = kw.get("groups", 1)
    return (w[0] // groups if transposed else w[1]) * math.prod(w[2:]) + 1


def _forward(fn, x, w, b, kw, dtype):
    """fn on vkml, lazily and in check mode, and its CPU reference in the contract's precision."""
    ref = fn(_wide(x), _wide(w), _wide(b), **kw).to(dtype)
    scale = fn(_abs64(x), _abs64(w), _abs64(b), **kw)
    got = []
    for mode in (contextlib.nullcontext, check_mode):
        before = stats()
        with mode():
            y = fn(x.to(DEV), w.to(DEV), None if b is None else b.to(DEV), **kw)
            assert y.device.type == "vkml"
            got.append(y.cpu())
        if mode is check_mode and ref.numel():
            assert stats()["checked"] > before["checked"], "check mode verified no node"
    return got, ref, scale


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_forward(case, dtype):
    name, fn, xs, ws, bias, kw, tr = case
    x, w = _rand(xs, dtype, 1), _rand(ws, dtype, 2)
    b = _rand((ws[1] * kw.get("groups", 1) if tr else ws[0],), dtype, 3) if bias else None
    got, ref, scale = _forward(fn, x, w, b, kw, dtype)
    for g in got:
        assert_close_row(FWD, g, ref, scale, _terms(ws, kw, tr), what=name)


def test_non_contiguous_operands():
    """channels_last input (2-d and 3-d), a sliced input, transposed and sliced weight views."""
    x, w, b = _rand((2, 3, 6, 7), torch.float32, 1), _rand((3, 4, 3, 2), torch.float32, 2), _rand((4,), torch.float32, 3)
    wt = w.transpose(0, 1)  # [4, 3, 3, 2], not contiguous
    for desc, xv, wv in [("channels_last", lambda t: t.to(memory_format=torch.channels_last), lambda t: t),
                         ("sliced input", lambda t: t[:, :, ::2, 1:], lambda t: t),
                         ("channels_last weight", lambda t: t, lambda t: t.contiguous(memory_format=torch.channels_last)),
                         ("sliced weight", lambda t: t, lambda t: t[:, :, :2, :])]:
        xd, wd = xv(x.to(DEV)), wv(wt.to(DEV))
        assert not (xd.is_contiguous() and wd.is_contiguous())
        ref = F.conv2d(xv(x), wv(wt), b, padding=1)
        for mode in (contextlib.nullcontext, check_mode):
            with mode():
                got = F.conv2d(xd, wd, b.to(DEV), padding=1).cpu()
            assert_close_row(FWD, got, ref, F.conv2d(_abs64(xv(x)), _abs64(wv(wt)), _abs64(b), padding=1),
                             wd.shape[1] * 6 + 1, what=desc)
    x3 = _rand((1, 2, 4, 3, 5), torch.float32, 4)
    w3 = _rand((3, 2, 2, 2, 2), torch.float32, 5)
    with check_mode():
        got = F.conv3d(x3.to(DEV).to(memory_format=torch.channels_last_3d), w3.to(DEV)).cpu()
    assert_close_row(FWD, got, F.conv3d(x3, w3), F.conv3d(_abs64(x3), _abs64(w3)), 17, what="channels_last_3d")


def test_empty_batch_forward_and_backward():
    """torch sends zero-batch inputs to its own Empty path (views and elementwise ops on vkml)."""
    x = torch.zeros(0, 3, 5, 5)
    w, b = _rand((4, 3, 3, 3), torch.float32, 1), _rand((4,), torch.float32, 2)
    with check_mode():
        xd, wd, bd = (t.to(DEV).requires_grad_() for t in (x, w, b))
        y = F.conv2d(xd, wd, bd)
        assert y.shape == (0, 4, 3, 3) and y.device.type == "vkml"
        y.sum().backward()
        assert xd.grad.shape == x.shape
        assert_exact(wd.grad.cpu(), torch.zeros_like(w), what="weight grad")
        assert_exact(bd.grad.cpu(), torch.zeros_like(b), what="bias grad")
    y = torch.ops.aten.convolution_overrideable(x.to(DEV), w.to(DEV), b.to(DEV), [1, 1], [0, 0], [1, 1], False,
                                                [0, 0], 1)
    assert y.shape == (0, 4, 3, 3)


def _grads(fn, x, w, b, kw, g):
    """Gradients of fn on the CPU (float64: the reference) and on vkml (float32, check mode)."""
    leaves = [t.detach().double().requires_grad_() if t is not None else None for t in (x, w, b)]
    fn(*leaves, **kw).backward(g.double())
    ref = [t.grad if t is not None else None for t in leaves]
    with check_mode():
        dev = [t.detach().to(DEV).requires_grad_() if t is not None else None for t in (x, w, b)]
        y = fn(*dev, **kw)
        y.backward(g.to(DEV))
        got = [t.grad.cpu() if t is not None else None for t in dev]
    return got, ref


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_gradients(case):
    """d input, d weight and d bias of every case against float64 CPU autograd."""
    name, fn, xs, ws, bias, kw, tr = case
    x, w = _rand(xs, torch.float32, 1), _rand(ws, torch.float32, 2)
    b = _rand((ws[1] * kw.get("groups", 1) if tr else ws[0],), torch.float32, 3) if bias else None
    y = fn(x, w, b, **kw)
    g = _rand(tuple(y.shape), torch.float32, 4)
    got, ref = _grads(fn, x, w, b, kw, g)
    # scales: the same gradients of the same convolution with every operand's magnitude
    sx, sw, sb = [t.detach().double().abs().requires_grad_() if t is not None else None for t in (x, w, b)]
    fn(sx, sw, sb, **kw).backward(g.double().abs())
    small = xs if tr else tuple(y.shape)  # the weight gradient sums over this side's batch and space
    terms = [_terms(ws, kw, not tr), small[0] * math.prod(small[2:]), y.shape[0] * math.prod(y.shape[2:])]
    for what, gv, rv, sc, n in zip(("d input", "d weight", "d bias"), got, ref, (sx.grad, sw.grad, None if sb is None else sb.grad),
                                   terms):
        if rv is None:
            continue
        assert_close_row(BWD, gv, rv.float(), sc, n, what=f"{name} {what}")


@pytest.mark.parametrize("mask", [(True, False, False), (False, True, False), (False, False, True),
                                  (True, True, False), (False, False, False)])
def test_output_mask(mask):
    """convolution_backward_overrideable computes exactly the gradients asked for."""
    x, w, gy = _rand((2, 3, 5, 5), torch.float32, 1), _rand((4, 3, 3, 3), torch.float32, 2), _rand((2, 4, 3, 3), torch.float32, 3)
    ref = A.convolution_backward(gy, x, w, [4], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, list(mask))
    before = stats()
    with check_mode():
        got = A.convolution_backward_overrideable(gy.to(DEV), x.to(DEV), w.to(DEV), [1, 1], [0, 0], [1, 1], False,
                                                  [0, 0], 1, list(mask))
        got = [None if t is None else t.cpu() for t in got]
    assert stats()["nodes"] - before["nodes"] >= sum(mask)
    scales = A.convolution_backward(gy.abs().double(), x.abs().double(), w.abs().double(), [4], [1, 1], [0, 0],
                                    [1, 1], False, [0, 0], 1, [True, True, True])
    for m, g, r, sc, n in zip(mask, got, ref, scales, (36, 18, 18)):
        if not m:
            assert g is None
        else:
            assert_close_row(BWD, g, r, sc, n)


def test_nn_modules():
    """nn.Conv1d/2d/3d and nn.ConvTranspose2d moved to vkml compute what they compute on the CPU."""
    torch.manual_seed(0)
    mods = [(torch.nn.Conv1d(3, 4, 3, padding=1), (2, 3, 8)),
            (torch.nn.Conv2d(3, 6, 3, stride=2, groups=3, bias=False), (1, 3, 7, 7)),
            (torch.nn.Conv3d(2, 2, (1, 2, 2)), (1, 2, 3, 4, 4)),
            (torch.nn.ConvTranspose2d(4, 2, 2, stride=2), (1, 4, 3, 3))]
    for m, xs in mods:
        x = _rand(xs, torch.float32, 7)
        ref = m(x)
        md = copy.deepcopy(m).to(DEV)
        with check_mode():
            got = md(x.to(DEV)).cpu()
        w, b = m.weight, m.bias
        if isinstance(m, torch.nn.ConvTranspose2d):
            sc = F.conv_transpose2d(x.abs().double(), w.abs().double(), b.abs().double(), stride=2)
            n = w.shape[0] * 4 + 1
        else:
            sc = m._conv_forward(x.abs().double(), w.abs().double(), None if b is None else b.abs().double())
            n = w[0].numel() + 1
        assert_close_row(FWD, got, ref.detach(), sc.detach(), n, what=type(m).__name__)


def _cnn():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.ReLU(),
                               torch.nn.Conv2d(4, 4, 3, stride=2), torch.nn.Flatten(), torch.nn.Linear(36, 3))


def _train(model, x, t, steps, dev, check):
    model = model.to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(steps):
        with (check_mode() if check else contextlib.nullcontext()):
            opt.zero_grad()
            loss = F.cross_entropy(model(x.to(dev)), t.to(dev))
            loss.backward()
            opt.step()
            losses.append(float(loss.detach().cpu()))
    return {k: v.detach().cpu() for k, v in model.state_dict().items()}, losses


@pytest.mark.parametrize("check", [False, True], ids=["lazy", "check"])
def test_cnn_sgd_steps(check):
    """A Conv2d-ReLU-Conv2d-Linear network, four SGD steps: vkml float32 must be as accurate as
    torch CPU float32, both measured against the same training in float64 (the ratio test of
    test_training.py: at most 4x the CPU's error plus 16 eps of the parameter's size)."""
    x = torch.randn(6, 1, 8, 8, generator=torch.Generator().manual_seed(1))
    t = torch.randint(0, 3, (6,), generator=torch.Generator().manual_seed(2))
    base = _cnn()
    p64, l64 = _train(copy.deepcopy(base).double(), x.double(), t, 4, "cpu", False)
    pc, lc = _train(copy.deepcopy(base), x, t, 4, "cpu", False)
    pv, lv = _train(copy.deepcopy(base), x, t, 4, DEV, check)
    eps = torch.finfo(torch.float32).eps
    for k in p64:
        assert pv[k].dtype == torch.float32
        ref = p64[k]
        err_v = (pv[k].double() - ref).abs().max().item()
        err_c = (pc[k].double() - ref).abs().max().item()
        allowed = 4 * err_c + 16 * eps * ref.abs().max().item()
        assert err_v <= allowed, f"{k}: vkml error {err_v:.3e} vs CPU float32 error {err_c:.3e} (allowed {allowed:.3e})"
    for i, (a, b, c) in enumerate(zip(lv, lc, l64)):
        assert abs(a - c) <= 4 * abs(b - c) + 16 * eps * abs(c), f"step {i} loss {a} vs cpu {b} vs f64 {c}"
    assert lv[-1] < lv[0], f"loss did not decrease: {lv}"


# Cases with padding: a kernel tap may land in it
PAD_CASES = [c for c in CASES if c[5].get("padding") not in (None, 0, "valid")]


def _native(fn, *args, **kw):
    """fn by torch CPU's own kernels (im2col and GEMM): oneDNN, which torch picks for some float32
    and bfloat16 shapes, skips padding taps instead, and NNPACK spreads an infinity everywhere."""
    return cpu_native(fn)(*args, **kw)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", PAD_CASES, ids=[c[0] for c in PAD_CASES])
def test_padding_taps_multiply_zero(case, dtype):
    """A kernel tap in the padding multiplies a zero like any other input (docs/convolution.md,
    "Padding"): an infinite weight gives NaN (inf * 0) in the forward's border outputs, an
    infinite gradient in the weight gradient, and for a transposed convolution the same in its
    input and weight gradients, exactly where torch CPU's im2col gives NaN. One infinity at a time
    (a weight, an input, a gradient element), forward and every gradient, lazily and in check mode,
    against float64 CPU autograd."""
    name, fn, xs, ws, bias, kw, tr = case
    x, w = _rand(xs, dtype, 1), _rand(ws, dtype, 2)
    b = _rand((ws[1] * kw.get("groups", 1) if tr else ws[0],), dtype, 3) if bias else None
    g = _rand(tuple(fn(x.double(), w.double(), None, **kw).shape), dtype, 4)
    small = xs if tr else tuple(g.shape)
    terms = [_terms(ws, kw, tr), _terms(ws, kw, not tr), small[0] * math.prod(small[2:])]
    nans = 0
    for which in ("weight", "input", "grad"):
        xi, wi, gi = x.clone(), w.clone(), g.clone()
        {"weight": wi, "input": xi, "grad": gi}[which].view(-1)[0] = math.inf  # a corner tap / element
        leaves = [t.double().clone().requires_grad_() for t in (xi, wi)]
        y = _native(fn, *leaves, None if b is None else b.double(), **kw)
        _native(y.backward, gi.double())
        ref = [y.detach(), leaves[0].grad, leaves[1].grad]
        sx, sw = [t.double().abs().clone().requires_grad_() for t in (xi, wi)]
        ys = _native(fn, sx, sw, _abs64(b), **kw)
        _native(ys.backward, gi.double().abs())
        scales = [ys.detach(), sx.grad, sw.grad]
        nans += sum(int(r.isnan().sum()) for r in ref)
        for mode in (contextlib.nullcontext, check_mode):
            with mode():
                dev = [t.to(DEV).detach().requires_grad_() for t in (xi, wi)]
                yd = fn(*dev, None if b is None else b.to(DEV), **kw)
                yd.backward(gi.to(DEV))
                got = [yd.detach().cpu(), dev[0].grad.cpu(), dev[1].grad.cpu()]
            for what, gv, rv, sc, n in zip(("output", "d input", "d weight"), got, ref, scales, terms):
                assert_close_row(FWD if what == "output" else BWD, gv, rv.to(dtype), sc, n,
                                 what=f"{name}, inf {which}, {mode.__name__}: {what}")
    assert nans, "no padding tap met an infinity: the case proves nothing"


def test_deterministic():
    """Same inputs, same bytes: the weight and bias gradients sum 2 * 12 * 12 terms per element
    (a workgroup's fixed tree), the input gradient 36 (one invocation's fixed order)."""
    x, w = _rand((2, 3, 14, 14), torch.float32, 1).to(DEV), _rand((4, 3, 3, 3), torch.float32, 2).to(DEV)
    gy = _rand((2, 4, 12, 12), torch.float32, 3).to(DEV)

    def run():
        r = A.convolution_backward_overrideable(gy, x, w, [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True, True, True])
        return [t.cpu() for t in r] + [F.conv2d(x, w).cpu()]
    first = run()
    for _ in range(2):
        for a, b in zip(first, run()):
            assert_exact(a, b, what="second run")


def test_overflowing_products_are_rounded_not_fused():
    """A float32 product past float32's range is an infinity before it is added (the shaders are
    `precise`): -1e30 * 4.5e15 then meets +inf and gives NaN, on every driver (NVIDIA's fma gave
    +inf). The test's reference for such inputs rounds each product too (families/conv.py), and
    agrees with torch CPU's own kernels where no product overflows (the row's bound, below)."""
    x = torch.tensor([[[1.0, 2.0, -1e30, 1.0, 3.0]]])
    w = torch.tensor([[[math.inf, 1.0, 4.5e15]]])
    for mode in (contextlib.nullcontext, check_mode):
        with mode():
            got = F.conv1d(x.to(DEV), w.to(DEV)).cpu()
        assert_exact(got, _rounded_products_conv(x, w, None, [1], [0], [1], 1), what=f"{mode.__name__}")
        assert got[0, 0, 0].isnan() and got[0, 0, 1] == math.inf, got  # inf + 2 + -inf; 2 * inf - 1e30 + 4.5e15
    g = torch.Generator().manual_seed(5)
    for xs, ws, st, pad, dil, groups in (((2, 4, 7, 6), (6, 2, 3, 2), [2, 1], [1, 2], [1, 2], 2),
                                         ((1, 3, 9), (2, 3, 4), [3], [2], [1], 1),
                                         ((1, 2, 4, 3, 5), (2, 2, 2, 2, 3), [1, 1, 2], [0, 1, 1], [2, 1, 1], 1)):
        x, w, b = torch.randn(xs, generator=g), torch.randn(ws, generator=g), torch.randn(ws[0], generator=g)
        ref = cpu_native(A.convolution.default)(x, w, b, st, pad, dil, False, [0] * len(st), groups)
        scale = A.convolution.default(x.double().abs(), w.double().abs(), b.double().abs(), st, pad, dil, False,
                                      [0] * len(st), groups)
        assert_close_row(FWD, _rounded_products_conv(x, w, b, st, pad, dil, groups), ref, scale,
                         _terms(ws, {"groups": groups}, False), what=f"reference {xs} {ws}")


def test_many_workgroups():
    """Results past 65,535 workgroups in one grid dimension (the Vulkan 1.3 floor, VKML_MIN_SPEC=1):
    a weight gradient of 76,800 elements of 256 terms each (a workgroup per element: 2 groups, so
    the direct kernel, not the tiled one), and a forward and input gradient of 2^23 + 4,096
    elements (128 per workgroup). Each takes lavapipe seconds, so each runs once."""
    x, w, gy = _rand((1, 512, 16, 16), torch.float32, 1), _rand((300, 256, 1, 1), torch.float32, 2), _rand((1, 300, 16, 16), torch.float32, 3)
    with check_mode():
        gw = A.convolution_backward_overrideable(gy.to(DEV), x.to(DEV), w.to(DEV), [1, 1], [0, 0], [1, 1], False,
                                                 [0, 0], 2, [False, True, False])[1].cpu()
    ref = A.convolution_backward(gy, x, w, [300], [1, 1], [0, 0], [1, 1], False, [0, 0], 2, [False, True, False])[1]
    sc = A.convolution_backward(gy.abs().double(), x.abs().double(), w.abs().double(), [300], [1, 1], [0, 0],
                                [1, 1], False, [0, 0], 2, [False, True, False])[1]
    assert_close_row(BWD, gw, ref, sc, 256)
    n = (1 << 23) + 4096
    x = _rand((1, 1, n), torch.float32, 5)
    w = torch.tensor([[[1.5]]])
    xd, wd = x.to(DEV), w.to(DEV)
    with check_mode():
        y = F.conv1d(xd, wd).cpu()
    gi = A.convolution_backward_overrideable(xd, xd, wd, [1], [0], [1], False, [0], 1, [True, False, False])[0].cpu()
    assert_exact(y, x * 1.5, what="1x1 convolution by 1.5")  # one exact product per element
    assert_exact(gi, x * 1.5, what="its input gradient")


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8], ids=str)
def test_integers(dtype):
    """Integer convolutions, as torch CPU has them (int64 in every form, narrower types neither
    dilated nor transposed): exact, wrapping to the result's width."""
    g = torch.Generator().manual_seed(1)
    lo = 0 if dtype == torch.uint8 else -100
    x, w = torch.randint(lo, 100, (2, 3, 6, 5), generator=g).to(dtype), torch.randint(lo, 100, (4, 3, 3, 2), generator=g).to(dtype)
    b = torch.randint(lo, 100, (4,), generator=g).to(dtype)
    calls = [lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=1)]
    if dtype == torch.int64:
        calls += [lambda x, w, b: F.conv2d(x, w, b, dilation=2, padding=2),
                  lambda x, w, b: F.conv_transpose2d(x, w.transpose(0, 1), b, stride=2)]
    for f in calls:
        ref = f(x, w, b)
        with check_mode():
            got = f(x.to(DEV), w.to(DEV), b.to(DEV)).cpu()
        assert_exact(got, ref)


def test_double_backward():
    """Gradients of gradients (torch's _convolution_double_backward: convolutions of ours), float32
    on vkml as accurate as float32 on the CPU against float64 (the ratio test of test_cnn_sgd_steps)."""
    x, w = _rand((2, 3, 6, 6), torch.float64, 1), _rand((4, 3, 3, 3), torch.float64, 2)

    def run(dtype, dev):
        xd, wd = x.to(dtype).to(dev).requires_grad_(), w.to(dtype).to(dev).requires_grad_()
        y = F.conv2d(xd, wd, padding=1, stride=2)
        gx, gw = torch.autograd.grad((y * y).sum(), (xd, wd), create_graph=True)
        return [t.cpu().double() for t in torch.autograd.grad((gx * gx).sum() + (gw * gw).sum(), (xd, wd))]
    r64, rc = run(torch.float64, "cpu"), run(torch.float32, "cpu")
    with check_mode():
        rv = run(torch.float32, DEV)
    eps = torch.finfo(torch.float32).eps
    for name, v, c, r in zip(("x", "w"), rv, rc, r64):
        err_v, err_c = (v - r).abs().max().item(), (c - r).abs().max().item()
        assert err_v <= 4 * err_c + 16 * eps * r.abs().max().item(), f"d2/d{name}: {err_v:.3e} vs CPU {err_c:.3e}"


def test_float64():
    """float64 computes in float64 (lavapipe and NVIDIA have shaderFloat64): its eps bounds the error."""
    x, w = _rand((1, 2, 6, 6), torch.float64, 1), _rand((3, 2, 3, 3), torch.float64, 2)
    with check_mode():
        got = F.conv2d(x.to(DEV), w.to(DEV)).cpu()
    assert got.dtype == torch.float64
    assert_close_row(FWD, got, F.conv2d(x, w), F.conv2d(x.abs(), w.abs()), 18)
    assert (got - F.conv2d(x, w)).abs().max() < 1e-12  # far below float32's precision


def _raises_like_cpu(fn, *args, same_message=True, **kw):
    with pytest.raises(Exception) as cpu:
        fn(*args, **kw)
    dev_args = [a.to(DEV) if torch.is_tensor(a) else a for a in args]
    with pytest.raises(Exception) as dev:
        fn(*dev_args, **kw)
        torch.vkml.synchronize()
    assert type(dev.value) is type(cpu.value), f"CPU {cpu.value!r}, vkml {dev.value!r}"
    if same_message:
        assert str(dev.value).splitlines()[0] == str(cpu.value).splitlines()[0]
    return dev.value


def test_errors_match_torch():
    x, w = torch.randn(1, 4, 5, 5), torch.randn(6, 4, 3, 3)
    _raises_like_cpu(F.conv2d, x, torch.randn(6, 2, 3, 3), groups=3)           # channels vs groups
    _raises_like_cpu(F.conv2d, x, w, torch.randn(5))                           # bias size
    _raises_like_cpu(F.conv2d, x, torch.randn(6, 4, 7, 7))                     # kernel larger than input
    _raises_like_cpu(F.conv2d, x, w, stride=0)                                 # non-positive stride
    _raises_like_cpu(F.conv2d, x, w, padding=-1)                               # negative padding
    _raises_like_cpu(F.conv_transpose2d, x, torch.randn(4, 2, 3, 3), stride=2, output_padding=2)
    _raises_like_cpu(F.conv_transpose2d, x.double(), torch.randn(4, 2, 3, 3).double(), padding=5)  # output too small
    _raises_like_cpu(F.conv_transpose3d, x.unsqueeze(2), torch.randn(4, 2, 1, 3, 3), stride=2, output_padding=2)
    _raises_like_cpu(A.convolution, x.double(), torch.randn(6, 4, 0, 3).double(), None, [1, 1], [0, 0], [1, 1],
                     False, [0, 0], 1)                                         # empty kernel
    _raises_like_cpu(A.convolution, x, w, None, [1, 1, 1], [0, 0], [1, 1], False, [0, 0], 1)  # stride length
    _raises_like_cpu(A.convolution, x.view(1, 2, 2, 5, 5, 1), torch.randn(6, 2, 1, 1, 1, 1), None, [1] * 4, [0] * 4,
                     [1] * 4, False, [0] * 4, 1)                               # 4-d convolution
    # dtype and device mismatches: the same exception type (the message names torch's tensor types)
    e = _raises_like_cpu(F.conv2d, x, w.double(), same_message=False)
    assert "should be the same" in str(e)
    # weight left on the CPU: torch's same-device error, as for every op (issue 7)
    with pytest.raises(RuntimeError, match="^Expected all tensors to be on the same device, but got weight is on cpu"):
        F.conv2d(x.to(DEV), w)
    _raises_like_cpu(F.conv2d, x.bool(), w.bool(), same_message=False)        # no bool convolution
    with pytest.raises(NotImplementedError):  # torch CPU has no backward for integers either
        A.convolution_backward_overrideable(torch.ones(1, 1, 3, 3, dtype=torch.int64, device=DEV),
                                            torch.ones(1, 1, 5, 5, dtype=torch.int64, device=DEV),
                                            torch.ones(1, 1, 3, 3, dtype=torch.int64, device=DEV),
                                            [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True, True, True])
