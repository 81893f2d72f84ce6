"""Device registration, the torch.vkml module, best_device(), serialization, moving modules."""
import importlib.metadata
import io
import math
import os
import re
import subprocess
import sys

import pytest
import torch
import vkml_torch

from helpers import DEV, assert_close_row, assert_exact, check_mode, row


def test_registered_as_privateuse1():
    assert torch._C._get_privateuse1_backend_name() == "vkml"
    t = torch.ones(3, device="vkml")
    assert t.device == torch.device("vkml", 0)
    assert t.is_vkml and not torch.ones(1).is_vkml
    assert torch.arange(4).vkml().device.type == "vkml"
    assert torch.device("vkml:0").index == 0


def test_torch_vkml_module():
    m = torch.vkml
    assert m.is_available() is True
    assert m.device_count() >= 1
    assert m.current_device() == 0
    m.set_device(0)
    with pytest.raises(Exception):
        m.set_device(m.device_count() + 5)
    name = m.get_device_name(0)
    assert isinstance(name, str) and name
    p = m.get_device_properties(0)
    assert p.name == name and p.total_memory > 0
    assert re.match(r"^1\.(\d+)\.\d+$", p.api_version) and int(p.api_version.split(".")[1]) >= 3, p.api_version
    m.synchronize()


def test_rng_state_round_trip():
    torch.vkml.manual_seed(1234)
    assert torch.vkml.initial_seed() == 1234
    state = torch.vkml.get_rng_state()
    assert state.dtype == torch.uint8 and state.device.type == "cpu"
    torch.vkml.manual_seed(99)
    torch.vkml.set_rng_state(state)
    assert torch.vkml.initial_seed() == 1234
    torch.manual_seed(7)  # torch.manual_seed must reach the vkml module without error
    torch.vkml.manual_seed_all(5)
    torch.vkml.seed()
    assert isinstance(torch.vkml.initial_seed(), int)


def test_memory_counters():
    torch.vkml.synchronize()
    base = torch.vkml.memory_allocated()
    t = torch.empty(1 << 20, dtype=torch.uint8, device="vkml")
    t.fill_(1)
    torch.vkml.synchronize()
    assert torch.vkml.memory_allocated() >= base + (1 << 20)
    assert torch.vkml.max_memory_allocated() >= torch.vkml.memory_allocated()
    assert torch.vkml.memory_reserved() >= torch.vkml.memory_allocated()
    del t
    torch.vkml.synchronize()
    assert torch.vkml.memory_allocated() <= base
    torch.vkml.empty_cache()
    assert torch.vkml.memory_reserved() >= torch.vkml.memory_allocated()


def test_best_device_string():
    dev, msg = vkml_torch.best_device()
    assert dev == torch.device("vkml", 0)
    name = torch.vkml.get_device_name(0)
    m = re.match(r"^using Vulkan device (\d+): (.+) \(([\w ]+), Vulkan (1\.\d+\.\d+), driver (.+)\)$", msg)
    assert m, f"best_device() string has the wrong shape: {msg!r}"
    assert m.group(2) == name, (m.group(2), name)
    assert m.group(4) == torch.vkml.get_device_properties(0).api_version
    assert vkml_torch.is_available() is True


def test_device_context_manager():
    with torch.vkml.device(0):
        assert torch.vkml.current_device() == 0
        t = torch.zeros(2, device="vkml")
    assert t.device == torch.device("vkml", 0)
    with torch.device("vkml"):  # torch's own device mode: factories land on vkml
        u = torch.ones(3)
    assert u.device.type == "vkml"
    assert_exact(u.cpu(), torch.ones(3))


def _state_dict_bytes():
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.Linear(3, 2).half())
    buf = io.BytesIO()
    torch.save(m.state_dict(), buf)
    return m.state_dict(), buf.getvalue()


@pytest.mark.parametrize("loc", ["vkml", "vkml:0", torch.device("vkml", 0)])
def test_load_map_location(loc):
    ref, blob = _state_dict_bytes()
    sd = torch.load(io.BytesIO(blob), map_location=loc, weights_only=True)
    assert sd.keys() == ref.keys()
    for k, v in sd.items():
        assert v.device.type == "vkml", k
        assert_exact(v.cpu(), ref[k], what=k)


def test_save_vkml_tensor_load_on_cpu():
    x = torch.randn(3, 4).to(DEV)
    buf = io.BytesIO()
    torch.save({"x": x, "y": x[:, 1]}, buf)
    buf.seek(0)
    back = torch.load(buf, map_location="cpu", weights_only=True)
    assert back["x"].device.type == "cpu"
    assert_exact(back["x"], x.cpu())
    assert_exact(back["y"], x.cpu()[:, 1])


def test_module_to_and_back():
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    ref = {k: v.clone() for k, v in m.state_dict().items()}
    x = torch.randn(3, 5)
    want = m(x)
    m.to("vkml")
    assert all(p.device.type == "vkml" for p in m.parameters())
    with check_mode():
        got = m(x.to("vkml")).cpu()
    # Two GEMMs in a row: layer-1 error reaches the output through |W2|, so the GEMM row's bound
    # applies with scale |W2| (|W1||x| + |b1|) + |b2| and the two (log2 k + 1) factors added.
    w1, b1, w2, b2 = (ref[k].double().abs() for k in ("0.weight", "0.bias", "2.weight", "2.bias"))
    s = ((x.double().abs() @ w1.t() + b1) @ w2.t() + b2) * ((math.log2(5) + 1) + (math.log2(4) + 1))
    assert_close_row(row("addmm"), got, want.detach(), scale=s, n=1)
    m.cpu()
    for k, v in m.state_dict().items():
        assert v.device.type == "cpu"
        assert_exact(v, ref[k], what=k)
    m.vkml()  # generated Module method
    assert next(m.parameters()).device.type == "vkml"


def test_autoload_entry_point():
    eps = [e for e in importlib.metadata.entry_points(group="torch.backends") if e.name == "vkml"]
    if not eps:
        pytest.skip("vkml_torch is not pip-installed: no 'torch.backends' entry point to autoload")
    code = "import torch; t = torch.ones(2, device='vkml'); print(t.device, (t + t).cpu().tolist())"
    env = {k: v for k, v in os.environ.items() if k != "TORCH_DEVICE_BACKEND_AUTOLOAD"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "vkml:0 [2.0, 2.0]", r.stdout
