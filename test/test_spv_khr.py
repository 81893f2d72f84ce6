"""scripts/spv_khr.py's rewrite of GL_NV_cooperative_matrix SPIR-V to VK_KHR_cooperative_matrix:
shaders/gemm_coop_bf16.comp (subgroup scope, bfloat16 A and B) and gemm_coop_wg.comp (workgroup
scope, VK_NV_cooperative_matrix2, float16).

Debian 12's spirv-val (SPIRV-Tools 2023.1) knows neither SPV_KHR_cooperative_matrix nor
SPV_KHR_bfloat16, so it cannot validate the blob; lavapipe has no cooperative matrices, so no CI
run creates its pipeline. This file checks the blob's structure instead, with its own reading of
the words (not the rewrite's code): every multiply-add takes an A-use, a B-use and an
accumulator-use matrix, A and B of bfloat16 (float16), the accumulator float32, of the scope and
shape the source declares; every load, store and phi of
a matrix keeps one type; the loads and stores are the NV build's in the same order, with the same
strides, and the same layouts (column-major -> ColumnMajorKHR). On a GPU that has the extensions
(the H100), test_gemm.py's coopmat cases run the blob against torch CPU.
"""
import array
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np
import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import shaders  # noqa: E402
import spv_khr  # noqa: E402


def _insts(words):
    i, out = 5, []
    while i < len(words):
        n = words[i] >> 16
        assert n > 0, f"zero-length instruction at word {i}"
        out.append(list(words[i:i + n]))
        i += n
    assert i == len(words), "the last instruction runs past the end"
    return out


def _string(ws):
    b = array.array("I", ws).tobytes()
    return b[:b.index(b"\0")].decode()


def _read(path):
    words = array.array("I", open(path, "rb").read())
    assert words[0] == 0x07230203
    return list(words)


def _nv_build(comp, out):
    """comp through glslc as setup.py builds it, without the post-processing."""
    subprocess.run(shaders.glslc_cmd(comp, "f32", False, out), check=True, capture_output=True)
    return _read(out)


def _structure(words):
    """What the checks need of a module: opcodes, capabilities, extensions, matrix types and the
    type of every value."""
    insts = _insts(words)
    ops = [w[0] & 0xffff for w in insts]
    consts = {w[2]: w[3] for w in insts if w[0] & 0xffff == 43 and len(w) == 4}
    floats = {w[1]: tuple(w[2:]) for w in insts if w[0] & 0xffff == 22}
    mats = {w[1]: w for w in insts if w[0] & 0xffff == 4456}
    ptrs = {w[1]: w[3] for w in insts if w[0] & 0xffff == 32}
    typed = {}
    for w in insts:
        op = w[0] & 0xffff
        if op not in (5, 6, 62, 71, 72) and len(w) > 2 and (w[1] in mats or w[1] in ptrs):
            typed[w[2]] = w[1]
    return insts, ops, consts, floats, mats, ptrs, typed


# stem: (scope, A rows x k, B k x columns, accumulator rows x columns, multiply-adds, loads and
# stores, A and B bfloat16)
BLOBS = {"gemm_coop": (3, (16, 16), (16, 16), (16, 16), 32, 33, False),
         "gemm_coop_bf16": (3, (16, 16), (16, 16), (16, 16), 32, 33, True),
         "gemm_coop_wg": (2, (128, 32), (32, 128), (128, 128), 1, 5, False),
         "gemm_coop_wg_bf16": (2, (128, 32), (32, 128), (128, 128), 1, 5, True)}


def _built(stem):
    found = glob.glob(os.path.join(shaders.GEN, "spv", f"{stem}_f32.*.spv"))
    assert len(found) == 1, f"setup.py's blob of {stem}_f32: {found} (build with `make build`)"
    return found[0]


@pytest.mark.parametrize("stem", sorted(BLOBS))
def test_blob_is_khr_with_the_declared_matrices(stem):
    scope, a_shape, b_shape, c_shape, n_muladd, _, bf16 = BLOBS[stem]
    words = _read(_built(stem))
    insts, ops, consts, floats, mats, ptrs, typed = _structure(words)
    assert not set(ops) & {5358, 5359, 5360, 5361, 5362}, "NV cooperative matrix instructions are left"
    caps = {w[1] for w in insts if w[0] & 0xffff == 17}
    want_caps = {6022} | ({5116, 5118} if bf16 else set()) | ({5432} if stem == "gemm_coop_wg_bf16" else set())
    assert want_caps <= caps and 5357 not in caps and (bf16 or not caps & {5116, 5118}), f"capabilities {sorted(caps)}"
    exts = {_string(w[1:]) for w in insts if w[0] & 0xffff == 10}
    want = {"SPV_KHR_cooperative_matrix"} | ({"SPV_KHR_bfloat16"} if bf16 else set()) | (
        {"SPV_NV_cooperative_matrix2"} if scope == 2 else set())
    assert want <= exts and "SPV_NV_cooperative_matrix" not in exts, exts
    muladds = [w for w in insts if w[0] & 0xffff == 4459]
    assert len(muladds) == n_muladd, f"{len(muladds)} multiply-adds"
    ab = (16, 0) if bf16 else (16,)
    for w in muladds:
        a, b, c = typed[w[3]], typed[w[4]], typed[w[5]]
        uses = tuple(consts[mats[t][6]] for t in (a, b, c, w[1]))
        assert uses == (0, 1, 2, 2), f"multiply-add {w}: uses {uses}"
        assert floats[mats[a][2]] == ab and floats[mats[b][2]] == ab, "A and B are not of the dtype"
        assert floats[mats[c][2]] == (32,) and c == w[1], "the accumulator is not float32"
        for t, shape in ((a, a_shape), (b, b_shape), (c, c_shape)):
            assert (consts[mats[t][3]], consts[mats[t][4]], consts[mats[t][5]]) == (scope,) + shape, \
                f"{w}: matrix {mats[t]} is not {shape} at scope {scope}"
    # every 16-bit matrix is of the dtype (the workgroup-scope tile is converted to one to be stored)
    assert all(floats[m[2]] in (ab, (32,)) for m in mats.values()), "a matrix of another 16-bit type"
    for w in insts:
        op = w[0] & 0xffff
        if op == 62 and typed.get(w[2]) in mats:  # OpStore of a matrix
            assert ptrs[typed[w[1]]] == typed[w[2]], f"store {w}: pointer to another type"
        if op == 61 and w[1] in mats:  # OpLoad of a matrix
            assert ptrs[typed[w[3]]] == w[1], f"load {w}: pointer to another type"
        if op == 245 and w[1] in mats:  # OpPhi
            assert all(typed.get(v) == w[1] for v in w[3::2]), f"phi {w}: operands of another type"


@pytest.mark.parametrize("stem", sorted(BLOBS))
def test_blob_loads_as_the_nv_build(stem):
    """The KHR loads and stores are the NV build's, in order, with the same pointer, stride and
    layout: a rewrite that swapped the stride and layout operands, or read the column-major bool
    backwards, fails here."""
    with tempfile.TemporaryDirectory() as d:
        nv = _nv_build(os.path.join(shaders.SHADERS, stem + ".comp"), os.path.join(d, "nv.spv"))
    nv_insts = _insts(nv)
    bools = {w[2]: (w[0] & 0xffff) == 41 for w in nv_insts if w[0] & 0xffff in (41, 42)}
    khr_insts, _, consts, *_ = _structure(_read(_built(stem)))
    nv_io = [(w[3], w[4], int(bools[w[5]])) if w[0] & 0xffff == 5359 else (w[1], w[3], int(bools[w[4]]))
             for w in nv_insts if w[0] & 0xffff in (5359, 5360)]
    khr_io = [(w[3], w[5], consts[w[4]]) if w[0] & 0xffff == 4457 else (w[1], w[4], consts[w[3]])
              for w in khr_insts if w[0] & 0xffff in (4457, 4458)]
    assert len(nv_io) == BLOBS[stem][5] and nv_io == khr_io
    assert {x[2] for x in khr_io} == {0, 1}, "both layouts occur (row- and column-major slices)"


def _glsl(tmp, body, opt=True):
    src = os.path.join(tmp, "t.comp")
    open(src, "w").write("""#version 460
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 32) in;
layout(std430, binding = 0) buffer Buf { float16_t h[]; };
layout(std430, binding = 1) buffer Out { float o[]; };
layout(push_constant) uniform P { uint stride; uint col; } pc;
#define F16 fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define F32 fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>
void main() {
  F16 a, b; F32 c = F32(0.0);
""" + body + """
  coopMatStoreNV(c, o, 0, 16, false);
}
""")
    out = os.path.join(tmp, "t.spv")
    subprocess.run([shaders.tool("glslc", "glslc"), "--target-env=vulkan1.3"] + (["-O"] if opt else []) +
                   ["-fshader-stage=compute", src, "-o", out], check=True, capture_output=True)
    return _read(out)


def test_rewrite_refuses_what_it_cannot_express():
    with tempfile.TemporaryDirectory() as d:
        ok = _glsl(d, "coopMatLoadNV(a, h, 0, 16, false); coopMatLoadNV(b, h, 256, 16, true); c = coopMatMulAddNV(a, b, c);")
        insts, ops, consts, floats, mats, ptrs, typed = _structure(spv_khr.rewrite(ok, bf16=True))
        (w,) = [w for w in insts if w[0] & 0xffff == 4459]
        assert tuple(consts[mats[typed[x]][6]] for x in w[3:6]) == (0, 1, 2)
        # one fragment as both A and B: KHR has no type for it
        same = _glsl(d, "coopMatLoadNV(a, h, 0, 16, false); c = coopMatMulAddNV(a, a, c);")
        with pytest.raises(ValueError, match="both as an A and as a B"):
            spv_khr.rewrite(same)
        # the layout chosen at run time (glslc -O refuses it; without -O it passes): the rewrite
        # needs a constant to map to KHR's layout constant
        dyn = _glsl(d, "coopMatLoadNV(a, h, 0, pc.stride, pc.col != 0u); coopMatLoadNV(b, h, 256, 16, true); "
                    "c = coopMatMulAddNV(a, b, c);", opt=False)
        with pytest.raises(ValueError, match="column-major operand is not a constant"):
            spv_khr.rewrite(dyn)


def _run_function(insts, fn, args):
    """Interprets the straight-line function `fn` (its own reading of the words, not the
    rewrite's code) on numpy uint32 arrays of the arguments' bits: the integer and bit
    instructions the per-element rounding uses, nothing else."""
    body = []
    inside = False
    for w in insts:
        op = w[0] & 0xffff
        if op == 54 and w[2] == fn:
            inside = True
        elif inside:
            body.append(w)
            if op == 56:
                break
    params = [w[2] for w in body if w[0] & 0xffff == 55]
    consts = {w[2]: np.uint32(w[3]) for w in insts if w[0] & 0xffff == 43 and len(w) == 4}
    val = dict(consts)
    val.update(zip(params, args))
    for w in body:
        op = w[0] & 0xffff
        if op in (55, 248, 56):
            continue
        if op == 254:
            return val[w[1]]
        x = [val[i] for i in w[3:]]
        if op == 124:  # OpBitcast: the bits stay
            val[w[2]] = x[0]
        elif op == 199:
            val[w[2]] = x[0] & x[1]
        elif op == 197:
            val[w[2]] = x[0] | x[1]
        elif op == 194:
            val[w[2]] = x[0] >> x[1]
        elif op == 128:
            val[w[2]] = (x[0].astype(np.uint64) + x[1]).astype(np.uint32)  # wraps, as OpIAdd does
        elif op == 172:
            val[w[2]] = x[0] > x[1]
        elif op == 169:
            val[w[2]] = np.where(x[0], x[1], x[2]).astype(np.uint32)
        else:
            raise AssertionError(f"instruction {op} in the per-element function")
    raise AssertionError("the function does not return")


def test_wg_bf16_rounds_each_element_before_converting():
    """gemm_coop_wg_bf16's tile goes through NV_cooperative_matrix2's per-element operation before
    its conversion to bfloat16, with a function (uint row, uint col, float x) -> float that rounds
    x to nearest even at bfloat16 precision: run here on 2^20 random float32 words and the special
    ones, its bits must be torch's bfloat16 conversion with 16 zero bits below (NaN: a NaN)."""
    insts, ops, consts, floats, mats, ptrs, typed = _structure(_read(_built("gemm_coop_wg_bf16")))
    per = [w for w in insts if w[0] & 0xffff == 5369]
    conv = [w for w in insts if w[0] & 0xffff == 115 and w[1] in mats]
    assert len(per) == 1 and len(conv) == 1 and conv[0][3] == per[0][2], (per, conv)
    assert floats[mats[per[0][1]][2]] == (32,) and floats[mats[conv[0][1]][2]] == (16, 0)
    fn = per[0][4]
    fdef = next(w for w in insts if w[0] & 0xffff == 54 and w[2] == fn)
    ftype = next(w for w in insts if w[0] & 0xffff == 33 and w[1] == fdef[4])
    ints = {w[1] for w in insts if w[0] & 0xffff == 21 and w[2] == 32}
    assert floats[ftype[2]] == (32,) and ftype[3] in ints and ftype[4] in ints and ftype[5] == ftype[2]
    g = np.random.default_rng(3)
    special = [0, 0x80000000, 0x7f800000, 0xff800000, 0x7f800001, 0xff80ffff, 0x7fc00000, 0xffffffff,
               0x7f7fffff, 0x7f7f8000, 0x7f7f7fff, 0x3f808000, 0x3f818000, 0x3f80ffff, 0x00008000, 0x00018000, 1]
    bits = np.concatenate([g.integers(0, 2**32, 1 << 20, dtype=np.uint64).astype(np.uint32),
                           np.array(special, dtype=np.uint32)])
    zero = np.zeros_like(bits)
    got = _run_function(insts, fn, [zero, zero, bits])
    assert not (got & 0xffff).any(), "low 16 bits left: the conversion would round them"
    x = torch.from_numpy(bits.view(np.float32).copy())
    want = x.to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16).astype(np.uint32) << 16
    nan = x.isnan().numpy()
    assert (got[~nan] == want[~nan]).all(), f"{(got[~nan] != want[~nan]).sum()} values differ"
    assert np.isnan(got[nan].view(np.float32)).all(), "a NaN did not stay NaN"
