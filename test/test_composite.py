"""lerp, addcmul, addcdiv (elementwise rows that update self, csrc/aten/elementwise.cpp ew_addc,
checked by the oracle in check mode) against torch CPU's own kernels within a stated bound; and
the composites of csrc/aten/composite.cpp (any/all, pow).

Bound: vkml rounds after each of its k operations (k = 3) in the compute type (float for
float16/bfloat16, then once to the output dtype), where torch rounds in its opmath type and may
fuse a multiply-add, and vkml's division may be 2.5 ulp off (Vulkan). Each rounding errs by at
most eps/2 of the magnitude it rounds, and every intermediate is bounded by
M = |self| + |v * t1 * t2| (|end| + |self| for lerp), so |vkml - cpu| <= k * eps(dtype) * M.
"""
import math

import pytest
import torch
import torch.nn.functional as F

from helpers import DEV, assert_close_row, assert_exact, check_mode
from helpers import row as table_row

K = 3
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def _inputs(dtype, shape=(4, 5)):
    g = torch.Generator().manual_seed(0)
    s, a, b = (torch.randn(shape, generator=g).to(dtype) for _ in range(3))
    b = b.abs() + 0.5  # a divisor away from 0
    return s, a, b


def _assert_within(got, ref, mag, dtype, what):
    eps = torch.finfo(dtype).eps
    d = (got.double() - ref.double()).abs()
    allowed = K * eps * mag.double()
    assert bool((d <= allowed).all()), f"{what}: worst {d.max().item():.3e}, allowed {allowed.max().item():.3e}"


CASES = {
    "addcmul": (lambda s, a, b: torch.addcmul(s, a, b, value=0.7), lambda s, a, b: s.abs() + 0.7 * (a * b).abs()),
    "addcdiv": (lambda s, a, b: torch.addcdiv(s, a, b, value=-1.3), lambda s, a, b: s.abs() + 1.3 * (a / b).abs()),
    "lerp small weight": (lambda s, a, b: torch.lerp(s, a, 0.1), lambda s, a, b: s.abs() + a.abs()),
    "lerp large weight": (lambda s, a, b: torch.lerp(s, a, 0.9), lambda s, a, b: s.abs() + a.abs()),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=[str(d).split(".")[-1] for d in DTYPES])
@pytest.mark.parametrize("name", list(CASES))
def test_against_cpu_and_oracle(name, dtype):
    f, mag = CASES[name]
    s, a, b = _inputs(dtype)
    ref = f(s, a, b)
    m = mag(s.double(), a.double(), b.double())
    with check_mode():
        got = f(s.to(DEV), a.to(DEV), b.to(DEV)).cpu()
    assert got.dtype == ref.dtype and got.shape == ref.shape
    _assert_within(got, ref, m, dtype, name)
    # broadcast second operand, non-contiguous self
    sb = s.t().contiguous().t()
    got_b = f(sb.to(DEV), a[:1].to(DEV), b.to(DEV)).cpu()
    _assert_within(got_b, f(sb, a[:1], b), mag(sb.double(), a[:1].double(), b.double()), dtype, name + " broadcast")


def test_inplace_and_out_variants():
    s, a, b = _inputs(torch.float32)
    for fn, args in [("addcmul", (a, b)), ("addcdiv", (a, b)), ("lerp", (a, 0.3))]:
        want = getattr(torch, fn)(s, *args)
        sv = s.to(DEV)
        r = getattr(sv, fn + "_")(*[x.to(DEV) if isinstance(x, torch.Tensor) else x for x in args])
        assert r is sv
        _assert_within(sv.cpu(), want, s.abs() + 10, torch.float32, fn + "_")
        out = torch.empty(0, device=DEV)
        getattr(torch, fn)(s.to(DEV), *[x.to(DEV) if isinstance(x, torch.Tensor) else x for x in args], out=out)
        assert_exact(out.cpu(), sv.cpu(), what=fn + " out= equals in-place")


def test_integer_addcdiv_raises_like_cpu():
    i = torch.ones(3, dtype=torch.int64)
    with pytest.raises(RuntimeError, match="Integer division with addcdiv"):
        torch.addcdiv(i, i, i)
    with pytest.raises(RuntimeError, match="Integer division with addcdiv"):
        torch.addcdiv(i.to(DEV), i.to(DEV), i.to(DEV))


ANY_ALL_DTYPES = [torch.float32, torch.float16, torch.float64, torch.int64, torch.int32, torch.uint8, torch.bool]


@pytest.mark.parametrize("name", ["any", "all"])
@pytest.mark.parametrize("dtype", ANY_ALL_DTYPES)
def test_any_all_match_cpu(name, dtype):
    """any/all = amax/amin of x != 0 (csrc/aten/composite.cpp): exact against torch CPU, with the
    dtype torch gives (uint8 for uint8, else bool), over dims, keepdim, strided and empty inputs."""
    f = getattr(torch, name)
    g = torch.Generator().manual_seed(1)
    x = torch.randint(0, 2, (4, 6), generator=g).to(dtype)
    x[0] = 1  # a row of all-true
    x[1] = 0  # and one of all-false
    if dtype.is_floating_point:
        x[2, 0] = float("nan")  # NaN counts as true, as on the CPU
    inputs = {"(4,6)": x, "transposed": x.t(), "stepped": x[:, ::2], "0-dim": x[0, 0], "empty (0,6)": x[:0],
              "empty (6,0)": x.t()[:, :0]}
    for desc, t in inputs.items():
        args = [((), {}), ((1,), {}), ((0,), {"keepdim": True}), (((0, 1),), {})] if t.dim() == 2 else [((), {})]
        for a, kw in args:
            what = f"{name}{a} {kw} of {desc} {dtype}"
            ref = f(t, *a, **kw)
            with check_mode():
                got = f(t.to(DEV), *a, **kw)
            assert got.device.type == torch.device(DEV).type, what
            assert_exact(got.cpu(), ref, what=what)
    out = torch.empty(0, dtype=torch.uint8 if dtype == torch.uint8 else torch.bool, device=DEV)
    f(x.to(DEV), 1, out=out)
    assert_exact(out.cpu(), f(x, 1), what=f"{name} out=")


POW_ROW = {0.5: "sqrt", -0.5: "rsqrt", -1: "reciprocal", -2: "reciprocal"}  # whose tolerance applies


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32])
def test_pow_scalar_matches_cpu(dtype):
    """pow(x, e) for the exponents torch's CPU kernel special-cases: bitwise for 0, 1, 2, 3 (the same
    products; float16 computed in float32 and rounded once, bfloat16 rounded at each step, as torch
    2.13 does); within the used row's ulp bound for 0.5, -0.5, -1, -2, and for any float result
    from an integer input. Special values included; other exponents raise."""
    g = torch.Generator().manual_seed(3)
    if dtype.is_floating_point:
        x = torch.cat([torch.randn(40, generator=g) * 3, torch.tensor([0.0, -0.0, float("nan"), float("inf"),
                                                                      -float("inf"), 1e-30, 1e30])]).to(dtype)
    else:
        x = torch.randint(-50, 50, (40,), generator=g).to(dtype)
    views = {"contiguous": x, "stepped": x[::3], "empty": x[:0]}
    exps = [0, 1, 2, 3] + ([0.5, -0.5, -1, -2] if dtype.is_floating_point else [0.5])
    for vname, v in views.items():
        for e in exps:
            base = v.abs() if e in (0.5, -0.5) else v
            ref = base.pow(e)
            got = base.to(DEV).pow(e).cpu()
            what = f"pow({vname} {dtype}, {e})"
            if e in POW_ROW and ref.dtype.is_floating_point:
                assert_close_row(table_row(POW_ROW[e]), got, ref, what=what)
            else:
                assert_exact(got, ref, what=what)
    y = x.clone().to(DEV)
    y.pow_(2)
    assert_exact(y.cpu(), x.pow(2), what="pow_")
    if not dtype.is_floating_point:
        with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
            x.to(DEV).pow(-1)
    with pytest.raises(NotImplementedError, match="pow with exponent"):
        x.to(DEV).pow(2.7)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss_matches_cpu(reduction):
    """mse_loss = reduce((a - b)^2): 'none' bitwise; 'mean'/'sum' within the sum row's contract,
    2 * eps * (log2 n + 1) * sum((a - b)^2); the backward, (a - b) * norm * grad, bitwise."""
    g = torch.Generator().manual_seed(4)
    a, b = torch.randn(7, 9, generator=g), torch.randn(9, generator=g)  # b broadcasts
    ac, av = a.clone().requires_grad_(), a.to(DEV).requires_grad_()
    ref, got = F.mse_loss(ac, b.expand(7, 9), reduction=reduction), F.mse_loss(av, b.to(DEV).expand(7, 9), reduction=reduction)
    if reduction == "none":
        assert_exact(got.detach().cpu(), ref.detach())
    else:
        n = a.numel()
        bound = 2 * torch.finfo(torch.float32).eps * (math.log2(n) + 1) * float(((a - b) ** 2).sum())
        assert abs(got.item() - ref.item()) <= bound, f"{reduction}: {got.item()} vs {ref.item()}"
    ref.sum().backward()
    got.sum().backward()
    assert_exact(av.grad.cpu(), ac.grad, what="mse_loss backward")


@pytest.mark.parametrize("name", ["isposinf", "isneginf"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64, torch.bool])
def test_isposinf_isneginf_match_cpu(name, dtype):
    """isposinf(x) = x == inf, isneginf(x) = x == -inf (csrc/aten/composite.cpp): exact against
    torch CPU (bool; false for integer and bool inputs), over strided, 0-dim and empty inputs and out=."""
    f = getattr(torch, name)
    g = torch.Generator().manual_seed(2)
    x = (torch.randn(4, 6, generator=g) * 1e4).to(dtype)
    if dtype.is_floating_point:
        x[0, :4] = torch.tensor([float("inf"), -float("inf"), float("nan"), -0.0])
        x[2, 1] = torch.finfo(dtype).max
        x[3, 3] = -torch.finfo(dtype).max
    for desc, t in {"(4,6)": x, "transposed": x.t(), "stepped": x[:, ::2], "0-dim": x[0, 1], "empty": x[:0]}.items():
        with check_mode():
            got = f(t.to(DEV))
        assert_exact(got.cpu(), f(t), what=f"{name} {desc} {dtype}")
    out = torch.empty(0, dtype=torch.bool, device=DEV)
    f(x.to(DEV), out=out)
    assert_exact(out.cpu(), f(x), what=f"{name} out=")
    with pytest.raises(RuntimeError) as cpu_err:
        f(x, out=torch.empty(0))
    with pytest.raises(RuntimeError) as dev_err:
        f(x.to(DEV), out=torch.empty(0, device=DEV))
    assert str(dev_err.value) == str(cpu_err.value)


def test_flushing_device_reference_flushes_the_intermediates():
    """On a device that flushes subnormals (NVIDIA, float32), addcmul's value * t1 * t2 is flushed
    before it is added when it is subnormal: the H100 gave self where the reference is
    self + (-8.8e-39). The flushed reference (op_cases FLUSHED_REFS, what test_ops uses there, as
    check mode's oracle run with cpu::flush_intermediates) is that result; the unflushed one is not,
    and a wrong result matches neither. Emulated here, so that it runs on every device."""
    import op_cases
    from helpers import tiny_of
    row = table_row("addcmul")
    s = torch.tensor([-1.76e-38, 1.0], dtype=torch.float32)
    t1 = torch.tensor([2.0 ** -70, 3.0])
    t2 = torch.tensor([-2.0 ** -57.3, 0.5])  # product -8.8e-39 (subnormal), then 1.5
    ref = op_cases.unfused_ref("addcmul")(s, t1, t2, value=1.5)
    flushed = op_cases.FLUSHED_REFS["addcmul"]("addcmul")(s, t1, t2, value=1.5)
    assert ref[0] != s[0] and flushed[0] == s[0] and flushed[1] == ref[1]
    device = s + op_cases._ftz(op_cases._ftz(t1 * 1.5) * t2)  # every intermediate flushed
    assert_close_row(row, device, ref, alt=(flushed, tiny_of(torch.float32)))
    with pytest.raises(AssertionError):
        assert_close_row(row, device, ref)  # without the flushed reference it is wrong
    wrong = device.clone()
    wrong[0] = s[0] + 2 * (ref[0] - s[0])
    with pytest.raises(AssertionError):
        assert_close_row(row, wrong, ref, alt=(flushed, tiny_of(torch.float32)))


def test_flushing_device_bfloat16_result_at_the_smallest_normal():
    """The H100's bfloat16 case: self = 2^-126 (the smallest normal, which bfloat16 shares with
    float32), t2 a bfloat16 subnormal that the device reads as zero, so the device gives self; the
    unflushed reference is 1.6163e-38. The flushed reference is 2^-126 too, and must be accepted,
    though bfloat16's comparison also reads that value as a possibly flushed one (the H200's
    sigmoid_backward gave -0.0 where torch CPU gave -1.1755e-38). A wrong value matches neither."""
    import op_cases
    from helpers import tiny_of
    row = table_row("addcmul")
    s = torch.tensor([2.0 ** -126, 1.0], dtype=torch.bfloat16)
    t1 = torch.tensor([1.0, 3.0], dtype=torch.bfloat16)
    t2 = torch.tensor([2.0 ** -128, 0.5], dtype=torch.bfloat16)  # subnormal: read as zero
    ref = op_cases.unfused_ref("addcmul")(s, t1, t2, value=1.5)
    t2_read = torch.tensor([0.0, 0.5], dtype=torch.bfloat16)
    flushed = op_cases.FLUSHED_REFS["addcmul"]("addcmul")(s, t1, t2_read, value=1.5)
    device = (s.float() + op_cases._ftz(op_cases._ftz(t1.float() * 1.5) * t2_read.float())).bfloat16()
    assert ref[0] != s[0] and flushed[0] == s[0] and device[0] == s[0] and device[1] == ref[1]
    tiny = tiny_of(torch.bfloat16)
    assert_close_row(row, device, ref, alt=(flushed, tiny))
    with pytest.raises(AssertionError):
        assert_close_row(row, device, ref)
    for bad in (2.0 ** -125, 0.5):  # (-2^-126 reads as a flushed zero too: the bfloat16 rule)
        wrong = device.clone()
        wrong[0] = bad
        with pytest.raises(AssertionError):
            assert_close_row(row, wrong, ref, alt=(flushed, tiny))
