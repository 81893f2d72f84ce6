"""CUDA in the same process (pytorch issue #161129): `import vkml_torch` warns once where torch is
a CUDA build and CUDA is available. There is no CUDA here: each case runs in a fresh process that
fakes torch.version.cuda / torch.cuda.is_available before importing vkml_torch."""
import json
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
