"""Errors: missing kernels name the op and the opt-in fallback; shape errors match the CPU's type;
running out of device memory raises torch.OutOfMemoryError and the process keeps working."""
import os

import pytest
import torch

from helpers import DEV, assert_exact

MISSING = {
    "cumsum": lambda t: torch.cumsum(t, 0),
    "sort": lambda t: torch.sort(t),
}


@pytest.mark.parametrize("name", list(MISSING))
def test_missing_kernel_names_op_and_fallback(name):
    if os.environ.get("VKML_CPU_FALLBACK") == "1":
        pytest.skip("VKML_CPU_FALLBACK=1 in the environment turns this error into a fallback (test_env covers it)")
    x = torch.randn(5).to(DEV)
    with pytest.raises(NotImplementedError) as e:
        MISSING[name](x)
        torch.vkml.synchronize()
    msg = str(e.value)
    assert f"aten::{name}" in msg, msg
    assert "VKML_CPU_FALLBACK" in msg, msg
    assert_exact((x + 1).cpu(), x.cpu() + 1)  # and the device still works


SHAPE_ERRORS = {
    "broadcast mismatch": lambda d: torch.ones(3, 4, device=d) + torch.ones(5, device=d),
    "in-place cannot broadcast self": lambda d: torch.ones(3, 1, device=d).add_(torch.ones(3, 4, device=d)),
    "in-place int self, float other": lambda d: torch.ones(3, dtype=torch.int64, device=d).add_(torch.ones(3, device=d)),
    "mm inner mismatch": lambda d: torch.ones(3, 4, device=d) @ torch.ones(5, 2, device=d),
    "mm of 1-D": lambda d: torch.mm(torch.ones(3, device=d), torch.ones(3, 2, device=d)),
    "mm dtype mismatch": lambda d: torch.mm(torch.ones(2, 2, device=d), torch.ones(2, 2, dtype=torch.float64, device=d)),
    "bmm batch mismatch": lambda d: torch.bmm(torch.ones(2, 3, 4, device=d), torch.ones(3, 4, 5, device=d)),
    "addmm bias mismatch": lambda d: torch.addmm(torch.ones(7, device=d), torch.ones(3, 4, device=d), torch.ones(4, 5, device=d)),
    "view incompatible size": lambda d: torch.ones(3, 4, device=d).view(5, 3),
    "view of transposed": lambda d: torch.ones(3, 4, device=d).t().view(12),
    "sum dim out of range": lambda d: torch.ones(3, 4, device=d).sum(5),
    "softmax dim out of range": lambda d: torch.log_softmax(torch.ones(3, 4, device=d), 3),
    "argmax of empty": lambda d: torch.argmax(torch.ones(0, device=d)),
    "amax of empty": lambda d: torch.amax(torch.ones(0, 3, device=d), 0),
    "nll target shape": lambda d: torch.nn.functional.nll_loss(torch.ones(4, 3, device=d), torch.zeros(5, dtype=torch.long, device=d)),
    "nll float target": lambda d: torch.nn.functional.nll_loss(torch.ones(4, 3, device=d), torch.zeros(4, device=d)),
    "out= wrong dtype": lambda d: torch.add(torch.ones(2, device=d), 1, out=torch.empty(2, dtype=torch.int64, device=d)),
    "bitwise_and on float": lambda d: torch.ones(2, device=d) & torch.ones(2, device=d),
    "expand to smaller": lambda d: torch.ones(3, 4, device=d).expand(2, 4),
}


@pytest.mark.parametrize("name", list(SHAPE_ERRORS))
def test_error_type_matches_cpu(name):
    f = SHAPE_ERRORS[name]
    with pytest.raises(Exception) as cpu:
        f("cpu")
    try:
        r = f(DEV)
        torch.vkml.synchronize()
    except Exception as e:
        assert type(e) is type(cpu.value), (f"CPU raised {type(cpu.value).__name__}: {cpu.value}\n"
                                           f"vkml raised {type(e).__name__}: {e}")
    else:
        pytest.fail(f"CPU raised {type(cpu.value).__name__} ({cpu.value}); vkml returned {tuple(r.shape)}")


def test_out_of_memory_recovers():
    torch.vkml.synchronize()
    before = torch.vkml.memory_allocated()
    with pytest.raises(torch.OutOfMemoryError):
        t = torch.empty(1 << 40, dtype=torch.uint8, device=DEV)  # 1 TiB
        t.fill_(1)
        torch.vkml.synchronize()
    assert torch.vkml.memory_allocated() == before
    a = torch.arange(1000, dtype=torch.float32).to(DEV)
    assert_exact((a * 2 + 1).cpu(), torch.arange(1000, dtype=torch.float32) * 2 + 1)
    big = torch.ones(1 << 22, device=DEV)  # 16 MiB still allocates after the failure
    assert_exact((big[-1000:] * 3).cpu(), torch.full((1000,), 3.0))


def test_memory_pressure_releases_the_cache_and_retries():
    """Fill the heap with blocks, free them (they stay cached), then ask for a block larger than
    any cached one: it only fits because an allocation failure flushes, empties the cache and
    tries again."""
    props = torch.vkml.get_device_properties()
    heap, max_alloc = props.total_memory, props.max_allocation
    if heap > 8 << 30:
        pytest.skip(f"needs a device heap of at most 8 GiB to fill with cached blocks; this one has {heap >> 30} GiB")
    a = int(0.9 * min(max_alloc, heap // 2)) // 4096 * 4096
    torch.vkml.synchronize()
    torch.vkml.empty_cache()
    blocks = []
    while sum(b.numel() for b in blocks) < heap - a:
        blocks.append(torch.empty(a, dtype=torch.uint8, device=DEV))
        blocks[-1][:8].fill_(7)
    cached = sum(b.numel() for b in blocks)
    del blocks
    assert torch.vkml.memory_reserved() >= cached  # freed into the cache, still reserved
    b = a + a // 20  # larger than every cached block, and cached + b > heap
    assert cached + b > heap
    y = torch.empty(b, dtype=torch.uint8, device=DEV)
    y[-8:].fill_(5)
    assert y[-8:].cpu().tolist() == [5] * 8
    assert torch.vkml.memory_reserved() <= heap
    del y
    torch.vkml.empty_cache()


def test_staging_out_of_memory_releases_the_cache_and_retries():
    """Issue 7, finding 4, scaled to the device's heap: with the heap full of freed (cached) device
    blocks, reading a tensor back needs a staging block. Device::alloc flushed, emptied the cache
    and retried; the staging path only flushed and raised OutOfMemoryError. On a device whose
    staging memory is another heap (most discrete GPUs) this passes either way."""
    props = torch.vkml.get_device_properties()
    heap = props.total_memory
    if heap > 8 << 30:
        pytest.skip(f"needs a device heap of at most 8 GiB to fill with cached blocks; this one has {heap >> 30} GiB")
    torch.vkml.synchronize()
    torch.vkml.empty_cache()
    n = heap // 8 // 4096 * 4096  # x: the 256 MiB of a 2 GiB heap
    x = torch.empty(n, dtype=torch.uint8, device=DEV)
    x[:8].fill_(3)
    x[-8:].fill_(4)
    junk_size = min(heap // 32, props.max_allocation) // 4096 * 4096
    junk = []
    while torch.vkml.memory_reserved() + junk_size <= heap - n // 2:
        junk.append(torch.empty(junk_size, dtype=torch.uint8, device=DEV))
    del junk
    torch.vkml.synchronize()
    assert torch.vkml.memory_reserved() + n > heap  # the staging block cannot fit beside the cache
    y = x.cpu()  # the reproducer: OutOfMemoryError before the fix
    assert y[:8].tolist() == [3] * 8 and y[-8:].tolist() == [4] * 8
    del x, y
    torch.vkml.empty_cache()


@pytest.mark.parametrize("op,shapes", [
    ("bmm", [(2, 3, 4), (2, 4, 0)]), ("bmm", [(0, 3, 4), (0, 4, 5)]), ("bmm", [(2, 3, 0), (2, 0, 5)]),
    ("bmm", [(2, 3, 4), (2, 4, 5)]), ("mm", [(0, 4), (4, 5)]), ("mm", [(3, 0), (0, 5)]), ("mm", [(3, 4), (4, 5)]),
])
def test_matmul_of_mixed_dtypes_as_torch_cpu(op, shapes):
    """torch's CPU bmm returns an empty result, and zeros for k = 0, before its dtype check (and then
    says 'expected scalar type Float but found Half'); mm checks first. vkml does the same."""
    a, b = torch.randn(shapes[0]), torch.randn(shapes[1]).half()
    fn = getattr(torch, op)
    try:
        want = fn(a, b)
    except RuntimeError as e:
        with pytest.raises(RuntimeError) as got:
            fn(a.to(DEV), b.to(DEV)).cpu()
        assert str(got.value) == str(e)
        return
    assert_exact(fn(a.to(DEV), b.to(DEV)), want)


# Integer clamp bounds past the dtype's range: torch 2.13 wraps (uint8 -5 is 251) or raises an
# overflow error; torch 2.15 saturates a bound on the side where it cannot matter and raises
# "Clamp min value ... is outside the representable range of Byte" on the other. vkml follows the
# torch it was built against: the same result, or the same error type and first line.
CLAMP_BOUNDS = [(torch.uint8, -5, 50), (torch.uint8, 0, 300), (torch.uint8, 260, 270), (torch.uint8, None, -5),
                (torch.int8, -300, -5), (torch.int8, 200, None), (torch.int16, -40000, 40000),
                (torch.int32, -(2 ** 40), 7)]


@pytest.mark.parametrize("dtype,lo,hi", CLAMP_BOUNDS, ids=[f"{d}-{lo}-{hi}" for d, lo, hi in CLAMP_BOUNDS])
@pytest.mark.parametrize("form", ["clamp", "clamp_", "clamp_min_max"])
def test_integer_clamp_bounds_past_the_dtype_as_torch_cpu(dtype, lo, hi, form):
    x = torch.tensor([0, 3, 100, 127, -128, -1, 7], dtype=torch.int64).to(dtype)

    def f(t):
        if form == "clamp":
            return torch.clamp(t, lo, hi)
        if form == "clamp_":
            return t.clone().clamp_(lo, hi)
        r = t if lo is None else torch.clamp_min(t, lo)
        return r if hi is None else torch.clamp_max(r, hi)
    try:
        want = f(x)
    except RuntimeError as e:
        with pytest.raises(RuntimeError) as got:
            f(x.to(DEV)).cpu()
        assert str(got.value).splitlines()[0] == str(e).splitlines()[0]
    else:
        assert_exact(f(x.to(DEV)).cpu(), want)
