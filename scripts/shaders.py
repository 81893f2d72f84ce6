"""Compile shaders/*.comp to SPIR-V the way setup.py does, into a directory of <blob>.spv files that
VKML_SPIRV_DIR (or vkml_torch._C._set_spirv_dir) loads instead of the built-in blobs. The broken
shaders of scripts/mutate.py and of the check-mode tests are built with it: no C++ is rebuilt.

Kept in step with setup.py's compile_shaders (same glslc flags, variants and _ieee builds);
test_check.py's test_spirv_dir_rebuild_is_bitwise_the_build proves it.
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


def glslc_cmd(comp, variant, ieee, out, include=SHADERS):
    glslc = shutil.which("glslc")
    if glslc is None:
        raise RuntimeError("glslc not found: install Debian's 'glslc' package (make test does this)")
    return [glslc, "--target-env=vulkan1.3", "-O", "-fshader-stage=compute", f"-DCT_{variant.upper()}=1"] + (
        ["-DVKML_IEEE=1"] if ieee else []) + ["-I", include, "-I", GEN, comp, "-o", out]


def compile_stem(stem, out_dir, src_dir=SHADERS, only=None, jobs=2):
    """Compile every blob of <src_dir>/<stem>.comp into <out_dir>/<blob>.spv (includes from src_dir).
    only: blob names to build (None: all). Returns {blob: error text or ""}."""
    comp = os.path.join(src_dir, stem + ".comp")
    text = open(comp).read()
    todo = [b for b in blobs(text, stem) if only is None or b[0] in only]
    os.makedirs(out_dir, exist_ok=True)

    def one(b):
        name, v, ieee = b
        r = subprocess.run(glslc_cmd(comp, v, ieee, os.path.join(out_dir, name + ".spv"), src_dir),
                           capture_output=True, text=True)
        return name, (r.stderr or "glslc failed") if r.returncode else ""
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
