"""The benchmark suite (python -m bench): the child-process path that times CUDA (pytorch issue
#161129), forced onto the CPU with --cpu-in-child since this machine has no CUDA; its guard
against a child with a PrivateUse1 backend; "missing" ops named through vkml_torch.trace();
errors that do not stop the suite; the time budget; the JSON file.

Tiny sizes and one repeat: these check the plumbing, never the speed.
"""
import json
import os
import subprocess
import sys
import time
import types

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import bench.__main__ as bench_main  # noqa: E402
from bench import cases, run, suite, timing  # noqa: E402
import vkml_torch  # noqa: E402

ARGS = types.SimpleNamespace(repeats=1, min_time=0.0, budget=60.0)


def _child_env(env=None):
    """The environment for `python -m bench...` children: they import the vkml_torch this process
    imported, not the source tree's (under `make compat` that one is built for another torch):
    no current directory on sys.path (PYTHONSAFEPATH), that vkml_torch's directory, then ROOT."""
    e = dict(os.environ if env is None else env)
    here = os.path.dirname(os.path.dirname(os.path.abspath(vkml_torch.__file__)))
    e["PYTHONSAFEPATH"] = "1"
    e["PYTHONPATH"] = os.pathsep.join([here, ROOT] + ([e["PYTHONPATH"]] if e.get("PYTHONPATH") else []))
    return e


def _bench(*argv, env=None):
    p = subprocess.run([sys.executable, "-m", "bench", *argv], cwd=ROOT, capture_output=True, text=True,
                       timeout=300, env=_child_env(env))
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def test_suite_end_to_end_with_the_child(tmp_path):
    """The CPU timed in the child (as CUDA is): its figure is there, marked [1], with the
    footnote; vkml's (in this process) too; the JSON holds both."""
    out = _bench("--only", "add 64K,record", "--numel", "64K", "--repeats", "1", "--cpu-in-child",
                 "--json", str(tmp_path / "b.json"))
    assert "cpu [1]" in out and "#161129" in out, out
    row = [line for line in out.splitlines() if line.startswith("add 64K f32")]
    assert len(row) == 1 and "x" in row[0].split()[-4], out  # a vkml/cpu ratio
    doc = json.loads((tmp_path / "b.json").read_text())
    assert doc["info"]["child_process"] == ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    names = [c["name"] for c in doc["cases"]]
    assert names == ["add 64K f32", "record c = a + b (4 elements), host time, no sync"]
    for c in doc["cases"]:
        for dev in ("vkml", "cpu"):
            r = c["results"][dev]
            assert r["status"] == "ok" and r["value"] > 0, (c["name"], dev, r)
    assert doc["cases"][0]["unit"] == "GB/s" and doc["cases"][0]["better"] == "higher"


def test_child_needs_autoload_off():
    """Without TORCH_DEVICE_BACKEND_AUTOLOAD=0, `import torch` alone autoloads vkml_torch (entry
    point), which is what breaks CUDA autograd; the child reports it, so the guard is not vacuous."""
    from importlib.metadata import entry_points
    if not any(e.name == "vkml" for e in entry_points(group="torch.backends")):
        pytest.skip("vkml_torch is built in place but not installed: no torch.backends entry point to autoload")
    env = {k: v for k, v in os.environ.items() if k != "TORCH_DEVICE_BACKEND_AUTOLOAD"}
    a = {"full": False, "numel": [1024], "mm": None, "only": "add", "repeats": 1, "min_time": 0.0,
         "budget": 60.0, "threads": 1}
    p = subprocess.run([sys.executable, "-m", "bench.child", "cpu", json.dumps(a)], cwd=ROOT, env=_child_env(env),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout.strip().splitlines()[-1])
    assert res["vkml_imported"] is True and res["privateuse1"] == "vkml", res


def test_child_results_rejects_dirty_or_failing_child(monkeypatch):
    args = bench_main.parse_args(["--only", "add"])
    args.full_sizes = False
    out = {"results": {}, "vkml_imported": True, "privateuse1": "vkml"}
    fake = types.SimpleNamespace(returncode=0, stdout=json.dumps(out) + "\n", stderr="")
    monkeypatch.setattr(bench_main.subprocess, "run", lambda *a, **k: fake)
    with pytest.raises(RuntimeError, match="PrivateUse1 backend registered"):
        bench_main.child_results("cpu", args)
    fake.returncode, fake.stderr = 1, "Traceback ...\nboom"
    with pytest.raises(RuntimeError, match="exited with 1: boom"):
        bench_main.child_results("cpu", args)


def test_missing_op_is_named_and_errors_do_not_stop_the_suite():
    def erfcx(dev):
        x = torch.randn(8).to(dev)
        return lambda: torch.special.erfcx(x)

    def broken(dev):
        raise ValueError("a broken case")
    cs = [cases.Case("erfcx", "t", "ms", 1, erfcx), cases.Case("broken", "t", "ms", 1, broken),
          cases.add_case(1024)]
    res = run.run_device(cs, torch.device("vkml"), ARGS, trace=vkml_torch.trace)
    assert res["erfcx"]["status"] == "missing" and "aten::special_erfcx" in res["erfcx"]["note"], res
    assert res["broken"] == {"status": "error", "value": None, "note": "error: ValueError: a broken case"}
    assert res["add 1K f32"]["status"] == "ok" and res["add 1K f32"]["value"] > 0
    cpu = run.run_device(cs[:1], torch.device("cpu"), ARGS)
    assert cpu["erfcx"]["status"] == "ok"


def test_budget_skips_and_series_prediction():
    t, note = timing.measure(lambda: None, torch.device("cpu"), budget=0.0)
    assert t is None and note.startswith("skipped: the first step took"), note
    t, note = timing.measure(lambda: None, torch.device("cpu"), repeats=3, min_time=0.0, budget=60.0)
    assert t is not None and t >= 0 and note == ""
    # a series: the second case's predicted step (1e9 times the work) exceeds budget / 3
    small = cases.Case("s", "t", "ms", 1, lambda dev: (lambda: torch.ones(4).sum()), series="x")
    big = cases.Case("b", "t", "ms", 1e9, lambda dev: pytest.fail("must not run"), series="x")
    res = run.run_device([small, big], torch.device("cpu"), ARGS)
    assert res["s"]["status"] == "ok" and res["b"]["status"] == "skipped", res
    assert "predicted" in res["b"]["note"]


def test_gpu_warm_up_counts_from_the_end_of_the_first_step():
    """On a GPU device the warm-up runs steps for gpu_warm seconds after the first step ends, so a
    first step that compiles for a long time (the GPU idle, its clocks falling) does not use the
    floor up (H100: 345 MHz after a first step's compilation; docs/performance.md, seventh session).
    The step only sleeps: a first step of 0.5 s, then 5 ms steps; with min_time 0 and one repeat,
    the last call is the timed one, so the call before it ends the warm-up."""
    starts, ends = [], []

    def step():
        starts.append(time.perf_counter())
        time.sleep(0.5 if len(starts) == 1 else 0.005)
        ends.append(time.perf_counter())
    t, note = timing.measure(step, torch.device("vkml"), repeats=1, min_time=0.0, budget=60.0,
                             warmup=2, warm_time=0.0, gpu_warm=0.3)
    assert t is not None and note == "", note
    assert len(starts) >= 4, len(starts)
    assert ends[-2] - ends[0] >= 0.3, (ends[-2] - ends[0], len(starts))


def test_suite_lists_every_case_kind():
    names = [c.name for c in suite.build(full=True)]
    for word in ("add 256M", "chain of 8 elementwise 256M", "dropout p=0.1 64M", "randn 256x2048", "sum over rows", "softmax over rows", "layer_norm",
                 "matmul 8192 f32", "matmul 8192 f16", "matmul 8192 bf16", "matmul m=1", "bmm", "conv2d",
                 "conv2d 3x3 64->64 56x56 batch 32 f32, input gradient", "conv2d 3x3 64->64 56x56 batch 32 f32, weight gradient",
                 "conv2d 3x3 64->64 56x56 stride 2 batch 32 f32, input gradient",
                 "embedding", "MLP 784-2048-2048-10 Adam, batch 256", "TransformerEncoderLayer",
                 "1000 dependent tiny ops", "H2D copy 64 MiB pageable", "H2D copy 64 MiB pinned",
                 "D2H copy 64 MiB pageable", "D2H copy 64 MiB pinned"):
        assert any(n.startswith(word) for n in names), word
    assert suite.parse_numel("1M,16M,256M,4096") == [1 << 20, 1 << 24, 1 << 28, 4096]
    assert [c.name for c in suite.select(suite.build(False), "softmax")] == ["softmax over rows 1024x1024 f32"]


def test_bench_pinned_runs():
    p = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "bench_pinned.py"), "--mib", "1", "--repeats", "1"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "pinned, non_blocking=True" in p.stdout, p.stdout


def test_fusion_twin_ratio_and_adam_counts(tmp_path):
    """The chain of 8 runs fused and unfused in one process (the CPU has no unfused twin: n/a),
    the ratio is printed and in the JSON; the MLP case counts Adam's dispatches per parameter."""
    env = {k: v for k, v in os.environ.items() if k != "VKML_CHECK"}  # check mode has its own counts
    out = _bench("--only", "chain of 8", "--numel", "64K", "--repeats", "1", "--json", str(tmp_path / "f.json"),
                 env=env)
    assert "chain of 8 elementwise 64K f32" + cases.UNFUSED in out, out
    assert "fused/unfused" in out and "vkml fusion" in out, out
    doc = json.loads((tmp_path / "f.json").read_text())
    (row,) = doc["info"]["fusion"]
    assert row["fused"] > 0 and row["unfused"] > 0 and row["ratio"] > 0, row
    twin = [c for c in doc["cases"] if c["name"].endswith(cases.UNFUSED)][0]
    assert twin["results"]["cpu"]["status"] == "n/a", twin
    assert "8 dispatch(es)" in twin["results"]["vkml"]["note"], twin
    fused = [c for c in doc["cases"] if c["name"] == "chain of 8 elementwise 64K f32"][0]
    assert "1 dispatch(es) (1 fused node(s) for 8 elementwise)" in fused["results"]["vkml"]["note"], fused
    assert vkml_torch.fuse_enabled()
    mlp = cases.mlp_case(16, 8, 4, 4)
    mlp.opts = {"sync_each": True, "warmup": 2}
    r = run.run_one(mlp, torch.device("vkml"), ARGS, vk=vkml_torch)
    assert r["status"] == "ok", r
    assert "Adam step, dispatches per parameter (6 parameters): foreach" in r["note"], r
    assert "for-loop" in r["note"] and "unfused" in r["note"], r
    assert vkml_torch.fuse_enabled()


def test_pinned_copy_cases_refuse_memory_that_is_not_pinned():
    """With a CUDA build of torch, pin_memory() is CUDA's: the pinned copy cases then report
    "not applicable" on vkml instead of timing the pageable path under the pinned name."""
    dev = torch.device("vkml")
    with pytest.raises(cases.NotApplicable, match="pinned memory"):
        cases._pinned_for(torch.empty(4), dev, True)
    cases._pinned_for(torch.empty(4), dev, False)  # a pageable case takes any memory
    cases._pinned_for(torch.empty(4, pin_memory=True), dev, True)  # vkml's pinned memory: timed
