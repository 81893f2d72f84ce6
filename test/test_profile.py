"""vkml_torch.profile(): GPU timestamps per kernel. Names and counts are exact for a known op
sequence; times are positive, inside their submission and within the block's wall time; nothing
is written outside a block; check mode, empty blocks, errors and a device without timestamps.
Speed is never asserted."""
import json
import re
import time

import pytest
import torch
import vkml_torch
from vkml_torch import _profile

from helpers import DEV


def _inputs():
    vkml_torch.flushes_subnormals(torch.float32)  # check mode's one-time probe (x * 1), untimed
    a, b = torch.randn(1000).to(DEV), torch.randn(1000).to(DEV)
    torch.vkml.synchronize()
    return a, b


def _counts(p):
    return {k: n for k, n, *_ in p.summary()}


def _known_sequence(a, b):
    for _ in range(3):
        c = a + b
        d = c * 2
    return d.sum().item()  # one reduction, one download


def _row_kernels(p, row):
    return {k: n for k, n in _counts(p).items() if k.startswith(row + " [")}


def test_kernels_named_and_counted_exactly():
    """Fusion off: one kernel per node, named by its row (fused below)."""
    a, b = _inputs()
    vkml_torch.set_fuse(False)
    try:
        with vkml_torch.profile() as p:
            v = _known_sequence(a, b)
    finally:
        vkml_torch.set_fuse(True)
    assert p.available, p.why
    assert v == pytest.approx(((a.cpu() + b.cpu()) * 2).sum().item(), rel=1e-4)
    c = _counts(p)
    add, mul = _row_kernels(p, "add"), _row_kernels(p, "mul")
    assert list(add.values()) == [3] and list(mul.values()) == [3], c
    assert all("elementwise_f32" in k for k in list(add) + list(mul)), c
    assert sum(_row_kernels(p, "sum").values()) >= 1 and all("reduce_f32" in k for k in _row_kernels(p, "sum"))
    assert set(c) == set(add) | set(mul) | set(_row_kernels(p, "sum")) | {"copy device->host"}, c
    assert len(p.kernels) == sum(c.values())
    if not vkml_torch.check_enabled():  # (check mode also downloads every operand: see below)
        assert c["copy device->host"] == 1, c
        assert p.host["nodes"] == 3 + 3 + 1 + 1  # adds, muls, sum, the download's copy


def test_a_fused_chain_is_one_kernel_named_by_its_rows():
    """Fusion on (the default): the six elementwise nodes run as one fused dispatch, timed as
    one kernel named by the rows it runs (docs/fusion.md)."""
    a, b = _inputs()
    with vkml_torch.profile() as p:
        v = _known_sequence(a, b)
    assert p.available, p.why
    assert v == pytest.approx(((a.cpu() + b.cpu()) * 2).sum().item(), rel=1e-4)
    c = _counts(p)
    fused = {k: n for k, n in c.items() if k.startswith("fused")}
    assert list(fused.values()) == [1] and re.fullmatch(r"fused\(add,mul,add,mul,add,mul\) \[fused(_spec)?_f32(_ieee)?\]",
                                                       next(iter(fused))), c
    assert not _row_kernels(p, "add") and not _row_kernels(p, "mul"), c


def test_times_positive_ordered_and_within_the_block():
    a, b = _inputs()
    t0 = time.perf_counter()
    with vkml_torch.profile() as p:
        _known_sequence(a, b)
        x = torch.randn(64, 64).to(DEV)
        torch.softmax(x @ x, dim=1).sum().item()
    wall = time.perf_counter() - t0
    assert p.kernels and p.submissions
    subs = {t: (s, e) for t, s, e in p.submissions}
    assert len(subs) == len(p.submissions) == p.host["submits"]
    prev_end = -1.0
    for name, sub, s, e in p.kernels:
        assert 0.0 <= s < e, (name, s, e)
        assert subs[sub][0] <= s and e <= subs[sub][1], (name, sub, s, e, subs[sub])
        assert s >= prev_end - 1e-6, "kernels overlap: a barrier separates every command"
        prev_end = e
    tickets = [t for t, _, _ in p.submissions]
    assert tickets == sorted(tickets)
    busy = p.gpu_time_ns()
    assert 0 < busy <= p.wall_s * 1e9 <= wall * 1e9
    assert p.submissions[-1][2] - p.submissions[0][1] <= wall * 1e9
    assert sum(f for *_, f in p.summary()) == pytest.approx(1.0)
    assert all(g >= 0 for g in p.gaps_ns()) and len(p.gaps_ns()) == len(p.submissions) - 1


def test_table_sorted_by_total_time(capsys):
    a, b = _inputs()
    with vkml_torch.profile() as p:
        _known_sequence(a, b)
    p.table()
    out = capsys.readouterr().out
    assert out.strip() == p.table_text().strip()
    lines = out.splitlines()
    assert lines[0].split() == ["kernel", "calls", "total", "ms", "mean", "us", "%", "GPU"]
    rows = lines[2:2 + len(p.summary())]
    totals = [float(r.split()[-3]) for r in rows]
    assert totals == sorted(totals, reverse=True)
    assert [r.rsplit(None, 4)[0].strip() for r in rows] == [k for k, *_ in p.summary()]
    assert "idle between submissions" in out and "GPU busy" in out


def test_chrome_trace_loads(tmp_path):
    a, b = _inputs()
    with vkml_torch.profile() as p:
        _known_sequence(a, b)
    path = tmp_path / "trace.json"
    p.export_chrome_trace(str(path))
    doc = json.loads(path.read_text())
    ev = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    kern = [e for e in ev if e["cat"] == "kernel"]
    assert [e["name"] for e in kern] == [k[0] for k in p.kernels]
    assert len([e for e in ev if e["cat"] == "submission"]) == len(p.submissions)
    assert all(e["dur"] > 0 and e["ts"] >= 0 for e in kern)
    assert {e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M"} >= {"vkml GPU", "kernels"}


def test_no_queries_outside_a_block():
    a, b = _inputs()
    w0 = vkml_torch._C._timestamps_written()
    _known_sequence(a, b)
    torch.vkml.synchronize()
    assert vkml_torch._C._timestamps_written() == w0
    with vkml_torch.profile() as p:
        _known_sequence(a, b)
    # per submission: its start and end, and a start and end per kernel
    assert vkml_torch._C._timestamps_written() - w0 == 2 * len(p.submissions) + 2 * len(p.kernels)
    w1 = vkml_torch._C._timestamps_written()
    _known_sequence(a, b)
    assert vkml_torch._C._timestamps_written() == w1


def test_pending_work_before_the_block_is_not_timed():
    a, b = _inputs()
    for _ in range(5):
        a = a + b  # pending when the block starts
    with vkml_torch.profile() as p:
        (a * 2).sum().item()
    assert _row_kernels(p, "add") == {} and sum(_row_kernels(p, "mul").values()) == 1


def test_empty_block(tmp_path):
    with vkml_torch.profile() as p:
        pass
    assert p.available and p.kernels == [] and p.submissions == [] and p.summary() == []
    assert p.gpu_time_ns() == 0 and p.gaps_ns() == []
    assert "GPU busy 0.000 ms in 0 kernel(s), 0 submission(s)" in p.table_text()
    p.export_chrome_trace(str(tmp_path / "e.json"))
    assert not [e for e in json.loads((tmp_path / "e.json").read_text())["traceEvents"] if e["ph"] == "X"]


def test_check_mode_times_the_same_kernels():
    """Under check mode every node runs alone (and its operands are downloaded): the compute
    kernels are the same, with as many calls; only copies are added. (The one-time subnormal
    probe, x * 1, runs first, outside the blocks.)"""
    a, b = _inputs()
    vkml_torch.set_check(False)
    with vkml_torch.profile() as plain:
        _known_sequence(a, b)
    vkml_torch.set_check(True)
    with vkml_torch.profile() as checked:
        _known_sequence(a, b)
    compute = lambda p: {k: n for k, n in _counts(p).items() if not k.startswith("copy")}  # noqa: E731
    assert compute(checked) == compute(plain)
    assert _counts(checked)["copy device->host"] > _counts(plain)["copy device->host"]
    assert len(checked.submissions) > len(plain.submissions)


def test_blocks_do_not_nest_and_errors_end_profiling():
    a, b = _inputs()
    with vkml_torch.profile():
        with pytest.raises(RuntimeError, match="do not nest"):
            with vkml_torch.profile():
                pass
    with pytest.raises(ZeroDivisionError):
        with vkml_torch.profile():
            a + b
            1 / 0
    w0 = vkml_torch._C._timestamps_written()
    _known_sequence(a, b)
    assert vkml_torch._C._timestamps_written() == w0  # off again after the error
    with vkml_torch.profile() as p:  # and usable again
        _known_sequence(a, b)
    assert p.kernels


class _NoTimestamps:
    """_C as on a device whose queue has timestampValidBits == 0 (the backend's answer)."""

    def __init__(self, real):
        self.real = real

    def __getattr__(self, name):
        return getattr(self.real, name)

    def _profile_set(self, on):
        self.real._profile_set(False)
        return "the compute queue of X has no timestamps (timestampValidBits is 0)" if on else ""


def test_device_without_timestamps_degrades(monkeypatch):
    monkeypatch.setattr(_profile, "_C", _NoTimestamps(_profile._C))
    a, b = _inputs()
    w0 = vkml_torch._C._timestamps_written()
    with pytest.warns(UserWarning, match="no GPU timestamps"):
        with vkml_torch.profile() as p:
            v = _known_sequence(a, b)
    assert v == pytest.approx(((a.cpu() + b.cpu()) * 2).sum().item(), rel=1e-4)
    assert not p.available and p.kernels == [] and "timestampValidBits is 0" in p.table_text()
    assert vkml_torch._C._timestamps_written() == w0
