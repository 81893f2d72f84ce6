"""Compile shaders/*.comp to SPIR-V the way setup.py does, into a directory of <blob>.spv files that
VKML_SPIRV_DIR (or vkml_torch._C._set_spirv_dir) loads instead of the built-in blobs. The broken
shaders of scripts/mutate.py and of the check-mode tests are built with it: no C++ is rebuilt.

setup.py's compile_shaders uses compile_blob too (same flags, variants and _ieee builds);
test_check.py's test_spirv_dir_rebuild_is_bitwise_the_build proves the two agree.

Every blob is glslc -O. A shader whose source has the line `// spirv: NoContraction everywhere`
then gets the NoContraction decoration on every float add, subtract and multiply
(no_contraction()): SPIRV-Tools' loop unroller (2023.1-2023.2, Debian 12) copies an [[unroll]]
loop's body without that decoration, so conv_tile's and conv_wtile's `precise` sums kept it in
their first copy only, and NVIDIA's compiler fused the others into fmas (their results differed
from conv.comp's in the last bit on the H100, 2026-12-06). Leaving the unrolling to the driver
instead also kept it, but NVIDIA compiled the GEMM pipelines 5-7x slower that way. test_spirv.py
checks the built blobs.

A shader whose source has the line `// spirv: KHR cooperative matrix` is rewritten from
GL_NV_cooperative_matrix to VK_KHR_cooperative_matrix (scripts/spv_khr.py), with bfloat16
matrices instead of float16 ones where the line goes on `, bfloat16`: Debian 12's glslc compiles
neither the KHR extension, nor bfloat16, nor VK_NV_cooperative_matrix2's workgroup scope (which
the rewrite keeps).
"""
import array
import hashlib
import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import spv_khr  # scripts/spv_khr.py

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHADERS = os.path.join(ROOT, "shaders")
GEN = os.path.join(ROOT, "build", "gen")


def blobs(text, stem):
    """[(blob name, variant, ieee)] of one .comp source: its `// variants:` line, plus an _ieee
    build of each float variant."""
    first = text.splitlines()[0] if text else ""
    m = re.match(r"//\s*variants:\s*(.*)", first)
    vs = m.group(1).split() if m else ["f32"]
    return [(f"{stem}_{v}" + ("_ieee" if ieee else ""), v, ieee)
            for v in vs for ieee in ([False, True] if v != "i64" else [False])]


NO_CONTRACTION = "// spirv: NoContraction everywhere"
KHR = "// spirv: KHR cooperative matrix"  # then ", bfloat16" for bfloat16 instead of float16 matrices,
# ", rne" for float32 matrices rounded to nearest even before their conversion (spv_khr.py)
# setup.py hashes it into each blob's key: the rewrite's source too, so a change to it rebuilds.
RECIPE = "glslc -O; NoContraction everywhere where asked; KHR cooperative matrix where asked " + \
    hashlib.sha256(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "spv_khr.py"), "rb").read()).hexdigest()[:12]


def tool(name, package):
    path = shutil.which(name)
    if path is None:
        raise RuntimeError(f"{name} not found: install Debian's '{package}' package (make test does this)")
    return path


def glslc_cmd(comp, variant, ieee, out, include=SHADERS):
    return [tool("glslc", "glslc"), "--target-env=vulkan1.3", "-O", "-fshader-stage=compute",
            f"-DCT_{variant.upper()}=1"] + (["-DVKML_IEEE=1"] if ieee else []) + [
            "-I", include, "-I", GEN, comp, "-o", out]


def no_contraction(path):
    """Decorates every OpFAdd, OpFSub, OpFMul and OpVectorTimesScalar of the SPIR-V file at path
    with NoContraction (where it is not already), after the module's last decoration."""
    words = array.array("I", open(path, "rb").read())
    if words[0] != 0x07230203:
        raise ValueError(f"{path}: not SPIR-V")
    annotations = {71, 72, 73, 74, 75, 332, 5632, 5633}  # OpDecorate ... OpMemberDecorateString
    arithmetic = {129, 131, 133, 142}
    done, targets, after, i = set(), [], 5, 5
    while i < len(words):
        count, op = words[i] >> 16, words[i] & 0xffff
        if op == 71 and words[i + 2] == 42:  # OpDecorate <id> NoContraction
            done.add(words[i + 1])
        if op in annotations:
            after = i + count
        elif op in arithmetic:
            targets.append(words[i + 2])
        i += count
    add = array.array("I")
    for t in targets:
        if t not in done:
            add.extend([(3 << 16) | 71, t, 42])
    out = words[:after] + add + words[after:]
    open(path, "wb").write(out.tobytes())


def compile_blob(comp, variant, ieee, out, include=SHADERS):
    """One blob: glslc -O, then no_contraction() where the source asks for it. Returns the error
    text, or "" on success."""
    r = subprocess.run(glslc_cmd(comp, variant, ieee, out, include), capture_output=True, text=True)
    if r.returncode:
        return r.stderr or "glslc failed"
    text = open(comp).read()
    if NO_CONTRACTION in text:
        no_contraction(out)
    khr = [line for line in text.splitlines() if line.startswith(KHR)]
    if khr:
        opts = khr[0][len(KHR):].split(", ")
        spv_khr.rewrite_file(out, out, bf16="bfloat16" in opts, rne="rne" in opts)
    return ""


def compile_stem(stem, out_dir, src_dir=SHADERS, only=None, jobs=2):
    """Compile every blob of <src_dir>/<stem>.comp into <out_dir>/<blob>.spv (includes from src_dir).
    only: blob names to build (None: all). Returns {blob: error text or ""}."""
    comp = os.path.join(src_dir, stem + ".comp")
    text = open(comp).read()
    todo = [b for b in blobs(text, stem) if only is None or b[0] in only]
    os.makedirs(out_dir, exist_ok=True)

    def one(b):
        name, v, ieee = b
        return name, compile_blob(comp, v, ieee, os.path.join(out_dir, name + ".spv"), src_dir)
    with ThreadPoolExecutor(max(1, jobs)) as ex:
        return dict(ex.map(one, todo))


def stems(src_dir=SHADERS):
    return sorted(f[:-5] for f in os.listdir(src_dir) if f.endswith(".comp"))


def copy_tree(dst):
    """A copy of shaders/ to edit (every .comp, .glsl and .h)."""
    os.makedirs(dst, exist_ok=True)
    for f in os.listdir(SHADERS):
        shutil.copy2(os.path.join(SHADERS, f), os.path.join(dst, f))
    return dst
