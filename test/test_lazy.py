"""Laziness: ops record nodes; observation flushes; batches are bounded; eager mode submits per op."""
import os
import subprocess
import sys
import textwrap

import pytest
import torch
import vkml_torch

from helpers import DEV, assert_exact, delta, stats


@pytest.fixture(autouse=True)
def _lazy_mode():
    """These tests measure the lazy path itself: no check mode (it may add work), no eager."""
    vkml_torch.set_check(False)
    vkml_torch.set_eager(False)
    torch.vkml.synchronize()
    yield


def _chain(x, n):
    """n elementwise ops whose every intermediate is exact in float32, so CPU == vkml bitwise."""
    for i in range(n):
        x = x + 0.5 if i % 2 == 0 else x * 0.5
    return x


def test_200_ops_cost_at_most_2_submits():
    src = torch.linspace(-4, 4, 257)
    x = src.to(DEV)
    torch.vkml.synchronize()
    s0 = stats()
    y = _chain(x, 200)
    s1 = stats()
    assert s1["submits"] == s0["submits"], "recording ops submitted work before anything was observed"
    assert s1["pending"] >= 200, f"expected >= 200 pending nodes, stats={s1}"
    out = y.cpu()
    s2 = stats()
    d = delta(s0, s2)
    assert d["nodes"] >= 200, d
    assert 1 <= d["submits"] <= 2, f"200 chained ops then .cpu() cost {d['submits']} submits (bound 2): {d}"
    assert d["flushes"] >= 1 and s2["pending"] == 0, s2
    assert_exact(out, _chain(src, 200))


def test_eager_submits_every_op():
    vkml_torch.set_eager(True)
    x = torch.arange(8, dtype=torch.float32).to(DEV)
    s0 = stats()
    y = _chain(x, 10)
    s1 = stats()
    assert s1["pending"] == 0, f"eager mode left {s1['pending']} nodes pending"
    assert s1["submits"] - s0["submits"] >= 10, delta(s0, s1)
    assert_exact(y.cpu(), _chain(torch.arange(8, dtype=torch.float32), 10))
    vkml_torch.set_eager(False)
    z = y + 1
    assert stats()["pending"] >= 1, "set_eager(False) did not restore lazy recording"
    assert_exact(z.cpu(), _chain(torch.arange(8, dtype=torch.float32), 10) + 1)


@pytest.mark.parametrize("observe", ["synchronize", "item", "print", "tolist", "copy_to_cpu"])
def test_observation_flushes(observe, capsys):
    x = torch.arange(6, dtype=torch.float32).to(DEV)
    torch.vkml.synchronize()
    s0 = stats()
    y = _chain(x, 6)
    assert stats()["pending"] >= 6
    want = _chain(torch.arange(6, dtype=torch.float32), 6)
    if observe == "synchronize":
        torch.vkml.synchronize()
    elif observe == "item":
        assert y[3].item() == want[3].item()
    elif observe == "print":
        print(y)
    elif observe == "tolist":
        assert y.tolist() == want.tolist()
    else:
        assert_exact(y.to("cpu"), want)
    s1 = stats()
    assert s1["pending"] == 0, f"{observe} left {s1['pending']} nodes pending"
    assert s1["submits"] > s0["submits"] and s1["flushes"] > s0["flushes"], delta(s0, s1)
    capsys.readouterr()


def test_no_work_means_no_submit():
    torch.vkml.synchronize()
    s0 = stats()
    torch.vkml.synchronize()
    assert stats()["submits"] == s0["submits"], "synchronize with nothing pending submitted work"


def test_pending_bound_default():
    """Past VKML_MAX_PENDING (default 4096) nodes, recording flushes on its own."""
    if os.environ.get("VKML_MAX_PENDING"):
        pytest.skip("VKML_MAX_PENDING is set in the environment; this test checks the default of 4096")
    x = torch.zeros(16).to(DEV)
    torch.vkml.synchronize()
    s0 = stats()
    peak = 0
    for i in range(4200):
        x = x + 1.0
        if i % 50 == 0 or i > 4080:
            peak = max(peak, stats()["pending"])
    s1 = stats()
    assert peak <= 4096, f"pending reached {peak} > 4096"
    assert s1["submits"] > s0["submits"], "4200 pending nodes never flushed before observation"
    assert_exact(x.cpu(), torch.full((16,), 4200.0))


def test_pending_bound_env():
    code = textwrap.dedent("""
        import torch, vkml_torch
        x = torch.zeros(8).to("vkml"); torch.vkml.synchronize()
        s0 = vkml_torch.stats(); peak = 0
        for i in range(200):
            x = x + 1.0
            peak = max(peak, vkml_torch.stats()["pending"])
        s1 = vkml_torch.stats()
        print(peak, s1["submits"] - s0["submits"], x.cpu().tolist() == [200.0] * 8)
    """)
    env = dict(os.environ, VKML_MAX_PENDING="50", VKML_CHECK="0", VKML_EAGER="0")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    peak, submits, ok = r.stdout.split()
    assert int(peak) <= 50, f"VKML_MAX_PENDING=50 but {peak} nodes were pending"
    assert int(submits) >= 3, f"200 nodes with a bound of 50 flushed only {submits} times before observation"
    assert ok == "True"


def test_nodes_alike_but_for_address_alignment_or_strides():
    """Recording remembers the last elementwise nodes it accepted (backend/vulkan/lower.cpp
    can_lower) and skips the lowering for their like. Nodes that differ only in what that memory
    must tell apart (the address's alignment, which picks the vectorised path; strides; sizes;
    dtypes; a scalar instead of a tensor) follow each other here, and every result must still be
    torch CPU's, bit for bit (float32 add and mul are correctly rounded on both). The memory only
    decides acceptance (submit lowers every node again), so what this can catch is a result that
    changes when recording takes the remembered answer. The elementwise lowering refuses only
    nodes over gigabytes (strided byte offsets past 2^31), too big for the CI device, so the key's
    parts are checked by reading, not here."""
    src = torch.randn(4099, generator=torch.Generator().manual_seed(5))
    x = src.to(DEV)
    cases = []
    for _ in range(2):
        for off in (0, 1, 2, 4, 1, 0):                      # aligned, misaligned, aligned again
            cases.append(lambda t, o=off: t[o:o + 4000] + t[o + 3:o + 4003])
        cases.append(lambda t: t[:4000:2] + t[1:4001:2])     # strided
        cases.append(lambda t: t[:4000].view(40, 100).t() * t[:40])  # transposed, broadcast
        cases.append(lambda t: t[:4000] + 2.5)               # scalar b
        cases.append(lambda t: t[:4000].double() + t[1:4001].double())
        cases.append(lambda t: t[:0] + t[:0])                 # empty
    outs = [f(x) for f in cases]
    for f, got in zip(cases, outs):
        assert_exact(got, f(src))


def test_submit_early_starts_pending_matrix_products():
    """Early submission (VKML_SUBMIT_EARLY=M; on GPUs 1000 by default, off on lavapipe): once M
    MFLOP of matrix products are pending, recording submits the batch without waiting. Off, or
    below M, nothing is submitted before an observation; elementwise work never counts. The
    results are the same bytes as with it off, and within the standard bound of a K-term float32
    sum of torch CPU's: |err| <= K * 2^-24 * (|A| @ |B|) per output."""
    vkml_torch.set_check(False)  # check mode submits every node on its own
    g = torch.Generator().manual_seed(4)
    a, b = torch.randn(128, 64, generator=g), torch.randn(64, 96, generator=g)  # 2*128*96*64 = 1.57 MFLOP
    x = torch.randn(1 << 16, generator=g)
    da, db, dx = a.to(DEV), b.to(DEV), x.to(DEV)
    results = {}
    try:
        for mflop, early in ((0, 0), (1, 1), (2, 0)):
            vkml_torch._C._set_submit_early(mflop)
            torch.vkml.synchronize()
            s0 = stats()
            y = (dx * 2 + 1).abs() - 0.5  # elementwise: never a reason to submit early
            s1 = stats()
            c = (da * 2) @ db
            s2 = stats()
            d = c.relu() + 1
            s3 = stats()
            assert s1["submits"] == s0["submits"], f"M={mflop}: elementwise work was submitted early"
            assert s2["submits"] - s1["submits"] == early, f"M={mflop}: {s2['submits'] - s1['submits']} early submissions"
            assert s3["submits"] == s2["submits"]
            results[mflop] = (d.cpu(), y.cpu())
    finally:
        vkml_torch._C._set_submit_early(-1)
    for m in (1, 2):
        assert torch.equal(results[m][0], results[0][0]) and torch.equal(results[m][1], results[0][1])
    ref = ((a * 2) @ b).relu() + 1
    bound = 64 * 2.0 ** -24 * ((a * 2).abs() @ b.abs())
    assert ((results[0][0] - ref).abs() <= bound).all()
    assert torch.equal(results[0][1], (x * 2 + 1).abs() - 0.5)


def test_submit_early_counts_across_products():
    """A chain of 20 dependent products of 2.36 MFLOP each under VKML_SUBMIT_EARLY=5: the pending
    sum reaches 5 MFLOP at every third product and starts again after each submission, so exactly
    6 early submissions, at the same points whatever the device's speed (a training step's batches
    are the same every step); the result is the same bytes as with early submission off, and the
    batches in flight at once keep every intermediate alive."""
    vkml_torch.set_check(False)
    g = torch.Generator().manual_seed(5)
    a, w = torch.randn(128, 96, generator=g), torch.randn(96, 96, generator=g) / 10  # 2*128*96*96 = 2.36 MFLOP
    out = {}
    try:
        for mflop, want in ((0, 0), (5, 6)):
            vkml_torch._C._set_submit_early(mflop)
            c, dw = a.to(DEV), w.to(DEV)
            torch.vkml.synchronize()
            s0 = stats()
            for _ in range(20):
                c = c @ dw
            assert stats()["submits"] - s0["submits"] == want, mflop
            out[mflop] = c.cpu()
    finally:
        vkml_torch._C._set_submit_early(-1)
    assert torch.equal(out[0], out[5])
    # against float64 on the CPU, within the first-order bound of 20 chained K=96 float32 sums:
    # |err| <= 20 * 96 * 2^-24 * (|a| @ |w|^20)
    ref, mag = a.double(), a.double().abs()
    for _ in range(20):
        ref, mag = ref @ w.double(), mag @ w.double().abs()
    assert ((out[0].double() - ref).abs() <= 20 * 96 * 2.0 ** -24 * mag).all()
