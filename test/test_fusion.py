"""Fusion of elementwise chains at flush time (csrc/plan/fuse.cpp, docs/fusion.md) and barriers only
between dependent dispatches. The contract: the same bytes as unfused (VKML_FUSE=0) for every
chain, one dispatch per fused chain, values that user code can still see are stored, and check
mode checks every step of a fused node against its own row's oracle."""
import os
import random
import re
import subprocess
import sys
import textwrap
import zlib

import pytest
import torch
import vkml_torch

from broken_shaders import broken_dir, loaded
from helpers import DEV, check_mode, stats


def no_check_mode():
    """Counts of dispatches and barriers are those of a normal run: under VKML_CHECK=1 every node
    is its own submission. (conftest restores the switch after the test.)"""
    vkml_torch.set_check(False)


def raw(t):
    """A tensor's bytes (NaN payloads and signed zeros included), as a CPU uint8 tensor."""
    t = t.detach().cpu().contiguous()
    b = t.reshape(-1).view(torch.uint8) if t.numel() else torch.empty(0, dtype=torch.uint8)
    b.src_dtype = t.dtype
    return b


def nan_canonical(b):
    """Raw bytes (raw()'s uint8, with the result's dtype in b.src_dtype) with every NaN's payload
    made one. For pipelines compiled with their dtypes as constants only: there NVIDIA's compiler
    (H100, driver 580.159, 2026-12-05) gave 0x7fc00000 where the interpreter and the unfused
    dispatches gave 0x7fffffff, for the same NaN. IEEE 754 (6.2.3) leaves which payload a NaN
    result carries to the implementation, torch does not define it either, and CUDA does not keep
    payloads; everything but a NaN's payload stays compared bit for bit, signed zeros included."""
    dt = b.src_dtype
    if not dt.is_floating_point and not dt.is_complex:
        return b
    t = b.view(dt).clone()
    t[torch.isnan(t)] = float("nan")
    return t.view(torch.uint8)


COUNTS = ("dispatches", "fused", "fused_steps", "fused_specialized", "barriers", "checked")


def run(fn, fuse, *args, spec=None):
    """fn(*args) with fusion on or off; spec: a fused program's own pipeline after that many runs
    (0: always the interpreter, fused.comp; None: the device's default)."""
    vkml_torch.set_fuse(fuse)
    if spec is not None:
        vkml_torch._C._set_specialize(spec)
    try:
        before = stats()
        out = fn(*args)
        torch.vkml.synchronize()
        after = stats()
        return out, {k: after[k] - before[k] for k in COUNTS}
    finally:
        vkml_torch.set_fuse(True)
        vkml_torch._C._set_specialize(-1)


def same_bytes(fn, *cpu_args):
    """fn on vkml copies of cpu_args, fused and unfused: every result has the same bytes. Fused runs
    twice: through the interpreter (fused.comp) and through a pipeline specialized to each program
    (fused_spec.comp, made on a program's first run here), which must give the same bytes too.
    Returns the counts of the interpreted and the unfused run."""
    outs = []
    counts = []
    for fuse, spec in ((True, 0), (False, None), (True, 1)):
        args = [a.to(DEV) if isinstance(a, torch.Tensor) else a for a in cpu_args]
        res, d = run(fn, fuse, *args, spec=spec)
        res = res if isinstance(res, (tuple, list)) else [res]
        outs.append([raw(r) for r in res])
        counts.append(d)
    assert counts[0]["fused_specialized"] == 0, "the interpreter's run took a specialized pipeline"
    assert counts[2]["fused_specialized"] == counts[2]["fused"], "a fused node of the specialized run was interpreted"
    for k, (f, u, s) in enumerate(zip(*outs)):
        assert torch.equal(f, u), f"result {k}: fused bytes differ from unfused"
        assert torch.equal(nan_canonical(s), nan_canonical(u)), \
            f"result {k}: the specialized pipeline's bytes differ from unfused (NaN payloads aside)"
    return counts[:2]


def chain8(x):
    y = x * 1.5
    y = y + 0.25
    y = torch.relu(y)
    y = y - x
    y = torch.sigmoid(y)
    y = y * y
    y = torch.maximum(y, x)
    return torch.exp(y)


def test_chain_of_8_is_one_dispatch():
    no_check_mode()
    x = torch.randn(1 << 16)
    fused, unfused = same_bytes(chain8, x)
    # one fused dispatch instead of 8
    assert fused["dispatches"] == 1 and fused["fused"] == 1 and fused["fused_steps"] == 8, fused
    assert unfused["dispatches"] == 8 and unfused["fused"] == 0, unfused
    ref = chain8(x)
    got, _ = run(chain8, True, x.to(DEV))
    # sigmoid and exp carry their rows' relative bounds (graph/op.h TOL_SIGMOID, TOL_EXP); the rest is exact
    torch.testing.assert_close(got.cpu(), ref, rtol=3e-5, atol=1e-30)


def test_fusion_off_switch():
    vkml_torch.set_fuse(False)
    assert not vkml_torch.fuse_enabled()
    x = torch.randn(1000, device=DEV)
    b = stats()
    (x * 2 + 1).cpu()
    assert stats()["fused"] == b["fused"]
    vkml_torch.set_fuse(True)
    assert vkml_torch.fuse_enabled()


# ---- random chains ----------------------------------------------------------------------------
FLOAT_UNARY = ["neg", "abs", "relu", "exp", "sigmoid", "sqrt", "floor", "ceil", "reciprocal", "sign", "silu"]
INT_UNARY = ["neg", "abs", "relu", "sign"]
BINARY = ["add", "sub", "mul", "maximum", "minimum"]
SPECIAL = [float("nan"), float("inf"), -float("inf"), -0.0, 0.0, 1e30, -1e-30, 3.0, -2.5]


def make_input(rng, dtype, shape, special):
    g = torch.Generator().manual_seed(rng.randrange(1 << 30))
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_floating_point:
        t = torch.randn(shape, generator=g, dtype=torch.float64) * 3
        if special:
            flat = t.view(-1)
            for i in range(0, flat.numel(), 3):
                flat[i] = SPECIAL[(i // 3) % len(SPECIAL)]
        return t.to(dtype)
    lo, hi = (0, 200) if dtype == torch.uint8 else (-100, 100)
    return torch.randint(lo, hi, shape, generator=g, dtype=torch.int64).to(dtype)


def random_chain(seed, dtype, special=False):
    """(fn, inputs): a chain of 4-14 elementwise steps over a few inputs (some broadcast, some
    non-contiguous), with in-place steps, views, type promotion and intermediates kept or dropped."""
    rng = random.Random(seed)
    shape = rng.choice([(7, 33), (4, 5, 6), (130,), (2, 3, 4, 5)])
    n_in = rng.randint(1, 3)
    ins = []
    for k in range(n_in):
        kind = rng.choice(["dense", "dense", "bcast", "transposed", "strided"])
        if kind == "bcast":
            s = list(shape)
            s[rng.randrange(len(s))] = 1
            ins.append(("bcast", make_input(rng, dtype, tuple(s), special)))
        elif kind == "transposed" and len(shape) >= 2:
            ins.append(("transposed", make_input(rng, dtype, tuple(reversed(shape)), special)))
        elif kind == "strided":
            s = list(shape)
            s[-1] *= 2
            ins.append(("strided", make_input(rng, dtype, tuple(s), special)))
        else:
            ins.append(("dense", make_input(rng, dtype, shape, special)))
    steps = []
    for _ in range(rng.randint(4, 14)):
        steps.append((rng.random(), rng.random(), rng.random(), rng.randrange(1 << 30)))
    floaty = dtype.is_floating_point

    def fn(*xs):
        views = []
        for (kind, _), x in zip(ins, xs):
            if kind == "transposed":
                x = x.permute(*reversed(range(x.dim())))
            elif kind == "strided":
                x = x[..., ::2]
            views.append(x)
        vals = [v.expand(shape) if v.dim() == len(shape) else v for v in views]
        cur = vals[0] * 1 if dtype != torch.bool else vals[0] | vals[0]  # an owned, dense start
        kept = [cur]
        for r0, r1, r2, s in steps:
            r = random.Random(s)
            other = r.choice(vals + kept)
            if dtype == torch.bool:
                op = r.choice(["and", "or", "xor", "not", "eq", "where"])
                if op == "not":
                    nxt = ~cur
                elif op == "eq":
                    nxt = cur == other
                elif op == "where":
                    nxt = torch.where(other, cur, ~cur)
                else:
                    nxt = {"and": cur & other, "or": cur | other, "xor": cur ^ other}[op]
            elif r0 < 0.35:
                name = r.choice(FLOAT_UNARY if floaty else INT_UNARY)
                if name in ("sqrt", "reciprocal") and floaty:
                    nxt = getattr(torch, name)(cur.abs() + 1)
                elif name == "silu":
                    nxt = torch.nn.functional.silu(cur)
                else:
                    nxt = getattr(torch, name)(cur)
            elif r0 < 0.75:
                name = r.choice(BINARY)
                b = other if r1 < 0.7 else (r.choice([2, -3, 1]) if not floaty else r.choice([0.5, -1.25, 3.0]))
                if name in ("maximum", "minimum") and not isinstance(b, torch.Tensor):
                    b = other
                nxt = getattr(torch, name)(cur, b)
                if name == "add" and r2 < 0.3 and isinstance(b, torch.Tensor):
                    nxt = torch.add(cur, b, alpha=2 if not floaty else 0.75)
            elif r0 < 0.85:  # in place on the current value (owned by the chain)
                name = r.choice(["mul_", "add_", "sub_", "clamp_"])
                if name == "clamp_":
                    cur.clamp_(-5 if not floaty else -1.5, 50 if not floaty else 2.0)
                else:
                    getattr(cur, name)(other if r1 < 0.5 else 2)
                nxt = cur
            elif r0 < 0.92:  # comparisons and where: bool intermediates
                mask = cur > other if r1 < 0.5 else cur == other
                nxt = torch.where(mask, cur, other)
            else:  # type promotion: float intermediates from integers, narrow from float32
                if floaty:
                    nxt = (cur * 0.5).to(dtype)
                else:
                    nxt = cur.to(torch.float32) * 0.5 if r1 < 0.5 else cur + 1
            if r2 < 0.5:
                kept.append(nxt)  # held by the test: must be stored
            cur = nxt
        return [cur] + kept[-3:]

    return fn, [x for _, x in ins]


DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32, torch.int64, torch.uint8,
          torch.int16, torch.bool]


# (NaN/Inf inputs only for float dtypes: not generated for the others)
@pytest.mark.parametrize("dtype,special", [pytest.param(d, sp, id=f"{d}-{'special' if sp else 'normal'}")
                                           for d in DTYPES for sp in (False, True) if d.is_floating_point or not sp])
def test_random_chains_same_bytes(dtype, special):
    fused_any = 0
    for seed in range(12):
        fn, xs = random_chain(seed * 7919 + zlib.crc32(str(dtype).encode()) % 1000, dtype, special)
        try:
            fn(*xs)  # torch CPU rejects some chains (e.g. an int result into a uint8 in-place)
        except RuntimeError:
            continue
        f, _ = same_bytes(fn, *xs)
        fused_any += f["fused"]
        # Independently of the unfused path: check mode runs the fused chain's every step against
        # its row's oracle within the row's tolerance (a float chain cannot be compared with torch
        # CPU as a whole: floor/sign/comparisons after an inexact exp turn 1 ulp into 1.0). The
        # integer and bool chains are exact, so they must equal torch CPU outright.
        with check_mode():
            b = stats()
            got = fn(*[x.to(DEV) for x in xs])
            torch.vkml.synchronize()
            a = stats()
        assert a["checked"] > b["checked"]
        if not dtype.is_floating_point:
            for g, r in zip(got, fn(*xs)):
                assert g.dtype == r.dtype and torch.equal(g.cpu(), r)
    assert fused_any > 0, "no chain fused"


def test_intermediates_user_holds_are_stored():
    x = torch.randn(4096)

    def fn(x):
        a = x * 2
        b = a + 1
        v = b.view(64, 64)[3]  # a view keeps b's storage alive after b is dropped
        del b
        c = torch.exp(a)
        d = c - a
        return a, v, d

    counts = same_bytes(fn, x)[0]
    assert counts["fused"] == 1
    a, v, d = run(fn, True, x.to(DEV))[0]
    assert torch.equal(a.cpu(), x * 2) and torch.equal(v.cpu(), (x * 2 + 1).view(64, 64)[3])


def test_dead_intermediate_read_by_a_later_node():
    """Dropped after a reduction was recorded on it: the reduction still sees its bytes."""
    x = torch.randn(3000)

    def fn(x):
        a = torch.exp(x)
        b = a * 3
        s = b.sum()
        del b  # freed while the sum that reads it is pending
        return s, a

    same_bytes(fn, x)
    s, a = run(fn, True, x.to(DEV))[0]
    torch.testing.assert_close(s.cpu(), (torch.exp(x) * 3).sum(), rtol=1e-5, atol=0)


def test_aliasing_views_break_groups():
    """Overlapping views with different layouts cannot share a dispatch: x and its transpose,
    a shifted slice; the result is still as unfused, and as torch CPU."""
    x = torch.randn(32, 32)

    def fn(x):
        y = x * 1
        y.add_(1)
        z = y.t() * 2  # reads y through another layout
        y.mul_(3)      # and y is written again afterwards
        w = y[1:] + y[:-1]
        y[1:].mul_(0.5)
        return y, z, w

    same_bytes(fn, x)
    got = run(fn, True, x.to(DEV))[0]
    for g, r in zip(got, fn(x.clone())):
        torch.testing.assert_close(g.cpu(), r, rtol=0, atol=0)


def test_in_place_chain_on_a_user_tensor():
    no_check_mode()
    x = torch.randn(777)

    def fn(x):
        x.mul_(0.9).add_(1.0).clamp_(-1, 1.5).neg_()
        return x

    f, u = same_bytes(fn, x)
    assert f["fused"] == 1 and f["dispatches"] == 1 and u["dispatches"] == 4


def test_empty_and_zero_dim():
    for shape in [(0,), (3, 0), ()]:
        x = torch.randn(shape)
        same_bytes(lambda t: (t * 2 + 1).neg(), x)


@pytest.mark.parametrize("narrow,half", [(torch.float16, 2.0 ** -11), (torch.bfloat16, 2.0 ** -8)], ids=["float16", "bfloat16"])
def test_wider_0dim_operand_rounds_in_a_fused_chain(narrow, half):
    """A fused step's tensor operand of a wider dtype than the step computes in (a 0-dim float32
    next to a float16 chain) is rounded to the common dtype first, as unfused (test_promotion.py):
    just above half an ulp, it rounds to exactly half an ulp and 1 + it ties to even (1.0). Mutant
    fused:102 (that rounding skipped) gave 1 + 1 ulp."""
    no_check_mode()
    one = torch.ones(300, dtype=narrow)
    tiny = torch.tensor(half + half * 2 ** -12, dtype=torch.float32)

    def fn(x, t):
        return torch.relu(x * 1.0 + t) * 1.0

    ref = fn(one, tiny)
    assert ref.dtype == narrow and bool((ref == 1).all()), "torch's rule is not what this test assumes"
    fused, _ = same_bytes(fn, one, tiny)
    assert fused["fused"] >= 1, fused
    got, _ = run(fn, True, one.to(DEV), tiny.to(DEV))
    assert torch.equal(raw(got), raw(ref))


def test_autograd_through_fused_chains():
    torch.manual_seed(0)
    x0 = torch.randn(257, 31)
    w0 = torch.randn(31)

    def fn(x, w):
        x = x.clone().requires_grad_(True)
        w = w.clone().requires_grad_(True)
        y = torch.sigmoid(x * w + 0.5) * torch.relu(x - w)
        loss = (y * y).sum()
        loss.backward()
        return loss.detach(), x.grad, w.grad

    same_bytes(fn, x0, w0)
    got = run(fn, True, x0.to(DEV), w0.to(DEV))[0]
    ref = fn(x0, w0)
    for g, r in zip(got, ref):
        torch.testing.assert_close(g.cpu(), r, rtol=1e-4, atol=1e-5)


# ---- check mode --------------------------------------------------------------------------------
def test_check_mode_checks_fused_steps():
    x = torch.randn(5000, device=DEV)
    with check_mode():
        b = stats()
        y = chain8(x)
        torch.vkml.synchronize()
        a = stats()
    assert a["fused"] - b["fused"] == 1 and a["checked"] - b["checked"] == 8, (b, a)
    torch.testing.assert_close(y.cpu(), chain8(x.cpu()), rtol=3e-5, atol=1e-30)


def test_check_mode_catches_a_broken_fused_kernel():
    """shaders/fused.comp with its stores corrupted (test/broken_shaders.py): check mode names the
    first step whose result is wrong; the built-in shader passes again afterwards."""
    x = torch.randn(3000, device=DEV)
    with loaded(broken_dir("fused")):
        with pytest.raises(RuntimeError, match=r"^vkml check failed: op mul \(step 1 of \d+ of a fused node\)"):
            with check_mode():
                chain8(x).cpu()
    with check_mode():
        chain8(x).cpu()


def test_broken_fused_kernel_changes_bytes():
    """Without check mode the broken shader runs too: the fused path is really the one computing."""
    no_check_mode()
    x = torch.randn(3000, device=DEV)
    good = raw(chain8(x))
    with loaded(broken_dir("fused")):
        bad = raw(chain8(x))
    assert not torch.equal(good, bad)
    assert torch.equal(good, raw(chain8(x)))


# ---- Adam ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("foreach", [False, True], ids=["for-loop", "foreach"])
def test_adam_update_fuses(foreach):
    no_check_mode()
    torch.manual_seed(1)
    shapes = [(64, 32), (32,), (10, 64), (10,)]
    init = [torch.randn(s) for s in shapes]
    grads = [torch.randn(s) for s in shapes]

    def steps(fuse):
        vkml_torch.set_fuse(fuse)
        ps = [p.to(DEV).requires_grad_(True) for p in init]
        opt = torch.optim.Adam(ps, lr=1e-2, foreach=foreach)
        for p, g in zip(ps, grads):
            p.grad = g.to(DEV)
        opt.step()  # first step creates the state
        torch.vkml.synchronize()
        b = stats()
        opt.step()
        torch.vkml.synchronize()
        a = stats()
        vkml_torch.set_fuse(True)
        return [raw(p) for p in ps], a["dispatches"] - b["dispatches"], a["fused"] - b["fused"]

    f, fd, nf = steps(True)
    u, ud, _ = steps(False)
    for x, y in zip(f, u):
        assert torch.equal(x, y)
    # About one dispatch per parameter (7 nodes each: lerp_, addcmul_ and addcdiv_ are rows that
    # read self; a group holds 16 steps) in both forms, at most two more where a group was cut.
    # The foreach form interleaves the parameters (it was 12 dispatches while the composites'
    # temporaries reused one another's blocks, before views could stay in registers).
    assert nf >= len(shapes) and fd <= len(shapes) + 2 and ud == 28, (fd, ud, nf)


def test_fuse_hidden_off_gives_the_groups_without_registers():
    """VKML_FUSE_HIDDEN=0 (a measuring aid, README) plans without views kept in registers: two
    rounds of p += (g * 0.1) / d over 4 tensors (addcdiv_ as it was composed: each tensor's two
    temporaries reuse the blocks the previous one's freed) take more dispatches than by default
    (8 against 4 measured), with the same bytes."""
    code = textwrap.dedent("""
        import torch, vkml_torch
        vkml_torch.set_check(False)
        torch.manual_seed(1)
        shapes = [(64, 32), (32,), (10, 64), (10,)]
        ps = [torch.randn(s).to("vkml") for s in shapes]
        gs = [torch.randn(s).to("vkml") for s in shapes]
        ds = [torch.rand(s).to("vkml") + 0.5 for s in shapes]
        def prog():
            for p, g, d in zip(ps, gs, ds):
                p.add_((g * 0.1) / d)
            for p, g, d in zip(ps, gs, ds):
                p.add_((d * -0.2) / g)
        prog(); torch.vkml.synchronize()
        b = vkml_torch.stats()["dispatches"]
        prog(); torch.vkml.synchronize()
        print(vkml_torch.stats()["dispatches"] - b)
        print(b"".join(p.cpu().numpy().tobytes() for p in ps).hex())
    """)
    out = {}
    for hidden in ("1", "0"):
        env = dict(os.environ, VKML_FUSE_HIDDEN=hidden, VKML_CHECK="0", VKML_EAGER="0")
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        lines = r.stdout.split()
        out[hidden] = (int(lines[-2]), lines[-1])
    assert out["0"][0] > out["1"][0], out
    assert out["0"][1] == out["1"][1]


# ---- a chain that starts on a strided view ------------------------------------------------------
STRIDED_STARTS = {
    "slice [:, :24] of (8, 40)": lambda b: b[:, :24],
    "stepped [::2, 1::3] of (8, 40)": lambda b: b[::2, 1::3],
    "transposed (40, 8).t()": lambda b: b.view(40, 8).t(),
    "3-d slice of (2, 4, 40)": lambda b: b.view(2, 4, 40)[:, 1:, 3:30],
}


@pytest.mark.parametrize("name", list(STRIDED_STARTS))
def test_chain_on_a_strided_view_is_one_dispatch(name):
    """The first node of the chain reads a strided view and keeps its dims; the nodes after it read
    contiguous results, which TensorIterator merges into one dim. Those are written in the first
    node's shape (plan/fuse.cpp in_shape), so the chain, with a broadcast 0-dim operand and a
    second read of the view, is one dispatch, and the same bytes as unfused, in check mode too."""
    no_check_mode()
    base = torch.randn(8, 40)
    half = torch.tensor(0.5)

    def chain(dev, fuse):
        vkml_torch.set_fuse(fuse)
        x = STRIDED_STARTS[name](base.to(dev))
        h = half.to(dev)
        torch.vkml.synchronize()
        b = stats()
        y = (x * 1.5 + h).relu() * x - 0.25
        torch.vkml.synchronize()
        d = stats()["dispatches"] - b["dispatches"]
        vkml_torch.set_fuse(True)
        return y, d
    ref = (STRIDED_STARTS[name](base) * 1.5 + half).relu() * STRIDED_STARTS[name](base) - 0.25
    (f, fd), (u, ud) = chain(DEV, True), chain(DEV, False)
    # one dispatch (2 before in_shape for the slices: the first node alone; a transposed view is
    # dense, so its first node is merged into one dim as well)
    assert fd == 1 and ud == 5 and torch.equal(raw(f), raw(u)) and torch.equal(f.cpu(), ref), (fd, ud)
    with check_mode():
        y = (STRIDED_STARTS[name](base.to(DEV)) * 1.5 + half.to(DEV)).relu() * STRIDED_STARTS[name](base.to(DEV)) - 0.25
        assert torch.equal(y.cpu(), ref)


# ---- reordering past reused blocks --------------------------------------------------------------
@pytest.mark.parametrize("seed,rows", [(s, False) for s in range(60)] + [(s, True) for s in range(20)],
                         ids=[f"{s}" for s in range(60)] + [f"rows-{s}" for s in range(20)])
def test_random_programs_with_freed_temporaries_same_bytes_as_unfused(seed, rows):
    """Random elementwise programs over tensors of three shapes that free temporaries as they go,
    so the allocator hands blocks from one shape's temporaries to another's and the planner must
    decide which passed-over nodes a group may run ahead of, and which reused views stay in
    registers (plan/fuse.cpp: conflict, unread_outside). Fused and unfused give the same bytes
    (NaN payloads aside, nan_canonical) for every tensor still alive at the end. rows: lerp_ and
    addcmul_ as the rows they are (nodes that read their output's old value, which may not run
    ahead of a passed-over node touching it), not spelled out as the nodes they were made of."""
    no_check_mode()
    shapes = [(16,), (8,), (4, 4)]

    def program(fuse):
        vkml_torch.set_fuse(fuse)
        rng = random.Random(seed)
        g = torch.Generator().manual_seed(seed)
        live = [torch.randn(shapes[k % 3], generator=g).to(DEV) for k in range(6)]
        torch.vkml.synchronize()
        for _ in range(90):
            i = rng.randrange(len(live))
            x = live[i]
            same = [t for t in live if t.shape == x.shape]
            y = rng.choice(same)
            r = rng.random()
            if r < 0.25:
                live.append(x * rng.choice([0.5, 1.5, -2.0]) + y)
            elif r < 0.4:
                x.add_(y, alpha=0.25)
            elif r < 0.5:
                x.mul_(0.75)
            elif r < 0.6 and rows:
                x.lerp_(y, rng.choice([0.1, 0.9]))
            elif r < 0.7 and rows:
                x.addcmul_(y, y, value=0.01)
            elif r < 0.6:
                # the nodes lerp_ was made of before it became a row: a temporary or two
                if rng.choice([0.1, 0.9]) < 0.5:
                    x.add_(y - x, alpha=0.1)
                else:
                    x.copy_(torch.sub(y, y - x, alpha=0.1))
            elif r < 0.7:
                x.add_(y * 0.01 * y)                # addcmul_'s nodes before it became a row
            elif r < 0.75:
                x.copy_(y)
            elif r < 0.8:
                x.view(-1)[::2].mul_(1.5)             # a strided write: part of the block's bytes
            elif len(live) > 3:
                del live[i], x                      # freed: its block goes to the next temporary
        torch.vkml.synchronize()
        out = [raw(t) for t in live]
        vkml_torch.set_fuse(True)
        return out

    fused, unfused = program(True), program(False)
    assert len(fused) == len(unfused)
    for k, (a, b) in enumerate(zip(fused, unfused)):
        assert torch.equal(nan_canonical(a), nan_canonical(b)), f"tensor {k}"


# ---- barriers -----------------------------------------------------------------------------------
def test_barriers_only_between_dependent_nodes():
    no_check_mode()
    vkml_torch.set_fuse(False)  # one dispatch per node, so the barriers are between nodes
    xs = [torch.randn(100 + k, device=DEV) for k in range(8)]
    torch.vkml.synchronize()
    b = stats()
    ys = [x + 1 for x in xs]  # independent
    torch.vkml.synchronize()
    mid = stats()
    z = xs[0]
    for _ in range(8):
        z = z * 1.5 + 0.5  # dependent: each reads the last one's result
    torch.vkml.synchronize()
    a = stats()
    assert mid["barriers"] - b["barriers"] == 0
    assert a["barriers"] - mid["barriers"] == 15  # 16 nodes, each after the one it reads
    for x, y in zip(xs, ys):
        assert torch.equal(y.cpu(), x.cpu() + 1)
    ref = xs[0].cpu()
    for _ in range(8):
        ref = ref * 1.5 + 0.5
    assert torch.equal(z.cpu(), ref)


def test_write_after_read_gets_a_barrier():
    """y reads x, then x is written in place: the write must wait for the read."""
    no_check_mode()
    vkml_torch.set_fuse(False)
    x = torch.randn(50000, device=DEV)
    xc = x.cpu()
    torch.vkml.synchronize()
    b = stats()
    y = x * 2
    x.add_(1)
    torch.vkml.synchronize()
    assert stats()["barriers"] - b["barriers"] == 1
    assert torch.equal(y.cpu(), xc * 2) and torch.equal(x.cpu(), xc + 1)


def test_a_node_of_several_dispatches_orders_what_follows():
    """A softmax over rows longer than one chunk runs three dispatches with barriers between them.
    The barrier after its first dispatch must not make the backend forget the node: the next node
    that reads its output (RAW), or writes its input (WAR), waits for its last dispatch. Lavapipe
    runs dispatches one after another, so a missing barrier shows only in this count; on NVIDIA
    it gave wrong values (softmax, index_put with accumulate, index_copy, embedding backward)."""
    no_check_mode()
    vkml_torch.set_fuse(False)
    x = torch.randn(2, 70001, device=DEV)
    xc = x.cpu()
    torch.vkml.synchronize()
    b = stats()
    y = torch.softmax(x, 1)
    torch.vkml.synchronize()
    alone = stats()["barriers"] - b["barriers"]
    assert alone >= 2, alone  # three passes
    b = stats()
    y = torch.softmax(x, 1)
    z = y + 1  # reads the softmax's output
    torch.vkml.synchronize()
    assert stats()["barriers"] - b["barriers"] == alone + 1
    b = stats()
    y2 = torch.softmax(x, 1)
    x.add_(1)  # writes the softmax's input
    torch.vkml.synchronize()
    assert stats()["barriers"] - b["barriers"] == alone + 1
    ref = torch.softmax(xc, 1)
    torch.testing.assert_close(y.cpu(), ref)  # float32 softmax: torch's default float32 tolerances
    torch.testing.assert_close(z.cpu(), ref + 1)
    torch.testing.assert_close(y2.cpu(), ref)
    assert torch.equal(x.cpu(), xc + 1)


# ---- profiler, several devices --------------------------------------------------------------------
def test_profiler_times_a_fused_dispatch_as_one_kernel():
    """vkml_torch.profile(): a fused node is one timed kernel, named by the rows it runs (and past
    8 steps by its step count), so the table's rows stay per kernel that really ran."""
    no_check_mode()
    x, y = torch.randn(4096, device=DEV), torch.randn(1000, device=DEV)  # two shapes: two groups
    torch.vkml.synchronize()
    with vkml_torch.profile() as p:
        chain8(x)
        for _ in range(6):
            y = (y * 0.5 + 1.0)
        torch.vkml.synchronize()
    if not p.available:
        pytest.skip(p.why)
    names = [k[0] for k in p.kernels]
    assert len(names) == 2, names
    assert names[0].startswith("fused(mul,add,relu,sub,sigmoid,mul,"), names
    # the pipeline: the interpreter (fused_f32...) on CPU devices, a pipeline specialized to the
    # program (fused_spec_f32...) on GPUs (docs/fusion.md, "A pipeline per program")
    shader = r" \[fused(_spec)?_f32(_ieee)?\]$"
    assert names[0].count(",") == 7 and re.search(shader, names[0]), names
    assert names[1].startswith("fused[12](mul,add,mul,add,mul,add,...) ") and re.search(shader, names[1]), names
    table = p.table_text()
    assert names[0] in table and names[1] in table


MULTI = r"""
import torch, vkml_torch
assert torch.vkml.device_count() == 2
xs = [torch.randn(1000, device=f"vkml:{d}") for d in (0, 1)]
for d in (0, 1):
    torch.vkml.synchronize(d)
before = [vkml_torch.stats(d) for d in (0, 1)]
ys = []
for k in range(3):  # recorded alternately: each device's graph fuses its own chain
    for d in (0, 1):
        ys.append(torch.exp(xs[d] * (k + 1) + 0.5).relu())
for d in (0, 1):
    torch.vkml.synchronize(d)
after = [vkml_torch.stats(d) for d in (0, 1)]
outs = [y.cpu() for y in ys]
for d in (0, 1):
    assert after[d]["fused"] - before[d]["fused"] == 1, (d, before[d], after[d])
    assert after[d]["fused_steps"] - before[d]["fused_steps"] == 12, (d, before[d], after[d])
vkml_torch.set_fuse(False)
ref = [torch.exp(xs[d] * (k + 1) + 0.5).relu().cpu() for k in range(3) for d in (0, 1)]
for a, b in zip(outs, ref):
    assert torch.equal(a.view(torch.int32), b.view(torch.int32))
print("ok")
"""


def test_each_device_fuses_its_own_nodes():
    """Two devices (VKML_FAKE_DEVICES=2 needs a process of its own): chains recorded alternately
    on both fuse per device, with the unfused bytes."""
    import os
    import subprocess
    import sys
    env = dict(os.environ, VKML_FAKE_DEVICES="2")
    r = subprocess.run([sys.executable, "-c", MULTI], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr


FREED_WHILE_DEFERRED = r"""
import torch, vkml_torch
x = (torch.arange(12) - 5).reshape(3, 4).to(torch.float64)
y = (torch.arange(4) % 3).to(torch.float64)
got = x.to("vkml") * y.to("vkml")  # y's device copy is freed while the mul waits for the flush
assert torch.equal(got.cpu(), x * y)
print("ok")
"""


def test_check_mode_keeps_blocks_freed_while_nodes_wait():
    """Check mode defers elementwise nodes to the flush, which allocates while it checks them (the
    first float64 op runs the subnormal probe, a fresh process's first): a block freed meanwhile
    must not be handed out before they ran (the probe's inputs once replaced y's bytes)."""
    import os
    import subprocess
    import sys
    env = dict(os.environ, VKML_CHECK="1")
    r = subprocess.run([sys.executable, "-c", FREED_WHILE_DEFERRED], capture_output=True, text=True, timeout=300,
                       env=env)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr


@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.int32, torch.int64])
def test_specialized_pipeline_narrow_ints(dtype):
    """abs and sign of negative narrow integers through a fused program's own pipeline: with the
    dtypes made constants, lavapipe once compiled them as if int32 -> int64 zero-extended
    (shaders/common.glsl, from_i32). Exact, so compared with torch CPU outright."""
    x = torch.tensor([76, 80, -53, -76, 0, 5, -1, 1], dtype=dtype)
    fns = [lambda t: (t * 2).abs(), lambda t: (t - 10).sign(), lambda t: t.sign() + t.abs(),
           lambda t: (t * 3).neg().abs() - t]
    for fn in fns:
        res, counts = run(fn, True, x.to(DEV), spec=1)
        assert counts["fused"] == 1 and counts["fused_specialized"] == 1, counts
        assert torch.equal(res.cpu(), fn(x)), (dtype, res.cpu(), fn(x))
