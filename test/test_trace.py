"""VKML_TRACE / vkml_torch.trace(): every aten op reaching vkml is counted with the path it took,
and torch._decomp ops registered for vkml (vkml_torch/_decomp.py) agree with torch CPU."""
import math
import os
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F
import vkml_torch

from helpers import DEV


def test_trace_counts_paths():
    x = torch.randn(4, 5).to(DEV)
    with vkml_torch.trace() as t:
        y = (x + 1).relu()                         # native rows
        z = torch.pow(y, 3)                        # a composite: (y * y) * y
        w = F.hardtanh(z)                          # a torch._decomp decomposition
        l = torch.lerp(y, x, 0.25)                 # a native row
        torch.vkml.synchronize()
    assert t["aten::add.Tensor"] == {"native": 1}
    assert t["aten::mul.Tensor"] == {"native": 2}  # pow's two products
    assert t["aten::relu"] == {"native": 1}
    assert t["aten::pow.Tensor_Scalar"] == {"composite": 1}
    assert t["aten::lerp.Scalar"] == {"native": 1}
    assert t["aten::hardtanh"] == {"decomposition": 1}
    assert "aten::clamp" in t  # what the decomposition recorded
    torch.testing.assert_close(w.cpu(), F.hardtanh(torch.pow((x.cpu() + 1).relu(), 3)))
    torch.testing.assert_close(l.cpu(), torch.lerp((x.cpu() + 1).relu(), x.cpu(), 0.25))


def test_trace_counts_missing_ops():
    x = torch.randn(3).to(DEV)
    with vkml_torch.trace() as t:
        with pytest.raises(NotImplementedError):
            torch.special.erfcx(x)
    assert [p for op, p in t.items() if op.startswith("aten::special_erfcx")] == [{"missing": 1}], t


def test_trace_derived_overloads():
    x = torch.randn(3).to(DEV)
    out = torch.empty(0, device=DEV)
    with vkml_torch.trace() as t:
        torch.pow(x, 2, out=out)
        x.pow_(2)
    assert t["aten::pow.Tensor_Scalar_out"] == {"composite": 1}
    assert t["aten::pow_.Scalar"] == {"composite": 1}
    # the body both derived overloads ran
    assert t["aten::pow.Tensor_Scalar"] == {"composite": 2}


def test_env_trace_prints_once_and_counts_at_exit():
    code = ("import torch, vkml_torch\n"
            "x = torch.ones(3, device='vkml')\n"
            "for _ in range(3): x = x + 1\n"
            "print(x.sum().item())\n")
    env = dict(os.environ, VKML_TRACE="1")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("vkml trace: aten::add.Tensor -> native") == 1, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip().endswith("aten::add.Tensor")]
    assert lines and lines[-1].split()[0] == "3", r.stderr


ULP = 2.0 ** -23  # float32's relative rounding unit
# (name, fn, rtol, why): each decomposition is made of rows; its bound follows from theirs.
EXACT = (0.0, "comparisons, clamps, one multiply or subtract: correctly rounded, as torch CPU")
DIV = (3 * ULP, "one division (TOL_DIV: 3 ulp) after exact steps")
MEAN = (2 * ULP * (math.log2(42) + 1) + ULP, "mean of 42 non-negative terms (TOL_SUM: 2 eps (log2 n + 1)) + the terms' ulp")
DECOMP_CASES = [
    ("hardtanh", lambda x: F.hardtanh(x, -0.5, 0.75), *EXACT),
    ("relu6", F.relu6, *EXACT),
    ("hardsigmoid", F.hardsigmoid, *DIV),
    ("hardswish", F.hardswish, 4 * ULP, "x * (relu6(x + 3) / 6): the division's 3 ulp + the product's rounding"),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.1), *EXACT),
    ("threshold", lambda x: F.threshold(x, 0.2, -3.0), *EXACT),
    ("rsub", lambda x: torch.rsub(x, 2.0), *EXACT),
    ("rsub_tensor", lambda x: torch.rsub(x, x * 3, alpha=2), 2 * ULP, "x*3 and alpha*x each rounded, then a subtraction"),
    ("sgn", torch.sgn, *EXACT),
    ("lerp_tensor", lambda x: torch.lerp(x, x * 2 + 1, torch.full_like(x, 0.3)), 4 * ULP,
     "three products/sums each rounded once: bounded by 4 ulp of the result away from cancellation"),
    ("huber", lambda x: F.huber_loss(x, x * 0.5 - 1, delta=0.7), *MEAN),
    ("smooth_l1", lambda x: F.smooth_l1_loss(x, x * 0.5 - 1, beta=0.5), *MEAN),
]


@pytest.mark.parametrize("name,fn,rtol,why", DECOMP_CASES, ids=[c[0] for c in DECOMP_CASES])
def test_decomposition_matches_cpu(name, fn, rtol, why):
    torch.manual_seed(0)
    x = torch.randn(6, 7) * 3
    x[0, 0], x[1, 1] = float("nan"), 0.0
    if name in ("huber", "smooth_l1"):
        x[0, 0] = 0.5  # a NaN would make the whole mean NaN: tested by the elementwise cases
    ref = fn(x)
    got = fn(x.to(DEV)).cpu()
    torch.testing.assert_close(got, ref, rtol=rtol, atol=0, equal_nan=True, msg=lambda m: f"{why}: {m}")


@pytest.mark.parametrize("fn,rtol", [(F.hardtanh, 0), (F.relu6, 0), (lambda x: F.leaky_relu(x, 0.1), 0),
                                     (F.hardsigmoid, 3 * ULP), (F.hardswish, 4 * ULP)],
                         ids=["hardtanh", "relu6", "leaky_relu", "hardsigmoid", "hardswish"])
def test_decomposed_backward_matches_cpu(fn, rtol):
    """Backward decompositions: selections and one multiply (exact), hardsigmoid's grad / 6 (one
    division: 3 ulp) and hardswish's grad * (x / 3 + 0.5) (a division and two roundings: 4 ulp)."""
    torch.manual_seed(1)
    x = torch.randn(5, 4) * 4
    xc = x.clone().requires_grad_()
    xv = x.to(DEV).requires_grad_()
    fn(xc).sum().backward()
    fn(xv).sum().backward()
    torch.testing.assert_close(xv.grad.cpu(), xc.grad, rtol=rtol, atol=0)


def test_silu_backward_decomposition():
    """silu'(x) = s (1 + x (1 - s)), s = sigmoid(x) within TOL_SIGMOID (relative 1.2e-5). An error
    e in s moves the result by at most e |s| |1 + x - 2 x s|, plus 4 ulp for the steps' roundings."""
    torch.manual_seed(2)
    x = torch.randn(64) * 4
    xc = x.clone().requires_grad_()
    xv = x.to(DEV).requires_grad_()
    F.silu(xc).sum().backward()
    F.silu(xv).sum().backward()
    s = torch.sigmoid(x.double())
    allowed = 1.2e-5 * s * (1 + x.double() - 2 * x.double() * s).abs() + 4 * ULP * xc.grad.double().abs()
    d = (xv.grad.cpu().double() - xc.grad.double()).abs()
    assert bool((d <= allowed).all()), f"worst excess {(d - allowed).max().item()}"
