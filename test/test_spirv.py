"""The built SPIR-V keeps what the shaders' sources promise about rounding.

The convolution kernels (conv, conv_tile, conv_wtile, conv_wgrad) sum `precise` products: no
product may be fused into an fma, so that the tiled and the direct kernels give the same bytes and
an overflowing product gives what torch CPU gives (docs/convolution.md). In SPIR-V that is the
NoContraction decoration on the multiply and on the add that takes it. SPIRV-Tools' loop unroller
(glslc -O) dropped it from the copies it made of an [[unroll]] loop's body; lavapipe never fuses,
so only NVIDIA's results showed it. conv_tile and conv_wtile now ask for NoContraction on every
float add and multiply (`// spirv: NoContraction everywhere`, scripts/shaders.py); this test reads
every blob of the four that setup.py embedded (build/gen/spv) with spirv-dis, and validates it.
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import shaders  # noqa: E402

NO_FMA = ("conv", "conv_tile", "conv_wtile", "conv_wgrad")


def _chains(spv):
    """(decorated, undecorated) pairs of a float multiply whose result an add or subtract takes,
    directly or through OpPhi / OpSelect / OpCopyObject: decorated where both carry NoContraction."""
    dis = subprocess.run([shaders.tool("spirv-dis", "spirv-tools"), "--raw-id", spv], capture_output=True, text=True, check=True).stdout
    nc = set(re.findall(r"OpDecorate (%\d+) NoContraction", dis))
    ops = {m[1]: (m[2], m[3].split()) for m in re.finditer(r"(%\d+) = (Op\w+) %\d+ ?([^\n]*)", dis)}

    def products(x, seen):  # the multiplies whose value x may be
        op, args = ops.get(x, ("", []))
        if x in seen:
            return []
        seen.add(x)
        if op == "OpFMul":
            return [x]
        ins = {"OpPhi": args[0::2], "OpSelect": args[1:], "OpCopyObject": args}.get(op, [])
        return [p for a in ins for p in products(a, seen)]
    pairs = [(r, p) for r, (op, args) in ops.items() if op in ("OpFAdd", "OpFSub")
             for a in args for p in products(a, set())]
    good = sum(1 for r, p in pairs if r in nc and p in nc)
    return good, len(pairs) - good


def _built(stem):
    text = open(os.path.join(shaders.SHADERS, stem + ".comp")).read()
    out = []
    for name, variant, _ in shaders.blobs(text, stem):
        found = glob.glob(os.path.join(shaders.GEN, "spv", f"{name}.*.spv"))
        assert len(found) == 1, f"setup.py's blob of {name}: {found} (build with `make build`)"
        out.append((name, variant, found[0]))
    return out


@pytest.mark.parametrize("stem", NO_FMA)
def test_precise_sums_keep_no_contraction(stem):
    for name, variant, spv in _built(stem):
        val = subprocess.run([shaders.tool("spirv-val", "spirv-tools"), "--target-env", "vulkan1.3", spv], capture_output=True, text=True)
        assert val.returncode == 0, f"{name}: {val.stdout}{val.stderr}"
        good, bad = _chains(spv)
        assert bad == 0, f"{name}: {bad} product(s) feeding a sum lost NoContraction (a driver may fuse them)"
        if variant != "i64":  # the float blobs do have precise sums for the check to see
            assert good > 0, f"{name}: no NoContraction multiply-add at all"


def test_the_check_sees_the_unroller_drop_it():
    """The check above can fail: the same source through glslc -O (SPIRV-Tools' loop unroller) has
    undecorated copies of conv_tile's and conv_wtile's sums."""
    with tempfile.TemporaryDirectory() as d:
        for stem in ("conv_tile", "conv_wtile"):
            out = os.path.join(d, stem + ".spv")
            subprocess.run(shaders.glslc_cmd(os.path.join(shaders.SHADERS, stem + ".comp"), "f32", True, out),
                           check=True, capture_output=True)
            good, bad = _chains(out)
            assert good > 0 and bad > 0, f"{stem} through glslc -O: {good} decorated, {bad} not"
