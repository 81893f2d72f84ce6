"""erf (an elementwise row) and GELU (a composite of rows, aten/composite.cpp), both forms, forward
and backward, where test_ops.py's generated cases do not look: every region of common.glsl's erf_T,
float64, specials, and GELU against torch CPU within bounds derived from the rows' tolerances.

Subnormals: a device may flush them (NVIDIA does), so a subnormal result, or erf of a subnormal
input, may be a zero (docs/architecture.md). Bounds. erf: TOL_ERF, float32 within 2.82 ulp of the true value (polynomials 1.52 ulp, a device's
exp 1.3 ulp); float64 within 1e-14 relative. GELU, u = 2^-24: 'none' is (x * 0.5) * (1 + erf(x/sqrt2)):
erf's 2.82 ulp (at most 2.82 u absolute), its argument's rounding (erf' t <= 0.48 of a u), the +1's
rounding (2 u) and the product's (u |r|), against torch CPU's same steps with a 1-ulp erf: in all at
most 4.4 u |x| + 2 u |r|, tested as 2^-23 (2.5 |x| + |r|). 'tanh' adds TOL_TANH (1e-6 of tanh,
times |x| / 2). The backward: dy * (cdf + x pdf) adds exp's (3 + x^2) ulp times |x| pdf(x) <= 0.8 u
and the sum's rounding: 2^-23 (4 |dy| + |r|); its 'tanh' form moves by d/dt <= 0.5 + 0.8 |x| (1 +
0.134 x^2) per error in t (1e-6 plus the CPU's 1 - t*t cancelling near |t| = 1: 2^-23 / 2).
"""
import torch
import torch.nn.functional as F

from helpers import DEV

U = 2.0 ** -24
F32_TINY = torch.finfo(torch.float32).tiny


def _xs(dtype=torch.float32):
    g = torch.Generator().manual_seed(0)
    return torch.cat([
        torch.linspace(-4.5, 4.5, 30001),                   # both erf regions, the switches at 0.875, 3.925
        torch.tensor([0.875, -0.875, 3.925, -3.925, 6.0, -6.0, 10.0, -10.0, 30.0, -30.0]),
        torch.logspace(-38, 1.2, 3001), -torch.logspace(-38, 1.2, 3001),
        torch.randn(20000, generator=g) * 4,
    ]).to(dtype)


def test_erf_float32_within_its_bound():
    x = _xs()
    x = torch.cat([x, torch.nextafter(torch.tensor([0.875, 3.925]), torch.tensor([0.0, 0.0]))])
    got = torch.erf(x.to(DEV)).cpu().double()
    true = torch.special.erf(x.double())
    ulp = torch.from_numpy(__import__("numpy").spacing(true.abs().float().numpy())).double()
    allowed = 2.82 * ulp
    # a subnormal result, or any result of a subnormal input (a zero of either sign), may flush
    allowed = torch.where((true.abs() < F32_TINY) | (x.abs() < F32_TINY), true.abs(), allowed)
    err = (got - true).abs()
    worst = int((err - allowed).argmax())
    assert bool((err <= allowed).all()), f"erf({x[worst].item()!r}) = {got[worst].item()!r}, true {true[worst].item()!r}"
    assert torch.equal(torch.erf((-x).to(DEV)).cpu(), -torch.erf(x.to(DEV)).cpu())  # odd, exactly


def test_erf_specials_and_float64():
    s = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan")])
    got = torch.erf(s.to(DEV)).cpu()
    assert torch.equal(got[:4], torch.tensor([0.0, -0.0, 1.0, -1.0])) and torch.isnan(got[4])
    assert torch.equal(torch.signbit(got[:2]), torch.tensor([False, True]))
    x = torch.cat([_xs(torch.float64), torch.linspace(-6.5, 6.5, 20001, dtype=torch.float64)])
    got = torch.erf(x.to(DEV)).cpu()
    ref = torch.erf(x)
    err = (got - ref).abs()
    allowed = 1e-14 * ref.abs() + 1e-300
    worst = int((err - allowed).argmax())
    assert bool((err <= allowed).all()), f"erf({x[worst].item()!r}) = {got[worst].item()!r}, CPU {ref[worst].item()!r}"


def _check(got, ref, allowed, what):
    err = (got.double() - ref.double()).abs()
    tiny = torch.finfo(ref.dtype).tiny
    allowed = allowed + torch.where(ref.abs() < tiny, ref.abs().double(), 0.0)  # a subnormal result may flush
    bad = ~(err <= allowed) & ~(torch.isnan(got) & torch.isnan(ref))
    assert not bool(bad.any()), f"{what}: {int(bad.sum())} outside; worst excess {float((err - allowed)[bad].max())}"


def test_gelu_forward_both_forms():
    x = _xs()
    for approx, extra in (("none", 0.0), ("tanh", 1e-6 * 0.5)):
        ref = F.gelu(x, approximate=approx)
        got = F.gelu(x.to(DEV), approximate=approx).cpu()
        allowed = 2 * U * (2.5 * x.abs().double() + ref.abs().double()) + extra * x.abs().double()
        _check(got, ref, allowed, f"gelu {approx}")
        # strided input, in place and out=
        xs = x.to(DEV)[::3]
        _check(F.gelu(xs, approximate=approx).cpu(), ref[::3], allowed[::3], f"gelu {approx} strided")
        y = x.to(DEV).clone()
        torch.ops.aten.gelu_(y, approximate=approx)
        _check(y.cpu(), ref, allowed, f"gelu_ {approx}")
    # gelu(inf) = inf * 0.5 * 2 = inf; gelu(-inf) = -inf * 0 = NaN, as torch 2.13's CPU kernel gives
    # (torch 2.11's gave NaN for +inf too: H100 machine, 2026-12-07)
    s = torch.tensor([float("inf"), float("-inf"), float("nan"), -0.0])
    for approx in ("none", "tanh"):
        got = F.gelu(s.to(DEV), approximate=approx).cpu()
        assert got[0] == float("inf") and torch.isnan(got[1]) and torch.isnan(got[2]) and got[3] == 0, (approx, got)


def test_gelu_backward_both_forms():
    x = _xs()
    dy = torch.randn(x.shape, generator=torch.Generator().manual_seed(1)) * 10
    xd, dyd = x.double().abs(), dy.double().abs()
    for approx in ("none", "tanh"):
        ref = torch.ops.aten.gelu_backward(dy, x, approximate=approx)
        got = torch.ops.aten.gelu_backward(dy.to(DEV), x.to(DEV), approximate=approx).cpu()
        allowed = 2 * U * (4 * dyd + ref.abs().double())
        if approx == "tanh":
            allowed = allowed + dyd * (1e-6 + U) * (0.5 + 0.8 * xd * (1 + 0.134 * xd * xd)) + 2 * U * 6 * dyd
        _check(got, ref, allowed, f"gelu_backward {approx}")


def test_gelu_narrow_dtypes_and_errors():
    x = _xs()
    x = x[x.abs() < 100]
    for dt in (torch.float16, torch.bfloat16):
        xn = x.to(dt)
        got = F.gelu(xn.to(DEV)).cpu()
        assert got.dtype == dt
        ref = F.gelu(xn.float()).to(dt)  # torch CPU: float32, rounded once
        eps = torch.finfo(dt).eps
        allowed = eps * ref.float().abs().double() + 2 * U * (2.5 * xn.float().abs().double()) + torch.finfo(dt).tiny
        _check(got, ref, allowed, f"gelu {dt}")
    import pytest
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        F.gelu(x.to(DEV), approximate="fast")
    with pytest.raises(RuntimeError, match="GeluKernelImpl"):
        F.gelu(torch.arange(3).to(DEV))


def test_gelu_module_trains_like_cpu():
    torch.manual_seed(0)
    for approx in ("none", "tanh"):
        net = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.GELU(approx), torch.nn.Linear(32, 4))
        x, t = torch.randn(16, 8) * 2, torch.randn(16, 4)
        nets = {"cpu": net, DEV: __import__("copy").deepcopy(net).to(DEV)}
        for dev, m in nets.items():
            opt = torch.optim.Adam(m.parameters(), lr=1e-2)
            for _ in range(5):
                opt.zero_grad()
                F.mse_loss(m(x.to(dev)), t.to(dev)).backward()
                opt.step()
        # five Adam steps over products summed in another order: far below 1e-4
        for p, q in zip(nets["cpu"].parameters(), nets[DEV].parameters()):
            torch.testing.assert_close(q.detach().cpu(), p.detach(), rtol=1e-4, atol=1e-5)
