"""tanh and tanh_backward (elementwise rows) where the generated cases of test_ops.py do not look:
every region of shaders/common.glsl tanh_T (the polynomial below 0.625, both sides of the switch,
saturation, specials), float64 accuracy, tanh_backward where y is near 1, and nn.Tanh training.

Bounds (graph/op.h): TOL_TANH, 1e-6 relative to the true value, for float32; float64 is held to
1e-14 (its exp and division within a few ulp each, over a few steps: common.glsl's comment);
TOL_TANH_BWD, 6 ulp of the result against torch CPU's fused 1 - y*y.
"""
import torch

from helpers import DEV

F32_TINY = torch.finfo(torch.float32).tiny


def _sweep():
    g = torch.Generator().manual_seed(0)
    parts = [
        torch.linspace(-0.7, 0.7, 20001),                      # the polynomial and the switch at 0.625
        torch.tensor([0.625, -0.625]),                          # the switch itself
        torch.nextafter(torch.tensor([0.625, -0.625]), torch.tensor([0.0, 0.0])),
        torch.logspace(-37, 1.3, 4001),                         # tiny to saturated (|x| up to 20)
        -torch.logspace(-37, 1.3, 4001),
        torch.randn(20000, generator=g) * 3,
        torch.tensor([9.0, 9.02, 44.0, 44.5, 88.0, 1e30, -1e30, 3e38]),
    ]
    return torch.cat(parts).float()


def test_tanh_float32_within_its_bound_everywhere():
    x = _sweep()
    got = torch.tanh(x.to(DEV)).cpu().double()
    true = torch.tanh(x.double())
    err = (got - true).abs()
    allowed = 1e-6 * true.abs()
    # the device may flush a subnormal result (|tanh(x)| = |x| < 2^-126) to zero
    allowed = torch.where(true.abs() < F32_TINY, true.abs(), allowed)
    worst = int((err - allowed).argmax())
    assert bool((err <= allowed).all()), f"tanh({x[worst].item()!r}) = {got[worst].item()!r}, true {true[worst].item()!r}"
    # odd, exactly: the sign is restored from x
    assert torch.equal(torch.tanh((-x).to(DEV)).cpu(), -torch.tanh(x.to(DEV)).cpu())


def test_tanh_specials_and_negative_zero():
    x = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan")])
    got = torch.tanh(x.to(DEV)).cpu()
    ref = torch.tanh(x)
    assert torch.equal(got[:4], ref[:4]) and torch.isnan(got[4])
    assert torch.equal(torch.signbit(got[:2]), torch.tensor([False, True])), got  # tanh(-0) = -0


def test_tanh_float64_accuracy():
    x = _sweep().double()
    x = torch.cat([x, torch.linspace(-0.7, 0.7, 10001, dtype=torch.float64)])
    got = torch.tanh(x.to(DEV)).cpu()
    true = torch.tanh(x)  # torch CPU's float64 tanh: within an ulp
    err = (got - true).abs()
    allowed = 1e-14 * true.abs() + 1e-300
    worst = int((err - allowed).argmax())
    assert bool((err <= allowed).all()), f"tanh({x[worst].item()!r}) = {got[worst].item()!r}, CPU {true[worst].item()!r}"


def test_tanh_narrow_dtypes_round_once():
    """float16 / bfloat16 compute in float32 and round once: within one rounding of the CPU's
    float32 result rounded (both are within far less than half an ulp of the narrow type)."""
    x = _sweep()
    x = x[x.abs() < 60000]
    for dt in (torch.float16, torch.bfloat16):
        xn = x.to(dt)
        got = torch.tanh(xn.to(DEV)).cpu()
        ref = torch.tanh(xn.float()).to(dt)
        diff = (got.float() - ref.float()).abs()
        ulp = torch.finfo(dt).eps * ref.float().abs().clamp_min(torch.finfo(dt).tiny)
        assert bool((diff <= ulp).all()), dt


def test_tanh_backward_near_saturation():
    """y = tanh(x) for large x: 1 - y*y cancels; (1 - y)(1 + y) keeps it. The CPU rounds 1 - y*y
    once (an fma); an unfused 1 - y*y would be off by up to 25% here, far outside 6 ulp."""
    x = torch.cat([torch.linspace(2.0, 8.5, 3001), -torch.linspace(2.0, 8.5, 3001), torch.linspace(-2, 2, 1001)])
    y = torch.tanh(x.double()).float()
    g = torch.randn(x.shape, generator=torch.Generator().manual_seed(3)) * 1e3
    got = torch.ops.aten.tanh_backward(g.to(DEV), y.to(DEV)).cpu()
    ref = torch.ops.aten.tanh_backward(g, y)
    ulp = torch.nextafter(ref.abs(), torch.tensor(float("inf"))) - ref.abs()
    assert bool(((got - ref).abs() <= 6 * ulp).all()), float(((got - ref).abs() / ulp).max())
    # strided operands and the float64 path
    gd, yd = g.double()[::2], y.double()[::2]
    got = torch.ops.aten.tanh_backward(g.double().to(DEV)[::2], y.double().to(DEV)[::2]).cpu()
    ref = torch.ops.aten.tanh_backward(gd, yd)
    ulp = torch.nextafter(ref.abs(), torch.tensor(float("inf"), dtype=torch.float64)) - ref.abs()
    assert bool(((got - ref).abs() <= 6 * ulp).all())


def test_tanh_module_trains_like_cpu():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1), torch.nn.Tanh())
    x, t = torch.randn(32, 8) * 3, torch.rand(32, 1) * 2 - 1
    nets = {"cpu": net, DEV: __import__("copy").deepcopy(net).to(DEV)}
    losses = {}
    for dev, m in nets.items():
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        for _ in range(5):
            opt.zero_grad()
            loss = ((m(x.to(dev)) - t.to(dev)) ** 2).mean()
            loss.backward()
            opt.step()
        losses[dev] = loss.item()
    # five steps of sums in another order (the GEMMs) and tanh within 1e-6: far below 1e-4
    assert abs(losses[DEV] - losses["cpu"]) <= 1e-4 * abs(losses["cpu"]), losses
    for p, q in zip(nets["cpu"].parameters(), nets[DEV].parameters()):
        torch.testing.assert_close(q.detach().cpu(), p.detach(), rtol=1e-4, atol=1e-5)
