"""Run by test/test_multi_device.py in a process started with VKML_FAKE_DEVICES=2 (one physical
device presented as vkml:0 and vkml:1, each its own Vulkan device and context), so that the paths
for several devices run on a machine with one. Not collected by the suite itself (run with pytest
from test_multi_device.py). Results are compared with torch CPU; check mode (VKML_CHECK=1, from the
parent's environment) also checks every node against the oracle."""
import os
import threading

import pytest
import torch
import vkml_torch  # noqa: F401

SAME_DEVICE = "Expected all tensors to be on the same device"
ORDINAL = "invalid device ordinal"


@pytest.fixture(autouse=True)
def back_to_vkml0():
    torch.vkml.set_device(0)
    yield
    torch.vkml.set_device(0)


def test_two_devices_in_order():
    assert os.environ["VKML_FAKE_DEVICES"] == "2"
    assert torch.vkml.device_count() == 2 == torch.accelerator.device_count()
    p0, p1 = torch.vkml.get_device_properties(0), torch.vkml.get_device_properties(1)
    assert p0.index == 0 and p1.index == 1
    assert p0.vulkan_index == p1.vulkan_index  # the same physical device, twice
    assert torch.vkml.get_device_name("vkml:1") == p0.name


@pytest.mark.parametrize("call", [
    lambda: torch.empty(2, device="vkml:2"),
    lambda: torch.ones(2).to("vkml:5"),
    lambda: torch.vkml.set_device(2),
    lambda: torch.accelerator.set_device_index(2),
    lambda: torch.vkml.synchronize(3),
    lambda: torch.vkml.get_device_properties(2),
])
def test_absent_ordinal_raises(call):
    with pytest.raises(RuntimeError, match=ORDINAL):
        call()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64,
                                   torch.bool])
def test_ops_run_on_their_tensors_device(dtype):
    x = (torch.arange(12) - 5).reshape(3, 4).to(dtype)
    y = (torch.arange(4) % 3).to(dtype)
    a = x.to("vkml:1")
    assert a.device == torch.device("vkml", 1)
    assert torch.vkml.current_device() == 0  # running on vkml:1 does not change the current device
    got = a * y.to("vkml:1") if dtype != torch.bool else a & y.to("vkml:1")
    ref = x * y if dtype != torch.bool else x & y
    assert got.device == torch.device("vkml", 1)
    assert torch.equal(got.cpu(), ref)
    # strided and broadcast views stay on their device
    t = a.t()[1:, ::2]
    assert t.device.index == 1 and torch.equal(t.contiguous().cpu(), x.t()[1:, ::2].contiguous())
    if dtype.is_floating_point:
        s = a.sum(dim=0)
        assert s.device.index == 1
        torch.testing.assert_close(s.cpu(), x.sum(dim=0), rtol=0, atol=0)


def test_copies_between_devices():
    x = torch.randn(5, 7, dtype=torch.float32)
    a0 = x.to("vkml:0")
    a1 = a0.to("vkml:1")
    assert a1.device.index == 1 and torch.equal(a1.cpu(), x)
    # strided source, converting dtype on the way, and copy_ into a strided destination
    b1 = a0.t().to("vkml:1", torch.float64)
    assert b1.dtype == torch.float64 and torch.equal(b1.cpu(), x.t().double())
    dst = torch.zeros(7, 10, device="vkml:1")[:, ::2]
    dst.copy_(a0.t())
    assert dst.device.index == 1 and torch.equal(dst.cpu(), x.t())
    back = a1.to("vkml:0", non_blocking=True)
    assert back.device.index == 0 and torch.equal(back.cpu(), x)
    assert torch.equal(torch.empty(0, device="vkml:0").to("vkml:1").cpu(), torch.empty(0))


def test_copy_between_devices_keeps_pending_work_in_order():
    a0 = torch.ones(64, device="vkml:0")
    a0.mul_(3).add_(1)  # pending on vkml:0
    a1 = a0.to("vkml:1")
    a0.zero_()
    assert torch.equal(a1.cpu(), torch.full((64,), 4.0))


@pytest.mark.parametrize("op,message", [
    (lambda a, b: a + b, SAME_DEVICE),
    (lambda a, b: torch.matmul(a, b), SAME_DEVICE),
    (lambda a, b: torch.cat([a, b]), SAME_DEVICE),
    (lambda a, b: torch.where(a > 0, a, b), SAME_DEVICE),
    (lambda a, b: a.add_(b), SAME_DEVICE),
    (lambda a, b: torch.nn.functional.linear(a, b), SAME_DEVICE),
    # torch's own message for indices on another device (its index checks, as on CUDA)
    (lambda a, b: a[b.long().clamp(0, 3)], "indices should be either on cpu or on the same device"),
])
def test_mixing_devices_raises_torchs_error(op, message):
    a = torch.ones(4, 4, device="vkml:0")
    b = torch.ones(4, 4, device="vkml:1")
    with pytest.raises(RuntimeError, match=message):
        op(a, b)
    torch.vkml.synchronize(0)
    torch.vkml.synchronize(1)


def test_device_context_and_set_device_choose_where_new_tensors_go():
    assert torch.empty(1, device="vkml").device.index == 0
    with torch.vkml.device(1):
        assert torch.vkml.current_device() == 1
        assert torch.empty(2, device="vkml").device.index == 1
        assert torch.ones(2).to("vkml").device.index == 1
        assert torch.tensor([1.0, 2.0], device="vkml").device.index == 1
        with torch.vkml.device("vkml:0"):
            assert torch.zeros(1, device="vkml").device.index == 0
        assert torch.vkml.current_device() == 1
    assert torch.vkml.current_device() == 0
    torch.vkml.set_device(1)
    assert torch.randn(3, device="vkml").device.index == 1
    torch.accelerator.set_device_index(0)
    assert torch.vkml.current_device() == 0 == torch.accelerator.current_device_index()
    torch.accelerator.set_device_index(1)
    assert torch.vkml.current_device() == 1 and torch.empty(1, device="vkml").device.index == 1
    with torch.accelerator.device_index(0):
        assert torch.empty(1, device="vkml").device.index == 0
    assert torch.accelerator.current_device_index() == 1


def test_current_device_is_per_thread():
    torch.vkml.set_device(1)
    seen = []
    t = threading.Thread(target=lambda: seen.append((torch.vkml.current_device(),
                                                     torch.ones(1, device="vkml").device.index)))
    t.start()
    t.join()
    assert seen == [(0, 0)]  # as CUDA: a new thread starts on device 0


def test_memory_stats_per_device():
    torch.vkml.synchronize(0), torch.vkml.synchronize(1)
    before0, before1 = torch.vkml.memory_allocated(0), torch.vkml.memory_allocated(1)
    x = torch.empty(1 << 18, device="vkml:1")  # 1 MiB
    assert torch.vkml.memory_allocated(1) - before1 >= x.nbytes
    assert torch.vkml.memory_allocated("vkml:0") == before0
    assert torch.accelerator.memory_allocated(1) == torch.vkml.memory_allocated(1)
    s1 = torch.vkml.memory_stats(1)
    assert s1["allocated_bytes.all.current"] == torch.vkml.memory_allocated(1)
    assert "device ID 1" in torch.vkml.memory_summary(1)
    del x
    assert torch.vkml.memory_allocated(1) == before1
    free, total = torch.vkml.mem_get_info(1)
    assert 0 < free <= total


def test_stats_per_device():
    n0, n1 = vkml_torch.stats(0)["nodes"], vkml_torch.stats(1)["nodes"]
    (torch.ones(8, device="vkml:1") * 2).cpu()
    assert vkml_torch.stats(1)["nodes"] > n1
    assert vkml_torch.stats(0)["nodes"] == n0


def test_autograd_and_training_on_vkml1():
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    model.load_state_dict(ref.state_dict())
    model.to("vkml:1")
    assert all(p.device.index == 1 for p in model.parameters())
    x, y = torch.randn(16, 6), torch.randint(0, 3, (16,))
    opt_ref = torch.optim.SGD(ref.parameters(), lr=0.1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        for m, o, xx, yy in [(ref, opt_ref, x, y), (model, opt, x.to("vkml:1"), y.to("vkml:1"))]:
            o.zero_grad()
            torch.nn.functional.cross_entropy(m(xx), yy).backward()
            o.step()
    assert all(p.grad.device.index == 1 for p in model.parameters())
    for p, q in zip(model.parameters(), ref.parameters()):
        # float32 sums of <= 16 terms over 3 steps: a few ulps of the parameters' scale
        torch.testing.assert_close(p.detach().cpu(), q.detach(), rtol=1e-5, atol=1e-6)


def test_item_and_random_on_vkml1():
    g = torch.Generator("vkml").manual_seed(7)
    r = torch.randn(5, device="vkml:1", generator=g)
    assert r.device.index == 1
    # the device stream depends on seed and offset only: vkml:0 draws the same bits
    assert torch.equal(r.cpu(), torch.randn(5, device="vkml:0", generator=torch.Generator("vkml").manual_seed(7)).cpu())
    assert torch.tensor(3.5, device="vkml:1").item() == 3.5
    mask = torch.rand(100, device="vkml:1") > 0.5
    assert mask.device.index == 1 and r[r > 0].device.index == 1


def test_both_devices_independently_in_flight():
    a = torch.arange(1000, dtype=torch.float32, device="vkml:0")
    b = torch.arange(1000, dtype=torch.float32, device="vkml:1")
    for _ in range(5):
        a = a * 2 - 1
        b = b * 3 + 1
    ra, rb = torch.arange(1000, dtype=torch.float32), torch.arange(1000, dtype=torch.float32)
    for _ in range(5):
        ra, rb = ra * 2 - 1, rb * 3 + 1
    assert torch.equal(a.cpu(), ra) and torch.equal(b.cpu(), rb)
