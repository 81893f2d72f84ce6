"""VKML_* environment variables, each in a fresh process (they are read once, at first use)."""
import json
import os
import subprocess
import sys
import textwrap

import torch

from helpers import assert_close_row, row


def run(code, **env):
    """Runs `code` in a new interpreter with only the given VKML_* variables set; returns stdout's
    last line parsed as JSON, and stderr."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("VKML_")}
    e.update(env)
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                       env=e, timeout=300)
    assert r.returncode == 0, f"env {env}: exit {r.returncode}\n{r.stderr[-3000:]}"
    return json.loads(r.stdout.strip().splitlines()[-1]), r.stderr


def test_eager_env():
    out, _ = run("""
        import json, torch, vkml_torch
        a = torch.arange(6.0).to("vkml"); torch.vkml.synchronize()
        s0 = vkml_torch.stats()
        b = a * 2 + 1
        s1 = vkml_torch.stats()
        print(json.dumps([s1["pending"], s1["submits"] - s0["submits"], b.cpu().tolist()]))
    """, VKML_EAGER="1")
    pending, submits, vals = out
    assert pending == 0, "VKML_EAGER=1 left nodes pending"
    assert submits >= 2, f"VKML_EAGER=1: 2 ops made {submits} submits"
    assert vals == [1.0, 3.0, 5.0, 7.0, 9.0, 11.0]


LIMITS = """
    import json, torch, vkml_torch
    p = torch.vkml.get_device_properties(0)
    d = {k: v for k, v in vars(p).items() if isinstance(v, (int, float, str, bool))}
    torch.manual_seed(0)
    x = torch.randn(64, 48); y = torch.randn(48, 40)
    print(json.dumps([d, (x.to("vkml") @ y.to("vkml")).cpu().tolist()]))
"""


def _find(d, *words):
    keys = [k for k in d if all(w in k.replace("_", "").lower() for w in words)]
    assert keys, f"device properties have no key about {words}: {sorted(d)}"
    return d[keys[0]]


def test_min_spec_reports_the_floor():
    spec, err_spec = run(LIMITS, VKML_MIN_SPEC="1")
    native, _ = run(LIMITS)
    d = spec[0]
    assert _find(d, "pushconstant") == 128, d
    assert _find(d, "shared") == 16384, d  # Vulkan 1.3 maxComputeSharedMemorySize floor
    # the device still computes right at the floor (tiling must fit 16 KiB of shared memory)
    torch.manual_seed(0)
    x, y = torch.randn(64, 48), torch.randn(48, 40)
    for got in (spec[1], native[1]):
        assert_close_row(row("mm"), torch.tensor(got), x @ y, scale=x.abs() @ y.abs(), n=48)
    nat = native[0]
    assert _find(nat, "shared") >= 16384 and _find(nat, "pushconstant") >= 128


def test_device_index_env():
    out, _ = run("""
        import json, torch, vkml_torch
        dev, msg = vkml_torch.best_device()
        print(json.dumps([str(dev), msg, (torch.ones(3, device="vkml") * 2).cpu().tolist()]))
    """, VKML_DEVICE="0")
    assert out[0] == "vkml:0"
    assert out[1].startswith("using Vulkan device 0: "), out[1]
    assert out[2] == [2.0, 2.0, 2.0]


def test_device_index_out_of_range_is_explained():
    out, _ = run("""
        import json, torch, vkml_torch
        print(json.dumps([vkml_torch.is_available(), vkml_torch.why_unavailable(), str(vkml_torch.best_device()[0])]))
    """, VKML_DEVICE="97")
    available, why, dev = out
    assert available is False and dev == "cpu", out
    assert "97" in why, f"why_unavailable() does not mention the requested index: {why!r}"


def test_cpu_fallback_warns_once():
    out, err = run("""
        import json, warnings, torch, vkml_torch
        x = torch.tensor([1.0, 2.0, 3.0, 4.0]).to("vkml")
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            a = torch.cumsum(x, 0)
            b = torch.cumsum(x * 2, 0)
            dev = str(a.device)
            vals = [a.cpu().tolist(), b.cpu().tolist()]
        print(json.dumps([dev, vals, [str(m.message) for m in w]]))
    """, VKML_CPU_FALLBACK="1")
    dev, vals, warns = out
    assert dev == "vkml:0", "the fallback result must come back on the vkml device"
    assert vals == [[1.0, 3.0, 6.0, 10.0], [2.0, 6.0, 12.0, 20.0]]
    n = sum("cumsum" in m for m in warns) + err.count("cumsum")
    assert n == 1, f"expected exactly one fallback warning naming cumsum, got {n}: {warns} / {err[-500:]}"


def test_check_and_spirv_dir_env():
    """VKML_SPIRV_DIR loads the SPIR-V found there instead of the built-in blobs: a broken
    elementwise shader (broken_shaders.py) makes check mode fail; without the variable it passes."""
    from broken_shaders import broken_dir, stem_blobs
    code = """
        import json, torch, vkml_torch
        a = torch.randn(4, 4)
        try:
            (a.to("vkml") + a.to("vkml")).cpu(); print(json.dumps([vkml_torch.check_enabled(), ""]))
        except RuntimeError as e:
            print(json.dumps([vkml_torch.check_enabled(), str(e)]))
    """
    # VKML_FUSE=0: the add runs elementwise.comp, not fused.comp (an upload-free chain may fuse)
    out, _ = run(code, VKML_CHECK="1", VKML_FUSE="0",
                 VKML_SPIRV_DIR=broken_dir("elementwise", stem_blobs("elementwise", "float32")))
    assert out[0] is True
    assert out[1].startswith("vkml check failed:") and "add" in out[1], out[1]
    out, _ = run(code, VKML_CHECK="1")
    assert out == [True, ""]
