"""torch.distributed on vkml: 2 processes (gloo over loopback, through the "vkml" backend of
vkml_torch.distributed) run the collectives on vkml tensors and train examples/ddp_train.py's
model with DistributedDataParallel; the result must equal a single-process run in this process.

Tolerance of DDP against the single process: both run the same float32 ops on the same device
kind; they differ only in the gradient sum (DDP: each rank's mean over its half, then gloo's mean
of the two; single: the mean over all 64 samples), a few float32 roundings per step, so over 4 SGD
steps at lr 0.1 the parameters (|p| <= ~1) may differ by a few ulps: rtol 1e-5, atol 1e-6."""
import os
import socket
import subprocess
import sys

import pytest
import torch

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
import ddp_train  # noqa: E402

STEPS = 4


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    d = tmp_path_factory.mktemp("dist")
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), WORLD_SIZE="2")
    env.pop("VKML_FAKE_DEVICES", None)
    procs = [subprocess.Popen([sys.executable, os.path.join(HERE, "multi", "dist_worker.py"), "--out", str(d / f"{r}.pt"),
                               "--steps", str(STEPS)], env=dict(env, RANK=str(r), LOCAL_RANK=str(r)),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for r in range(2)]
    logs = []
    for p in procs:
        try:
            logs.append(p.communicate(timeout=240)[0])
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            pytest.fail("the 2 ranks did not finish in 240 s:\n" + "\n".join(logs))
    out = []
    for r in range(2):
        f = d / f"{r}.pt"
        assert f.exists(), f"rank {r} wrote nothing (rc {procs[r].returncode}):\n{logs[r][-4000:]}"
        res = torch.load(f)
        assert "error" not in res, f"rank {r}:\n{res['error']}\n{logs[r][-2000:]}"
        out.append(res)
    return out


def test_backend_is_vkml(ranks):
    assert [r["backend"] for r in ranks] == ["vkml", "vkml"]


@pytest.mark.parametrize("what", ["all_reduce", "broadcast", "all_gather", "reduce_scatter", "gather, scatter",
                                  "barrier"])
def test_collectives_on_vkml_tensors(ranks, what):
    for r in ranks:
        assert any(c.startswith(what) for c in r["collectives"]), r["collectives"]


def test_ddp_equals_single_process(ranks):
    single = ddp_train.train(0, 1, STEPS)  # here, on vkml, the whole data set
    cpu = ddp_train.train(0, 1, STEPS, device="cpu")
    for r in ranks:
        for p, q, c in zip(r["ddp"], single, cpu):
            torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)
            torch.testing.assert_close(p, c, rtol=1e-5, atol=1e-6)
    for p, q in zip(ranks[0]["ddp"], ranks[1]["ddp"]):
        assert torch.equal(p, q)  # DDP keeps the replicas identical
    assert any(not torch.equal(p, q) for p, q in zip(single, ddp_train.train(0, 1, 0)))  # it trained


def test_registered_backend():
    import torch.distributed as dist
    assert "vkml" in dist.Backend.backend_list
    assert dist.Backend.default_device_backend_map["vkml"] == "vkml"


@pytest.mark.skipif(not hasattr(__import__("torch.distributed").distributed, "gather_single"),
                    reason="torch.distributed.gather_single is torch >= 2.15 (make compat TORCH=2.15.0)")
def test_gather_single_on_vkml_tensors(ranks):
    for r in ranks:
        assert "gather_single" in r["collectives"], r["collectives"]
