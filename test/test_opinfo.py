"""torch's own OpInfo sample inputs (torch.testing._internal.common_methods_invocations.op_db) for
the ops in the table, run on vkml under check mode and compared with torch CPU.

Two references per sample, as everywhere in this suite:
- the CPU oracle, through check mode: every node is compared within its row's stated tolerance;
- torch CPU: bitwise for rows whose tolerance is exact, else torch.testing.assert_close with the
  default tolerances by dtype, the ones torch's own suite uses to compare a device with the CPU
  (float32 rtol 1.3e-6 atol 1e-5, float16 1e-3/1e-5, bfloat16 1.6e-2/1e-5, float64 1e-7/1e-7).

Samples the CPU rejects are invalid inputs and are not run. A sample that needs an aten op with no
vkml kernel must be one of KNOWN_GAPS (each names what is missing); any other NotImplementedError
fails, so a kernel that goes missing cannot hide here. Each test asserts that samples ran.
"""
import collections

import pytest
import torch

from helpers import DEV, check_mode, rows

op_db = pytest.importorskip("torch.testing._internal.common_methods_invocations").op_db

# OpInfo name -> the op_table() row whose tolerance decides the comparison.
OPS = {
    "add": "add", "sub": "sub", "mul": "mul", "div": "div", "neg": "neg", "abs": "abs", "exp": "exp",
    "log": "log", "sqrt": "sqrt", "sigmoid": "sigmoid", "ceil": "ceil", "floor": "floor",
    "maximum": "maximum", "minimum": "minimum", "eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt",
    "ge": "ge", "bitwise_and": "bitwise_and", "nn.functional.relu": "relu", "sum": "sum", "mean": "mean",
    "amax": "amax", "amin": "amin", "argmax": "argmax", "argmin": "argmin", "max": "amax", "min": "amin",
    "mm": "mm", "addmm": "addmm", "bmm": "bmm", "matmul": "mm", "addmv": "addmv", "dot": "dot", "mv": "addmv",
    "log_softmax": "log_softmax", "softmax": "softmax", "nn.functional.nll_loss": "nll_loss",
    "nn.functional.cross_entropy": "nll_loss", "masked_select": "copy", "cat": "copy", "clone": "copy",
}

# aten ops some samples need that have no vkml kernel yet, and why they are not here yet.
KNOWN_GAPS = {
    "aten::div.out_mode": "div with rounding_mode (trunc/floor): no row yet",
    "aten::div.Tensor_mode": "div with rounding_mode (trunc/floor): no row yet",
    "aten::nll_loss2d_forward": "nll_loss over images (N, C, H, W): no row yet",
    "aten::nll_loss2d_forward.output": "nll_loss over images (N, C, H, W): no row yet",
    "mm": "integer matrix products: gemm rows are float-only",
    "addmm": "integer matrix products: gemm rows are float-only",
    "bmm": "integer matrix products: gemm rows are float-only",
    "addmv": "integer matrix products: gemm rows are float-only",
    "dot": "integer matrix products: gemm rows are float-only",
}

DEFAULT_TOL = {torch.float32: (1.3e-6, 1e-5), torch.float16: (1e-3, 1e-5), torch.bfloat16: (1.6e-2, 1e-5),
               torch.float64: (1e-7, 1e-7)}

CASES = [(op, dt) for op in op_db if op.name in OPS and not op.variant_test_name
         for dt in (torch.float32, torch.float16, torch.int64) if dt in op.supported_dtypes("cpu")]


def _exact(row_name):
    return next(r for r in rows() if r["name"] == row_name)["tol_kind"] == "exact"


def _to_cpu(x):
    return torch.utils._pytree.tree_map(lambda t: t.cpu() if isinstance(t, torch.Tensor) else t, x)


def _ulp(r):
    e = torch.frexp(r.double().abs().clamp_min(torch.finfo(r.dtype).tiny))[1] - 1
    return torch.ldexp(torch.ones_like(r, dtype=torch.float64), e - (torch.finfo(r.dtype).nmant if hasattr(torch.finfo(r.dtype), "nmant") else {torch.float16: 10, torch.bfloat16: 7, torch.float32: 23, torch.float64: 52}[r.dtype]))


def _compare(got, ref, exact, what, fused_term=None):
    for g, r in zip(torch.utils._pytree.tree_leaves(got), torch.utils._pytree.tree_leaves(ref)):
        if not isinstance(r, torch.Tensor):
            assert g == r or (g != g and r != r), f"{what}: {g!r} != {r!r}"
            continue
        assert g.shape == r.shape and g.dtype == r.dtype, f"{what}: {g.dtype}{tuple(g.shape)} vs {r.dtype}{tuple(r.shape)}"
        if fused_term is not None and r.is_floating_point():
            # fused or not, a + alpha*b differs by at most the product's rounding (float32 eps
            # times |alpha*b|) plus the final rounding to the output dtype (1 ulp)
            d = (g.double() - r.double()).abs()
            allowed = _ulp(torch.maximum(g.abs(), r.abs())) + 2.0 ** -23 * fused_term.double().abs()
            ok = (d <= allowed) | (g.isnan() & r.isnan()) | (g.double() == r.double())
            assert bool(ok.all()), f"{what}: beyond the fused/unfused bound: worst {d[~ok].max().item()}"
        elif exact or not r.is_floating_point():
            torch.testing.assert_close(g, r, rtol=0, atol=0, equal_nan=True, msg=lambda m: f"{what}: {m}")
        else:
            rtol, atol = DEFAULT_TOL[r.dtype]
            torch.testing.assert_close(g, r, rtol=rtol, atol=atol, equal_nan=True, msg=lambda m: f"{what}: {m}")


@pytest.mark.parametrize("op,dtype", CASES, ids=[f"{op.name}-{str(dt).split('.')[-1]}" for op, dt in CASES])
def test_opinfo_samples(op, dtype):
    exact = _exact(OPS[op.name])
    ran, gaps = 0, collections.Counter()
    for i, s in enumerate(op.sample_inputs("cpu", dtype, requires_grad=False)):
        try:
            ref = op(s.input, *s.args, **s.kwargs)
        except Exception:
            continue  # an input the CPU rejects
        sv = s.transform(lambda t: t.to(DEV) if isinstance(t, torch.Tensor) else t)
        try:
            with check_mode():
                got = _to_cpu(op(sv.input, *sv.args, **sv.kwargs))
        except NotImplementedError as e:
            missing = [k for k in KNOWN_GAPS if f"vkml: {k} is not" in str(e) or f"no Vulkan kernel for {k} " in str(e)
                       or f"vkml: {k} is not implemented for dtype" in str(e)]
            assert missing, f"sample {i}: unexpected missing kernel: {e}"
            gaps[missing[0]] += 1
            continue
        # torch CPU's vectorized loop fuses a + alpha*b into one fma, its scalar loop does not: with
        # an alpha, CPU's own rounding varies, so those samples get the default tolerance here
        # (check mode above still holds the kernel to the row's exact contract against the oracle).
        fused = op.name in ("add", "sub") and s.kwargs.get("alpha", 1) != 1
        if (not exact or fused) and dtype == torch.float16:
            # torch CPU keeps some float16 intermediates in float16 (log_softmax; add/sub with an
            # alpha in its scalar loop); vkml's contract is float32 compute rounded once, so the
            # reference is the float32 CPU result rounded.
            s32 = s.transform(lambda t: t.float() if isinstance(t, torch.Tensor) and t.dtype == dtype else t)
            ref = torch.utils._pytree.tree_map(lambda t: t.to(dtype) if isinstance(t, torch.Tensor) and t.dtype == torch.float32 else t,
                                               op(s32.input, *s32.args, **s32.kwargs))
        term = None
        if exact and fused:
            b = s.args[0]
            term = s.kwargs["alpha"] * (b.double() if isinstance(b, torch.Tensor) else torch.tensor(float(b)))
            term = term.expand_as(ref) if term.dim() <= ref.dim() else term
        _compare(got, ref, exact and not fused, f"{op.name} {dtype} sample {i}", fused_term=term)
        ran += 1
    assert ran > 0 or gaps, f"{op.name} {dtype}: no sample ran"
    if gaps:  # visible in -rA / the log: what was not run, and why
        print(f"{op.name} {dtype}: {ran} samples ran; not run: " +
              ", ".join(f"{n}x {k} ({KNOWN_GAPS[k]})" for k, n in gaps.items()))
