"""Check mode: the CPU oracle passes good kernels and catches deliberately broken ones.

A broken build of a family's shader (broken_shaders.py: every store corrupted, loaded through
_set_spirv_dir) makes the GPU compute wrong results for that family's rows; check mode must then fail
loudly, naming the op. Without check mode the wrong answer goes through, which proves the breakage
is real and that the oracle, not luck, is what caught it.
"""
import math
import re

import pytest
import torch
import vkml_torch

from broken_shaders import broken_dir, loaded, stem_blobs
from helpers import DEV, assert_close_row, assert_exact, check_mode, dtype_of, resolve, row, rows, stats
from generators import GENERATORS
from op_cases import In, is_inplace, out_names


def test_check_passes_good_kernels():
    a, b = torch.randn(4, 5), torch.randn(5, 3)
    s0 = stats()
    with check_mode():
        assert vkml_torch.check_enabled()
        av, bv = a.to(DEV), b.to(DEV)
        s = (av + 1).cpu(), (av @ bv).cpu(), av.sum(1).cpu(), torch.log_softmax(av, 1).cpu()
    assert stats()["checked"] - s0["checked"] >= 4
    assert_exact(s[0], a + 1)
    assert s[1].shape == (4, 3) and s[2].shape == (4,) and s[3].shape == (4, 5)


CASES = {  # op -> (function, tolerance kind, backward-error scale and n from the CPU inputs, shader)
    "add": (lambda a, b: a + b, "exact", None, "elementwise"),
    "mm": (lambda a, b: a @ b.t(), "backward-error", lambda a, b: (a.double().abs() @ b.double().abs().t(), 5), "gemm"),
    "sum": (lambda a, b: a.sum(1), "backward-error", lambda a, b: (a.double().abs().sum(1), 5), "reduce"),
}


@pytest.mark.parametrize("op", list(CASES))
def test_mutation_caught(op):
    f, kind, scale, stem = CASES[op]
    vkml_torch.set_fuse(False)  # the row's own shader, not fused.comp (test_fusion breaks that one)
    a, b = torch.randn(6, 5), torch.randn(6, 5)
    want = f(a, b)
    vkml_torch.set_check(False)  # VKML_CHECK=1 runs start with it on; conftest restores it
    with loaded(broken_dir(stem, stem_blobs(stem, "float32"))):
        wrong = f(a.to(DEV), b.to(DEV)).cpu()  # check off: the broken kernel's answer comes back
        assert wrong.shape == want.shape
        assert not torch.allclose(wrong, want), f"broken {stem} shader changed nothing: not loaded"
        with pytest.raises(RuntimeError) as e:
            with check_mode():
                f(a.to(DEV), b.to(DEV)).cpu()
    msg = str(e.value)
    assert msg.startswith("vkml check failed:"), msg
    assert re.search(rf"\b{op}\b", msg), f"message does not name the op {op!r}: {msg}"
    assert kind in msg and "float32" in msg, f"message lacks tolerance kind / dtype: {msg}"
    # shapes are the node's (dims may be collapsed: (6, 5) -> [30]); their element count must fit
    shapes = [math.prod(int(v) for v in s.split(",")) for s in re.findall(r"float32\[([\d, ]+)\]", msg)]
    assert 30 in shapes, f"message names no float32 shape of the 6x5 input: {msg}"
    # the device keeps working and the same op is right again
    with check_mode():
        got = f(a.to(DEV), b.to(DEV)).cpu()
    sc, n = scale(a, b) if scale else (None, 1)
    assert_close_row(row(op), got, want, sc, n, what="after the built-in shaders are back")


def _first_case(r):
    """The first ordinary case of the row's first functional overload, in float32 if listed."""
    dt = _dtype(r)
    ov = next((o for o in r["overloads"] if not is_inplace(o) and not out_names(o)), r["overloads"][0])
    rng = torch.Generator().manual_seed(1)
    cases = GENERATORS[r["aten"]](r, ov, dtype_of(dt), rng, False)
    big = [c for c in cases if all(a.cpu().numel() >= 6 for a in c.args if isinstance(a, In))]
    return ov, (big or cases)[0]


def _dtype(r):
    return "float32" if "float32" in r["dtypes"] else r["dtypes"][0]


@pytest.mark.parametrize("r", [r for r in rows() if r["overloads"]], ids=lambda r: r["name"])
def test_every_row_broken_shader_caught(r):
    """Table-driven: whatever the row, a broken build of its family's shader fails check mode
    naming it."""
    vkml_torch.set_fuse(False)  # the row's own shader, not fused.comp (test_fusion breaks that one)
    ov, case = _first_case(r)
    op = resolve(ov)

    def call(dev):
        args = [a.make(dev)[0] if isinstance(a, In) else a for a in case.args]
        kw = dict(case.kwargs)
        kw.update({k: torch.empty(0, dtype=d, device=dev) for k, d in case.outs.items()})
        res = op(*args, **kw)
        res = res if isinstance(res, (tuple, list)) else [res]
        return [t.cpu() for t in res]

    with loaded(broken_dir(r["family"])):  # every variant: index moves bits in its i64 build
        with pytest.raises(RuntimeError, match=r"^vkml check failed:") as e:
            with check_mode():
                call(DEV)
    # the first node of the family caught is named: the row itself, or a row it is built on
    # (index.Tensor with a mask runs nonzero first)
    family = {x["name"] for x in rows() if x["family"] == r["family"]}
    named = re.match(r"vkml check failed: op (\w+),", str(e.value))
    assert named and named.group(1) in family, str(e.value)
    with check_mode():
        call(DEV)  # the built-in shader again: passes


def test_spirv_dir_rebuild_is_bitwise_the_build():
    """scripts/shaders.py, which builds the broken shaders and scripts/mutate.py's mutants, compiles
    exactly what setup.py embedded (same bytes), and loading its output changes no result."""
    import glob
    import os
    import tempfile
    from broken_shaders import shaders
    x = torch.randn(300, 7)
    want = torch.log_softmax(x.to(DEV), 1).cpu()
    with tempfile.TemporaryDirectory() as d:
        assert not any(shaders.compile_stem("softmax", d).values())
        for name, _, _ in shaders.blobs(open(os.path.join(shaders.SHADERS, "softmax.comp")).read(), "softmax"):
            built = glob.glob(os.path.join(shaders.GEN, "spv", f"{name}.*.spv"))
            assert len(built) == 1, f"setup.py left {built} for {name}"
            assert open(built[0], "rb").read() == open(os.path.join(d, name + ".spv"), "rb").read(), name
        with loaded(d):
            got = torch.log_softmax(x.to(DEV), 1).cpu()
    assert_exact(got, want)


def test_compare_with_flushed_reference():
    """Check mode's comparison (dispatch/compare.cpp) with the second reference that a device
    flushing subnormals gets: the flushed result passes, anything else still fails. Runs on every
    device; only a flushing one (NVIDIA) uses the second reference in practice."""
    cmp = vkml_torch._C._compare
    b = lambda *v: torch.tensor(v, dtype=torch.float32).numpy().tobytes()  # noqa: E731
    nan, inf = float("nan"), float("inf")
    # mul(-1e-39, -inf): inf as given, NaN with the input flushed (-0 * -inf); the device gave NaN
    ref, alt = b(inf, 2.0, 1e-39, 0.0), b(nan, 2.0, 0.0, 0.0)
    assert cmp("mul", "float32", b(nan, 2.0, 0.0, 0.0), ref, alt) == ""
    assert cmp("mul", "float32", b(inf, 2.0, 1e-39, 0.0), ref, alt) == ""
    assert cmp("mul", "float32", b(inf, 2.0, -0.0, 0.0), ref, alt) == ""  # subnormal: either sign
    assert cmp("mul", "float32", b(nan, 2.0, 0.0, 0.0), ref, None) != ""  # without the alternative
    assert cmp("mul", "float32", b(inf, 2.0000002, 0.0, 0.0), ref, alt).startswith("[1]")  # normal: exact
    assert cmp("mul", "float32", b(inf, 2.0, 0.0, -0.0), ref, alt).startswith("[3]")  # unmoved zero: sign counts
    # min(0, -1e-39): -1e-39 as given, min(0, -0) flushed, whose sign is open
    assert cmp("minimum", "float32", b(0.0), b(-1e-39), b(-0.0)) == ""
    assert cmp("minimum", "float32", b(1.0), b(-1e-39), b(-0.0)).startswith("[0]")
    # a tolerance kind other than exact keeps its bound against the second reference
    assert cmp("exp", "float32", b(1.0), b(1.5), b(1.5)).startswith("[0]")


def test_check_mode_plain_mlp_no_false_alarm():
    """Issue 7, finding 7: unscaled randn weights give logits up to ~100; the GPU's exp underflowed
    a little earlier than the oracle's and check mode failed in log_softmax_backward ("got 0,
    expected 3.59713316e-42 (allowed difference 2.1029001e-45)")."""
    torch.manual_seed(0)
    x, y = torch.randn(64, 20), torch.randint(0, 5, (64,))
    a = torch.randn(20, 32, device=DEV, requires_grad=True)
    b = torch.randn(32, 5, device=DEV, requires_grad=True)
    s0 = stats()
    with check_mode():
        torch.nn.functional.cross_entropy((x.to(DEV) @ a).relu() @ b, y.to(DEV)).backward()
        a.grad.cpu()
    assert stats()["checked"] - s0["checked"] >= 8


F32 = lambda *v: torch.tensor(v, dtype=torch.float32).numpy().tobytes()  # noqa: E731
F16 = lambda *v: torch.tensor(v, dtype=torch.float16).numpy().tobytes()  # noqa: E731
TINY = torch.finfo(torch.float32).smallest_normal
EPS = torch.finfo(torch.float32).eps


def _allowed(msg):
    return float(re.search(r"allowed difference ([^)]+)\)", msg).group(1))


def test_compare_results_that_underflow():
    """Vulkan promises relative precision for normal results only (no DenormPreserve): a subnormal
    result, or any partial sum of a reduction, may be flushed, each then off by less than the
    smallest normal. So a result that underflows passes as 0; normal results of elementwise ops
    keep their relative bound."""
    cmp = vkml_torch._C._compare
    # the element: log_softmax_backward, 5 classes, scale ~3.3e-40
    assert cmp("log_softmax_backward", "float32", F32(0.0), F32(3.59713316e-42), None, 5, [3.3e-40]) == ""
    # exp(-100) = 3.7e-44: the device may return 0; exp(-87) = 1.6e-38 is normal and must be close
    assert cmp("exp", "float32", F32(0.0), F32(3.7e-44)) == ""
    assert cmp("exp", "float32", F32(0.0), F32(1.6e-38)).startswith("[0]")
    assert cmp("exp", "float32", F32(1.5e-38), F32(1.6e-38)).startswith("[0]")
    # a sum of 1000 terms: 1000 flushed partial sums at most
    assert cmp("sum", "float32", F32(0.0), F32(900 * TINY), None, 1000, [900 * TINY]) == ""
    assert cmp("sum", "float32", F32(0.0), F32(1100 * TINY), None, 1000, [1100 * TINY]).startswith("[0]")
    # exact rows stay exact: a device that keeps subnormals must give the subnormal
    assert cmp("mul", "float32", F32(0.0), F32(1e-40)).startswith("[0]")


def test_compare_normal_values_not_loosened():
    """For a normal result the allowed difference is the row's bound (plus n - 1 smallest normals)."""
    cmp = vkml_torch._C._compare
    msg = cmp("log_softmax_backward", "float32", F32(2.0), F32(1.0), None, 5, [1.0])
    bound = 16 * EPS * (math.log2(5) + 1) * 1.0
    assert msg.startswith("[0]") and math.isclose(_allowed(msg), bound, rel_tol=1e-8)
    assert cmp("log_softmax_backward", "float32", F32(1.0 + 0.9 * bound), F32(1.0), None, 5, [1.0]) == ""
    assert cmp("log_softmax_backward", "float32", F32(1.0 + 1.5 * bound), F32(1.0), None, 5, [1.0]).startswith("[0]")
    msg = cmp("exp", "float32", F32(2.0), F32(1.0))
    assert math.isclose(_allowed(msg), 1.1e-5, rel_tol=1e-8)


def test_compare_at_the_top_of_the_range():
    """A result within the tolerance of the largest finite value may round to infinity on one
    side only; far from it, or of the other sign, infinity is still wrong."""
    cmp = vkml_torch._C._compare
    top = float(torch.finfo(torch.float32).max)
    inf = float("inf")
    assert cmp("exp", "float32", F32(inf), F32(top)) == ""
    assert cmp("exp", "float32", F32(top), F32(inf)) == ""
    assert cmp("exp", "float32", F32(inf), F32(1e38)).startswith("[0]")
    assert cmp("exp", "float32", F32(-inf), F32(-top)) == ""
    assert cmp("exp", "float32", F32(-inf), F32(top)).startswith("[0]")
    # float16 output of a float32 sum: 65504 + its tolerance reaches the rounding point 65520
    assert cmp("sum", "float16", F16(inf), F16(65504.0), None, 4, [65504.0]) == ""
    assert cmp("sum", "float16", F16(inf), F16(60000.0), None, 4, [60000.0]).startswith("[0]")
    assert cmp("add", "float32", F32(inf), F32(top)).startswith("[0]")  # exact rows: exact


LIMITS = {  # inputs at the limits of their dtype, large logits, results that underflow
    "log_softmax large logits": lambda d: torch.log_softmax(torch.tensor([[1e4, -1e4, 0.0, 3e4]], device=d), 1),
    "softmax logits 100": lambda d: torch.softmax(torch.randn(16, 40, generator=torch.Generator().manual_seed(3)).to(d) * 100, 1),
    "log_softmax backward logits 100": lambda d: torch.ops.aten._log_softmax_backward_data(
        torch.full((8, 30), -1 / 8).to(d),
        torch.log_softmax(torch.randn(8, 30, generator=torch.Generator().manual_seed(4)) * 100, 1).to(d), 1, torch.float32),
    "softmax finfo.min": lambda d: torch.softmax(torch.tensor([[torch.finfo(torch.float32).min, 0.0, 1.0]], device=d), 1),
    "exp near overflow": lambda d: torch.exp(torch.tensor([88.7, 88.72, 88.73, -87.0, -100.0, -104.0], device=d)),
    "sigmoid extremes": lambda d: torch.sigmoid(torch.tensor([-100.0, -88.0, 88.0, 1e30, -1e30], device=d)),
    "sum float16 near max": lambda d: torch.tensor([65504.0, 65504.0, -65504.0, 16.0], dtype=torch.float16, device=d).sum(),
    "mean bfloat16 large": lambda d: torch.tensor([3e38, 3e38, -3e38], dtype=torch.bfloat16, device=d).mean(),
    "mm of tiny products": lambda d: torch.full((4, 64), 1e-20, device=d) @ torch.full((64, 3), 1e-20, device=d),
    "cross_entropy logits 1e3": lambda d: torch.nn.functional.cross_entropy(
        torch.tensor([[1e3, -1e3, 0.0], [-1e3, 1e3, 5.0]], device=d), torch.tensor([1, 0], device=d)),
}


@pytest.mark.parametrize("name", list(LIMITS))
def test_check_mode_at_the_limits(name):
    """On the device: every node of these passes check mode (no false alarm), and the result is
    the CPU's up to underflow and the row's tolerance."""
    with check_mode():
        got = LIMITS[name](DEV).cpu()
    ref = LIMITS[name]("cpu")
    assert got.dtype == ref.dtype and got.shape == ref.shape
    g, r = got.double(), ref.double()
    assert torch.equal(g.isnan(), r.isnan()), (got, ref)
    fin = r.isfinite() & g.isfinite()
    assert torch.equal(g[~fin & ~r.isnan()].sign(), r[~fin & ~r.isnan()].sign()), (got, ref)
    assert torch.allclose(g[fin], r[fin], rtol=1e-2, atol=1e-30), (got, ref)
