"""Shared test helpers: the device under test, the row tolerance check, check-mode runs.

Import this module (not conftest) from tests. VKML_TEST_DEVICE overrides the device string; it
exists only to self-test the suite against the CPU ("cpu") while the extension is being built.
"""
import contextlib
import math
import os

import torch
import vkml_torch

DEV = os.environ.get("VKML_TEST_DEVICE", "vkml")

FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)
INT_DTYPES = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES + (torch.bool,)
NARROW = (torch.float16, torch.bfloat16)


def dtype_of(name):
    dt = getattr(torch, name, None)
    assert isinstance(dt, torch.dtype), f"op_table() names an unknown dtype {name!r}"
    return dt


def rows():
    return vkml_torch._C.op_table()


def row(name):
    for r in rows():
        if r["name"] == name:
            return r
    raise KeyError(f"no op_table() row named {name!r}")


def resolve(overload):
    """"add.Tensor" -> torch.ops.aten.add.Tensor; "neg" -> torch.ops.aten.neg.default."""
    name, _, ov = overload.partition(".")
    return getattr(getattr(torch.ops.aten, name), ov or "default")


def stats():
    return dict(vkml_torch.stats())


def delta(before, after):
    return {k: after[k] - before[k] for k in ("nodes", "dispatches", "submits", "flushes", "checked")}


@contextlib.contextmanager
def check_mode():
    """Run the block with the CPU oracle verifying every node; flushes before restoring."""
    prev = vkml_torch.check_enabled()
    vkml_torch.set_check(True)
    try:
        yield
        torch.vkml.synchronize()
    finally:
        vkml_torch.set_check(prev)


def _ulp(ref64, dtype):
    """Spacing of `dtype` at |ref| (upper neighbour), in float64; denormal spacing below normal."""
    fi = torch.finfo(dtype)
    mag = ref64.abs().clamp_min(fi.smallest_normal)
    _, e = torch.frexp(mag)  # mag = m * 2**e with m in [0.5, 1)
    return torch.ldexp(torch.full_like(ref64, fi.eps), (e - 1).to(torch.int64))


def _bits(t):
    if t.dtype == torch.bool:
        return t.view(torch.uint8)  # a stored 2 is a bug even though it reads as True
    if t.dtype.is_floating_point:
        return t.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])
    return t


def _worst(mask, score, got, ref, allowed=None):
    flat = torch.where(mask.reshape(-1), score.reshape(-1), torch.full_like(score.reshape(-1), -1.0))
    i = int(flat.argmax())
    idx = tuple(int(v) for v in torch.unravel_index(torch.tensor(i), ref.shape)) if ref.dim() else ()
    g, r = got.reshape(-1)[i].item(), ref.reshape(-1)[i].item()
    extra = "" if allowed is None else f", allowed |d| <= {allowed.reshape(-1)[i].item():.3e}"
    return f"{int(mask.sum())} of {ref.numel()} elements differ; worst at {idx}: got {g!r}, expected {r!r}{extra}"


def assert_close_row(row, got, ref, scale=None, n=1, what="result"):
    """Assert `got` (any device) matches the CPU reference `ref` within `row`'s tolerance.

    Why this shape: the op table's tolerance is the contract the oracle enforces, so tests use the
    same kinds, and the bound comes from the row, never from the test.
      exact:          bitwise (NaN matches any NaN). Integer and bool outputs are always exact,
                      whatever the row says: integer arithmetic has no rounding (it wraps).
      ulp:            |d| <= bound * ulp_out(ref); ulp below the normal range is the denormal spacing.
      relative:       |d| <= bound * |ref| + ulp_out(ref) if the output is float16/bfloat16 (the f32
                      result within bound, then rounded to the narrow type, may land one ulp away).
      backward-error: |d| <= bound * eps_c * (log2(n) + 1) * scale, eps_c the compute type's eps
                      (float64 for float64 outputs, else float32), n the number of terms combined per
                      output (reduction length, k of a GEMM), scale computed by the test from the
                      inputs (sum |x| for sum, |a| @ |b| for mm, ...), a tensor broadcastable to ref
                      or a number; + ulp_out(ref) for narrow outputs, for the same final rounding.
    Non-finite values must agree exactly: NaN where ref is NaN, the same infinity where ref is one.
    """
    assert got.dtype == ref.dtype, f"{what}: dtype {got.dtype}, expected {ref.dtype}"
    assert tuple(got.shape) == tuple(ref.shape), f"{what}: shape {tuple(got.shape)}, expected {tuple(ref.shape)}"
    got = got.detach().cpu()
    ref = ref.detach()
    if ref.numel() == 0:
        return
    kind, bound = row["tol_kind"], float(row["tol_bound"])
    if kind == "exact" or not ref.dtype.is_floating_point:
        g, r = _bits(got), _bits(ref)
        bad = g != r
        if ref.dtype.is_floating_point:
            bad &= ~(got.isnan() & ref.isnan())
        if bad.any():
            raise AssertionError(f"{row['name']} {what} not bitwise equal (exact): "
                                 + _worst(bad, bad.double(), got, ref))
        return
    g, r = got.double(), ref.double()
    nan_bad = g.isnan() != r.isnan()
    if nan_bad.any():
        raise AssertionError(f"{row['name']} {what}: NaN mismatch: " + _worst(nan_bad, nan_bad.double(), got, ref))
    inf_bad = (r.isinf() | g.isinf()) & (g != r)
    if inf_bad.any():
        raise AssertionError(f"{row['name']} {what}: infinity mismatch: " + _worst(inf_bad, inf_bad.double(), got, ref))
    narrow_ulp = _ulp(r, ref.dtype) if ref.dtype in NARROW else torch.zeros_like(r)
    if kind == "ulp":
        allowed = bound * _ulp(r, ref.dtype)
    elif kind == "relative":
        allowed = bound * r.abs() + narrow_ulp
    elif kind == "backward-error":
        assert scale is not None, f"{row['name']}: backward-error tolerance needs a scale from the test"
        eps = torch.finfo(torch.float64 if ref.dtype == torch.float64 else torch.float32).eps
        s = scale.double().cpu() if torch.is_tensor(scale) else torch.tensor(float(scale), dtype=torch.float64)
        allowed = bound * eps * (math.log2(max(n, 1)) + 1) * s.expand_as(r) + narrow_ulp
    else:
        raise AssertionError(f"{row['name']}: unknown tolerance kind {kind!r}")
    finite = r.isfinite() & g.isfinite()
    d = torch.where(finite, (g - r).abs(), torch.zeros_like(r))
    bad = finite & (d > allowed)
    if bad.any():
        raise AssertionError(f"{row['name']} {what} outside {kind} bound {bound}: "
                             + _worst(bad, d / allowed.clamp_min(1e-300), got, ref, allowed))


def assert_exact(got, ref, what="result"):
    assert_close_row({"name": "-", "tol_kind": "exact", "tol_bound": 0}, got, ref, what=what)
