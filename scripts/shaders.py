"""Compile shaders/*.comp to SPIR-V the way setup.py does, into a directory of <blob>.spv files that
VKML_SPIRV_DIR (or vkml_torch._C._set_spirv_dir) loads instead of the built-in blobs. The broken
shaders of scripts/mutate.py and of the check-mode tests are built with it: no C++ is rebuilt.

setup.py's compile_shaders uses compile_blob too (same flags, variants and _ieee builds);
test_check.py's test_spirv_dir_rebuild_is_bitwise_the_build proves the two agree.

Optimization: glslc -O, except for a shader whose source has the line
`// spirv-opt: no loop-unroll`: that one goes through glslc without -O, then spirv-opt with the
passes of its -O recipe less loop-unroll. SPIRV-Tools' loop unroller (2023.1-2023.2, Debian 12)
dropped the NoContraction decoration from the instructions it copied out of conv_tile's and
conv_wtile's [[unroll]] loops, so their `precise` sums lost it in every copy but the first and
NVIDIA's compiler fused those products into fmas (their results differed from conv.comp's in the
last bit on the H100, 2026-12-06). There the Unroll hint stays in the SPIR-V and the driver's
compiler unrolls, keeping the decoration. Not for every shader: NVIDIA compiled the GEMM pipelines
5-7x slower that way (test_gemm's forced large pipeline 25 -> 160 s). test_spirv.py checks the
built blobs.
"""
import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

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


# spirv-opt -O's passes (SPIRV-Tools 2023.1, `spirv-opt --print-all -O`) without --loop-unroll.
PASSES = """wrap-opkill eliminate-dead-branches merge-return inline-entry-points-exhaustive
eliminate-dead-functions eliminate-dead-code-aggressive private-to-local eliminate-local-single-block
eliminate-local-single-store eliminate-dead-code-aggressive scalar-replacement=100
convert-local-access-chains eliminate-local-single-block eliminate-local-single-store
eliminate-dead-code-aggressive ssa-rewrite eliminate-dead-code-aggressive ccp
eliminate-dead-code-aggressive eliminate-dead-branches redundancy-elimination combine-access-chains
simplify-instructions scalar-replacement=100 convert-local-access-chains eliminate-local-single-block
eliminate-local-single-store eliminate-dead-code-aggressive ssa-rewrite eliminate-dead-code-aggressive
vector-dce eliminate-dead-inserts eliminate-dead-branches simplify-instructions if-conversion
copy-propagate-arrays reduce-load-size eliminate-dead-code-aggressive merge-blocks redundancy-elimination
eliminate-dead-branches merge-blocks simplify-instructions""".split()
NO_UNROLL = "// spirv-opt: no loop-unroll"
RECIPE = "glslc -O; or glslc, spirv-opt -O less loop-unroll"  # setup.py hashes it into each blob's key


def tool(name, package):
    path = shutil.which(name)
    if path is None:
        raise RuntimeError(f"{name} not found: install Debian's '{package}' package (make test does this)")
    return path


def glslc_cmd(comp, variant, ieee, out, include=SHADERS, opt=True):
    return [tool("glslc", "glslc"), "--target-env=vulkan1.3"] + (["-O"] if opt else []) + ["-fshader-stage=compute",
            f"-DCT_{variant.upper()}=1"] + (["-DVKML_IEEE=1"] if ieee else []) + [
            "-I", include, "-I", GEN, comp, "-o", out]


def opt_cmd(src, out):
    return [tool("spirv-opt", "spirv-tools"), "--target-env=vulkan1.3"] + [f"--{p}" for p in PASSES] + [src, "-o", out]


def compile_blob(comp, variant, ieee, out, include=SHADERS):
    """One blob: glslc -O; or glslc, then spirv-opt (PASSES) where the source asks for NO_UNROLL.
    Returns the error text, or "" on success."""
    raw = out + ".raw"
    no_unroll = NO_UNROLL in open(comp).read()
    steps = [glslc_cmd(comp, variant, ieee, raw, include, False), opt_cmd(raw, out)] if no_unroll else [
        glslc_cmd(comp, variant, ieee, out, include)]
    try:
        for cmd in steps:
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode:
                return r.stderr or f"{os.path.basename(cmd[0])} failed"
        return ""
    finally:
        if os.path.exists(raw):
            os.remove(raw)


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
