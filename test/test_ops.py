"""Every op-table row with overloads, through torch.ops.aten.<name>.<overload>, on the CPU and on vkml.

Each case runs three times: torch CPU (the reference), vkml lazily, and vkml in check mode (the
oracle verifies every node and raises "vkml check failed" on disagreement). Both vkml results are
compared with the CPU reference within the row's tolerance. A case where the CPU raises must raise
the same exception type on vkml. Parameters come from op_table(), so a new row is tested (or fails
for want of a generator) without editing this file.
"""
import contextlib
import dataclasses
import math
import zlib

import pytest
import torch
import vkml_torch

from helpers import DEV, NARROW, assert_close_row, assert_exact, check_mode, dtype_of, flush_subnormals, flushes
from helpers import resolve, stats, tiny_of
from helpers import row as table_row
from generators import GENERATORS
from op_cases import FLUSHED_REFS, UNFUSED_REFS, Case, In, is_inplace, out_names

PREFERRED = ("float32", "float16", "bfloat16", "float64", "int64", "int32", "uint8", "int8", "int16", "bool")


def _table():
    try:
        return [r for r in vkml_torch._C.op_table() if r["overloads"]]
    except Exception as e:  # collection must not crash when vkml is unusable; conftest skips
        return [{"name": f"op_table() failed: {e}", "kind": "?", "dtypes": [], "overloads": ["?"]}]


def _params(special):
    out = []
    for r in _table():
        dts = [d for d in PREFERRED if d in r["dtypes"]]
        if special:
            dts = [d for d in dts if d in ("float32", "float16", "bfloat16", "float64", "int64")]
            ovs = r["overloads"][:1]
        else:
            ovs = r["overloads"]
        for ov in ovs:
            for d in dts or ["<no dtype>"]:
                out.append(pytest.param(r, ov, d, id=f"{r['name']}-{ov}-{d}"))
    return out


def _materialize(case, dev):
    """Returns (args, kwargs, mutated) with mutated = (view, base, In) for in-place/out checks."""
    bases = []
    args = []
    for a in case.args:
        if isinstance(a, In):
            v, b = a.make(dev)
            bases.append((v, b, a))
            args.append(v)
        else:
            args.append(a)
    kwargs = dict(case.kwargs)
    outs = {k: torch.empty(0, dtype=dt, device=dev) for k, dt in case.outs.items()}
    kwargs.update(outs)
    return args, kwargs, bases, outs


def _invoke(op, overload, case, dev):
    """Runs one case; returns (results to compare, whole base of an in-place self or None)."""
    args, kwargs, bases, outs = _materialize(case, dev)
    if dev == "cpu" and case.ref is not None:  # e.g. convolution_overrideable: torch CPU's convolution
        op = case.ref
    res = op(*args, **kwargs)
    results = list(res) if isinstance(res, (tuple, list)) else [res]
    if outs:
        for r, (name, o) in zip(results, outs.items()):
            assert r is o, f"{overload} did not return its {name}= tensor"
        return [o for o in outs.values()], None
    if is_inplace(overload):
        self_view, self_base, _ = bases[0]
        assert results[0] is self_view, f"{overload} did not return self"
        return [self_view], (self_base, case.args[0].view)
    return results, None


def _untouched(got_base, ref_base, view, what):
    """Elements of the base outside the in-place view must be unchanged (bitwise)."""
    if view is None:
        return  # the view is the whole base, compared with the row's tolerance already
    g, r = got_base.detach().cpu().clone(), ref_base.clone()
    view(g).zero_()
    view(r).zero_()
    assert_exact(g, r, what=what)


def _upcast(case, common=None):
    """The case with float16/bfloat16 tensors, dtype arguments and outs widened to float32.

    torch CPU computes some narrow-dtype ops (log_softmax) with narrow intermediates and is less
    accurate than the contract (compute in float32, round once), so for inexact rows the
    reference is torch CPU in float32, rounded to the narrow dtype. common: the elementwise
    result's narrow dtype, if any: an input of another dtype (a 0-dim float16 next to bfloat16, an
    int16 next to float16) is first converted to it, as TensorIterator converts inputs to the
    common dtype (found by the fuzzer); bool inputs stay (masks and conditions are not converted).
    """
    w = lambda d: torch.float32 if d in NARROW else d  # noqa: E731
    cv = lambda t: t.to(common) if common is not None and t.dtype not in (common, torch.bool) else t  # noqa: E731
    args = [In(cv(a.base).to(w(cv(a.base).dtype)), a.view, a.keep_cpu) if isinstance(a, In)
            else w(a) if isinstance(a, torch.dtype) else a for a in case.args]
    kwargs = {k: w(v) if isinstance(v, torch.dtype) else v for k, v in case.kwargs.items()}
    return dataclasses.replace(case, args=args, kwargs=kwargs, outs={k: w(d) for k, d in case.outs.items()})


# Exact rows whose torch CPU float16 kernel rounds intermediates to float16, so that torch CPU is
# less accurate than the contract (compute in float32, round once): measured on torch 2.13,
# sigmoid_backward in float16 equals (g * (1 - y)) * y evaluated step by step in float16, while its
# bfloat16 kernel computes in float32 and rounds once. For these the reference is as for inexact
# rows: torch CPU in float32, rounded once.
NARROW_STEPWISE = {"sigmoid_backward": (torch.float16,)}


def _narrow_ref(row, overload, case, ref, ref_base):
    dts = {a.base.dtype for a in case.args if isinstance(a, In)}
    narrow = bool(dts & set(NARROW))
    stepwise = bool(dts & set(NARROW_STEPWISE.get(row["name"], ())))
    if (row["tol_kind"] == "exact" and not stepwise) or not narrow:
        return ref, ref_base
    common = None
    if row["family"] == "elementwise":  # the computation's common dtype (0-dim operands count less)
        ins = [a.cpu() for a in case.args if isinstance(a, In) and a.base.dtype != torch.bool]
        common = torch.result_type(*ins[:2]) if len(ins) == 2 else ins[0].dtype if len(ins) == 1 else None
        common = common if common in NARROW else None
    wide, wide_base = _invoke(resolve(overload), overload, _upcast(case, common), "cpu")
    # rounded to the common dtype first where the output is another one, as TensorIterator does
    ref = [(w.to(common) if common is not None else w).to(r.dtype) for w, r in zip(wide, ref)]
    if ref_base is not None:
        ref_base = (wide_base[0].to(ref_base[0].dtype), ref_base[1])
    return ref, ref_base


# mul on float16/bfloat16 with a Python scalar or 0-dim tensor second operand: two legitimate
# answers, and a result bitwise equal to either one (as a whole) passes. Why:
#  - torch CPU itself disagrees with itself: mul.Scalar, mul.Tensor and mul_.Tensor keep the scalar
#    unrounded (float opmath), but mul_.Scalar rounds it to the narrow dtype first (measured on
#    torch 2.13 CPU for contiguous, transposed and 700-element inputs alike; the brief first
#    blamed only the non-contiguous in-place path). add/sub always round, div never: vkml agrees
#    with the CPU on those, so they stay single-reference.
#  - a 0-dim float32 tensor on vkml is a device input, not a CPU scalar: vkml follows
#    TensorIterator/CUDA and converts it to the common (narrow) dtype before computing, whereas on
#    the CPU it is a wrapped scalar and stays unrounded.
# Both references are computed on the CPU in float32 and rounded once. Nothing else is loosened.
def scalar_rounding_ambiguous(row, case):
    if row["name"] != "mul" or len(case.args) < 2:
        return False
    a, b = case.args[0], case.args[1]
    if not (isinstance(a, In) and a.base.dtype in NARROW):
        return False
    if not isinstance(b, In):
        return True
    # a 0-dim tensor operand: a scalar only where it does not take part in promotion (self not
    # 0-dim as well, or the same category), so that the result keeps self's narrow dtype
    return b.cpu().dim() == 0 and torch.result_type(a.cpu(), b.cpu()) == a.base.dtype


def scalar_refs(overload, case):
    """[(unrounded, rounded) per output]: the second operand kept as float32, or first rounded to
    self's narrow dtype; either way the product is computed in float32 and rounded once."""
    dt = case.args[0].base.dtype
    up = _upcast(case)

    def run(rounded):
        b = case.args[1]
        if isinstance(b, In):
            v = b.base
            if v.dtype.is_floating_point:
                v = (v.to(dt) if rounded else v).to(torch.float32)
            b = In(v, b.view, b.keep_cpu)
        elif rounded and isinstance(b, float):
            b = torch.tensor(b, dtype=torch.float32).to(dt).item()  # double -> float -> narrow, as c10
        c = Case(up.desc, [up.args[0], b] + up.args[2:], up.kwargs, up.outs, up.scale)
        out, _ = _invoke(resolve(overload), overload, c, "cpu")
        return [o.to(dt) for o in out]
    return list(zip(run(False), run(True)))


def assert_either(row, got, refs, what):
    """Passes when `got` is bitwise equal to at least one of `refs` (whole tensors, not per element)."""
    errors = []
    for name, r in zip(("scalar unrounded", "scalar rounded to the narrow dtype"), refs):
        try:
            assert_close_row(row, got, r, what=what)
            return
        except AssertionError as e:
            errors.append(f"vs {name}: {e}")
    raise AssertionError(f"{row['name']} {what} matches neither reference: " + "; ".join(errors))


def _flushed(case):
    """The case with every subnormal input (tensor or scalar) flushed as the device reads it."""
    dts = [a.base.dtype for a in case.args if isinstance(a, In)]
    args = []
    for a in case.args:
        if isinstance(a, In):
            a = In(flush_subnormals(a.base), a.view, a.keep_cpu)
        elif isinstance(a, float) and dts and flushes(dts[0]) and 0 < abs(a) < tiny_of(dts[0]):
            a = math.copysign(0.0, a)
        args.append(a)
    return dataclasses.replace(case, args=args)


def flush_refs(row, overload, case, ref):
    """On a device that flushes subnormals (NVIDIA does for float32; see docs/architecture.md,
    "Subnormals"), [(reference computed from flushed inputs, smallest normal)] per output, else
    [None]*len(ref). Vulkan lets arithmetic flush any subnormal input or result to zero unless the
    shader asks to preserve them, which such devices cannot; results must then match either the
    reference or this one, with values below the smallest normal read as zero."""
    if not any(r.dtype.is_floating_point and flushes(r.dtype) for r in ref) and not any(
            isinstance(a, In) and flushes(a.base.dtype) for a in case.args):
        return [None] * len(ref)
    fcase = _flushed(case)
    if row["name"] in FLUSHED_REFS:  # intermediates flushed too (op_cases.py)
        fcase = dataclasses.replace(fcase, ref=FLUSHED_REFS[row["name"]](overload))
    alt, alt_base = _invoke(resolve(overload), overload, fcase, "cpu")
    alt, _ = _narrow_ref(row, overload, fcase, alt, alt_base)
    return [(a, tiny_of(a.dtype)) if a.dtype.is_floating_point else (a, 0.0) for a in alt]


def compute_dtype(case, out_dtype):
    """The dtype a float op computes in when it is narrower than its float64 output: the widest
    float input, unless a dtype= argument names float64 (then it computes in float64). None: the
    output's own dtype."""
    if out_dtype != torch.float64 or case.kwargs.get("dtype") == torch.float64:
        return None
    fl = [a.base.dtype for a in case.args if isinstance(a, In) and a.base.dtype.is_floating_point]
    return torch.float32 if fl and torch.float64 not in fl else None


def run_case(row, overload, case):
    op = resolve(overload)
    if case.ref is None and row["name"] in UNFUSED_REFS:  # torch CPU fuses multiply-adds there (op_cases.py)
        case = dataclasses.replace(case, ref=UNFUSED_REFS[row["name"]](overload))
    if any(isinstance(a, In) and a.keep_cpu for a in case.args) and vkml_torch._C.torch_checks_devices(overload):
        # torch's generated wrapper rejects a CPU tensor here, 0-dim or not (CUDA's
        # "wrapper_CUDA_clamp_Tensor"); only the CPU, where everything is on the CPU, accepts it
        with pytest.raises(RuntimeError, match="^Expected all tensors to be on the same device, but got"):
            got, _ = _invoke(op, overload, case, DEV)
            [g.cpu() for g in got]
        return True
    cpu_args, _, _, _ = _materialize(case, "cpu")
    scales = case.scale(cpu_args) if case.scale else None
    either = None
    try:
        ref, ref_base = _invoke(op, overload, case, "cpu")
        ref, ref_base = _narrow_ref(row, overload, case, ref, ref_base)
    except Exception as e:
        try:
            got, _ = _invoke(op, overload, case, DEV)
            [g.cpu() for g in got]
        except Exception as e2:
            # exact type: NotImplementedError is a RuntimeError, but "no kernel" is not parity
            assert type(e2) is type(e), f"CPU raised {type(e).__name__}: {e}; vkml raised {type(e2).__name__}: {e2}"
            return False
        raise AssertionError(f"CPU raised {type(e).__name__} ({str(e).splitlines()[0]}); vkml did not")
    alts = flush_refs(row, overload, case, ref)
    if scalar_rounding_ambiguous(row, case):
        either = scalar_refs(overload, case)
        for i, r in enumerate(ref):  # torch CPU must itself be one of the two, or the reasoning is stale
            assert_either(row, r, either[i], what=f"torch CPU result {i}")
    # Under VKML_CHECK=1 (make test's second pass) the lazy run is a check run already: once is enough.
    for mode in ("check",) if vkml_torch.check_enabled() else ("lazy", "check"):
        before = stats()
        with (check_mode() if mode == "check" else contextlib.nullcontext()):
            got, got_base = _invoke(op, overload, case, DEV)
            got_cpu = [g.cpu() for g in got]
        after = stats()
        for i, (g, gc, r) in enumerate(zip(got, got_cpu, ref)):
            assert g.device.type == torch.device(DEV).type, f"{mode}: result {i} on {g.device}"
            sc, n = scales[i] if scales else (None, 1)
            if either is not None:
                assert_either(row, gc, either[i], what=f"{mode} result {i}")
            else:
                assert_close_row(row, gc, r, sc, n, what=f"{mode} result {i}", alt=alts[i],
                                 compute=compute_dtype(case, r.dtype))
        assert len(got) == len(ref)
        if ref_base is not None:
            _untouched(got_base[0], ref_base[0], ref_base[1], f"{mode}: in-place base outside the view")
        if mode == "check" and any(r.numel() for r in ref) and all(
                a.cpu().numel() for a in case.args if isinstance(a, In)):
            assert after["checked"] > before["checked"], "check mode verified no node (stats()['checked'])"
    return True


def _run_all(row, overload, dtype, special):
    kind = row["aten"]
    assert kind in GENERATORS, (f"op_table() row {row['name']!r} (family {row['family']}) has aten function "
                                f"{kind} with no generator in test/families/{row['family']}.py")
    assert dtype != "<no dtype>", f"row {row['name']!r} lists no dtype this suite knows"
    seed = zlib.crc32(f"{row['name']}{overload}{dtype}{special}".encode())
    rng = torch.Generator().manual_seed(seed)
    cases = GENERATORS[kind](row, overload, dtype_of(dtype), rng, special)
    assert cases, f"{kind} generator produced no case for {overload} {dtype}"
    failures, ran = [], 0
    for case in cases:
        try:
            ran += run_case(row, overload, case)
        except Exception as e:  # collect: one report names every failing case
            failures.append(f"[{case.desc}] {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    if failures:
        pytest.fail(f"{overload} {dtype}: {len(failures)}/{len(cases)} cases failed:\n  " + "\n  ".join(failures),
                    pytrace=False)
    assert ran, f"{overload} {dtype}: every case was a CPU error; nothing was compared"


@pytest.mark.parametrize("row,overload,dtype", _params(special=False))
def test_op(row, overload, dtype):
    _run_all(row, overload, dtype, special=False)


@pytest.mark.parametrize("row,overload,dtype", _params(special=True))
def test_op_special_values(row, overload, dtype):
    """NaN, +-Inf, signed zero, 1e30, 1e-30, dtype max, denormals; int64 beyond 2**53."""
    _run_all(row, overload, dtype, special=True)


def test_every_row_has_a_generator():
    import os
    fams = {r["family"] for r in vkml_torch._C.op_table() if r["overloads"]}
    here = os.path.join(os.path.dirname(__file__), "families")
    missing_fam = sorted(f for f in fams if not os.path.exists(os.path.join(here, f + ".py")))
    assert not missing_fam, f"families without test parameters (test/families/<family>.py): {missing_fam}"
    missing = sorted({r["aten"] for r in _table()} - set(GENERATORS))
    assert not missing, f"op_table() aten functions without a test generator: {missing}"


def test_table_is_well_formed():
    for r in vkml_torch._C.op_table():
        assert r["tol_kind"] in ("exact", "ulp", "relative", "backward-error"), r
        assert float(r["tol_bound"]) >= 0 and (r["tol_kind"] == "exact") == (float(r["tol_bound"]) == 0), r
        assert r["tol_why"], f"{r['name']}: tolerance without a reason"
        for d in r["dtypes"]:
            dtype_of(d)
        for ov in r["overloads"]:
            assert resolve(ov) is not None
            assert out_names(ov) is not None


@pytest.mark.parametrize("name,overload", [("sum", "sum"), ("amax", "max"), ("argmax", "argmax")])
def test_reduction_of_4m_elements(name, overload):
    """Full reductions past 65535 workgroups' worth of input (a dispatch-size limit)."""
    n = (1 << 22) + 3
    x = ((torch.arange(n) * 7919) % 1001 + 1).to(torch.float32)  # positive: a partial sum falls short
    x[n - 2] = 2000.0  # the unique maximum sits in the last workgroup
    ref = resolve(overload)(x)
    got = resolve(overload)(x.to(DEV)).cpu()
    with check_mode():
        got_checked = resolve(overload)(x.to(DEV)).cpu()
    r = [r for r in vkml_torch._C.op_table() if r["name"] == name][0]
    for g in (got, got_checked):
        assert_close_row(r, g, ref, scale=x.double().abs().sum(), n=n)


@pytest.mark.parametrize("dtype", NARROW)
def test_mul_scalar_either_still_rejects(dtype):
    """The two-reference acceptance for mul with a scalar stays strict: one ulp off both references,
    or a mix of the two references within one tensor, is rejected."""
    r = table_row("mul")
    x = torch.linspace(-3, 3, 64, dtype=torch.float64).to(dtype)
    case = Case("probe", [In(x), 0.1])
    (unr, rnd), = scalar_refs("mul.Scalar", case)
    assert scalar_rounding_ambiguous(r, case) and not torch.equal(unr, rnd)
    assert_either(r, unr, (unr, rnd), "unrounded")
    assert_either(r, rnd, (unr, rnd), "rounded")
    same = ((unr == rnd) & (unr != 0)).nonzero().flatten()
    differ = (unr != rnd).nonzero().flatten()
    assert len(same) and len(differ)
    off = unr.clone()
    off.view(torch.int16)[same[0]] += 1  # next representable value away from zero: both refs agree there
    mixed = unr.clone()
    mixed[differ[0]] = rnd[differ[0]]  # unrounded everywhere but one element, which is rounded
    for bad in (off, mixed):
        with pytest.raises(AssertionError, match="matches neither reference"):
            assert_either(r, bad, (unr, rnd), "bad")
    # and outside exactly these cases nothing changes: add, a non-0-dim operand, float32 self
    assert not scalar_rounding_ambiguous(table_row("add"), case)
    assert not scalar_rounding_ambiguous(r, Case("t", [In(x), In(x.float())]))
    assert not scalar_rounding_ambiguous(r, Case("f32", [In(x.float()), 0.1]))


def test_flush_alternative_stays_strict():
    """The second reference for flushing devices (flush_refs) accepts a subnormal read as zero and
    nothing else: not a wrong normal value, not a NaN, not the wrong sign of an unflushed zero."""
    r = table_row("abs")
    x = torch.tensor([1e-39, -1e-39, 1.5, -0.0, 3e-39], dtype=torch.float32)
    ref = x.abs()
    alt = (torch.where(x.abs() < 2**-126, x * 0, x).abs(), torch.finfo(torch.float32).smallest_normal)
    flushed = torch.tensor([0.0, 0.0, 1.5, 0.0, 0.0])  # subnormal results read as zero
    assert_close_row(r, flushed, ref, alt=alt)
    assert_close_row(r, ref, ref, alt=alt)
    with pytest.raises(AssertionError, match="not bitwise equal"):
        assert_close_row(r, flushed, ref)  # without the alternative the flush is a mismatch
    for bad in ([0.0, 0.0, 1.5000001, 0.0, 0.0], [0.0, 0.0, 1.5, -0.0, 0.0], [0.0, float("nan"), 1.5, 0.0, 0.0]):
        with pytest.raises(AssertionError):
            assert_close_row(r, torch.tensor(bad), ref, alt=alt)
    m = table_row("minimum")  # min(0, -1e-39): flushed, min(0, -0), whose sign is open
    x, y = torch.tensor([0.0, 0.0]), torch.tensor([-1e-39, -0.0])
    malt = (torch.minimum(x, torch.tensor([-0.0, -0.0])), torch.finfo(torch.float32).smallest_normal)
    ref = torch.minimum(x, y)
    for z in (0.0, -0.0):
        assert_close_row(m, torch.tensor([z, ref[1].item()]), ref, alt=malt)
    with pytest.raises(AssertionError):  # where no subnormal was involved the sign still counts
        assert_close_row(m, torch.tensor([0.0, -ref[1].item()]), ref, alt=malt)
    s = table_row("sum")  # backward-error kind: a normal result stays within the bound
    with pytest.raises(AssertionError, match="outside"):
        assert_close_row(s, torch.tensor([1.0]), torch.tensor([1.001]), scale=1.0, n=1,
                         alt=(torch.tensor([1.001]), 2**-126))


def test_flush_probe_matches_the_device():
    """flushes_subnormals() says what x * 1 does to float32 (and float64) subnormals on this device."""
    for dt in (torch.float32, torch.float64):
        x = torch.tensor([2**-149, -(2**-149), 2**-127, 1.0], dtype=torch.float64).to(dt)
        if dt == torch.float64:
            x = torch.tensor([5e-324, -5e-324, 2**-1023, 1.0], dtype=torch.float64)
        y = (x.to(DEV) * 1.0).cpu()
        if vkml_torch.flushes_subnormals(dt):
            assert_exact(y, x * (x.abs() >= torch.finfo(dt).smallest_normal))
        else:
            assert_exact(y, x)
