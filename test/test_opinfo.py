"""torch's own OpInfo sample inputs (torch.testing._internal.common_methods_invocations.op_db) for
the ops in the table, run on vkml under check mode and compared with torch CPU.

Two references per sample, as everywhere in this suite:
- the CPU oracle, through check mode: every node is compared within its row's stated tolerance;
- torch CPU: bitwise for rows whose tolerance is exact, else torch.testing.assert_close with the
  default tolerances by dtype, the ones torch's own suite uses to compare a device with the CPU
  (float32 rtol 1.3e-6 atol 1e-5, float16 1e-3/1e-5, bfloat16 1.6e-2/1e-5, float64 1e-7/1e-7).
  Two exceptions, where those defaults are tighter than the rows' stated contract:
  - products, sums and the losses (BACKWARD): an element outside the defaults passes if it is
    within |d| <= (bound * eps_c * (log2(n) + 1) + m * eps_d) * scale (+ 1 ulp for float16),
    the row's backward-error bound plus one rounding to the output dtype (eps_d) per node the
    sample recorded (m: composites like cross_entropy round every intermediate), with scale the
    sum of the absolute values of the terms (the op on absolute inputs, see BACKWARD) and n the
    largest input's element count (at least any reduction length). On the H200, FMA contraction
    moved a matmul element by 2.1e-5 (4.3e-6 relative: over rtol 1.3e-6) where this allows 2.2e-4,
    and a float16 cross_entropy element by 0.0017 (7 float16 ulp of the result, after cancellation).
  - float16 samples of inexact ops are compared with two references, passing against either:
    the float32 CPU result rounded once, and the same computation with every aten op computed in
    float32 and rounded to float16 (F32Nodes), which is vkml's per-node contract for an op it
    composes from several nodes (cross_entropy: log_softmax, mul, sum, ...).

Samples the CPU rejects are invalid inputs and are not run. A sample that needs an aten op with no
vkml kernel must be one of KNOWN_GAPS (each names what is missing); any other NotImplementedError
fails, so a kernel that goes missing cannot hide here. Each test asserts that samples ran.
"""
import collections

import math

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from helpers import DEV, check_mode, row, rows, stats

op_db = pytest.importorskip("torch.testing._internal.common_methods_invocations").op_db

from op_data import ALIASES, BACKWARD, KNOWN_GAPS  # noqa: E402

_OPINFO_NAMES = {o.name for o in op_db}
# OpInfo name -> the op_table() row whose tolerance decides the comparison: every row named like
# an OpInfo entry, plus the aliases of test/op_data.py. A new row is tested here by being added.
OPS = {r["name"]: r["name"] for r in rows() if r["overloads"] and r["name"] in _OPINFO_NAMES} | ALIASES


def _abs_sample(s, keep_input):
    """The sample in float64 with float tensors and alpha/beta replaced by their absolute values
    (the first input kept when keep_input)."""
    ab = lambda t: t.double().abs() if isinstance(t, torch.Tensor) and t.is_floating_point() else t  # noqa: E731
    kw = {k: (abs(v) if k in ("alpha", "beta") and isinstance(v, (int, float)) else ab(v)) for k, v in s.kwargs.items()}
    first = s.input.double() if keep_input and s.input.is_floating_point() else ab(s.input)
    return first, [ab(a) for a in s.args], kw


def _scale_defined(op_name, s):
    """nll_loss/cross_entropy with reduction='mean' and class weights divide by the sum of the
    targets' weights, which taking absolute values changes: no scale, the defaults apply."""
    if op_name not in ("nn.functional.nll_loss", "nn.functional.cross_entropy"):
        return True
    return s.kwargs.get("reduction", "mean") != "mean" or s.kwargs.get("weight") is None


class F32Nodes(TorchDispatchMode):
    """Every aten op that sees a float16 tensor computes in float32 and rounds its float32
    results to float16 once: vkml's contract for each node of a composite op."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        leaves = torch.utils._pytree.tree_leaves((args, kwargs))
        if not any(isinstance(t, torch.Tensor) and t.dtype == torch.float16 for t in leaves):
            return func(*args, **kwargs)
        tm = torch.utils._pytree.tree_map
        up = lambda t: t.float() if isinstance(t, torch.Tensor) and t.dtype == torch.float16 else t  # noqa: E731
        out = func(*tm(up, args), **tm(up, kwargs))
        return tm(lambda t: t.half() if isinstance(t, torch.Tensor) and t.dtype == torch.float32 else t, out)


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


def _compare(got, ref, exact, what, fused_term=None, backward=None):
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
            if backward is not None:  # (row bound, n, scale, nodes): the contract where the defaults miss
                bound, n, scale, m = backward
                eps_c = torch.finfo(torch.float64 if r.dtype == torch.float64 else torch.float32).eps
                eps_d = torch.finfo(r.dtype).eps  # each of the m nodes rounds its result to r.dtype
                allowed = (bound * eps_c * (math.log2(max(n, 1)) + 1) + m * eps_d) * scale.double().abs()
                if r.dtype in (torch.float16, torch.bfloat16):
                    allowed = allowed + _ulp(r)  # the final rounding to the narrow dtype
                d = (g.double() - r.double()).abs()
                default_ok = (d <= atol + rtol * r.double().abs()) | (g.isnan() & r.isnan()) | (g.double() == r.double())
                if bool((default_ok | (d <= allowed)).all()):
                    continue
            torch.testing.assert_close(g, r, rtol=rtol, atol=atol, equal_nan=True, msg=lambda m: f"{what}: {m}")


def _fused_term(name, s):
    """The product a fused multiply-add leaves unrounded, in float64: alpha * other (add, sub),
    value * t1 * t2 (addcmul), w * (end - self) or (end - self) * (1 - w) (lerp)."""
    d = lambda t: t.double() if isinstance(t, torch.Tensor) else torch.tensor(float(t), dtype=torch.float64)  # noqa: E731
    if name == "addcmul":
        return s.kwargs.get("value", 1) * d(s.args[0]) * d(s.args[1])
    if name == "lerp":
        x, e, w = d(s.input), d(s.args[0]), d(s.args[1])
        return torch.where(w.abs() < 0.5, w * (e - x), (e - x) * (1 - w))
    return s.kwargs["alpha"] * d(s.args[0])


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
                before = stats()["nodes"]
                got = op(sv.input, *sv.args, **sv.kwargs)
                nodes = stats()["nodes"] - before
                got = _to_cpu(got)
        except NotImplementedError as e:
            missing = [k for k in KNOWN_GAPS if f"vkml: {k} is not" in str(e) or f"no Vulkan kernel for {k} " in str(e)
                       or f"vkml: {k} is not implemented for dtype" in str(e)]
            assert missing, f"sample {i}: unexpected missing kernel: {e}"
            gaps[missing[0]] += 1
            continue
        # torch CPU's vectorized loop fuses a + alpha*b into one fma, its scalar loop does not: with
        # an alpha, CPU's own rounding varies, so those samples get the default tolerance here
        # (check mode above still holds the kernel to the row's exact contract against the oracle).
        # addcmul and lerp likewise (torch CPU's vectorised loops fmadd; vkml's rows round the
        # product first, as its scalar loop and the oracle do).
        fused = (op.name in ("add", "sub") and s.kwargs.get("alpha", 1) != 1) or op.name in ("addcmul", "lerp")
        if (not exact or fused) and dtype == torch.float16:
            # torch CPU keeps some float16 intermediates in float16 (log_softmax; add/sub with an
            # alpha in its scalar loop); vkml's contract is float32 compute rounded once, so the
            # reference is the float32 CPU result rounded.
            s32 = s.transform(lambda t: t.float() if isinstance(t, torch.Tensor) and t.dtype == dtype else t)
            ref = torch.utils._pytree.tree_map(lambda t: t.to(dtype) if isinstance(t, torch.Tensor) and t.dtype == torch.float32 else t,
                                               op(s32.input, *s32.args, **s32.kwargs))
        refs = [ref]
        if not exact and dtype == torch.float16:
            with F32Nodes():
                refs.append(op(s.input, *s.args, **s.kwargs))
        bw = None
        if not exact and op.name in BACKWARD and _scale_defined(op.name, s):
            ai, aa, ak = _abs_sample(s, BACKWARD[op.name])
            n = max([t.numel() for t in [s.input, *s.args] if isinstance(t, torch.Tensor)] or [1])
            bw = (float(row(OPS[op.name])["tol_bound"]), n, op(ai, *aa, **ak), nodes)
        term = None
        if exact and fused:
            term = _fused_term(op.name, s)
            term = term.expand_as(ref) if term.dim() <= ref.dim() else term
        errors = []
        for k, r in enumerate(refs):
            try:
                _compare(got, r, exact and not fused, f"{op.name} {dtype} sample {i}", fused_term=term, backward=bw)
                break
            except AssertionError as e:
                errors.append(f"reference {k} ({'float32 rounded once' if k == 0 else 'each node in float32'}): {e}")
        else:
            raise AssertionError("; ".join(errors))
        ran += 1
    assert ran > 0 or gaps, f"{op.name} {dtype}: no sample ran"
    if gaps:  # visible in -rA / the log: what was not run, and why
        print(f"{op.name} {dtype}: {ran} samples ran; not run: " +
              ", ".join(f"{n}x {k} ({KNOWN_GAPS[k]})" for k, n in gaps.items()))


def test_backward_fallback_still_rejects():
    """The row-contract fallback for products accepts what the contract allows and nothing more."""
    r = torch.tensor([4.829071044921875, 1.0])
    scale = torch.tensor([216.8, 1.0])
    bound = float(row("mm")["tol_bound"])
    allowed = bound * torch.finfo(torch.float32).eps * (math.log2(10) + 1) * 216.8
    inside = r.clone()
    inside[0] += allowed / 2  # beyond rtol 1.3e-6 / atol 1e-5, within the contract
    _compare(inside, r, False, "inside", backward=(bound, 10, scale, 0))
    with pytest.raises(AssertionError):
        _compare(inside, r, False, "no fallback")
    outside = r.clone()
    outside[0] += allowed * 2
    with pytest.raises(AssertionError):
        _compare(outside, r, False, "outside", backward=(bound, 10, scale, 0))


def test_f32_nodes_rounds_each_node():
    """F32Nodes computes each aten op in float32 and rounds once: x * 3 - x in float16 keeps the
    rounding of x * 3 (a node boundary), unlike computing the whole expression in float32."""
    x = torch.tensor([0.01000213623046875], dtype=torch.float16)
    with F32Nodes():
        y = x * 3 - x
    per_node = ((x.float() * 3).half().float() - x.float()).half()
    whole = (x.float() * 3 - x.float()).half()
    assert not torch.equal(per_node, whole)  # this x tells the two apart
    torch.testing.assert_close(y, per_node, rtol=0, atol=0)
