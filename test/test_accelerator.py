"""torch.accelerator, torch.get_device_module, torch.Generator, memory statistics and pinned memory
with vkml, called the way code written for CUDA calls them (only the device string changed)."""
import collections
import gc
import os

import pytest
import torch
import vkml_torch
from torch.utils.data import DataLoader, TensorDataset



def runs_at_record():
    """Check mode and eager mode run each node when it is recorded."""
    return vkml_torch.check_enabled() or vkml_torch._C.eager_enabled()


METRICS = ["allocated_bytes", "reserved_bytes", "active_bytes", "inactive_split_bytes", "requested_bytes",
           "allocation", "segment", "active", "inactive_split"]
POOLS = ["all", "small_pool", "large_pool"]
COUNTS = ["current", "peak", "allocated", "freed"]


def test_accelerator_answers_for_vkml():
    acc = torch.accelerator.current_accelerator()
    assert acc is not None and acc.type == "vkml"
    assert torch.accelerator.current_accelerator(check_available=True).type == "vkml"
    assert torch.accelerator.is_available() is True
    assert torch.accelerator.device_count() == torch.vkml.device_count() >= 1
    torch.accelerator.set_device_index(0)
    assert torch.accelerator.current_device_index() == 0
    with torch.accelerator.device_index(0):
        assert torch.accelerator.current_device_index() == 0
    x = torch.ones(8, device=acc) * 3
    assert vkml_torch.stats()["pending"] > 0 or runs_at_record()
    torch.accelerator.synchronize()
    assert vkml_torch.stats()["pending"] == 0
    assert x.sum().item() == 24


def test_get_device_module_is_torch_vkml():
    assert torch.get_device_module("vkml") is torch.vkml
    assert torch.get_device_module(torch.device("vkml", 0)) is torch.vkml
    assert torch.get_device_module() is torch.vkml  # the current accelerator's


def test_generator_on_vkml_draws_what_the_cpu_generator_draws():
    """In the CPU stream mode (docs/random.md); test_random.py tests the device stream's generator."""
    import vkml_torch
    prev = vkml_torch.get_rng_mode()
    vkml_torch.set_rng_mode("cpu")
    try:
        g = torch.Generator("vkml")
        assert g.device.type == "vkml"
        g.manual_seed(123)
        assert g.initial_seed() == 123
        ref = torch.Generator("cpu").manual_seed(123)
        for shape in [(5,), (3, 4)]:
            got = torch.randn(shape, device="vkml", generator=g)
            assert got.device.type == "vkml"
            assert torch.equal(got.cpu(), torch.randn(shape, generator=ref))
        state = g.get_state()
        assert state.dtype == torch.uint8 and torch.equal(state, ref.get_state())
        a = torch.rand(6, device="vkml", generator=g).cpu()
        g.set_state(state)
        assert torch.equal(torch.rand(6, device="vkml", generator=g).cpu(), a)
    finally:
        vkml_torch.set_rng_mode(prev)


def test_generators_are_independent_of_the_default():
    g = torch.Generator("vkml").manual_seed(5)
    torch.vkml.manual_seed(5)
    a = torch.randn(4, device="vkml", generator=g).cpu()
    b = torch.randn(4, device="vkml").cpu()  # the default generator, seeded alike
    assert torch.equal(a, b)
    c = torch.randn(4, device="vkml", generator=g).cpu()  # g moved on; the default did not draw for it
    torch.vkml.manual_seed(5)
    torch.randn(4, device="vkml")
    assert torch.equal(c, torch.randn(4, device="vkml").cpu())


def test_memory_stats_has_the_keys_of_torch_cuda():
    s = torch.vkml.memory_stats()
    assert isinstance(s, collections.OrderedDict) and list(s) == sorted(s)
    want = {f"{m}.{p}.{c}" for m in METRICS for p in POOLS for c in COUNTS}
    want |= {f"{m}.{c}" for m in ["oversize_allocations", "oversize_segments"] for c in COUNTS}
    want |= {"num_alloc_retries", "num_ooms", "num_sync_all_streams", "num_device_alloc", "num_device_free",
             "max_split_size"}
    assert want <= set(s), sorted(want - set(s))
    assert s == torch.accelerator.memory_stats()


def test_memory_stats_count_allocations_per_pool():
    torch.vkml.synchronize()
    s0 = torch.vkml.memory_stats()
    small = torch.empty(100, device="vkml")  # 400 bytes: small pool (<= 1 MiB)
    big = torch.empty(3 << 20, dtype=torch.uint8, device="vkml")  # large pool
    s1 = torch.vkml.memory_stats()
    d = {k: s1[k] - s0[k] for k in s1}
    assert d["requested_bytes.all.current"] == 400 + (3 << 20)
    assert d["requested_bytes.small_pool.current"] == 400
    assert d["allocation.all.current"] == 2 and d["allocation.small_pool.current"] == 1
    assert d["allocated_bytes.large_pool.current"] == 3 << 20  # a multiple of the 512-byte rounding
    assert d["allocated_bytes.small_pool.current"] == 512
    assert s1["active_bytes.all.current"] == s1["allocated_bytes.all.current"]
    assert s1["reserved_bytes.all.current"] >= s1["allocated_bytes.all.current"]
    assert s1["allocated_bytes.all.peak"] >= s1["allocated_bytes.all.current"]
    assert torch.vkml.memory_allocated() == s1["allocated_bytes.all.current"] == torch.accelerator.memory_allocated()
    assert torch.vkml.memory_reserved() == s1["reserved_bytes.all.current"] == torch.accelerator.memory_reserved()
    del small, big
    s2 = torch.vkml.memory_stats()
    assert s2["allocated_bytes.all.current"] == s0["allocated_bytes.all.current"]
    assert s2["allocated_bytes.all.freed"] - s0["allocated_bytes.all.freed"] == 512 + (3 << 20)
    torch.vkml.reset_peak_memory_stats()
    s3 = torch.vkml.memory_stats()
    assert s3["allocated_bytes.all.peak"] == s3["allocated_bytes.all.current"]
    assert torch.vkml.max_memory_allocated() == torch.accelerator.max_memory_allocated() == s3["allocated_bytes.all.peak"]
    torch.vkml.reset_accumulated_memory_stats()
    s4 = torch.vkml.memory_stats()
    assert s4["allocation.all.allocated"] == s4["allocation.all.freed"] == 0 and s4["num_ooms"] == 0
    torch.vkml.empty_cache()
    assert torch.vkml.memory_reserved() >= torch.vkml.memory_allocated()


def test_memory_summary_has_the_table_of_torch_cuda():
    keep = torch.empty(1000, device="vkml")
    text = torch.vkml.memory_summary()
    lines = text.rstrip("\n").split("\n")
    assert all(len(line) == 77 and line[0] == line[-1] == "|" for line in lines), [len(x) for x in lines]
    assert "PyTorch vkml memory summary, device ID 0" in lines[1]
    assert "Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed" in text
    for name in ["Allocated memory", "from large pool", "from small pool", "GPU reserved segments",
                 "Non-releasable allocs", "Oversize GPU segments"]:
        assert name in text
    assert len(lines) == len(torch.vkml.memory_summary(abbreviated=True).rstrip("\n").split("\n")) + 18
    del keep


def test_memory_info():
    free, total = torch.accelerator.get_memory_info()
    assert (free, total) == torch.vkml.mem_get_info()
    assert total == torch.vkml.get_device_properties().total_memory
    assert 0 <= free <= total and total - free >= torch.vkml.memory_reserved()


def test_pin_memory_and_is_pinned():
    t = torch.arange(1000, dtype=torch.float32)
    assert not t.is_pinned()
    p = t.pin_memory()
    assert p.is_pinned() and p.device.type == "cpu" and torch.equal(p, t)
    assert p[10:20].is_pinned() and not p.clone().is_pinned()
    nc = torch.arange(12.0).view(3, 4).t()
    pn = nc.pin_memory()
    assert pn.is_pinned() and torch.equal(pn, nc)
    assert torch.empty(0).pin_memory().numel() == 0
    b = torch.empty(64, pin_memory=True)
    assert b.is_pinned()
    for dtype in [torch.float16, torch.bfloat16, torch.float64, torch.int64, torch.bool]:
        x = torch.arange(30).to(dtype).pin_memory()
        assert x.is_pinned()
        assert torch.equal(x.to("vkml", non_blocking=True).cpu(), x)
    if hasattr(torch.accelerator, "empty_host_cache"):  # torch >= 2.12 (the H200's 2.11 lacks it)
        torch.accelerator.empty_host_cache()
        assert torch.equal(x.to("vkml").cpu(), x)  # pinned memory still usable after the cache is emptied


def test_non_blocking_upload_from_pinned_memory_reads_it_directly():
    p = torch.arange(1000, dtype=torch.float32).pin_memory()
    d = p.to("vkml", non_blocking=True)
    d_blocking = p.to("vkml")  # its bytes are captured at the call
    p.fill_(-5)  # before anything is synchronized; CUDA leaves this undefined, for us it is exact
    got = d.cpu()
    assert torch.equal(d_blocking.cpu(), torch.arange(1000, dtype=torch.float32))
    if runs_at_record():
        assert torch.equal(got, torch.arange(1000, dtype=torch.float32))  # each op ran when recorded
    else:
        # The GPU copy ran at the synchronize and read the pinned bytes themselves: no staging copy.
        assert torch.equal(got, torch.full((1000,), -5.0))
    # Through a view and into a slice of a bigger tensor (an offset inside the pinned block).
    q = torch.arange(100, dtype=torch.int32).pin_memory()
    out = torch.zeros(50, dtype=torch.int32, device="vkml")
    out[10:20].copy_(q[40:50], non_blocking=True)
    assert out.cpu()[10:20].tolist() == list(range(40, 50)) and out.cpu()[:10].tolist() == [0] * 10


def test_download_into_pinned_memory_writes_it_directly():
    """vkml -> pinned host memory (vkml:0's): the GPU writes the pinned block itself, in one flush,
    where a pageable destination goes through 16 MiB staging blocks and a copy on the host (40 MiB:
    3 flushes). Every dtype, into a slice of a pinned tensor (the rest untouched), blocking or not."""
    n = 10 << 20  # 40 MiB of float32, exact integers
    d = torch.arange(n, dtype=torch.float32, device="vkml")
    torch.vkml.synchronize()

    def flushes(fn):
        before = vkml_torch.stats()["flushes"]
        fn()
        return vkml_torch.stats()["flushes"] - before

    pinned, pageable = torch.empty(n, pin_memory=True), torch.empty(n)
    assert flushes(lambda: pinned.copy_(d)) == 1
    assert flushes(lambda: pageable.copy_(d)) == 3
    assert torch.equal(pinned, torch.arange(n, dtype=torch.float32)) and torch.equal(pageable, pinned)
    for dtype in [torch.float16, torch.bfloat16, torch.float64, torch.int64, torch.int8, torch.bool]:
        for non_blocking in (False, True):
            x = (torch.arange(30) % 7).to(dtype)
            p = torch.zeros(40, dtype=dtype).pin_memory()
            p[5:35].copy_(x.to("vkml"), non_blocking=non_blocking)
            torch.vkml.synchronize()
            assert torch.equal(p[5:35], x), (dtype, non_blocking)
            assert not p[:5].any() and not p[35:].any(), (dtype, non_blocking)


def test_freeing_pinned_memory_waits_for_the_copies_that_read_it():
    n = 1 << 16
    p = torch.arange(n, dtype=torch.float32).pin_memory()
    d = p.to("vkml", non_blocking=True)
    del p
    gc.collect()
    junk = [torch.full((n,), -1.0).pin_memory() for _ in range(4)]  # would reuse a freed block
    assert torch.equal(d.cpu(), torch.arange(n, dtype=torch.float32))
    del junk


def test_dataloader_pin_memory():
    x = torch.arange(64, dtype=torch.float32).view(16, 4)
    y = torch.arange(16)
    loader = DataLoader(TensorDataset(x, y), batch_size=4, pin_memory=True)
    total = torch.zeros((), device="vkml")
    seen = 0
    for xb, yb in loader:
        assert xb.is_pinned() and yb.is_pinned()
        xb, yb = xb.to("vkml", non_blocking=True), yb.to("vkml", non_blocking=True)
        total += xb.sum() + yb.sum()
        seen += len(yb)
    assert seen == 16 and total.item() == x.sum().item() + y.sum().item()
