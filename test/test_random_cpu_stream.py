"""The CPU stream mode (vkml_torch.set_rng_mode("cpu"), VKML_RNG=cpu; docs/random.md), and arange:
random ops are drawn on the host by torch's CPU kernels and copied to the device
(csrc/aten/random.cpp), so after the same seed vkml must give exactly torch CPU's numbers (bitwise),
for every layout and dtype tried here; torch.manual_seed seeds both. A result that only looked
random would fail these comparisons. The device stream: test_random.py."""
import pytest
import torch
import torch.nn.functional as F
import vkml_torch

from helpers import DEV, assert_exact, rng_mode


@pytest.fixture(autouse=True)
def cpu_stream():
    with rng_mode("cpu"):
        yield

DRAWS = {
    "normal_": (lambda t: t.normal_(0.5, 2.0), (torch.float32, torch.float64, torch.float16, torch.bfloat16)),
    "uniform_": (lambda t: t.uniform_(-3, 5), (torch.float32, torch.float64, torch.float16, torch.bfloat16)),
    "bernoulli_.float": (lambda t: t.bernoulli_(0.3), (torch.float32, torch.float64, torch.int64, torch.bool)),
    "bernoulli_.Tensor": (lambda t: t.bernoulli_(torch.linspace(0, 1, t.shape[-1]).to(t.device)),
                          (torch.float32, torch.uint8)),
    "random_": (lambda t: t.random_(), (torch.int64, torch.int32, torch.uint8, torch.float32)),
    "random_.to": (lambda t: t.random_(7), (torch.int64, torch.int16, torch.float64)),
    "random_.from": (lambda t: t.random_(-5, 9), (torch.int64, torch.int8, torch.float32)),
    "exponential_": (lambda t: t.exponential_(1.5), (torch.float32, torch.float64)),
}
VIEWS = {
    "contiguous (8,6)": lambda t: t,
    "transposed": lambda t: t.t(),
    "stepped slice": lambda t: t[:, ::2],
    "stepped and transposed": lambda t: t[:, ::2].t(),
    "rows 1:3": lambda t: t[1:3],
    "empty": lambda t: t[:0],
}


def _same_draw(fill, dtype, view, seed=2):
    torch.manual_seed(seed)
    ref = torch.zeros(8, 6, dtype=dtype)
    fill(view(ref))
    after_ref = torch.rand(3)  # the generator advanced by the same amount
    torch.manual_seed(seed)
    got = torch.zeros(8, 6, dtype=dtype, device=DEV)
    fill(view(got))
    after_got = torch.rand(3, device=DEV).cpu()
    assert_exact(got.cpu(), ref, what="whole base (outside the view untouched)")
    assert_exact(after_got, after_ref, what="next draws")


@pytest.mark.parametrize("name", DRAWS)
def test_draws_match_cpu(name):
    fill, dtypes = DRAWS[name]
    for dt in dtypes:
        for vname, view in VIEWS.items():
            try:
                _same_draw(fill, dt, view)
            except AssertionError as e:
                raise AssertionError(f"{name} {dt} {vname}: {e}") from None


def test_factories_and_explicit_generator():
    torch.manual_seed(11)
    ref = [torch.randn(3, 4), torch.rand(5, dtype=torch.float64), torch.randint(-3, 3, (7,))]
    torch.manual_seed(11)
    got = [torch.randn(3, 4, device=DEV), torch.rand(5, dtype=torch.float64, device=DEV),
           torch.randint(-3, 3, (7,), device=DEV)]
    for g, r in zip(got, ref):
        assert g.device.type == torch.device(DEV).type
        assert_exact(g.cpu(), r)
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    assert_exact(torch.randn(6, device=DEV, generator=g1).cpu(), torch.randn(6, generator=g2))
    torch.manual_seed(4)
    ref = torch.randperm(50)
    torch.manual_seed(4)
    assert_exact(torch.randperm(50, device=DEV).cpu(), ref)


def test_cpu_generator_draws_on_the_host_in_either_mode():
    """A CPU generator passed to a vkml op always draws torch CPU's numbers."""
    vkml_torch.set_rng_mode("device")
    g1, g2 = torch.Generator().manual_seed(8), torch.Generator().manual_seed(8)
    assert_exact(torch.rand(9, device=DEV, generator=g1).cpu(), torch.rand(9, generator=g2))


def test_rng_state_round_trip_and_seeds():
    torch.vkml.manual_seed(123)
    assert torch.vkml.initial_seed() == 123
    state = torch.vkml.get_rng_state()
    assert state.dtype == torch.uint8 and state.device.type == "cpu"
    assert_exact(state, torch.Generator().manual_seed(123).get_state())
    a = torch.rand(10, device=DEV).cpu()
    torch.vkml.set_rng_state(state)
    assert_exact(torch.rand(10, device=DEV).cpu(), a)
    torch.manual_seed(-5)  # torch's CPU generator wraps negative seeds to 2**64 - 5
    assert torch.vkml.initial_seed() == torch.initial_seed() == 2**64 - 5
    with pytest.raises(RuntimeError, match="CPUGeneratorImplState of size"):
        torch.vkml.set_rng_state(torch.zeros(3, dtype=torch.uint8))
    torch.vkml.seed()
    s = torch.vkml.initial_seed()
    torch.vkml.manual_seed(s)
    assert torch.vkml.initial_seed() == s


@pytest.mark.parametrize("p", [0.0, 0.3, 0.5, 1.0])
def test_dropout_matches_cpu(p):
    """Same seed, same mask as torch CPU's F.dropout. The values: torch CPU multiplies by the noise
    divided by (1 - p) in the input's dtype, vkml by mask * (1 / (1 - p)); the two scalings round
    differently by at most 1 ulp of the result."""
    x = torch.randn(16, 33)
    torch.manual_seed(7)
    ref = F.dropout(x, p, training=True)
    torch.manual_seed(7)
    xv = x.to(DEV).requires_grad_()
    got = F.dropout(xv, p, training=True)
    gc = got.detach().cpu()
    assert_exact(gc != 0, ref != 0, what="mask")
    tol = (ref.abs() * torch.finfo(torch.float32).eps).clamp_min(0)
    assert bool(((gc - ref).abs() <= tol).all()), f"dropout p={p}: beyond 1 ulp of torch CPU"
    got.backward(torch.ones_like(got))
    scale = 0.0 if p == 1 else 1 / (1 - p)
    assert_exact(xv.grad.cpu(), (ref != 0).float() * torch.tensor(scale, dtype=torch.float32) if p < 1
                 else torch.zeros_like(x))
    assert_exact(F.dropout(x.to(DEV), p, training=False).cpu(), x)


def test_dropout_edges():
    e = torch.empty(0, 3, device=DEV)
    assert F.dropout(e, 0.5).shape == (0, 3)
    with pytest.raises(ValueError, match="dropout probability"):
        F.dropout(torch.ones(2, device=DEV), 1.5)
    out, mask = torch.native_dropout(torch.ones(4, device=DEV), 0.5, False)
    assert mask.dtype == torch.bool and bool(mask.cpu().all()) and out.device.type == torch.device(DEV).type


@pytest.mark.parametrize("args,kw", [
    ((10,), {}), ((2, 11, 3), {}), ((5, -4, -2), {}), ((3, 3), {}), ((0, 1, 0.25), {}),
    ((-1.5, 2.0, 0.3), {"dtype": torch.float64}), ((0, 1, 0.1), {"dtype": torch.float16}),
    ((1, 100, 7), {"dtype": torch.int16}),
])
def test_arange_matches_cpu(args, kw):
    ref = torch.arange(*args, **kw)
    got = torch.arange(*args, device=DEV, **kw)
    assert got.device.type == torch.device(DEV).type
    assert_exact(got.cpu(), ref)
    out = torch.empty(1, dtype=ref.dtype, device=DEV)
    torch.arange(*args, out=out)
    assert_exact(out.cpu(), ref)


def test_arange_errors_as_cpu():
    for args in ((0, 5, 0), (5, 0, 1)):
        with pytest.raises(RuntimeError) as cpu_e:
            torch.arange(*args)
        with pytest.raises(RuntimeError) as dev_e:
            torch.arange(*args, device=DEV)
        assert str(dev_e.value) == str(cpu_e.value)
