"""The pipeline cache on disk (VKML_CACHE_DIR): the first run of a program writes it at exit, the
second reads it and compiles its pipelines from it; a file that is not this driver's is ignored;
VKML_CACHE_DIR=off keeps none. Each run is a fresh process (the cache is read when the device opens)."""
import json
import os
import subprocess
import sys

import pytest

PROGRAM = r"""
import json, torch, vkml_torch
x = torch.arange(24.0).view(4, 6).to("vkml")
y = (x * 2 + 1).sum(1)
z = x @ x.t()
assert torch.equal(y.cpu(), (torch.arange(24.0).view(4, 6) * 2 + 1).sum(1))
assert torch.equal(z.cpu(), torch.arange(24.0).view(4, 6) @ torch.arange(24.0).view(4, 6).t())
print(json.dumps(vkml_torch.pipeline_cache()))
"""


def run(cache_dir):
    env = dict(os.environ, VKML_CACHE_DIR=str(cache_dir), TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    r = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_second_run_reads_what_the_first_wrote(tmp_path):
    d = tmp_path / "cache"
    first = run(d)
    assert first["file"].startswith(str(d) + "/pipelines-") and first["file"].endswith(".bin")
    assert first["loaded_bytes"] == 0 and first["created"] >= 3  # elementwise, reduce, gemm at least
    size = os.path.getsize(first["file"])  # written at exit
    assert size > 0
    assert [p.name for p in d.iterdir()] == [os.path.basename(first["file"])]  # no temporary left
    second = run(d)
    assert second["file"] == first["file"] and second["loaded_bytes"] == size
    assert second["created"] == first["created"]
    # where the driver reports creation feedback, the second run found every pipeline in the cache
    assert second["cache_hits"] in (0, second["created"]), second
    assert first["cache_hits"] == 0


def test_a_foreign_or_broken_file_is_ignored(tmp_path):
    d = tmp_path / "cache"
    name = os.path.basename(run(d)["file"])
    junk = b"\x10\x00\x00\x00" + b"not a pipeline cache" * 10  # a header no driver wrote
    (d / name).write_bytes(junk)
    again = run(d)  # the program's results are checked inside
    assert again["cache_hits"] == 0 and again["created"] >= 3
    assert (d / name).read_bytes() != junk  # replaced by this run's cache at exit


def test_off_keeps_no_file(tmp_path):
    got = run("off")
    assert got["file"] == "" and got["loaded_bytes"] == 0 and got["created"] >= 3
    assert not os.path.exists("off")
