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


@contextlib.contextmanager
def rng_mode(mode):
    """Random ops inside draw in `mode` ("device": Philox on the GPU, "cpu": torch CPU's stream)."""
    prev = vkml_torch.get_rng_mode()
    vkml_torch.set_rng_mode(mode)
    try:
        yield
    finally:
        vkml_torch.set_rng_mode(prev)


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


def _judge(row, got, ref, scale, n, tiny=0.0, moved=None, compute=None):
    """(bad mask, score, allowed or None, what failed) of `got` against one reference.

    tiny > 0: values below it in magnitude (the compute type's subnormals) may have been flushed,
    so on both sides they read as zero, of either sign (see flush_refs); so does a zero where
    `moved` (the element depends on a subnormal input: flushing changed the reference), since the
    sign of a zero is then as open as in max(-0, +0)."""
    kind, bound = row["tol_kind"], float(row["tol_bound"])
    # The precision of the computation: the output's dtype, or a narrower compute dtype (a float32
    # op written to a float64 out= computes in float32, in torch and in vkml alike).
    prec = compute if compute is not None and torch.finfo(compute).eps > torch.finfo(ref.dtype).eps else ref.dtype
    if tiny:
        sub = lambda t: (t != 0) & (t.abs() < tiny)  # noqa: E731
        # bfloat16 shares float32's exponent range: a float32 result just below the smallest
        # normal (flushed to zero on the device) rounds up to it in bfloat16 (H200: sigmoid_backward
        # gave -0.0 where torch CPU gave -1.1755e-38), so that value counts as flushable too, on
        # both sides (H100: addcmul gave 1.1755e-38, self, where the flushed reference is that
        # value too: a normal result equal to the smallest normal must still match it).
        if ref.dtype == torch.bfloat16:
            sub = lambda t: (t != 0) & (t.abs() <= tiny)  # noqa: E731
        flushed = sub(got) | sub(ref) | moved
        got = torch.where(sub(got), torch.zeros_like(got), got)
        ref = torch.where(sub(ref), torch.zeros_like(ref), ref)
    if kind == "exact" or not ref.dtype.is_floating_point:
        bad = _bits(got) != _bits(ref)
        if ref.dtype.is_floating_point:
            bad &= ~(got.isnan() & ref.isnan())
            if tiny:
                bad &= ~(flushed & (got == ref))  # a flushed subnormal is a zero of either sign
        return bad, bad.double(), None, "not bitwise equal (exact)"
    g, r = got.double(), ref.double()
    nan_bad = g.isnan() != r.isnan()

    def allowed_at(x):
        narrow_ulp = _ulp(x, ref.dtype) if ref.dtype in NARROW else torch.zeros_like(x)
        if kind == "ulp":
            a = bound * _ulp(x, prec)
        elif kind == "relative":
            a = bound * x.abs() + narrow_ulp
        elif kind == "backward-error":
            assert scale is not None, f"{row['name']}: backward-error tolerance needs a scale from the test"
            eps = torch.finfo(torch.float64 if prec == torch.float64 else torch.float32).eps
            s = scale.double().cpu() if torch.is_tensor(scale) else torch.tensor(float(scale), dtype=torch.float64)
            s = torch.where(s.expand_as(x).isfinite(), s.expand_as(x), x.abs())
            a = bound * eps * (math.log2(max(n, 1)) + 1) * s + narrow_ulp
        else:
            raise AssertionError(f"{row['name']}: unknown tolerance kind {kind!r}")
        # As check mode (dispatch/compare.cpp): Vulkan's precision holds for normal results only;
        # a subnormal result, or any of the n - 1 partial sums of a reduction, may be flushed.
        small = tiny_of(prec)
        sub = (g.abs() < small) | (r.abs() < small)
        # (sub * small: torch.where of two Python floats is float32, where float64's is 0)
        return a + (max(n, 1) - 1) * small + sub.double() * small
    # At the top of the range a result within its tolerance of a finite value may round to
    # infinity on one side only (as check mode accepts).
    one_inf = (r.isinf() ^ g.isinf()) & ~nan_bad & ~r.isnan() & ~g.isnan()
    fin_side = torch.where(r.isinf(), g, r)
    top = {torch.float16: 65520.0, torch.bfloat16: float.fromhex("0x1.ffp127"), torch.float32: float.fromhex("0x1.ffffffp127")}.get(
        ref.dtype, torch.finfo(torch.float64).max)
    rounds_up = one_inf & (g.sign() == r.sign()) & (fin_side.abs() + allowed_at(fin_side.nan_to_num()) >= top)
    inf_bad = (r.isinf() | g.isinf()) & (g != r) & ~nan_bad & ~r.isnan() & ~rounds_up
    allowed = allowed_at(r)
    finite = r.isfinite() & g.isfinite()
    d = torch.where(finite, (g - r).abs(), torch.zeros_like(r))
    bad = finite & (d > allowed)
    if nan_bad.any():  # the worst kind of disagreement names the failure; every kind is in the mask
        return bad | nan_bad | inf_bad, nan_bad.double(), None, "NaN mismatch"
    if inf_bad.any():
        return bad | inf_bad, inf_bad.double(), None, "infinity mismatch"
    return bad, d / allowed.clamp_min(1e-300), allowed, f"outside {kind} bound {bound}"


def assert_close_row(row, got, ref, scale=None, n=1, what="result", alt=None, compute=None):
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
    Inexact kinds also allow what check mode allows (dispatch/compare.cpp): Vulkan's precision
    holds for normal results only, so a subnormal result (either side) may be off by the compute
    type's smallest normal, and a reduction over n terms by n - 1 more (its partial sums).
    Non-finite values must agree exactly: NaN where ref is NaN, the same infinity where ref is one,
    except that an inexact result within its tolerance of the largest finite value may be that
    infinity (or the reference may be, the result finite).
    compute: the dtype the op computes in, where it is narrower than the output's (a float32 op
    written to a float64 out=): eps, ulp and the smallest normal are then that dtype's.
    alt: (reference from subnormal-flushed inputs, smallest normal) from flush_refs, on a device
    that flushes subnormals: an element that misses `ref` passes if it matches alt's reference with
    values below the smallest normal read as zero on both sides, and zeros of either sign matching
    where the two references differ.
    """
    assert got.dtype == ref.dtype, f"{what}: dtype {got.dtype}, expected {ref.dtype}"
    assert tuple(got.shape) == tuple(ref.shape), f"{what}: shape {tuple(got.shape)}, expected {tuple(ref.shape)}"
    got = got.detach().cpu()
    ref = ref.detach()
    if ref.numel() == 0:
        return
    bad, score, allowed, msg = _judge(row, got, ref, scale, n, compute=compute)
    if bad.any() and alt is not None:
        alt_ref, tiny = alt
        moved = _bits(alt_ref.detach()) != _bits(ref)
        bad &= _judge(row, got, alt_ref.detach(), scale, n, tiny, moved, compute)[0]
    if bad.any():
        raise AssertionError(f"{row['name']} {what} {msg}: " + _worst(bad, score, got, ref, allowed))


_FLUSHES = {}


def flushes(dtype):
    """Whether the device under test flushes subnormals in dtype's compute type (vkml only)."""
    if DEV == "cpu" or not dtype.is_floating_point or dtype == torch.float16:
        return False  # float16 values are never float32 subnormals
    key = dtype == torch.float64
    if key not in _FLUSHES:
        _FLUSHES[key] = vkml_torch.flushes_subnormals(dtype)
    return _FLUSHES[key]


def tiny_of(dtype):
    """The smallest normal of dtype's compute type: below it a flushing device reads zero."""
    return torch.finfo(torch.float64 if dtype == torch.float64 else torch.float32).smallest_normal


def flush_subnormals(t):
    """t with its compute type's subnormals replaced by zero of the same sign (what a flushing
    device reads), or t itself when nothing would change."""
    if not torch.is_tensor(t) or not flushes(t.dtype):
        return t
    sub = (t != 0) & (t.abs() < tiny_of(t.dtype))
    return torch.where(sub, t * 0, t) if bool(sub.any()) else t


def assert_exact(got, ref, what="result"):
    assert_close_row({"name": "-", "tol_kind": "exact", "tol_bound": 0}, got, ref, what=what)


def same_view(t, dev):
    """t's storage on dev, viewed with t's sizes, strides and offset: .to() would make a view
    that is not dense (stepped, or offset into a longer row) contiguous, and then the kernels'
    strided and unaligned loads would never run (the mutation campaign's gemm_coop:221 survived
    so)."""
    flat = t.as_strided((t.untyped_storage().nbytes() // t.element_size(),), (1,), 0)
    return flat.to(dev).as_strided(t.size(), t.stride(), t.storage_offset())
