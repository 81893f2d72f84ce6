"""Deliberately broken shaders for the check-mode tests, loaded through vkml_torch._C._set_spirv_dir.

broken_dir(stem, blobs) compiles shaders/<stem>.comp (and <stem>_*.comp) with every memory store of common.glsl
corrupted (a high mantissa / value bit flipped), except for OP_COPY, so uploads, downloads and
layout copies stay right and only the family's own ops give wrong results. It replaces the old
VKML_MUTATE hook, which lived in the lowering and in elementwise.comp's hot path.
"""
import atexit
import os
import shutil
import sys
import tempfile

import vkml_torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts"))
import shaders  # noqa: E402  (scripts/shaders.py)

# The store helpers of common.glsl and their corrupted bodies. A change to these functions makes
# broken_dir fail loudly (the text is not found), not quietly test nothing.
STORES = {
    "void st_word(uint64_t a, uint v) { Word(a).w = v; }":
        "void st_word(uint64_t a, uint v) { Word(a).w = OP == OP_COPY ? v : v ^ 0x00400000u; }",
    "  Word(a + 4UL).w = p.y;\n":
        "  Word(a + 4UL).w = OP == OP_COPY ? p.y : p.y ^ 0x00080000u;\n",
    "  atomicOr(Word(wa).w, (bits << sh) & mask);":
        "  if (OP != OP_COPY) bits ^= nbytes == 1u ? 1u : 0x200u;\n  atomicOr(Word(wa).w, (bits << sh) & mask);",
    # the fast paths' 4-element block store (elementwise EW_VEC): the first element of each block
    "void st_block4(uint64_t a, uint esz, uint64_t e[4]) {\n":
        "void st_block4(uint64_t a, uint esz, uint64_t e[4]) {\n  if (OP != OP_COPY) e[0] ^= esz == 8u ? "
        "0x0008000000000000UL : esz == 4u ? 0x00400000UL : esz == 2u ? 0x200UL : 1UL;\n",
}

_root = None
_built = {}


def _tmp():
    global _root
    if _root is None:
        _root = tempfile.mkdtemp(prefix="vkml-broken-")
        atexit.register(shutil.rmtree, _root, True)
    return _root


def stem_blobs(stem, dtype_name):
    """The blobs of <stem> that ops in dtype_name may run: its compute variant, plain and _ieee."""
    v = "f64" if dtype_name == "float64" else "i64" if dtype_name in (
        "bool", "uint8", "int8", "int16", "int32", "int64") else "f32"
    return {f"{stem}_{v}", f"{stem}_{v}_ieee"}


def _runs_here(stem):
    """False for the cooperative-matrix shaders (their sources carry scripts/shaders.py's KHR
    marker) on a device that has none (lavapipe): their broken builds could never be loaded, and
    the four gemm_coop ones took 13 s of glslc and rewriting per broken gemm family."""
    info = vkml_torch._C.device_info(0)
    if any(v for k, v in info.items() if k.startswith("cooperative_matrix") and isinstance(v, bool)):
        return True
    return shaders.KHR not in open(os.path.join(shaders.SHADERS, stem + ".comp")).read()


def broken_dir(stem, blobs=None):
    """A directory holding broken builds of shaders/<stem>.comp's blobs (default: all of them)."""
    key = (stem, frozenset(blobs) if blobs else None)
    if key in _built:
        return _built[key]
    src = shaders.copy_tree(os.path.join(_tmp(), "src"))
    path = os.path.join(src, "common.glsl")
    text = open(os.path.join(shaders.SHADERS, "common.glsl")).read()
    for old, new in STORES.items():
        assert text.count(old) == 1, f"broken_shaders: common.glsl no longer has {old!r}; update STORES"
        text = text.replace(old, new)
    open(path, "w").write(text)
    out = os.path.join(_tmp(), f"{stem}-{len(_built)}")
    # A family may have several shaders, <stem>.comp and <stem>_*.comp (gemm's pipelines):
    # all of them are broken, the same blobs of each.
    errors = {}
    for s in [x for x in shaders.stems() if (x == stem or x.startswith(stem + "_")) and _runs_here(x)]:
        only = {s + b[len(stem):] for b in blobs} if blobs else None
        errors.update({b: e for b, e in shaders.compile_stem(s, out, src, only=only).items() if e})
    assert not errors, f"broken {stem} did not compile: {errors}"
    _built[key] = out
    return out


class loaded:
    """with loaded(path): ops run the SPIR-V in path (blobs found there), then the built-in again."""

    def __init__(self, path):
        self.path = path

    def __enter__(self):
        self.prev = vkml_torch._C._spirv_dir()
        vkml_torch._C._set_spirv_dir(self.path)
        return self

    def __exit__(self, *exc):
        vkml_torch._C._set_spirv_dir(self.prev)
