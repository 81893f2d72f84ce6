"""The matmul pipelines (docs/performance.md): each forced in turn with VKML_GEMM_PIPE and checked
against torch CPU (a float64 reference, within the mm row's TOL_GEMM) and the oracle (VKML_CHECK=1
in the child), over odd sizes, transposed and strided operands, batches, k = 0, empty outputs,
every float dtype, NaN/Inf, unscaled randn, a split K and repeat runs (same bytes); and which
pipeline the shape picks. Env switches are read once per process, so each pipeline runs in a child
process (this file run as a script); VKML_MIN_SPEC passes through from the parent."""
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
import vkml_torch

from helpers import same_view

HERE = os.path.dirname(os.path.abspath(__file__))
_INFO = vkml_torch._C.device_info(0)
# coopmat_sg: the subgroup-scope coopmat kernels, where the device also has the workgroup-scope
# ones that coopmat then runs (elsewhere the two would run the same kernels)
PIPES = ["gemv", "small", "large", "split", "coopmat"] + (
    ["coopmat_sg"] if _INFO.get("cooperative_matrix_wg") else [])


def _coop_shader(dtype, wg_shape):
    """The coopmat kernel this device runs for a product of dtype: the workgroup-scope one for
    products it takes (wg_shape: plain, whole 128x128 tiles, K % 32 == 0, aligned row-major or
    transposed operands) where the device has it, else the subgroup-scope one."""
    f16 = dtype == torch.float16
    if wg_shape and f16 and _INFO.get("cooperative_matrix_wg"):
        return "gemm_coop_wg_f32"
    if wg_shape and not f16 and _INFO.get("cooperative_matrix_wg_bf16"):
        return "gemm_coop_wg_bf16"
    return "gemm_coop_f32" if f16 else "gemm_coop_bf16"


def _check_coop(dtype, seed):
    """Each product of dtype takes the expected coopmat kernel and is right: 300x200 @ 200x130
    (edge tiles: the subgroup-scope kernel), 256x192 @ 192x256 (whole tiles and k slices: the
    workgroup-scope one), the same with b transposed (nn.Linear's weight), with a bias (addmm:
    subgroup scope), and 256x200 @ 200x256 (a partial k slice: subgroup scope)."""
    import helpers
    g = torch.Generator().manual_seed(seed)
    for m, k, n, bias, bt in ((300, 200, 130, False, False), (256, 192, 256, False, False),
                              (256, 192, 256, False, True), (256, 192, 256, True, False),
                              (256, 200, 256, False, False)):
        a, b = torch.randn(m, k, generator=g).to(dtype), torch.randn(k, n, generator=g).to(dtype)
        x = torch.randn(n, generator=g).to(dtype)
        va, vx = a.to("vkml"), x.to("vkml")
        vb = b.t().contiguous().to("vkml").t() if bt else b.to("vkml")
        run = (lambda: torch.addmm(vx, va, vb)) if bias else (lambda: va @ vb)  # noqa: E731
        names = _shaders(run)
        want = _coop_shader(dtype, m % 128 == 0 and n % 128 == 0 and k % 32 == 0 and not bias)
        assert names and want in names[0], f"{m}x{k}x{n} bias={bias} b transposed={bt}: ran {names}, not {want}"
        got = run().cpu()
        ref = a.double() @ b.double() + (x.double() if bias else 0)
        helpers.assert_close_row(helpers.row("mm"), got, ref.to(dtype), a.double().abs() @ b.double().abs(), n=k)
        assert torch.equal(got.view(torch.uint8), run().cpu().view(torch.uint8))


def _cases(dtype, g):
    """(description, a, b, bias or None, alpha, beta, batched) on the CPU."""
    r = lambda *s: torch.randn(*s, generator=g, dtype=torch.float64).to(dtype)  # noqa: E731
    out = [("1x1x1", r(1, 1), r(1, 1)),
           ("odd 3x7 @ 7x5", r(3, 7), r(7, 5)),
           ("33x65 @ 65x17", r(33, 65), r(65, 17)),
           ("edge tiles 130x40 @ 40x70", r(130, 40), r(40, 70)),
           ("whole tiles 256x64 @ 64x128", r(256, 64), r(64, 128)),
           ("a transposed", r(40, 130).t(), r(40, 70)),
           ("b transposed (nn.Linear)", r(130, 48), r(70, 48).t()),
           ("both transposed", r(48, 128).t(), r(64, 48).t()),
           # whole tiles (the large and coopmat tiles' vector loads) in the other two layouts,
           # k = 72: whole k slices, then a partial one (element by element) in the same tile
           ("whole tiles, a transposed, k=72", r(72, 256).t(), r(72, 128)),
           ("whole tiles, b transposed, k=72", r(128, 72), r(256, 72).t()),
           # and whole k slices in both (coopmat: the workgroup-scope kernel's two other layouts)
           ("whole tiles, a transposed, k=64", r(64, 256).t(), r(64, 128)),
           ("whole tiles, b transposed, k=64", r(128, 64), r(256, 64).t()),
           ("stepped b", r(129, 33), r(33, 140)[:, ::2]),
           ("unaligned a (offset 1)", r(130, 33)[:, 1:], r(32, 64)),
           ("m=1 k=300", r(1, 300), r(300, 64)),
           ("n=1 k=300", r(64, 300), r(300, 1)),
           ("m=1, b transposed", r(1, 96), r(40, 96).t()),
           ("k=0", r(5, 0), r(0, 6)),
           ("empty m=0", r(0, 4), r(4, 6)),
           ("long k 2x3000 @ 3000x3", r(2, 3000), r(3000, 3))]
    cases = [(d, a, b, None, 1, 0, False) for d, a, b in out]
    cases.append(("addmm bias (n,), alpha 2 beta 0.5", r(130, 40), r(40, 70), r(70), 2, 0.5, False))
    cases.append(("addmm bias transposed", r(33, 8), r(8, 20), r(20, 33).t(), 1, 1, False))
    cases.append(("bmm 3x33x20 @ 3x20x17", r(3, 33, 20), r(3, 20, 17), None, 1, 0, True))
    cases.append(("bmm 2x130x16 @ b transposed", r(2, 130, 16), r(2, 70, 16).transpose(1, 2), None, 1, 0, True))
    cases.append(("bmm whole tiles 2x128x64 @ 2x64x128", r(2, 128, 64), r(2, 64, 128), None, 1, 0, True))
    special = r(20, 40)
    special[0, 0], special[3, 5], special[7, 1] = math.nan, math.inf, -math.inf
    cases.append(("NaN/Inf in a", special, r(40, 70), None, 1, 0, False))
    return cases


def _run(desc, a, b, bias, alpha, beta, batched, dev):
    a, b = same_view(a, dev), same_view(b, dev)
    if batched:
        return torch.bmm(a, b)
    if bias is not None:
        return torch.addmm(same_view(bias, dev), a, b, beta=beta, alpha=alpha)
    return a @ b


def child(pipe):
    """Runs every case on vkml with VKML_GEMM_PIPE=pipe; raises on the first failure."""
    import helpers
    import vkml_torch  # noqa: F401
    assert os.environ.get("VKML_GEMM_PIPE") == pipe
    row = helpers.row("mm")
    dtypes = [torch.float32, torch.float16, torch.bfloat16]
    if vkml_torch._C.device_info(0)["float64"]:
        dtypes.append(torch.float64)
    count = 0
    for dtype in dtypes:
        g = torch.Generator().manual_seed(0)
        for desc, a, b, bias, alpha, beta, batched in _cases(dtype, g):
            what = f"[{pipe}] {desc} {dtype}"
            got = _run(desc, a, b, bias, alpha, beta, batched, "vkml").cpu()
            a64, b64 = a.double(), b.double()
            ref = alpha * (a64 @ b64)
            scale = abs(alpha) * (a64.abs() @ b64.abs())
            if bias is not None:
                ref = ref + beta * bias.double()
                scale = scale + abs(beta) * bias.double().abs()
            helpers.assert_close_row(row, got, ref.to(dtype), scale, n=a.shape[-1], what=what)
            again = _run(desc, a, b, bias, alpha, beta, batched, "vkml").cpu()
            assert torch.equal(got.view(torch.uint8), again.view(torch.uint8)), f"{what}: two runs differ"
            count += 1
    # unscaled randn at a size that takes each tile's fast loads, float32
    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(256, 512, generator=g), torch.randn(512, 192, generator=g)
    got = (a.to("vkml") @ b.to("vkml")).cpu()
    helpers.assert_close_row(row, got, (a.double() @ b.double()).float(), a.double().abs() @ b.double().abs(), n=512,
                             what=f"[{pipe}] randn 256x512x192")
    count += _rounding_cases(pipe)
    print(f"{pipe}: {count + 1} cases passed")


def _rounding_cases(pipe):
    """16-bit outputs are rounded to nearest even, as torch's CPU and CUDA round their float32
    sums: integer operands whose every partial sum is exact in float32 (|sum| < 2^24, in any
    order), so the only rounding is the output's, and the bytes must be torch's. The sums need
    more bits than the dtype has (float16 is exact to 2048, bfloat16 to 256), so a kernel that
    truncates, or rounds through another format, differs in about half of them. Whole 128x128
    tiles (the workgroup-scope coopmat kernel where the device has it) and edge tiles."""
    g = torch.Generator().manual_seed(7)
    n = 0
    for dtype, hi in ((torch.float16, 33), (torch.bfloat16, 17)):
        for m, k, nn in ((256, 128, 256), (130, 96, 70)):
            a = torch.randint(-hi, hi, (m, k), generator=g).to(dtype)
            b = torch.randint(-hi, hi, (k, nn), generator=g).to(dtype)
            exact = a.double() @ b.double()
            want = exact.float().to(dtype)  # the exact sum, rounded once to nearest even
            assert not torch.equal(want.double(), exact), "the sums must need rounding"
            got = (a.to("vkml") @ b.to("vkml")).cpu()
            bad = (got.view(torch.int16) != want.view(torch.int16)).sum().item()
            assert bad == 0, (f"[{pipe}] {m}x{k}x{nn} {dtype}: {bad} of {got.numel()} outputs are not the exact "
                              f"sum rounded to nearest even, e.g. {got[got != want][:4].tolist()} "
                              f"for {want[got != want][:4].tolist()}")
            n += 1
    return n


def _child_env(pipe):
    env = dict(os.environ, VKML_GEMM_PIPE=pipe, VKML_CHECK="1")
    env.setdefault("VKML_MIN_SPEC", "0")
    return env


@pytest.mark.parametrize("pipe", PIPES)
def test_pipeline_forced(pipe):
    p = subprocess.run([sys.executable, os.path.abspath(__file__), pipe], cwd=HERE, env=_child_env(pipe),
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, f"VKML_GEMM_PIPE={pipe} failed:\n{p.stdout[-3000:]}\n{p.stderr[-6000:]}"
    assert "cases passed" in p.stdout


def _shaders(fn):
    import vkml_torch
    torch.vkml.synchronize()
    with vkml_torch.profile() as p:
        fn()
        torch.vkml.synchronize()
    return [name for name, *_ in p.kernels if "gemm" in name]


@pytest.mark.skipif(os.environ.get("VKML_GEMM_PIPE", "") != "", reason="VKML_GEMM_PIPE forces one pipeline: the choice by shape is not made")
@pytest.mark.parametrize("shape,want", [
    ((1, 4096, 256), "gemm_gemv"),    # m = 1
    ((512, 64, 1), "gemm_gemv"),      # n = 1
    ((20, 30, 40), "gemm_f"),         # small tile
    ((256, 64, 128), "gemm_large"),   # a large output
])
def test_choice_by_shape(shape, want):
    m, k, n = shape
    a, b = torch.randn(m, k, device="vkml"), torch.randn(k, n, device="vkml")
    names = _shaders(lambda: a @ b)
    assert names and all(want in s for s in names[:1]), f"{shape}: ran {names}, expected {want}"


@pytest.mark.skipif(os.environ.get("VKML_GEMM_PIPE", "") != "", reason="VKML_GEMM_PIPE forces one pipeline: the choice by shape is not made")
def test_long_k_few_outputs_splits():
    a, b = torch.randn(4, 8192, device="vkml"), torch.randn(8192, 4, device="vkml")
    names = _shaders(lambda: a @ b)
    assert len(names) == 2, f"expected a chunk pass and an ordered sum pass, ran {names}"
    ref = a.cpu().double() @ b.cpu().double()
    import helpers
    got = (a @ b).cpu()
    helpers.assert_close_row(helpers.row("mm"), got, ref.float(), a.cpu().double().abs() @ b.cpu().double().abs(), n=8192)
    assert torch.equal(got, (a @ b).cpu())


_SPLIT_CHILD = """
import sys, torch, vkml_torch
sys.path.insert(0, {here!r})
import helpers
g = torch.Generator().manual_seed(5)
a, b = torch.randn(256, 2048, generator=g), torch.randn(2048, 128, generator=g)
va, vb = a.to("vkml"), b.to("vkml")
torch.vkml.synchronize()
with vkml_torch.profile() as p:
    got = (va @ vb).cpu()
helpers.assert_close_row(helpers.row("mm"), got, (a.double() @ b.double()).float(),
                         a.double().abs() @ b.double().abs(), n=2048)
print("gemm dispatches", len([k for k in p.kernels if "gemm" in k[0]]))
"""


@pytest.mark.parametrize("groups,dispatches", [(None, 2), ("1", 1), ("4", 1), ("5", 2)])
def test_split_threshold_from_the_environment(groups, dispatches):
    """256x2048 @ 2048x128 is 4 tiles of 128x64: by default (192) K splits and a second dispatch
    sums the chunks; VKML_GEMM_SPLIT_GROUPS=N splits only products of fewer than N tiles. Each
    result is checked against float64."""
    env = dict(os.environ)
    env.pop("VKML_GEMM_SPLIT_GROUPS", None)
    env.pop("VKML_GEMM_PIPE", None)  # the child makes the choice by shape, whatever this process forces
    if groups:
        env["VKML_GEMM_SPLIT_GROUPS"] = groups
    p = subprocess.run([sys.executable, "-c", _SPLIT_CHILD.format(here=HERE)], env=env, capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    assert f"gemm dispatches {dispatches}" in p.stdout, p.stdout


@pytest.mark.skipif(os.environ.get("VKML_GEMM_PIPE", "") != "", reason="VKML_GEMM_PIPE forces one pipeline: the choice by shape is not made")
def test_batched_long_k_gemv_splits():
    """bmm of [3, 1, 4096] @ [3, 4096, 2] (b a transposed view): the gemv pipeline with K in 8
    chunks per batch, so each chunk finds its batch as z / parts (the mutation campaign's
    gemm_gemv:25 showed no test had batches and chunks together)."""
    import helpers
    g = torch.Generator().manual_seed(11)
    a = torch.randn(3, 1, 4096, generator=g)
    b = torch.randn(3, 2, 4096, generator=g).transpose(1, 2)
    va, vb = a.to("vkml"), b.to("vkml")
    names = _shaders(lambda: torch.bmm(va, vb))
    assert len(names) == 2 and "gemm_gemv" in names[0], f"expected gemv chunks and an ordered sum pass, ran {names}"
    helpers.assert_close_row(helpers.row("bmm"), torch.bmm(va, vb).cpu(), torch.bmm(a.double(), b.double()).float(),
                             torch.bmm(a.double().abs(), b.double().abs()), n=4096)


def _gemv_order(v, lanes):
    """shaders/gemm_gemv.comp's documented order for one output whose products are v (float32):
    lane l adds k = l, l + lanes, ... in order, then the lanes' sums are added in lane order."""
    parts = [np.float32(0)] * lanes
    for k, x in enumerate(v):
        parts[k % lanes] = np.float32(parts[k % lanes] + x)
    s = np.float32(0)
    for p in parts:
        s = np.float32(s + p)
    return s


@pytest.mark.skipif(os.environ.get("VKML_GEMM_PIPE", "") != "", reason="VKML_GEMM_PIPE forces one pipeline: the choice by shape is not made")
@pytest.mark.parametrize("layout,lanes", [("b contiguous along n: column layout", 4), ("b transposed: dot layout", 32)])
def test_gemv_sums_in_its_documented_order(layout, lanes):
    """m = 1: the same bytes on every device, in the order the shader's header documents (the
    mutation campaign's gemm_gemv:2 and :4 swapped the two layouts and no tolerance could tell).
    a is ones, so each product is exact and each fma one rounded add; b holds integers up to 2^27,
    whose float32 sums round differently in different orders."""
    g = torch.Generator().manual_seed(5)
    K, N = 64, 24
    b = (torch.randint(-2 ** 27, 2 ** 27, (K, N), generator=g) * (torch.rand(K, N, generator=g) < 0.5)
         + torch.randint(-8, 8, (K, N), generator=g)).float()
    bt = b if lanes == 4 else b.t().contiguous().t()
    a = torch.ones(1, K)
    names = _shaders(lambda: a.to("vkml") @ bt.to("vkml"))
    assert names and "gemm_gemv" in names[0], f"ran {names}"
    got = (a.to("vkml") @ bt.to("vkml")).cpu()[0].numpy()
    want = np.array([_gemv_order(b[:, j].numpy(), lanes) for j in range(N)])
    other = np.array([_gemv_order(b[:, j].numpy(), 36 - lanes) for j in range(N)])
    assert not np.array_equal(want, other), "the inputs must tell the two orders apart"
    assert np.array_equal(got, want), f"{layout}: got {got}, documented order {want}"


def _needs_coop(feature, what):
    return pytest.mark.skipif(not _INFO.get(feature) or _INFO["max_shared_memory"] < 24576,
                              reason=f"the device has no {what} with 24 KiB of shared memory")


_CHOSEN_BY_SHAPE = pytest.mark.skipif(os.environ.get("VKML_GEMM_PIPE", "") != "",
                                      reason="VKML_GEMM_PIPE forces one pipeline: the choice by shape is not made")


# Where the device has VK_KHR_cooperative_matrix with float16 (the H100 and H200; lavapipe has
# none) and the 24 KiB of shared memory gemm_coop.comp takes (not under VKML_MIN_SPEC's 16 KiB),
# float16 matmuls must take it (or gemm_coop_wg.comp, _check_coop), and be right; bfloat16 ones
# take gemm_coop_bf16 where the device has that (below), else the large tile.
@_needs_coop("cooperative_matrix", "VK_KHR_cooperative_matrix with float16 (16x16x16, subgroup 32)")
@_CHOSEN_BY_SHAPE
def test_coopmat_chosen_for_float16():
    _check_coop(torch.float16, 3)
    g = torch.Generator().manual_seed(3)
    va, vb = torch.randn(300, 200, generator=g).to("vkml"), torch.randn(200, 130, generator=g).to("vkml")
    bf16 = _coop_shader(torch.bfloat16, False) if _INFO.get("cooperative_matrix_bf16") else "gemm_large"
    names = _shaders(lambda: va.bfloat16() @ vb.bfloat16())
    assert names and bf16 in names[-1], f"bfloat16 ran {names}, not {bf16}"


# Where the device has VK_KHR_cooperative_matrix with bfloat16 (VK_KHR_shader_bfloat16: the H100
# and H200 with driver 580; lavapipe has neither), bfloat16 matmuls take gemm_coop_bf16.comp,
# whole tiles too, and are right: the 16-bit words it moves are read and written as bfloat16 (as
# float16 they would be other numbers).
@_needs_coop("cooperative_matrix_bf16", "VK_KHR_cooperative_matrix with bfloat16 (16x16x16, subgroup 32)")
@_CHOSEN_BY_SHAPE
def test_coopmat_chosen_for_bfloat16():
    _check_coop(torch.bfloat16, 4)


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    child(sys.argv[1])
