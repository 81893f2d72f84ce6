"""The contiguous fast paths (docs/performance.md) against the general strided paths, on the same
values: elementwise (EW_VEC: 4-element blocks as whole-word loads and stores), reductions over a
dense innermost dim (REDUCE_DENSE); softmax rows in every layout on its one path.

Which path a node takes follows from its layout (the lowerings choose): a contiguous tensor takes
the fast path; the same values as a strided view (every other element of a buffer), or a view
whose start is not aligned for the blocks (x[1:]), take the general one. Both paths visit
elements in the same order, so their results must be the same bytes (and the same bytes twice);
each is also compared with torch CPU within the row's tolerance.
"""
import math

import pytest
import torch

from helpers import DEV, FLOAT_DTYPES, INT_DTYPES, _bits, assert_close_row, row
from op_cases_nn import _softmax_scale

G = torch.Generator().manual_seed(11)
SIZES = [1, 3, 4, 5, 511, 1023, 1024, 1025, 4099]  # around the block (4) and group (1024) widths


def _values(n, dtype, special=True):
    if dtype == torch.bool:
        return torch.rand(n, generator=G) < 0.5
    if not dtype.is_floating_point:
        lo, hi = (0, 200) if dtype == torch.uint8 else (-100, 100)
        return torch.randint(lo, hi, (n,), generator=G).to(dtype)
    x = (torch.randn(n, generator=G) * 3).to(dtype)
    if special and n >= 8:
        x[1], x[2], x[5], x[n - 1] = float("nan"), float("inf"), -float("inf"), -0.0
    return x


def _layouts(x):
    """The values of 1-d CPU tensor x on the device: contiguous, strided (stride 2), misaligned."""
    n = x.numel()
    dense = x.to(DEV)
    big = torch.zeros(2 * n + 2, dtype=x.dtype)
    big[: 2 * n : 2] = x
    strided = big.to(DEV)[: 2 * n : 2]
    off = torch.zeros(n + 1, dtype=x.dtype)
    off[1:] = x
    misaligned = off.to(DEV)[1:]
    assert strided.stride() == (2,) and misaligned.storage_offset() == 1
    return {"dense": dense, "strided": strided, "misaligned": misaligned}


def _same_bytes(results, what):
    ref_name, ref = next(iter(results.items()))
    for name, got in results.items():
        assert torch.equal(_bits(got), _bits(ref)), f"{what}: the {name} path's bytes differ from the {ref_name} path's"


def _bits_eq(a, b):
    return torch.equal(_bits(a), _bits(b))


# ---- elementwise ----------------------------------------------------------------------------------
BINARY = {"add": lambda a, b: torch.add(a, b, alpha=2), "mul": torch.mul, "lt": torch.lt, "maximum": torch.maximum}


# (torch has no add with alpha and no maximum on bool: those pairs are not generated)
@pytest.mark.parametrize("dtype,op", [pytest.param(d, o, id=f"{o}-{d}") for o in BINARY
                                      for d in FLOAT_DTYPES + INT_DTYPES + (torch.bool,)
                                      if not (d == torch.bool and o in ("add", "maximum"))])
def test_elementwise_paths_agree(dtype, op):
    fn = BINARY[op]
    name = op
    for n in SIZES:
        a, b = _values(n, dtype), _values(n, dtype)
        ref = fn(a, b)
        la, lb = _layouts(a), _layouts(b)
        results = {}
        for path in la:
            results[path] = fn(la[path], lb[path]).cpu()
            assert_close_row(row(name), results[path], ref, what=f"{op} n={n} {path}")
        results["dense again"] = fn(la["dense"], lb["dense"]).cpu()
        # a strided output with dense inputs
        out = torch.empty(2 * n, dtype=ref.dtype, device=DEV)[::2]
        results["strided out"] = (torch.add(la["dense"], lb["dense"], alpha=2, out=out) if op == "add"
                                  else getattr(torch, op)(la["dense"], lb["dense"], out=out)).cpu()
        _same_bytes(results, f"{op} {dtype} n={n}")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES, ids=str)
def test_elementwise_unary_and_copies(dtype):
    for n in SIZES:
        x = _values(n, dtype)
        lx = _layouts(x)
        for what, fn in [("neg", torch.neg), ("abs", torch.abs), ("clone", torch.clone),
                         ("to f16", lambda t: t.to(torch.float16)), ("to f64", lambda t: t.to(torch.float64)),
                         ("to bool", lambda t: t.to(torch.bool)), ("to i8", lambda t: t.to(torch.int8))]:
            if what == "to i8" and dtype.is_floating_point:
                continue  # float -> narrow int out of range is undefined in C++; torch CPU's value is not a contract
            ref = fn(x)
            results = {p: fn(t).cpu() for p, t in lx.items()}
            r = row({"clone": "copy"}.get(what, what if what in ("neg", "abs") else "copy"))
            for p, got in results.items():
                assert_close_row(r, got, ref, what=f"{what} n={n} {p}")
            _same_bytes(results, f"{what} {dtype} n={n}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32, torch.uint8], ids=str)
def test_elementwise_broadcast_scalars_and_promotion(dtype):
    """A broadcast single value (a 0-d or [1] device tensor: stride 0) on either side, a CPU scalar,
    and mixed dtypes (2-byte with 4-byte operands: different block widths in one node)."""
    n = 1029
    x = _values(n, dtype)
    lx = _layouts(x)
    s = _values(1, dtype)
    d = s.to(DEV)
    f32 = torch.arange(n, dtype=torch.float32)
    cases = {  # name: (row, device fn, CPU reference)
        "x + 0-d device": ("add", lambda t: t + d.reshape(()), x + s.reshape(())),
        "[1] device - x": ("sub", lambda t: d - t, s - x),
        "x * cpu 0-d": ("mul", lambda t: t * s.reshape(()), x * s.reshape(())),
        "x + python": ("add", lambda t: t + 3, x + 3),
        "x + f32": ("add", lambda t: t + f32.to(DEV), x + f32),
        "where": ("where", lambda t: torch.where(t > 1, t, d), torch.where(x > 1, x, s)),
    }
    for what, (name, fn, ref) in cases.items():
        results = {p: fn(t).cpu() for p, t in lx.items()}
        for p, got in results.items():
            assert_close_row(row(name), got, ref, what=f"{what} {p}")
        _same_bytes(results, f"{what} {dtype}")


def test_elementwise_0d_and_empty():
    for dtype in (torch.float32, torch.float16, torch.int64, torch.bool):
        a, b = _values(1, dtype).reshape(()), _values(1, dtype).reshape(())
        assert _bits_eq(torch.mul(a.to(DEV), b.to(DEV)).cpu(), torch.mul(a, b))
        e = torch.empty(0, dtype=dtype)
        assert torch.mul(e.to(DEV), e.to(DEV)).cpu().shape == (0,)
        assert (e.to(DEV) * _values(1, dtype).reshape(()).to(DEV)).cpu().shape == (0,)


def test_elementwise_beyond_65535_groups():
    """The fast path takes 1024 elements per workgroup: more than 65535 * 1024 spreads over a 2-D
    grid (grid2); the last block is a tail of 3. float32, the fused variant's own dtype: its
    program is native (lower_fused.cpp), where uint8's loads and stores are each a dtype switch
    that lavapipe runs every case of (65 s against 14; the grid is the same). Exact: small
    integers. Under check mode too: there the two nodes run unfused (a fused node's step trace of
    8 bytes an element would pass 256 MiB) and each is checked on its own."""
    n = 65535 * 1024 + 1024 + 3
    a = (torch.arange(n) % 251).to(torch.float32)
    got = (a.to(DEV) * 3 - 7).cpu()
    assert torch.equal(got, a * 3 - 7)


# ---- reductions -----------------------------------------------------------------------------------
def _row_layouts(x):
    """[rows, n] CPU tensor on the device: contiguous, strided along the row, misaligned rows."""
    r, n = x.shape
    dense = x.to(DEV)
    big = torch.zeros(r, 2 * n, dtype=x.dtype)
    big[:, ::2] = x
    strided = big.to(DEV)[:, ::2]
    off = torch.zeros(r * n + 1, dtype=x.dtype)
    off[1:] = x.reshape(-1)
    misaligned = off.to(DEV)[1:].view(r, n)
    return {"dense": dense, "strided": strided, "misaligned": misaligned}


RED_SIZES = [1, 3, 5, 33, 511, 513, 4096, 4099, 70001]  # 70001: two passes


# (torch has no mean of integers: not generated)
@pytest.mark.parametrize("dtype,op", [pytest.param(d, o, id=f"{o}-{d}") for o in ["sum", "mean", "amax", "argmax"]
                                      for d in FLOAT_DTYPES + INT_DTYPES if o != "mean" or d.is_floating_point])
def test_reduction_paths_agree(dtype, op):
    for n in RED_SIZES:
        x = torch.stack([_values(n, dtype, special=False), _values(n, dtype, special=(n > 8))])
        fn = {"sum": lambda t: t.sum(1), "mean": lambda t: t.mean(1), "amax": lambda t: t.amax(1),
              "argmax": lambda t: t.argmax(1)}[op]
        ref = fn(x)
        if op in ("sum", "mean") and dtype.is_floating_point:
            scale = x.double().abs().nan_to_num(posinf=0, neginf=0).sum(1) / (n if op == "mean" else 1)
            ref = fn(x.double()).to(ref.dtype)
        else:
            scale = None
        results = {}
        for path, t in _row_layouts(x).items():
            results[path] = fn(t).cpu()
            assert_close_row(row(op), results[path], ref, scale, n, what=f"{op} n={n} {path}")
        results["dense again"] = fn(x.to(DEV)).cpu()
        _same_bytes(results, f"{op} {dtype} n={n}")


@pytest.mark.parametrize("n", [40, 300, 1024])
def test_rows_sharing_a_workgroup(n):
    """Rows of up to 1,024 share workgroups (lower_reduce.cpp, REDUCE_LANES): about 16 elements a
    lane, so rows of 40 take 4 lanes and 32 rows a workgroup, 300 take 32 lanes (4 rows), 1,024
    take 64 (2 rows); 37 rows leave the last workgroup's other slots repeating the last row. Each
    row's sum, amax, argmax (a maximum twice, the first index wins; a NaN in row 35) and all()
    (bool, the any/all composite's amin) against torch CPU, and dense, strided and misaligned rows
    the same bytes."""
    x = torch.stack([_values(n, torch.float32, special=False) for _ in range(37)])
    x[3, n // 3], x[3, n - 2] = 1e30, 1e30
    x[35, n // 2] = math.nan
    fns = {"sum": lambda t: t.sum(1), "amax": lambda t: t.amax(1), "argmax": lambda t: t.argmax(1)}
    for op, fn in fns.items():
        ref = fn(x.double()).to(fn(x).dtype) if op == "sum" else fn(x)
        scale = x.double().abs().nan_to_num(posinf=0, neginf=0).sum(1) if op == "sum" else None
        results = {path: fn(t).cpu() for path, t in _row_layouts(x).items()}
        for path, got in results.items():
            assert_close_row(row(op), got, ref, scale, n, what=f"{op} n={n} {path}")
        _same_bytes(results, f"{op} n={n}")
    b = x > -1.0
    b[7] = True
    assert torch.equal(b.to(DEV).all(1).cpu(), b.all(1)) and bool(b.all(1)[7]) and not bool(b.all(1)[0])


# Column mode (graph/families/reduce.h): when the reduced dims' innermost is strided and the kept
# dims' innermost dense (x.sum(0): every bias gradient), each invocation folds one output over a
# chunk of rows and neighbours read neighbouring addresses; a second pass folds the chunks in order.
# Lengths around its chunking: 33 (one chunk, one pass), 64 and 65 (one chunk of 64; two), 1000,
# 16385 (past 256 chunks of 64: longer chunks), 70001 (past kReduceChunk); outputs 2, 3, 5 and
# 130 (two groups of 128 outputs).
COL_SIZES = [(33, 3), (64, 130), (65, 2), (1000, 130), (16385, 5), (70001, 3)]


def _columns(n, k, dtype):
    """[n, k]: column j holds _values(n), with NaN, infinities and -0 in the odd columns; column 0
    has its maximum and minimum twice, in different chunks (the first index must win)."""
    x = torch.stack([_values(n, dtype, special=(j % 2 == 1)) for j in range(k)], 1)
    x[n // 3, 0], x[n - 2, 0] = x[:, 0].max(), x[:, 0].max()
    x[n // 5, 0], x[n - 3, 0] = x[:, 0].min(), x[:, 0].min()
    return x


@pytest.mark.parametrize("dtype,op", [pytest.param(d, o, id=f"{o}-{d}") for o in ["sum", "mean", "amax", "argmax", "argmin"]
                                      for d in FLOAT_DTYPES + INT_DTYPES if o != "mean" or d.is_floating_point])
def test_column_reductions(dtype, op):
    """x.op(0) in column mode against torch CPU, and against the same values laid out as rows
    (x.t().contiguous(): the row path); twice the same bytes."""
    fn = {"sum": lambda t: t.sum(0), "mean": lambda t: t.mean(0), "amax": lambda t: t.amax(0),
          "argmax": lambda t: t.argmax(0), "argmin": lambda t: t.argmin(0)}[op]
    for n, k in COL_SIZES:
        x = _columns(n, k, dtype)
        ref, scale = fn(x), None
        if op in ("sum", "mean") and dtype.is_floating_point:
            scale = x.double().abs().nan_to_num(posinf=0, neginf=0).sum(0) / (n if op == "mean" else 1)
            ref = fn(x.double()).to(ref.dtype)
        rows = x.t().contiguous().to(DEV).t()
        assert rows.stride() == (1, n)
        cols = fn(x.to(DEV)).cpu()
        assert_close_row(row(op), cols, ref, scale, n, what=f"{op} [{n}, {k}] columns")
        assert_close_row(row(op), fn(rows).cpu(), ref, scale, n, what=f"{op} [{n}, {k}] rows")
        _same_bytes({"columns": cols, "columns again": fn(x.to(DEV)).cpu()}, f"{op} {dtype} [{n}, {k}]")


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64], ids=str)
def test_column_reductions_over_several_dims(dtype):
    """Column mode with reduced and kept dims that do not merge (index arithmetic per element):
    over dims 0 and 1 of every other [., 7, 40] slab, and over dim 0 of [300, 6, 2 * 9][..., :9]."""
    x = _values(600 * 7 * 40, dtype, special=False).reshape(600, 7, 40)
    y = _values(300 * 6 * 18, dtype, special=False).reshape(300, 6, 18)
    cases = {"dims 0, 1": (x, lambda t: t[::2].sum((0, 1)), 300 * 7),
             "dim 0, kept dims strided": (y, lambda t: t[..., :9].sum(0), 300),
             "amax dims 0, 1": (x, lambda t: t[::2].amax((0, 1)), 300 * 7),
             "argmax dim 0": (y, lambda t: t[..., :9].argmax(0), 300)}
    for what, (t, f, n) in cases.items():
        ref = f(t)
        op = "argmax" if "argmax" in what else "amax" if "amax" in what else "sum"
        scale = f(t.double().abs()) if op == "sum" and dtype.is_floating_point else None
        if scale is not None:
            ref = f(t.double()).to(dtype)
        assert_close_row(row(op), f(t.to(DEV)).cpu(), ref, scale, n, what=f"{what} {dtype}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64, torch.int32], ids=str)
def test_full_reduction_paths_agree(dtype):
    for n in (5, 4099, 200003):
        x = _values(n, dtype, special=False)
        lx = _layouts(x)
        results = {p: t.sum().cpu() for p, t in lx.items()}
        results["dense again"] = lx["dense"].sum().cpu()
        _same_bytes(results, f"sum {dtype} n={n}")
        if dtype.is_floating_point:
            ref = x.double().sum().to(x.dtype)
            assert_close_row(row("sum"), results["dense"], ref, x.double().abs().sum(), n)
        else:
            assert torch.equal(results["dense"], x.sum())



def _reduce_kernels(fn):
    import vkml_torch
    torch.vkml.synchronize()
    with vkml_torch.profile() as p:
        out = fn()
        torch.vkml.synchronize()
    return out, [name for name, *_ in p.kernels if "reduce" in name]


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64], ids=str)
def test_few_outputs_split_into_chunks(dtype):
    """Rows of at least 16,384 reduced to few outputs are cut into chunks of 4,096 towards 1,024
    workgroups (graph/families/reduce.h kMinChunk), then the chunks' partials are combined in order:
    a full reduction of 50,001 elements is 13 chunks, the last of 849, and 3 rows of 20,000 are 5
    chunks each (two dispatches either way). Extremes at a chunk's first and last element, a tie
    across chunks (the first index wins), sums against torch CPU (int64: exact)."""
    for shape in ((50_001,), (3, 20_000)):
        n = shape[-1]
        x = (torch.randn(shape, generator=G) * 3).to(dtype) if dtype.is_floating_point else \
            torch.randint(-100, 100, shape, generator=G)
        x = x.reshape(-1, n)
        x[0, 4096] = 1000   # the second chunk's first element ...
        x[0, 3 * 4096 - 1] = 1000  # ... tied with the third's last: argmax is 4096
        x[-1, n - 1] = -1000  # the last (short) chunk's last element: the minimum
        x = x.reshape(shape)
        xv = x.to(DEV)
        dim = None if len(shape) == 1 else 1
        for op in ("amax", "argmax", "amin", "argmin"):
            f = (lambda t, op=op: getattr(t, op)()) if dim is None else (lambda t, op=op: getattr(t, op)(1))
            got, kernels = _reduce_kernels(lambda: f(xv))
            assert len(kernels) == 2, f"{op} {shape}: expected a chunk pass and a partials pass, ran {kernels}"
            assert_close_row(row(op), got.cpu(), f(x), what=f"{op} {shape} {dtype}")
        got, kernels = _reduce_kernels(lambda: xv.sum() if dim is None else xv.sum(1))
        assert len(kernels) == 2, f"sum {shape}: ran {kernels}"
        ref = x.sum() if dim is None else x.sum(1)
        if dtype.is_floating_point:
            scale = x.double().abs().sum() if dim is None else x.double().abs().sum(1)
            assert_close_row(row("sum"), got.cpu(), (x.double().sum() if dim is None else x.double().sum(1)).to(dtype),
                             scale, n, what=f"sum {shape}")
        else:
            assert torch.equal(got.cpu(), ref), f"sum {shape}: {got.cpu()} against {ref}"


# ---- softmax --------------------------------------------------------------------------------------
SM_SIZES = [1, 3, 5, 127, 513, 4096, 4099, 9000, 70001]  # 4096: one tile; 9000: three; 70001: passes 1-3


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_paths_agree(dtype, name):
    fn = torch.softmax if name == "softmax" else torch.log_softmax
    for n in SM_SIZES:
        x = torch.stack([_values(n, dtype, special=False), _values(n, dtype, special=False) * 5])
        if n > 8:
            x[1, n // 2] = float("inf") if dtype.is_floating_point else 0
        ref = fn(x.double(), 1).to(dtype)
        sc, nn = _softmax_scale(x, 1)
        results = {}
        for path, t in _row_layouts(x).items():
            results[path] = fn(t, 1).cpu()
            assert_close_row(row(name), results[path], ref, sc, nn, what=f"{name} n={n} {path}")
        results["dense again"] = fn(x.to(DEV), 1).cpu()
        _same_bytes(results, f"{name} {dtype} n={n}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64], ids=str)
@pytest.mark.parametrize("name", ["softmax_backward", "log_softmax_backward"])
def test_softmax_backward_paths_agree(dtype, name):
    fwd = torch.softmax if name == "softmax_backward" else torch.log_softmax
    bwd = (torch.ops.aten._softmax_backward_data if name == "softmax_backward"
           else torch.ops.aten._log_softmax_backward_data)
    for n in (3, 513, 4099, 9000):
        x = torch.stack([_values(n, dtype, special=False), _values(n, dtype, special=False)])
        y = fwd(x.float(), 1).to(dtype)
        g = torch.stack([_values(n, dtype, special=False), _values(n, dtype, special=False)])
        ref = bwd(g.double(), y.double(), 1, torch.float64).to(dtype)
        # the backward's sum is of g * y (or g): |g| |y| + |y| |sum| bounds the terms it combines
        sc = (g.double().abs() * (y.double().abs() if name == "softmax_backward" else 1)).sum(1, keepdim=True)
        sc = sc * (1 + y.double().exp().abs() if name != "softmax_backward" else 1 + y.double().abs())
        ly, lg = _row_layouts(y), _row_layouts(g)
        results = {}
        for path in ly:
            results[path] = bwd(lg[path], ly[path], 1, dtype).cpu()
            assert_close_row(row(name), results[path], ref, sc, n, what=f"{name} n={n} {path}")
        _same_bytes(results, f"{name} {dtype} n={n}")


def test_softmax_all_minus_inf_row_and_nan():
    x = torch.zeros(3, 4099)
    x[0] = -float("inf")
    x[1, 4098] = float("nan")
    for path, t in _row_layouts(x).items():
        got = torch.softmax(t, 1).cpu()
        ref = torch.softmax(x, 1)
        assert got[0].isnan().all() and ref[0].isnan().all(), path
        assert got[1].isnan().all() and ref[1].isnan().all(), path
        assert_close_row(row("softmax"), got[2:], ref[2:], *_softmax_scale(x[2:], 1), what=path)



# Rows of up to 512 share a workgroup: 128 / lanes rows each, lanes = the power of two near D / 4
# (lower_softmax.cpp); longer rows have 128 lanes and, in specialized pipelines, a register cache
# of 8, 16 or 32 elements a lane. Row counts that are not a multiple of a workgroup's rows leave a last group
# part empty; a NaN row and an all -inf row sit at the end. The same rows also run along dim 0 of
# x.t().contiguous() (rows interleaved: inner > 1) and of the view x.t().
@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmax_backward", "log_softmax_backward"])
def test_softmax_short_rows_share_workgroups(name):
    fwd = torch.softmax if name.startswith("softmax") else torch.log_softmax
    bwd = (torch.ops.aten._softmax_backward_data if name == "softmax_backward"
           else torch.ops.aten._log_softmax_backward_data)
    for rows, n in [(1, 1), (129, 1), (67, 2), (300, 7), (65, 8), (33, 33), (37, 128), (9, 129), (5, 512), (3, 513),
                    (3, 1000), (2, 2049)]:  # the last two: 128 lanes with caches of 8 and 32
        x = torch.randn(rows, n, generator=G) * 4
        g = torch.randn(rows, n, generator=G)
        if rows > 2 and n > 1 and "backward" not in name:
            x[rows - 2, 0] = float("inf")
            x[rows - 1, :] = -float("inf")
        for how, t, gt, dim in (("rows", x, g, 1), ("columns", x.t().contiguous(), g.t().contiguous(), 0),
                                ("transposed view", x.t(), g.t(), 0)):
            what = f"{name} ({rows},{n}) {how}"
            if "backward" not in name:
                got = fwd(t.to(DEV), dim).cpu()
                ref = fwd(t.double(), dim).float()
                assert torch.equal(got.isnan(), ref.isnan()), what
                ok = ~ref.isnan()
                sc, nn = _softmax_scale(t, dim)
                assert_close_row(row(name), got.where(ok, 0), ref.where(ok, 0), sc, nn, what=what)
            else:
                y = fwd(t.double(), dim).float()
                got = bwd(gt.to(DEV), y.to(DEV), dim, torch.float32).cpu()
                ref = bwd(gt.double(), y.double(), dim, torch.float64).float()
                # the sum's terms |g| |y| (or |g|), times the factor each output applies to the sum
                gy = gt.double().abs() * (y.double().abs() if name == "softmax_backward" else 1)
                f = y.double().abs() if name == "softmax_backward" else y.double().exp()
                assert_close_row(row(name), got, ref, gy.sum(dim, keepdim=True) * (1 + f), n, what=what)

# ---- specialized elementwise pipelines ------------------------------------------------------------
# Each shader variant (f32, f64, i64) and each element width; lavapipe compiles every combination's
# pipeline anew (~80 ms each), so not every dtype.
SPEC_DTYPES = (torch.float32, torch.bfloat16, torch.float64, torch.int32, torch.int8, torch.bool)


@pytest.mark.parametrize("dtype", SPEC_DTYPES, ids=str)
def test_elementwise_specialized_pipelines_same_bytes(dtype):
    """On GPUs every elementwise dispatch runs a pipeline specialized to its dtypes, path and
    operands (elementwise.comp's SPEC_* constants; VKML_SPECIALIZE, docs/performance.md); lavapipe
    runs the generic one. Both are forced here on the same inputs, over every path (dense, strided,
    misaligned, broadcast value, CPU scalar, a strided output, a type-promoting operand, unary ops and
    copies to other dtypes): the bytes must be the same, so a specialization that folds a constant
    wrongly is caught here as well as on a GPU. (The generic path is checked against torch CPU above.)"""
    import vkml_torch
    n = 1029
    x, y = _values(n, dtype), _values(n, dtype)
    s = _values(1, dtype)
    f32 = torch.arange(n, dtype=torch.float32)
    fns = {"neg": torch.neg, "abs": torch.abs, "clone": torch.clone, "to f16": lambda t: t.to(torch.float16),
           "to f64": lambda t: t.to(torch.float64), "to bool": lambda t: t.to(torch.bool),
           "to i32": lambda t: t.to(torch.int32), "mul": lambda t: t * t, "lt": lambda t: t < y.to(DEV),
           "+ python": lambda t: t + 3, "+ f32": lambda t: t + f32.to(DEV)}
    if dtype == torch.bool:
        for k in ("neg", "abs", "+ python", "+ f32"):
            del fns[k]
    else:
        fns["add alpha"] = lambda t: torch.add(t, y.to(DEV), alpha=2)
        fns["maximum"] = lambda t: torch.maximum(y.to(DEV), t)
        fns["+ 0-d device"] = lambda t: t + s.to(DEV).reshape(())
        fns["where"] = lambda t: torch.where(t > 1, t, s.to(DEV))
    if dtype.is_floating_point:
        for k in ("to i32",):
            del fns[k]  # float -> int out of range: no contract
    got = {}
    for spec in (0, 1):
        vkml_torch._C._set_specialize(spec)
        try:
            for name, fn in fns.items():
                for path, t in _layouts(x).items():
                    got[(spec, name, path)] = fn(t).cpu()
                out = torch.empty(2 * n, dtype=torch.promote_types(dtype, dtype), device=DEV)[::2]
                got[(spec, "strided out", "")] = torch.mul(x.to(DEV), y.to(DEV), out=out).cpu()
        finally:
            vkml_torch._C._set_specialize(-1)
    for (spec, name, path), v in got.items():
        if spec == 1:
            assert _bits_eq(v, got[(0, name, path)]), f"{name} {dtype} {path}: the specialized pipeline's bytes differ"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64], ids=str)
def test_dtype_specialized_pipelines_same_bytes(dtype):
    """reduce, softmax, norm and every gemm pipeline (gemv, small, large, split K and its sum pass)
    take the dtypes as specialization constant 1 on GPUs (shaders/spec_dtypes.glsl; norm.comp's
    own, 4 bits a slot): forced on and off here over the same inputs, the bytes must be the same."""
    import vkml_torch
    g = torch.Generator().manual_seed(5)
    x = torch.randn(130, 67, generator=g).to(dtype)
    a, b = torch.randn(130, 40, generator=g).to(dtype), torch.randn(40, 70, generator=g).to(dtype)
    ka, kb = torch.randn(8, 2304, generator=g).to(dtype), torch.randn(2304, 8, generator=g).to(dtype)
    v = torch.randn(40, generator=g).to(dtype)
    xl = torch.randn(3, 1500, generator=g).to(dtype)  # softmax: 128 lanes with a cache of 16 (constant 3)
    fns = {"sum rows": lambda: x.to(DEV).sum(-1), "sum cols": lambda: x.to(DEV).sum(0), "amax": lambda: x.to(DEV).amax(-1),
           "mean all": lambda: x.to(DEV).mean(), "softmax": lambda: x.to(DEV).softmax(-1),
           "log_softmax cols": lambda: x.to(DEV).log_softmax(0), "softmax long rows": lambda: xl.to(DEV).softmax(-1),
           "softmax backward": lambda: torch.ops.aten._softmax_backward_data(x.to(DEV), x.to(DEV).softmax(-1), -1, dtype),
           "mm large": lambda: a.to(DEV) @ b.to(DEV), "mm small": lambda: a[:20].to(DEV) @ b.to(DEV),
           "mm split K": lambda: ka.to(DEV) @ kb.to(DEV), "mv": lambda: a.to(DEV) @ v.to(DEV),
           "addmm": lambda: torch.addmm(b[0].to(DEV), a.to(DEV), b.to(DEV), beta=0.5, alpha=2),
           "bmm": lambda: torch.bmm(a.reshape(2, 65, 40).to(DEV), b[:, :8].reshape(1, 40, 8).expand(2, 40, 8).to(DEV))}
    F = torch.nn.functional
    w, bias = torch.randn(67, generator=g).to(dtype), torch.randn(67, generator=g).to(dtype)
    img = torch.randn(4, 6, 5, 3, generator=g).to(dtype)

    def norm_grads(fn, t, *params):
        t = t.to(DEV).requires_grad_()
        ps = [q.to(DEV).requires_grad_() for q in params]
        y = fn(t, *ps)
        y.backward(torch.ones_like(y))
        return torch.cat([y.detach().reshape(-1), t.grad.reshape(-1)] + [q.grad.reshape(-1) for q in ps])

    fns["layer_norm"] = lambda: norm_grads(lambda t, a, b: F.layer_norm(t, (67,), a, b), x, w, bias)
    # rows of 1,500: a cache of 4 trips and 5 counter levels (norm.comp's constants 2 and 3)
    wl, bl = torch.randn(1500, generator=g).to(dtype), torch.randn(1500, generator=g).to(dtype)
    fns["layer_norm long rows"] = lambda: norm_grads(lambda t, a, b: F.layer_norm(t, (1500,), a, b), xl, wl, bl)
    if dtype in (torch.float16, torch.bfloat16):  # float parameters: torch's mixed layer norm
        fns["layer_norm mixed"] = lambda: F.layer_norm(x.to(DEV), (67,), w.float().to(DEV), None)
    fns["group_norm"] = lambda: norm_grads(lambda t, a, b: F.group_norm(t, 3, a, b), img, w[:6], bias[:6])
    fns["batch_norm train"] = lambda: norm_grads(lambda t, a, b: F.batch_norm(t, None, None, a, b, training=True),
                                                 img, w[:6], bias[:6])
    if dtype == torch.float64:
        fns["sum int64"] = lambda: x.to(torch.int64).to(DEV).sum(-1)
    got = {}
    for spec in (0, 1):
        vkml_torch._C._set_specialize(spec)
        try:
            for name, fn in fns.items():
                got[(spec, name)] = fn().cpu()
        finally:
            vkml_torch._C._set_specialize(-1)
    for name in fns:
        assert _bits_eq(got[(1, name)], got[(0, name)]), f"{name} {dtype}: the specialized pipeline's bytes differ"
