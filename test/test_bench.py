"""bench/bench_ops.py: case (c)'s child-process path (how CUDA's MLP is timed; pytorch issue #161129),
forced onto the CPU with --mlp-subprocess since this machine has no CUDA; and (f)'s time budget.

Tiny sizes: these check the plumbing, not the speed.
"""
import json
import os
import subprocess
import sys

import pytest
import torch

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")
sys.path.insert(0, BENCH)

import bench_cases  # noqa: E402
import bench_ops  # noqa: E402

TINY_MLP = (16, 8, 8, 4, 4, 2)


def _child(env_extra):
    env = {k: v for k, v in os.environ.items() if k != "TORCH_DEVICE_BACKEND_AUTOLOAD"}
    env.update(env_extra)
    p = subprocess.run([sys.executable, bench_ops.CASES_PY, "mlp", "cpu", json.dumps(TINY_MLP), "1", "1"],
                       env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_child_needs_autoload_off():
    """Without TORCH_DEVICE_BACKEND_AUTOLOAD=0, `import torch` alone autoloads vkml_torch (entry
    point), which is what breaks CUDA autograd; the child reports it, so the parent's guard in
    mlp_steps_subprocess is not vacuous. (The clean child runs in the end-to-end test below.)"""
    from importlib.metadata import entry_points
    if not any(e.name == "vkml" for e in entry_points(group="torch.backends")):
        pytest.skip("vkml_torch is built in place but not installed: no torch.backends entry point to autoload")
    dirty = _child({})
    assert dirty["vkml_imported"] is True and dirty["privateuse1"] == "vkml", dirty
    assert dirty["steps_per_s"] > 0


def test_mlp_steps_subprocess_rejects_dirty_or_failing_child(tmp_path, monkeypatch):
    fake = tmp_path / "fake_child.py"
    fake.write_text('print(\'{"steps_per_s": 1.0, "vkml_imported": true, "privateuse1": "vkml"}\')\n')
    monkeypatch.setattr(bench_ops, "CASES_PY", str(fake))
    with pytest.raises(RuntimeError, match="PrivateUse1 backend registered"):
        bench_ops.mlp_steps_subprocess("cpu", TINY_MLP, 1)
    fake.write_text("import sys\nsys.exit('boom')\n")
    with pytest.raises(RuntimeError, match="exited with 1: boom"):
        bench_ops.mlp_steps_subprocess("cpu", TINY_MLP, 1)


def test_bench_script_mlp_subprocess_end_to_end():
    """The whole script with the child path forced for the CPU: the clean child (no PrivateUse1
    backend, else mlp_steps_subprocess raises and the cell is "-") gives the CPU figure, marked [1];
    the footnote is printed; vkml's figure (in-process) is not marked."""
    p = subprocess.run([sys.executable, os.path.join(BENCH, "bench_ops.py"), "--cases", "c", "--repeats", "1",
                        "--mlp-sizes", ",".join(map(str, TINY_MLP)), "--mlp-subprocess"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    row = [line for line in p.stdout.splitlines() if line.startswith("(c) MLP 16-8-8-4")]
    assert len(row) == 1, p.stdout
    # one [1] for the CPU; a second for CUDA where CUDA exists (it is always timed in the child)
    assert row[0].count("[1]") == 1 + torch.cuda.is_available() and " - " not in row[0], row[0]
    cpu_cell = row[0].split("[1]")[0].split()[-1]
    assert float(cpu_cell.replace(",", "")) > 0, row[0]
    child = "cpu, cuda" if torch.cuda.is_available() else "cpu"
    assert f"      {child}: timed in a child process [1]" in p.stdout, p.stdout
    assert "[1] timed in a child process started with TORCH_DEVICE_BACKEND_AUTOLOAD=0" in p.stdout
    assert "#161129" in p.stdout


def test_matmul_budget_skips_and_shortens():
    cpu = torch.device("cpu")
    v, why = bench_cases.matmul_tflops(cpu, 64, 3, budget_s=0.0)
    assert v is None and why.startswith("skipped: one warm-up matmul took"), why
    v, why = bench_cases.matmul_tflops(cpu, 64, 3, budget_s=60.0)
    assert v > 0 and why == ""


def test_bench_pinned_runs():
    p = subprocess.run([sys.executable, os.path.join(BENCH, "bench_pinned.py"), "--mib", "1", "--repeats", "1"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "pinned, non_blocking=True" in p.stdout, p.stdout
