"""A process forked after vkml was used cannot use Vulkan (the driver's threads and queues stay in
the parent): it raises CUDA's kind of error on first use instead of hanging at the first read-back,
and torch.vkml._is_in_bad_fork() says so; DataLoader workers that only touch CPU tensors keep
working (issue 7, finding 3)."""
import json
import os
import select
import subprocess
import sys

import pytest
import torch
from torch.utils.data import DataLoader, Dataset, TensorDataset

from helpers import DEV, assert_exact

BAD_FORK = "Cannot re-initialize vkml in forked subprocess. To use vkml with multiprocessing, you must use the 'spawn' start method"


def _in_child(fn, timeout=60):
    """Runs fn() in a forked child; returns what it returned (JSON through a pipe). A child that
    hangs is killed and fails the test instead of hanging the suite."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        os.close(r)
        try:
            out = json.dumps(fn())
        except BaseException as e:  # noqa: BLE001
            out = json.dumps({"child raised": f"{type(e).__name__}: {e}"})
        os.write(w, out.encode())
        os.close(w)
        os._exit(0)
    os.close(w)
    ready, _, _ = select.select([r], [], [], timeout)
    if not ready:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        pytest.fail(f"forked child hung for {timeout} s")
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.close(r)
    _, status = os.waitpid(pid, 0)
    assert status == 0, f"child exited with status {status}"
    return json.loads(data)


def _use_in_child():
    res = {"bad_fork": torch.vkml._is_in_bad_fork(), "available": torch.vkml.is_available()}
    for name, f in {"factory": lambda: torch.ones(3, device=DEV),
                    "to": lambda: torch.ones(3).to(DEV),
                    "synchronize": lambda: torch.vkml.synchronize()}.items():
        try:
            f()
            res[name] = "no error"
        except RuntimeError as e:
            res[name] = str(e)
    return res


def test_forked_child_raises_on_first_use():
    x = torch.ones(3, device=DEV)
    assert_exact((x + 1).cpu(), torch.full((3,), 2.0))  # vkml is initialised in this process
    assert not torch.vkml._is_in_bad_fork()
    res = _in_child(_use_in_child)
    assert res["bad_fork"] is True
    assert res["available"] is True  # as torch.cuda.is_available() in a bad fork: the device exists
    for name in ("factory", "to", "synchronize"):
        assert BAD_FORK in res[name], (name, res[name])
    assert not torch.vkml._is_in_bad_fork()  # the parent is unaffected
    assert_exact((x * 3).cpu(), torch.full((3,), 3.0))


CHILD_SCRIPT = r"""
import os, sys, torch, vkml_torch
x = torch.arange(4.0, device="vkml")
assert (x + 1).cpu().tolist() == [1.0, 2.0, 3.0, 4.0]
pid = os.fork()
if pid == 0:
    try:
        x.cpu()
        print("child: no error")
    except RuntimeError as e:
        print("child:", e)
    del x
    sys.exit(0)  # a normal exit: atexit handlers and static destructors run, the driver's too
_, status = os.waitpid(pid, 0)
print("child status", status, "parent", (x * 2).cpu().tolist())
"""


def test_forked_child_with_device_tensors_exits():
    """A script that forks with vkml tensors alive: in the child, reading them raises; dropping
    them and exiting normally neither hangs nor crashes; the parent carries on."""
    r = subprocess.run([sys.executable, "-c", CHILD_SCRIPT], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "VKML_CHECK": "0"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"child: {BAD_FORK}" in r.stdout, r.stdout + r.stderr
    assert "child status 0 parent [0.0, 2.0, 4.0, 6.0]" in r.stdout, r.stdout + r.stderr


def test_dataloader_cpu_workers_keep_working():
    w = torch.ones(4, 2, device=DEV)
    ds = TensorDataset(torch.arange(64.0).view(16, 4), torch.arange(16))
    total = 0.0
    for xb, _ in DataLoader(ds, batch_size=4, num_workers=2, timeout=60):
        total += (xb.to(DEV) @ w).sum().item()
    assert total == 2 * sum(range(64))


class _DeviceDataset(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        return torch.ones(2, device=DEV) * i


def test_dataloader_worker_touching_vkml_raises():
    """Used to hang until the loader's timeout; now the worker's error reaches the parent."""
    with pytest.raises(RuntimeError, match="Cannot re-initialize vkml in forked subprocess"):
        for _ in DataLoader(_DeviceDataset(), batch_size=2, num_workers=1, timeout=60):
            pass
