"""CUDA in the same process (pytorch issue #161129): `import vkml_torch` warns once where torch is
a CUDA build and CUDA is available. There is no CUDA here: each case runs in a fresh process that
fakes torch.version.cuda / torch.cuda.is_available before importing vkml_torch."""
import json
import math
import os
import subprocess
import sys

import pytest

CHILD = r"""
import json, sys, warnings
import torch
torch.version.cuda = sys.argv[1] or None
torch.cuda.is_available = lambda: sys.argv[2] == "1"
torch.cuda._device_count_nvml = lambda: -1  # NVML unanswered: is_available() decides
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    import vkml_torch
    from vkml_torch import _cuda_check
    again = _cuda_check.warn_once()  # once per process
print(json.dumps({"warnings": [str(x.message) for x in w if "161129" in str(x.message)],
                  "categories": [x.category.__name__ for x in w if "161129" in str(x.message)],
                  "again": again, "device": str(torch.ones(1, device="vkml").device)}))
"""


def run(cuda_version, available):
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    r = subprocess.run([sys.executable, "-c", CHILD, cuda_version, available], capture_output=True, text=True,
                       timeout=120, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_cuda_build_with_cuda_available_warns_once():
    got = run("13.0", "1")
    assert len(got["warnings"]) == 1 and got["categories"] == ["RuntimeWarning"]
    msg = got["warnings"][0]
    assert "pytorch issue #161129" in msg and "TORCH_DEVICE_BACKEND_AUTOLOAD=0" in msg
    assert got["again"] is False
    assert got["device"] == "vkml:0"  # vkml still works


@pytest.mark.parametrize("cuda_version,available", [("", "0"), ("13.0", "0"), ("", "1")])
def test_no_warning_without_usable_cuda(cuda_version, available):
    assert run(cuda_version, available)["warnings"] == []


def test_nvml_answer_decides_when_there_is_one(monkeypatch):
    import torch
    from vkml_torch import _cuda_check
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: pytest.fail("is_available() asked although NVML answered"))
    monkeypatch.setattr(torch.cuda, "_device_count_nvml", lambda: 2, raising=False)
    assert _cuda_check.cuda_in_process() is True
    monkeypatch.setattr(torch.cuda, "_device_count_nvml", lambda: 0, raising=False)
    assert _cuda_check.cuda_in_process() is False


def _real_cuda():
    import torch
    return torch.version.cuda is not None and torch.cuda.is_available()


REAL_CHILD = r"""
import json, os, sys, warnings
import torch
out = {}
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    if sys.argv[1] == "1":
        import vkml_torch
out["warned"] = sum("161129" in str(x.message) for x in w)
x = torch.randn(64, 64, device="cuda", requires_grad=True)
y = (x * 2).sum()
out["forward"] = y.item()
try:
    y.backward()
    out["grad"] = x.grad.sum().item()
except RuntimeError as e:
    out["backward_error"] = str(e)[:300]
print(json.dumps(out))
"""


@pytest.mark.skipif(not _real_cuda(), reason="needs a CUDA build of torch and a CUDA device (run on the H200)")
@pytest.mark.parametrize("import_vkml", ["0", "1"])
def test_real_cuda_in_the_same_process(import_vkml):
    """With a real CUDA: the warning's workaround (no vkml_torch in the process) trains on CUDA; with
    vkml_torch imported, the warning is given, CUDA forward works, and backward meets torch's assert
    (pytorch issue #161129) -- if torch fixes it, this test says so and the warning can go."""
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    r = subprocess.run([sys.executable, "-c", REAL_CHILD, import_vkml], capture_output=True, text=True,
                       timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert math.isfinite(got["forward"])  # CUDA forward ran and read back
    if import_vkml == "0":
        assert got["warned"] == 0 and got["grad"] == 64 * 64 * 2.0
    else:
        assert got["warned"] == 1
        assert "opt_ready_stream" in got.get("backward_error", ""), (
            f"CUDA backward with vkml loaded no longer fails as pytorch #161129 describes: {got}; "
            "update vkml_torch/_cuda_check.py and docs")
