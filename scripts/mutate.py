#!/usr/bin/env python3
"""Mutation campaign: break each shader on purpose, one change at a time, and see whether the tests
notice. A mutant the family's tests fail on is killed; one they pass is a survivor (a gap in the
tests, or a change that cannot matter). See docs/testing.md.

    .venv/bin/python scripts/mutate.py                      # the campaign's 10% sample, what is not yet run; the score
    .venv/bin/python scripts/mutate.py --sample 100         # every mutant not yet run
    .venv/bin/python scripts/mutate.py --family reduce --limit 20
    .venv/bin/python scripts/mutate.py --list                # the mutants, nothing run
    .venv/bin/python scripts/mutate.py --report              # the score from the results so far
    .venv/bin/python scripts/mutate.py --results docs/mutation/h200.jsonl --results docs/mutation/lavapipe.jsonl
                                                             # continue the kept campaign (new results: last file)
    .venv/bin/python scripts/mutate.py --jobs 15 --deadline 450   # side by side (a GPU host), stop in time

Mutants (of each target in TARGETS: every shaders/*.comp and ew_ops.glsl, never of comments or
#if/#include lines): an operator swapped
(+ -, * /, < <=, > >=, == !=, && ||, & |, << >>, += -=, ++ --), a constant changed (n -> n+1,
x -> 2x), an index off by one (a[i] -> a[i + 1]) and a barrier removed. Each is compiled with glslc
on a copy of shaders/ (scripts/shaders.py, the flags setup.py uses); a mutant whose SPIR-V equals the
original's in every blob is "same-spirv" (the compiler removed the change) and one that does not
compile is "invalid"; neither counts. The others are loaded through VKML_SPIRV_DIR into a worker
process that keeps torch imported and runs that target's tests with pytest -x: its own test files
(TARGETS), test_ops.py's items for its family's rows (only the dtypes whose compute variant the
mutant changed), and 60 fuzz cases of those rows. Each target's canary (its entry returning at
once) runs first and must be killed: it proves the tests reach that shader. A target needing a
device feature this device lacks (gemm_coop: VK_KHR_cooperative_matrix with float16) is unreachable: not run. No C++ is rebuilt: a mutant costs its glslc runs
(about 0.3 s a blob) plus the tests up to the first failure.

Mutants are taken in turns over the targets; the three tests that killed most of a target's
mutants so far run first for its next one (each once it has passed alone unmutated).
Results go to build/mutate/results.jsonl (or the last --results), one line per mutant, keyed by the mutant and the hash of
the source it was made from, so a run can stop at any point and the next one resumes (a changed
shader's mutants run again). A mutant that crashes the worker is killed (the suite would fail).
One that runs past --timeout is a "timeout", and the report does not count it as killed: a worker
slowed by load looks the same as a hang. Re-run timeouts with fewer --jobs and a longer --timeout;
a timeout never replaces a finished result of the same mutant in another results file.
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import shaders  # noqa: E402

ROOT = shaders.ROOT
RESULTS = os.path.join(ROOT, "build", "mutate", "results.jsonl")
# The campaign is this percentage of each target's mutants, drawn by a hash of the mutant's id (the
# same on every machine); its score and the 95% interval's lower end are what docs/testing.md reports.
# All 3,500-odd mutants take about a day of lavapipe or 4 hours of an H200 with 15 workers; the
# sample, a tenth of that. --sample 100 runs every mutant.
SAMPLE = 10.0
# What is mutated and which tests must notice: target name -> (source file in shaders/, the stems
# compiled from it, the family whose test_ops.py rows and fuzz cases run, the other test files,
# run first, and the device_info key the target's shader needs: a target whose device lacks it is
# "unreachable" here and not run). test_ops.py's items run first unless the list places them
# (the generated cases kill most mutants soonest; they do not reach gemm_large or fused.comp). The tests named are the ones that reach that shader: gemm_large
# and gemm_gemv run only for some shapes or under VKML_GEMM_PIPE (test_gemm.py forces each pipeline
# in a child process, which inherits VKML_SPIRV_DIR), fused.comp only where a chain fuses
# (test_fusion.py). Each target's "canary" (its main() returning at once, or ew_apply returning 0)
# proves the tests reach it; the report says so per target.
FAST = "test/test_fast_paths.py"
SIZES = "test/test_family_sizes.py"
REGR = "test/test_fuzz_regressions.py"
OPS = "test/test_ops.py"
L = "test/test_large.py::"  # its tests of a family's long rows, big batches and grids
G = "test/test_gemm.py::"

TARGETS = {
    "elementwise": ("elementwise.comp", ["elementwise"], "elementwise",
                    ["test/test_copy_views.py", "test/test_composite.py", "test/test_promotion.py", FAST,
                     L + "test_elementwise_beyond_65535_workgroups"], None),
    "ew_ops": ("ew_ops.glsl", ["elementwise", "fused"], "elementwise",
               ["test/test_composite.py", "test/test_promotion.py", FAST, "test/test_fusion.py"], None),
    "fused": ("fused.comp", ["fused"], "fused", ["test/test_fusion.py", OPS], None),
    "reduce": ("reduce.comp", ["reduce"], "reduce", ["test/test_max_dim.py", SIZES, FAST, REGR,
                                                          L + "test_full_reductions_beyond_65534_x_1024",
                                                          L + "test_two_pass_reductions",
                                                          L + "test_two_pass_full_reduction_int64_exact"], None),
    "softmax": ("softmax.comp", ["softmax"], "softmax", ["test/test_softmax.py", SIZES, FAST,
                                                             L + "test_softmax_row_with_a_chunk_of_minus_inf"], None),
    # (not test_large's test_softmax_long_rows: its log_softmax [1, 140000] case fails unmutated
    # with the inputs it draws after the file's earlier tests; docs/testing.md)
    "nll": ("nll.comp", ["nll"], "nll", [SIZES, L + "test_nll_many_samples", L + "test_nll_9m_samples"], None),
    "gemm": ("gemm.comp", ["gemm"], "gemm", [SIZES, "test/test_gemm.py", L + "test_gemm_long_k_and_big_grids"], None),
    # (test_gemm's tests that reach the pipeline: forced coopmat runs gemm_large without the feature)
    "gemm_large": ("gemm_large.comp", ["gemm_large"], "gemm",
                   [L + "test_gemm_large_grid_past_65535_writes_nothing_past_the_output",  # (VKML_TEST_LARGE=1)
                    G + "test_pipeline_forced[large]", G + "test_pipeline_forced[coopmat]", G + "test_choice_by_shape",
                    SIZES, OPS, L + "test_gemm_long_k_and_big_grids"], None),
    "gemm_gemv": ("gemm_gemv.comp", ["gemm_gemv"], "gemm",
                  [G + "test_pipeline_forced[gemv]", G + "test_choice_by_shape", G + "test_batched_long_k_gemv_splits",
                   G + "test_gemv_sums_in_its_documented_order",
                   SIZES, OPS,
                   L + "test_gemm_long_k_and_big_grids"], None),
    "gemm_coop": ("gemm_coop.comp", ["gemm_coop"], "gemm", ["test/test_gemm.py"], "cooperative_matrix"),
    "index": ("index.comp", ["index"], "index", ["test/test_index.py"], None),
    "conv": ("conv.comp", ["conv"], "conv", ["test/test_conv.py", REGR], None),
    "conv_tile": ("conv_tile.comp", ["conv_tile"], "conv", ["test/test_conv_tile.py"], None),
    "conv_wgrad": ("conv_wgrad.comp", ["conv_wgrad"], "conv", ["test/test_conv.py", "test/test_conv_tile.py", REGR, OPS], None),
    "conv_wtile": ("conv_wtile.comp", ["conv_wtile"], "conv", ["test/test_conv_tile.py"], None),
    "norm": ("norm.comp", ["norm"], "norm", ["test/test_norm.py", REGR], None),
    "random": ("random.comp", ["random"], "random", ["test/test_random.py", "test/test_random_cpu_stream.py"], None),
}
# Families whose 60 fuzz cases fail on the unmutated shaders (--baseline shows it): every mutant
# would be "killed" by them, so they are left out until the finding is fixed.
NO_FUZZ = {}
# Survivors looked at and found not to be gaps in the tests: (stem, start of the original line
# (or the whole line, ending in $; "a\nb": line b right after a line starting a, where a line's text
# repeats), mutation ("" = any), class, why). The report counts them apart from the score; a class:
#   equivalent   no input can tell the mutant from the original (on any device, or UB that
#                has no visible effect where it runs, said so)
#   unreachable  code that runs only on devices lacking a feature this one has
#   invalid-only changes behaviour only for inputs torch rejects (or that issue 7 makes rejected)
# A survivor that is a device-dependent race (lavapipe runs a workgroup in an order that hides
# it) is NOT listed: it stays a survivor.
ANNOTATED = [
    ("elementwise", "layout(local_size_x = 128) in;", "128 -> 129", "equivalent",
     "global_index() still counts 128 per group: the extra invocations recompute elements that "
     "others compute, with the same value"),
    ("fused", "layout(local_size_x = 128) in;", "128 -> 129", "equivalent",
     "as elementwise's: global_index() counts 128 per group, the extra invocations recompute elements "
     "that others compute, with the same value (a survivor on the H200, 2026-12-02)"),
    ("nll", "shared T s_loss[128];", "128 -> 129", "equivalent", "a larger shared array than used"),
    ("nll", "shared T s_w[128];", "128 -> 129", "equivalent", "a larger shared array than used"),
    ("conv_wgrad", "shared T red[128];", "128 -> 129", "equivalent", "a larger shared array than used"),
    ("elementwise", "for (uint d = 0u; d < pc.ndim; ++d) {", "< -> <=", "equivalent",
     "the extra dim has stride 0 in all three operands (the push block is zeroed)"),
    ("reduce", "uint nr = (pc.ndims >> 8) & 0xffu;", "& -> |", "equivalent",
     "the extra reduced dims have stride 0 and do not change which elements are read"),
    ("reduce", "    if (d < nr) {", "< -> <=", "equivalent",
     "as above: one more dim of stride 0"),
    ("reduce", "if (is_nan(x)) return !is_nan(y) || ix < iy;", "< -> <=", "equivalent",
     "two candidates never have the same index"),
    ("reduce", "if (x == y) return ix < iy;", "< -> <=", "equivalent",
     "two candidates never have the same index, so ix <= iy and ix < iy agree"),
    ("gemm", "for (uint j = 0u; j < 4u; ++j) acc[i][j] = T(0);", "4u -> 5u", "equivalent",
     "writes acc[i][4], past a private array (undefined; the compiler drops it)"),
    ("gemm", "for (uint j = 0u; j < 4u; ++j) br[j] = Bs[kk][tx + 8u * j];", "4u -> 5u", "equivalent",
     "reads into br[4], past a private array, which nothing uses"),
    ("gemm", "for (uint k0 = 0u; k0 < pc.K; k0 += BK) {", "< -> <=", "equivalent",
     "one more k tile of zeros (loads past K are 0): it can turn a -0 result into +0, which the "
     "GEMM's backward-error tolerance does not distinguish, as torch's own BLAS order does not"),
    ("elementwise", "else st_bits(pc.dst + oo, bitfieldExtract(ld_word((pc.a + oa) & ~3UL)", "8 -> 9", "equivalent",
     "(the width's * 8, which a test of odd-offset uint8/float16/bool copies showed: the offset's one "
     "changes values) one more bit extracted, which st_bits masks off"),
    ("ew_ops", "case OP_ABS: r = a < T(0) ? -a : a; break;", "0 -> 1", "equivalent",
     "integers: a < 1 and not negative is 0, and -0 is 0"),
    ("gemm", "for (uint i = 0u; i < 2u; ++i)$", "2u -> 3u", "equivalent",
     "one more row of a private array, past its end (undefined; unused)"),
    ("gemm", "for (uint i = 0u; i < 2u; ++i)$", "< -> <=", "equivalent",
     "as above"),
    ("nll", "if (t == pc.ignore_index || t < 0L || t >= int64_t(pc.C)) return -1L;", "1L -> 2L", "equivalent",
     "callers test t < 0, so -2 means ignored as -1 does"),
    ("nll", "store_T(pc.t0 + uint64_t(int64_t(i) * pc.s_vec * int64_t(dsize(dto))), dto, r);", "* -> /", "equivalent",
     "the first *: the node's output is a new contiguous tensor, s_vec is 1 (out= goes through a copy)"),
    ("reduce", "[[unroll]] for (uint d = 0u; d < 4u; ++d) {", "< -> <=", "equivalent",
     "the fifth trip is guarded by d < nr, and nr is at most 4"),
    ("reduce", "[[unroll]] for (uint d = 0u; d < 4u; ++d) {", "4u -> 5u", "equivalent",
     "the fifth trip is guarded by d < nk or d < nr, and both are at most 4"),
    ("reduce", "uint64_t groups = uint64_t(gl_NumWorkGroups.x) * uint64_t(gl_NumWorkGroups.y);", "* -> /",
     "equivalent", "with fewer groups counted the dispatch takes the one-invocation-per-output path, "
     "which computes the same outputs (test_family_sizes runs it with a 2-D grid)"),
    ("reduce", "if (tid == 0u) finish(uint(k), s_val[0], s_idx[0]);", "== -> !=", "equivalent",
     "127 invocations store the same final value instead of one"),
    ("softmax", "uint64_t b1 = pc.t1 + uint64_t((int64_t(o) * pc.s1[0] + int64_t(in_) * pc.s1[2]) * e1);", "* -> /",
     "equivalent", "(the second *) the [outer, D, inner] view is contiguous, s1[2] is 1"),
    ("ew_ops", "const T o = dto != dtc ? round_T(old, dtc) : old;", "!= -> ==", "equivalent",
     "addcmul_, addcdiv_, lerp_: the old value is self, which took part in the promotion (in place), or "
     "self copied into the result (functional, out=), so it is always a value of dtc: rounding it to dtc "
     "or not gives the same value (survivors on lavapipe, 2026-12-06, lines 70 and 82)"),
    ("ew_ops", "case OP_WHERE: r = nonzero(b) ? a : (dto != dtc ? round_T(old, dtc) : old); break;", "!= -> ==",
     "equivalent", "where's output dtype is its common dtype (torch rejects another out= dtype) and the "
     "compute dtype is never narrower, so old, read from the output, is already a value of dtc: "
     "rounding it to dtc or not gives the same value"),
    ("ew_ops", "precise T r = T(0);", "0 -> 1", "equivalent",
     "every opcode of the switch assigns r"),
    ("elementwise", "if ((pc.flags & EW_SCALAR_B) == 0u && pc.b != 0UL && dtb != dtc)", "0UL -> 1UL", "equivalent",
     "a device address is never 1"),
    ("elementwise", "if (pc.a != 0UL && dta != dtc) a = round_T(a, dtc);", "0UL -> 1UL", "equivalent",
     "a device address is never 1"),
    ("gemm", "T acc[2][4];", "", "equivalent", "a larger private array than used"),
    ("gemm", "T ar[2], br[4];", "2 -> 3", "equivalent", "a larger private array than used (a survivor on the H200, 2026-12-02)"),
    ("fused", "if ((fl & FUSED_KEEP) != 0u) reg[k] = prev;", "0u -> 1u", "equivalent",
     "FUSED_KEEP is 4u, so the test is always true: every step's result is kept in reg[k], but a "
     "register is read only by a later step that names it, and then the flag is set anyway (a "
     "survivor on the H200, 2026-12-02)"),
    ("gemm_large", "bool a_full = m0 + BM <= pc.M, b_full = n0 + BN <= pc.N;", "<= -> <", "equivalent",
     "a tile that ends exactly at M (or N) takes the bounds-checked loads instead of the unchecked "
     "ones: the same values, only slower"),
    ("gemm", "for (uint j = 0u; j < 4u; ++j) acc[i][j] = T(0);", "< -> <=", "equivalent",
     "writes acc[i][4], past a private array (undefined; the compiler drops it)"),
    ("reduce", "return OP == OP_ARGMAX ? x > y : x < y;", "< -> <=", "equivalent",
     "equal values returned on the line before, so x <= y and x < y agree here"),
    ("reduce", "return OP == OP_ARGMAX ? x > y : x < y;", "> -> >=", "equivalent",
     "as above"),
    ("softmax", "layout(local_size_x = 128) in;", "128 -> 129", "equivalent",
     "invocation 128 repeats invocation 0's elements and stores the same outputs; its partial goes "
     "to s_red[128], past the array (undefined, unread)"),
    ("conv", "layout(local_size_x = 128) in;", "128 -> 129", "equivalent",
     "one output element per invocation (global_index() counts 128 per group): the extra "
     "invocations compute elements that others also compute, with the same value"),
    ("conv_wgrad", "layout(local_size_x = 128) in;", "128 -> 129", "equivalent",
     "invocation 128 folds terms that invocation 0 also folds and writes its partial to red[128], "
     "past the array (undefined; the tree reads red[0..127] only); the sequential path computes "
     "each result once or twice, with the same value"),
    ("random", "layout(local_size_x = 128) in;", "128 -> 129", "equivalent",
     "element i's draw depends on i alone (Philox of the counter): the extra invocations recompute "
     "elements others compute, with the same bits"),
    ("gemm_gemv", "uint64_t z = live ? o / mn : 0UL;", "0UL -> 1UL", "equivalent",
     "z of a dead output (o past the last one) is never used: every use is behind live"),
    ("elementwise", "if (pc.a == 0UL) {", "0UL -> 1UL", "equivalent",
     "(the fast path) no operand a only for fill (the one nullary elementwise node), whose result "
     "ignores a: the mutant's block load from address 0 is dead code, removed once OP is specialized "
     "(no visible effect on lavapipe; UB on a driver that kept the load). A device address is never 1"),
    ("elementwise", "if (pc.a != 0UL) a = load_T(pc.a + oa, dta);", "0UL -> 1UL", "equivalent",
     "(the strided path, and the fast path's tails) as the fast path's pc.a == 0UL: only fill has no "
     "operand a, and its result ignores a, so the mutant's load from address 0 + oa is dead once OP "
     "is specialized (a survivor on the H200 and on lavapipe, 2026-12-03: a strided fill_ and zero_ "
     "give the same values and no fault; UB on a driver that kept the load). A device address is "
     "never 1"),
    ("softmax", "if (tid == 0u) put_pair(", "0u -> 1u", "equivalent",
     "group_reduce returns the total (s_red[0]) to every invocation, so invocation 1 stores the "
     "same pair invocation 0 would (a survivor on the H200, 2026-12-03)"),
    ("gemm_large", "T acc[8][8];", "8 -> 9", "equivalent",
     "a larger private array than used (a survivor on the H200, 2026-12-03)"),
    ("gemm_large", "T w = T(0);", "0 -> 1", "equivalent",
     "B's padding, where gk >= k_hi or gn >= N: past k_hi the tile is not k_full, so A takes its "
     "bounds-checked loads and pads the same k with 0 (0 * 1 = 0 * 0 = +0, added to the same "
     "accumulator), and columns past N are never stored (a survivor on the H200, 2026-12-03)"),
    ("gemm_coop", "} else if ((flags & GEMM_B_K) != 0u && b_full && k_full) {\nfor (uint l = 0u; l < 8u; ++l) {",
     "< -> <=", "equivalent",
     "(the B_K fast path) a ninth trip loads columns n0 + 64 .. 71 into Bs's row padding (SB = 72), "
     "which coopMatLoadNV never reads; its global reads past the tile are UB where B ends there, with "
     "no effect seen on the H200 (a survivor there, 2026-12-03)"),
    ("gemm_coop", "for (uint i = 0u; i < 2u; ++i) coopMatLoadNV(fa[i], As,", "2u -> 3u", "equivalent",
     "loads into fa[2], past a private array that nothing reads (undefined; the compiler drops it) "
     "(a survivor on the H200, 2026-12-03)"),
    ("gemm_coop", "for (uint j = 0u; j < 2u; ++j) coopMatLoadNV(fb[j], Bs,\nfor (uint i = 0u; i < 2u; ++i)$",
     "< -> <=", "equivalent",
     "(the multiply-add loop) a third row i = 2 reads fa[2] and writes acc[2][j], past private "
     "arrays that nothing else reads (undefined; the compiler drops it) (a survivor on the H200, "
     "2026-12-03; 50 s alone, a timeout at 300 s under 6 workers)"),
    ("norm", "for (uint s0 = 0u; s0 < h_S; s0 += 128u) {", "< -> <=", "equivalent",
     "the extra trip starts at s0 >= h_S, where every sj = s0 + tid fails sj < h_S: nothing is "
     "pushed (a survivor on the H200, 2026-12-03)"),
    ("elementwise", "st_bits(pc.dst + oo, (ld_u64(pc.a + oa) << 1) != 0UL ? 1u : 0u, 1u);", "", "unreachable",
     "float64 -> bool in the f32 variant: only on devices without shaderFloat64 (lavapipe copies "
     "float64 in the f64 variant)"),
    ("elementwise", "if (OP == OP_COPY && dta == DT_F64 && dsize(dto) < 8u) {", "", "unreachable",
     "float64 -> narrow int in the i64 variant: only without shaderFloat64"),
    ("elementwise", "int64_t v = f64bits_to_i64(ld_u64(pc.a + oa));", "", "unreachable",
     "as above"),
    ("elementwise", "store_T(pc.dst + oo, dto, (v >= -2147483648L && v <= 2147483647L) ? v : -2147483648L);", "",
     "unreachable", "as above"),
    ("nll", "uint64_t first_at(uint64_t p) { return pc.partials + uint64_t(pc.parts) * 16UL + p * 4UL; }",
     "4UL -> 5UL", "equivalent",
     "each chunk's first-bad-sample word moves to 5 p: written and read through the same function, so "
     "the same values; UB that lavapipe does not show (words not 4-aligned, and the last ones up to "
     "parts - 1 bytes past the scratch's 20 a chunk: into the rest of its 512-byte block, or past it; "
     "a test cannot see that without a neighbour allocation read at that moment)"),
    ("nll", "if (t == pc.ignore_index || t < 0L || t >= int64_t(pc.C)) return -1L;", "|| -> &&", "invalid-only",
     "the second || only matters for a negative target other than ignore_index, which torch rejects "
     "(issue 7 finding 5: vkml must reject it too)"),
]


def annotation(stem, text, line, what):
    lines = text.splitlines()
    for st, ln, wh, cls, why in ANNOTATED:
        # "a\nb": line b preceded by line a (for loops whose text repeats); "$": the whole line
        parts = ln.split("\n")
        if st != stem or (wh and wh != what) or line - len(parts) < 0 or line > len(lines):
            continue
        same = True
        for k, part in enumerate(parts):
            src = lines[line - len(parts) + k].strip()
            same = same and (src == part[:-1] if part.endswith("$") else src.startswith(part.strip()))
        if same:
            return cls, why
    return None


VARIANT_DTYPES = {"f32": {"float32", "float16", "bfloat16"}, "f64": {"float64"},
                  "i64": {"int64", "int32", "int16", "int8", "uint8", "bool"}}

# ---- mutants -------------------------------------------------------------------------------------

TOKEN = re.compile(r"""
    (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<pp>^[ \t]*\#[^\n]*)
  | (?P<num>0[xX][0-9a-fA-F]+[uUlL]*|(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?(?:LF|lf|[uUlLfF])*)
  | (?P<id>[A-Za-z_]\w*)
  | (?P<op><<=|>>=|\+\+|--|\+=|-=|\*=|/=|&&|\|\||<<|>>|<=|>=|==|!=|[-+*/%<>&|^!~?:=;,.()\[\]{}])
  | (?P<ws>\s+)
""", re.X | re.S | re.M)

SWAP = {"+": "-", "-": "+", "*": "/", "/": "*", "<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=",
        "!=": "==", "&&": "||", "||": "&&", "&": "|", "|": "&", "<<": ">>", ">>": "<<", "+=": "-=",
        "-=": "+=", "++": "--", "--": "++", "<<=": ">>=", ">>=": "<<="}


def _tokens(text):
    out, pos = [], 0
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m:
            raise ValueError(f"mutate: cannot tokenize at {text[pos:pos + 30]!r}")
        kind = m.lastgroup
        if kind == "pp" and re.match(r"\s*#define\s+\w+\s+", m.group()):
            # a #define's value is code: tokenize its body too (#define BM 32u)
            head = re.match(r"\s*#define\s+\w+(\([^)]*\))?\s*", m.group())
            out.append(("pp", pos, pos + head.end(), m.group()[:head.end()]))
            body_start = pos + head.end()
            for k, s, e, t in _tokens(m.group()[head.end():]):
                out.append((k, body_start + s, body_start + e, t))
        elif kind != "ws":
            out.append((kind, m.start(), m.end(), m.group()))
        pos = m.end()
    return out


def _bump(num):
    m = re.match(r"(0[xX][0-9a-fA-F]+|[\d.]+(?:[eE][+-]?\d+)?)(.*)", num)
    body, suffix = m.group(1), m.group(2)
    if body.lower().startswith("0x"):
        return hex(int(body, 16) + 1) + suffix
    if re.fullmatch(r"\d+", body):
        return str(int(body) + 1) + suffix
    v = float(body)
    nv = repr(v * 2 if v else 1.0)
    return (nv if "." in nv or "e" in nv else nv + ".0") + suffix


TYPES = {"shared", "T", "uint", "int", "float", "double", "bool", "int64_t", "uint64_t", "uvec2", "const"}


def _declares(toks, i):
    """Whether the [ at toks[i] sizes an array in a declaration (changing a size is no bug)."""
    j = i
    while j > 0 and toks[j - 1][3] not in (";", "{", "}", "(", ","):
        j -= 1
        if toks[j][3] == "=":
            return False
    return toks[j][3] in TYPES


def mutants(stem, text):
    """[(id, line, kind, description, mutated text)] of one shader source, in a stable order."""
    toks = _tokens(text)
    out = []

    def add(kind, start, end, new, what):
        line = text.count("\n", 0, start) + 1
        out.append((f"{stem}:{len(out)}", line, kind, what, text[:start] + new + text[end:]))
    for i, (k, s, e, t) in enumerate(toks):
        if k == "op" and t in SWAP:
            prev = toks[i - 1] if i else None
            if t in ("<", ">") and prev and prev[3] in ("layout",):
                continue
            add("operator", s, e, SWAP[t], f"{t} -> {SWAP[t]}")
        elif k == "num" and not (i >= 2 and toks[i - 2][3] == "constant_id"):
            add("constant", s, e, _bump(t), f"{t} -> {_bump(t)}")
        elif k == "op" and t == "[" and not (i + 1 < len(toks) and toks[i + 1][3] == "[") and not (
                i and toks[i - 1][3] == "["):
            depth, j = 0, i
            while j < len(toks):
                depth += toks[j][3] == "["
                depth -= toks[j][3] == "]"
                if depth == 0:
                    break
                j += 1
            inner = toks[i + 1:j]
            if j < len(toks) and inner and not (len(inner) == 1 and inner[0][0] == "num") and not _declares(toks, i):
                body = text[toks[i + 1][1]:toks[j - 1][2]]
                add("index", toks[i + 1][1], toks[j - 1][2], f"({body}) + 1", f"[{body}] -> [({body}) + 1]")
        elif k == "id" and t in ("barrier", "memoryBarrierShared") and i + 3 < len(toks) and toks[i + 3][3] == ";":
            add("barrier", s, toks[i + 3][2], "", f"{t}(); removed")
    return out


# ---- the worker: one process that keeps torch imported and runs pytest per mutant ---------------

class _Select:
    """pytest plugin: test_ops items of the family's rows in the given dtypes; other files whole."""

    def __init__(self, family, dtypes):
        self.family, self.dtypes = family, dtypes

    def pytest_collection_modifyitems(self, config, items):
        keep, drop = [], []
        for it in items:
            cs = getattr(it, "callspec", None)
            if it.fspath.basename == "test_ops.py":
                ok = cs is not None and "row" in cs.params and cs.params["row"].get("family") == self.family \
                    and cs.params.get("dtype") in self.dtypes
            else:
                ok = True
            (keep if ok else drop).append(it)
        items[:] = keep
        config.hook.pytest_deselected(items=drop)


def worker():
    os.chdir(ROOT)
    sys.path.insert(0, os.path.join(ROOT, "test"))
    import pytest
    for line in sys.stdin:
        job = json.loads(line)
        os.environ["VKML_SPIRV_DIR"] = job["dir"]
        os.environ["VKML_FUZZ_FAMILY"] = job["family"]
        os.environ["VKML_FUZZ_CASES"] = "60"
        import vkml_torch
        vkml_torch._C._set_spirv_dir(job["dir"])
        t0 = time.time()
        tests = job["tests"] if OPS in job["tests"] else [OPS] + job["tests"]
        fuzz = [] if job["family"] in NO_FUZZ else ["test/test_fuzz.py"]
        select = _Select(job["family"], set(job["dtypes"]))
        base = ["-x", "-q", "-p", "no:cacheprovider", "--no-header", "-W", "ignore"]
        report, first = _Report(), job.get("first") or []
        if job.get("only"):  # these tests alone (a killer tried on the unmutated shaders)
            rc = pytest.main(base + job["only"], plugins=[select, report])
        elif first:  # the tests that killed most of this target's mutants so far, before the rest
            rc = pytest.main(base + first, plugins=[select, report])
        if not job.get("only") and not (first and rc != 0 and report.failed):
            report = _Report()
            rc = pytest.main(base + tests + fuzz, plugins=[select, report])
        vkml_torch._C._set_spirv_dir("")
        print(json.dumps({"rc": int(rc), "failed": report.failed, "passed": report.passed,
                          "secs": round(time.time() - t0, 1)}), flush=True)


class _Report:
    def __init__(self):
        self.failed, self.passed = "", 0

    def pytest_runtest_logreport(self, report):
        if report.failed and not self.failed:
            self.failed = report.nodeid
        elif report.passed and report.when == "call":
            self.passed += 1


class Worker:
    def __init__(self):
        self.p = None

    def start(self):
        env = dict(os.environ, PYTHONUNBUFFERED="1", VKML_SPIRV_DIR="")
        env.pop("VKML_CHECK", None)
        env["VKML_CACHE_DIR"] = "off"  # no mutant's pipelines in the user's cache; workers side by side
        # its own process group: a kill reaches the child processes its tests start (test_gemm.py's)
        self.p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, cwd=ROOT,
                                  start_new_session=True)

    def kill(self):
        """Kills the worker and its children. A process stuck in the GPU driver (a mutant whose
        dispatch never ends) may not exit at once: it is waited for 10 s and then left behind, so
        that --deadline holds."""
        try:
            os.killpg(self.p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            print(f"mutate: a worker (pid {self.p.pid}) did not exit 10 s after SIGKILL; left behind", flush=True)
        self.p = None

    def run(self, job, timeout):
        """(status, detail): killed / survived / crash / timeout."""
        if self.p is None or self.p.poll() is not None:
            self.start()
        self.p.stdin.write(json.dumps(job) + "\n")
        self.p.stdin.flush()
        import selectors
        sel = selectors.DefaultSelector()
        sel.register(self.p.stdout, selectors.EVENT_READ)
        deadline = time.time() + timeout
        buf = ""
        while time.time() < deadline:
            if not sel.select(timeout=max(0.1, deadline - time.time())):
                continue
            line = self.p.stdout.readline()
            if not line:  # the worker died: the mutant crashed the process
                self.p.wait()
                self.p = None
                return "crash", f"worker exited {buf[-200:]}"
            if line.startswith("{"):
                r = json.loads(line)
                return ("survived" if r["rc"] == 0 else "killed" if r["failed"] else "error"), r
            buf += line
        self.kill()
        return "timeout", f"no result in {timeout} s"

    def stop(self, wait=30):
        if self.p and self.p.poll() is None:
            self.p.stdin.close()
            try:
                self.p.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                self.kill()


# ---- the campaign --------------------------------------------------------------------------------

def _load_results(paths):
    """The results of every file, a later one's record of a mutant replacing an earlier one's
    (except that a timeout does not replace a kill or a survival)."""
    res = {}
    for path in paths:
        if os.path.exists(path):
            for line in open(path):
                r = json.loads(line)
                key = (r["id"], r["hash"])
                # a timeout never replaces a finished result: it says only that the run was slow
                if r["status"] == "timeout" and key in res and res[key]["status"] != "timeout":
                    continue
                res[key] = r
    return res


def _changed_dtypes(mdir, odir, names):
    """names: {blob: stem}. The blobs the mutant changed, and the dtypes their variants compute."""
    changed = sorted(n for n in names if open(os.path.join(mdir, n + ".spv"), "rb").read()
                     != open(os.path.join(odir, n + ".spv"), "rb").read())
    dts = set()
    for n in changed:
        v = n[len(names[n]) + 1:].split("_")[0]
        dts |= VARIANT_DTYPES.get(v, set())
    return changed, dts


_INFO = []


def _device_info():
    """vkml_torch._C.device_info() of device 0, from a child process (this one does not import torch)."""
    if not _INFO:
        r = subprocess.run([sys.executable, "-c", "import json, vkml_torch; "
                            "print(json.dumps({k: v for k, v in vkml_torch._C.device_info(0).items() "
                            "if isinstance(v, (bool, int, str))}))"], capture_output=True, text=True, cwd=ROOT)
        _INFO.append(json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else {})
    return _INFO[0]


def _device_blobs(names):
    """The blobs this device runs: the _ieee builds where it has float controls, else the plain
    ones (i64 has only one). A mutant is compiled and judged on these only (--all-variants: all)."""
    ieee = bool(_device_info().get("float_controls"))
    return {n for n in names if n.endswith("_i64") or n.endswith("_ieee") == ieee}


def _targets(args):
    if getattr(args, "id", None) and not args.family:
        return [t for t in TARGETS if any(i.split(":")[0] == t for i in args.id)]
    return args.family or list(TARGETS)


def _source(target):
    """(text, hash) of a target's source: the hash keys its results (with common.glsl's text)."""
    text = open(os.path.join(shaders.SHADERS, TARGETS[target][0])).read()
    h = hashlib.sha256((text + open(os.path.join(shaders.SHADERS, "common.glsl")).read()).encode()).hexdigest()[:12]
    return text, h


def unreachable(target):
    need = TARGETS[target][4]
    return f"the device has no {need}" if need and not _device_info().get(need) else ""


def canary(target, text):
    """The target with its entry returning at once (main, or ew_apply giving 0): the tests must
    fail, else they do not reach this shader. None where no entry is found."""
    for pat, ret in ((r"\bvoid\s+main\s*\(\s*\)\s*\{", " return;"), (r"\bT\s+ew_apply\s*\([^)]*\)\s*\{", " return T(0);")):
        m = re.search(pat, text)
        if m:
            return text[:m.end()] + ret + text[m.end():]
    return None


def in_sample(mid, percent):
    """Whether a mutant is in the campaign's seeded sample of that percentage: a hash of its id, so
    the same mutants are drawn on every machine and run, spread over every line of every target."""
    if percent >= 100:
        return True
    return int(hashlib.sha256(f"sample:{mid}".encode()).hexdigest()[:8], 16) < percent / 100 * 2 ** 32


def _wilson_low(k, n, z=1.96):
    """The lower end of the 95% Wilson interval of a proportion k / n (the kill rate of a sample)."""
    if n == 0:
        return 0.0
    p = k / n
    return (p + z * z / (2 * n) - z * ((p * (1 - p) + z * z / (4 * n)) / n) ** 0.5) / (1 + z * z / n)


def _prepare(target, args, tmp):
    """What running a target's mutants needs: its source, blobs, unmutated SPIR-V and mutant list
    (canary first). None where the target is unreachable here."""
    fname, stems, family, tests, _ = TARGETS[target]
    why = unreachable(target)
    if why:
        print(f"mutate: {target}: unreachable here ({why}); its mutants are not run")
        return None
    text, h = _source(target)
    names = {}  # blob -> stem
    for st in stems:
        for b in shaders.blobs(open(os.path.join(shaders.SHADERS, st + ".comp")).read(), st):
            names[b[0]] = st
    if not args.all_variants:
        keep = _device_blobs(names)
        names = {n: st for n, st in names.items() if n in keep}
    odir = os.path.join(tmp, "orig-" + target)
    for st in stems:
        err = {k: v for k, v in shaders.compile_stem(st, odir, only=set(names)).items() if v}
        if err:
            sys.exit(f"mutate: the unmutated {st}.comp does not compile: {err}")
    ms = [m for m in mutants(target, text)[args.start::args.every] if in_sample(m[0], args.sample)]
    if args.id:  # these mutants again, whatever their results so far
        ms = [m for m in mutants(target, text) if m[0] in args.id]
    c = canary(target, text)
    if c is not None and not args.no_canary and not args.id and not args.baseline:
        ms = [(f"{target}:canary", 0, "canary", "entry returns at once", c)] + ms
    return {"target": target, "fname": fname, "stems": stems, "family": family, "tests": tests,
            "hash": h, "names": names, "odir": odir, "ms": ms}


def _order(prepared):
    """The mutants to run, in turns over the targets (each target's canary in its first turn), so
    that a run cut short by --limit or --deadline has a spread over every target."""
    queues = [[(p, m) for m in p["ms"]] for p in prepared]
    out = []
    while any(queues):
        for q in queues:
            if q:
                out.append(q.pop(0))
    return out


def _compile_mutant(fname, stems, mtext, slot, out, only=None):
    """mtext as shaders/<fname> in a copy of shaders/ under slot, its stems compiled into out:
    {blob: error} for the blobs that did not compile."""
    src = shaders.copy_tree(os.path.join(slot, "src"))
    open(os.path.join(src, fname), "w").write(mtext)
    errs = {}
    for st in stems:
        errs.update({k: v for k, v in shaders.compile_stem(st, out, src, only=only).items() if v})
    return errs


def _run_mutant(p, m, worker, tmp, timeout, first):
    """Compile one mutant and run its target's tests: the result record, or None where the
    deadline cut its tests short (nothing is recorded for it then)."""
    mid, line, kind, what, mtext = m
    t0 = time.time()
    slot = tempfile.mkdtemp(prefix=mid.replace(":", "-") + "-", dir=tmp)
    try:
        # a new directory per mutant: the pipeline cache notices a changed path, not changed files
        mdir = os.path.join(slot, "spv")
        errs = _compile_mutant(p["fname"], p["stems"], mtext, slot, mdir, only=set(p["names"]))
        rec = {"id": mid, "hash": p["hash"], "stem": p["target"], "line": line, "kind": kind, "what": what}
        if errs:
            rec.update(status="invalid", detail=next(iter(errs.values())).strip().splitlines()[0][:200])
        else:
            changed, dts = _changed_dtypes(mdir, p["odir"], p["names"])
            if not changed:
                rec.update(status="same-spirv")
            else:
                budget = timeout()
                st, detail = worker.run({"dir": mdir, "family": p["family"], "tests": p["tests"],
                                         "dtypes": sorted(dts), "first": first(p, worker)}, budget[0])
                if st == "timeout" and budget[1]:
                    return None
                rec.update(status=st, detail=detail, blobs=changed)
        rec["secs"] = round(time.time() - t0, 1)
        return rec
    finally:
        shutil.rmtree(slot, ignore_errors=True)


def emit(args):
    """--emit DIR --id X: the mutant's blobs in DIR, for trying one test against it by hand."""
    if not args.id or len(args.id) != 1:
        sys.exit("mutate: --emit needs exactly one --id")
    target = args.id[0].split(":")[0]
    fname, stems = TARGETS[target][0], TARGETS[target][1]
    text, _ = _source(target)
    m = [m for m in mutants(target, text) if m[0] == args.id[0]]
    if not m:
        sys.exit(f"mutate: no mutant {args.id[0]}")
    tmp = tempfile.mkdtemp(prefix="vkml-emit-")
    try:
        errs = _compile_mutant(fname, stems, m[0][4], tmp, args.emit)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if errs:
        sys.exit(f"mutate: {args.id[0]} does not compile: {next(iter(errs.values())).strip()[:200]}")
    print(f"mutate: {args.id[0]} (line {m[0][1]} {m[0][2]}: {m[0][3]}) compiled into {args.emit}")
    return 0


def campaign(args):
    done = _load_results(args.results)
    os.makedirs(os.path.dirname(os.path.abspath(args.results[-1])), exist_ok=True)
    out = open(args.results[-1], "a", buffering=1)  # new results go to the last file
    tmp = tempfile.mkdtemp(prefix="vkml-mutate-")
    t_start = time.time()
    end = t_start + args.deadline if args.deadline else None
    prepared = [p for p in (_prepare(t, args, tmp) for t in _targets(args)) if p]
    if args.baseline:  # the unmutated shaders through the same selection: must pass
        todo = [(p, None) for p in prepared]
    else:
        todo = [(p, m) for p, m in _order(prepared) if args.id or (m[0], p["hash"]) not in done
                or (args.retry_timeouts and done[(m[0], p["hash"])]["status"] == "timeout")]
    if args.limit is not None:
        todo = todo[:args.limit]
    lock = threading.Lock()
    ran = [0]
    # Which tests killed each target's mutants: the three that killed most run first for the next
    # mutant of that target (a mutant they do not kill then runs the whole selection), so most
    # mutants cost one or two tests, not the selection's collection and its tests up to a failure.
    killers = {}

    def learn(r):
        if r.get("status") == "killed" and isinstance(r.get("detail"), dict) and r["detail"].get("failed") \
                and r.get("kind") != "canary":
            c = killers.setdefault(r["stem"], {})
            c[r["detail"]["failed"]] = c.get(r["detail"]["failed"], 0) + 1
    for r in done.values():
        learn(r)

    # A killer runs first only once it has passed alone on the unmutated shaders: a test whose
    # inputs come from the global RNG state its file's earlier tests leave may fail when run alone.
    alone_ok = {}

    def first(p, worker):
        with lock:
            c = killers.get(p["target"], {})
            cands = sorted(c, key=lambda n: -c[n])
        out = []
        for n in cands:
            if len(out) == 3:
                break
            if (p["target"], n) not in alone_ok:
                budget = timeout()
                st, _ = worker.run({"dir": p["odir"], "family": p["family"], "tests": p["tests"],
                                    "dtypes": sorted(set().union(*VARIANT_DTYPES.values())), "only": [n]},
                                   budget[0])
                if st == "timeout" and budget[1]:
                    break  # the deadline: not known
                alone_ok[(p["target"], n)] = st == "survived"
            if alone_ok[(p["target"], n)]:
                out.append(n)
        return out

    def timeout():
        """(seconds the next mutant's tests may take, whether that is the deadline's cut)"""
        if end is None or end - time.time() >= args.timeout:
            return args.timeout, False
        return max(1.0, end - time.time()), True

    def slot(k):
        worker = Worker()
        try:
            while True:
                with lock:
                    if not todo or (end is not None and time.time() >= end):
                        return
                    p, m = todo.pop(0)
                if m is None:  # --baseline
                    st, detail = worker.run({"dir": p["odir"], "family": p["family"], "tests": p["tests"],
                                             "dtypes": sorted(set().union(*VARIANT_DTYPES.values()))}, args.timeout)
                    print(f"mutate: {p['target']} baseline: {'passes' if st == 'survived' else 'FAILS'} {detail}",
                          flush=True)
                    continue
                rec = _run_mutant(p, m, worker, tmp, timeout, first)
                if rec is None:
                    continue
                with lock:
                    learn(rec)
                    out.write(json.dumps(rec) + "\n")
                    ran[0] += 1
                    print(f"[{ran[0]}] {rec['id']} line {rec['line']} {rec['kind']} {rec['what']}: "
                          f"{rec['status']} ({rec['secs']} s)", flush=True)
                    if rec["kind"] == "canary" and rec["status"] in ("survived", "same-spirv"):
                        print(f"mutate: WARNING: {p['target']}'s canary survived: its tests do not reach "
                              f"{p['fname']}", flush=True)
        finally:
            worker.stop(0 if end is not None else 30)  # past the deadline nothing is waited for
    threads = [threading.Thread(target=slot, args=(k,)) for k in range(max(1, args.jobs))]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        left = f", {len(todo)} left (--deadline)" if todo else ""
        print(f"mutate: {ran[0]} mutants run in {time.time() - t_start:.0f} s with {args.jobs} worker(s){left}")


def report(args):
    done = _load_results(args.results)
    total = {"generated": 0, "killed": 0, "survived": 0, "crash": 0, "timeout": 0, "invalid": 0,
             "same-spirv": 0, "error": 0, "annotated": 0, "unreachable": 0, "not run": 0}
    survivors, annotated, timeouts = [], [], []
    lines = []
    samp = {"drawn": 0, "run": 0, "dead": 0, "counted": 0}
    for target in _targets(args):
        text, h = _source(target)
        c = dict.fromkeys(total, 0)
        # unreachable on this device, unless results of it exist (a run on a device that has it)
        away = unreachable(target) if not any(k[1] == h for k in done if k[0].startswith(target + ":")) else ""
        cr = done.get((f"{target}:canary", h))
        reached = "unreachable" if away else (cr["status"] if cr else "not run")
        for mid, line, kind, what, _ in mutants(target, text):
            c["generated"] += 1
            r = done.get((mid, h))
            st = "unreachable" if away else r["status"] if r else "not run"
            ann = annotation(target, text, line, what) if st == "survived" else None
            if ann:
                st = "annotated"
                annotated.append(f"  {mid} line {line} {kind}: {what}: {ann[0]}: {ann[1]}")
            c[st] += 1
            if in_sample(mid, args.sample) and st != "unreachable":
                samp["drawn"] += 1
                samp["run"] += st != "not run"
                samp["dead"] += st in ("killed", "crash")
                samp["counted"] += st in ("killed", "crash", "timeout", "survived", "error")
            if st == "timeout":
                timeouts.append(f"  {mid} line {line} {kind}: {what}: {r['detail']}")
            if st in ("survived", "error"):
                survivors.append(f"  {mid} line {line} {kind}: {what}: {text.splitlines()[line - 1].strip()}")
        for k in total:
            total[k] += c[k]
        lines.append((target, c, reached))
    print(f"{'target':12} {'generated':>9} {'killed':>7} {'crash':>6} {'timeout':>7} {'survived':>8} "
          f"{'invalid':>7} {'same-spirv':>10} {'annotated':>9} {'unreachable':>11} {'not run':>7}  score   canary")
    for stem, c, reached in lines + [("total", total, "")]:
        dead = c["killed"] + c["crash"]
        counted = dead + c["timeout"] + c["survived"] + c["error"]
        score = f"{100.0 * dead / counted:.1f}%" if counted else "-"
        print(f"{stem:12} {c['generated']:9} {c['killed']:7} {c['crash']:6} {c['timeout']:7} "
              f"{c['survived'] + c['error']:8} {c['invalid']:7} {c['same-spirv']:10} {c['annotated']:9} "
              f"{c['unreachable']:11} {c['not run']:7}  {score:6}  {reached}")
    print("score: killed (with crashes) / (killed + timeouts + survived): a timeout is not a kill, "
          "since a worker slowed by load looks the same as a hang (re-run it with fewer --jobs and a "
          "longer --timeout); annotated survivors, "
          "invalid, same-spirv and unreachable mutants are not counted. canary: the target's entry "
          "returning at once, which must be killed (else the tests do not reach that shader)")
    if survivors:
        print("survivors:\n" + "\n".join(survivors))
    if timeouts:
        print("timeouts (counted as not killed until a re-run finishes):\n" + "\n".join(timeouts))
    if annotated:
        print("annotated survivors (not gaps; see ANNOTATED in scripts/mutate.py):\n" + "\n".join(annotated))
    dead = total["killed"] + total["crash"]
    counted = dead + total["timeout"] + total["survived"] + total["error"]
    if args.sample < 100:
        k, n = samp["dead"], samp["counted"]
        print(f"sample ({args.sample:g}% of each target's reachable mutants, drawn by id): {samp['drawn']} drawn, "
              f"{samp['run']} run, {samp['drawn'] - samp['run']} not run; score {k} / {n} = "
              f"{100.0 * k / n if n else 0:.1f}%, 95% interval's lower end {100.0 * _wilson_low(k, n):.1f}%")
        dead, counted = k, n
    return 0 if counted and dead >= 0.95 * counted else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--family", action="append", choices=list(TARGETS),
                    help="only this target (a shader, or ew_ops.glsl; repeatable)")
    ap.add_argument("--limit", type=int, help="run at most this many mutants")
    ap.add_argument("--start", type=int, default=0, help="skip the first N mutants of each family")
    ap.add_argument("--every", type=int, default=1, help="run every K-th mutant, of those in --sample (a spread; "
                    "later runs with another --start fill in the rest)")
    ap.add_argument("--sample", type=float, default=SAMPLE, help="run the seeded sample of this percentage "
                    f"of each target's mutants (default {SAMPLE:g}: the campaign; 100: all of them)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds a mutant's tests may take")
    ap.add_argument("--retry-timeouts", action="store_true",
                    help="also run again the mutants whose only result is a timeout")
    ap.add_argument("--results", action="append", help="results file (repeatable: all are read, later "
                    "ones win, new results go to the last; default build/mutate/results.jsonl)")
    ap.add_argument("--jobs", type=int, default=1, help="mutants run side by side, each in its own worker "
                    "(a GPU with cores to spare; lavapipe already uses every core)")
    ap.add_argument("--deadline", type=float, help="seconds after which no mutant is started, and one "
                    "still running is stopped and not recorded")
    ap.add_argument("--all-variants", action="store_true",
                    help="compile every blob, not only those this device runs (_ieee or plain)")
    ap.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    ap.add_argument("--id", action="append", help="run this mutant (e.g. fused:102) again (repeatable; "
                    "the latest result counts)")
    ap.add_argument("--baseline", action="store_true",
                    help="run each target's tests on the unmutated shaders (they must pass), nothing else")
    ap.add_argument("--no-canary", action="store_true", help="do not run each target's canary first")
    ap.add_argument("--emit", metavar="DIR", help="with one --id: compile that mutant's blobs into DIR and "
                    "run nothing (then VKML_SPIRV_DIR=DIR pytest ... tries a test against it)")
    ap.add_argument("--report", action="store_true", help="only print the score of the results so far")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.results = args.results or [RESULTS]
    if args.worker:
        return worker()
    if args.list:
        counts = []
        for target in _targets(args):
            ms = mutants(target, _source(target)[0])
            for mid, line, kind, what, _ in ms:
                print(f"{mid} line {line} {kind}: {what}")
            counts.append(f"{target} {len(ms)}")
        print(f"mutate: {sum(int(c.split()[1]) for c in counts)} mutants: " + ", ".join(counts))
        return 0
    if args.emit:
        return emit(args)
    if not args.report:
        campaign(args)
    return report(args)


if __name__ == "__main__":
    sys.exit(main())
