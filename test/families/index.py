"""Test parameters of the index family (csrc/graph/families/index.def): one case generator per
aten-side function. A Tensor?[] argument (the indices of index.Tensor / _index_put_impl_) travels
as one In whose view builds the list on the device (ix_list), so test_ops materializes it like any
tensor argument. Puts avoid duplicate destinations (torch leaves their result undefined; the
determinism of vkml's answer is tested in test_index.py); accumulations under an exact row
(_index_put_impl_) sum small integers, exact in any order; the accumulating rows carry their
backward-error scale, k * sum |terms| per destination (TOL_ACCUM)."""
import math

import torch

from helpers import tiny_of
from op_cases import In, rand, small_ints, special_values, wrap_call

L = torch.int64


class IndexList(list):
    """A Tensor?[] argument; numel() answers the harness's "is every input non-empty"."""

    def numel(self):
        return min([t.numel() for t in self if torch.is_tensor(t)] or [1])


def ix_list(*items):
    """items: None, a CPU tensor (moved to the device), ("cpu", t) (stays on the CPU), or
    (t, view) (moved, then viewed there: strided and expanded index tensors)."""
    def make(t):
        out = IndexList()
        for i in items:
            if i is None:
                out.append(None)
            elif isinstance(i, tuple) and i[0] == "cpu":
                out.append(i[1].clone())
            elif isinstance(i, tuple):
                out.append(i[1](i[0].to(t.device)))
            else:
                out.append(i.to(t.device) if t.device.type != "cpu" else i.clone())
        return out
    return In(torch.zeros(1), make)


def T(v, dtype=L):
    return torch.tensor(v, dtype=dtype)


def data(shape, dtype, rng, special, exact=False, accum=False):
    """Ordinary values, or the special ones tiled to `shape`. exact: small integers (their sums
    are exact in every order), or the special values whose sums do not depend on the order;
    accum: no dtype max (whether max + max - max overflows depends on the order, as for sums)."""
    n = math.prod(shape)
    if special:
        if exact and dtype.is_floating_point:
            v = T([math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -2.5, 0.5], dtype)
        else:
            v = special_values(dtype, with_max=not (exact or accum))
        return v.repeat(n // len(v) + 1)[:n].reshape(shape)
    return small_ints(shape, dtype, rng) if exact else rand(shape, dtype, rng)


def flush_scale(row, dtype, cnt):
    """The scale that allows 2*cnt smallest normals (as the oracle's or_accum): each of cnt products
    and partial sums may be a subnormal that the device flushes."""
    eps = torch.finfo(torch.float64 if dtype == torch.float64 else torch.float32).eps
    return 2 * cnt * tiny_of(dtype) / (float(row["tol_bound"]) * eps)


def safe(scale):
    """A scale function for cases the CPU may reject: the case then compares nothing."""
    def run(args):
        try:
            return scale(args)
        except Exception:
            return [(0.0, 1)]
    return run


def mask(shape, rng):
    return torch.randint(0, 2, shape, generator=rng).bool()


def gen_index(row, overload, dtype, rng, special):
    d = lambda s: In(data(s, dtype, rng, special))  # noqa: E731
    m45 = mask((4, 5), rng)
    cases = [
        ("x[idx] (negative, repeated)", d((4, 5)), ix_list(T([3, 0, -1, 2, 0]))),
        ("x[:, idx]", d((4, 5)), ix_list(None, T([4, -5, 1]))),
        ("x[i, j] broadcast (2,1) x (3,)", d((4, 5)), ix_list(T([[0], [3]]), T([1, 4, -1]))),
        ("x[i, :, j]: apart, result dims first", d((3, 4, 5)), ix_list(T([0, 2]), None, T([4, 1]))),
        ("x[:, i, j] after a slice, broadcast", d((3, 4, 5)), ix_list(None, T([[0, 3]]), T([[4], [1]]))),
        ("bool mask (4,5)", d((4, 5)), ix_list(m45)),
        ("bool mask on dim 1", d((4, 5)), ix_list(None, mask((5,), rng))),
        ("mask (4,) with an int index", d((4, 5)), ix_list(T([True, False, True, True]), T([1]))),
        ("int32 indices", d((4, 5)), ix_list(T([1, 3, -4], torch.int32))),
        ("transposed self", In(data((5, 4), dtype, rng, special), lambda t: t.t()), ix_list(T([2, 0]))),
        ("stepped self, stepped index", In(data((6, 10), dtype, rng, special), lambda t: t[::2, 1::3]),
         ix_list(None, (T([0, 9, 2, 9, 1]), lambda t: t[::2]))),
        ("expanded index (stride 0)", d((4, 5)), ix_list((T([1, 2]), lambda t: t.expand(3, 2)))),
        ("0-d index: 0-d result", d((5,)), ix_list(T(3))),
        ("empty index", d((4, 5)), ix_list(T([], L))),
        ("empty self and index", d((0, 5)), ix_list(T([], L))),
        ("all-false mask", d((4, 5)), ix_list(torch.zeros(4, 5, dtype=torch.bool))),
        ("CPU index tensor", d((4, 5)), ix_list(("cpu", T([1, 2])))),
        ("0-d self, 0-d mask", d(()), ix_list(T(True))),
        ("3000 x 3 rows: several workgroups", d((3000, 3)), ix_list(torch.randint(-3000, 3000, (2500,), generator=rng))),
        ("out of range: IndexError", d((4, 5)), ix_list(T([0, 4]))),
        ("negative out of range on dim 1", d((4, 5)), ix_list(None, T([-6]))),
        ("mask shape mismatch", d((4, 5)), ix_list(mask((3,), rng))),
        ("float index", d((4, 5)), ix_list(T([1.0], torch.float32))),
        ("too many indices", d((4,)), ix_list(T([0]), T([0]))),
    ]
    return [wrap_call(overload, [x, ix], desc, [dtype]) for desc, x, ix in cases]


def gen_index_select(row, overload, dtype, rng, special):
    d = lambda s: In(data(s, dtype, rng, special))  # noqa: E731
    cases = [
        ("dim 0, repeated", d((4, 5)), 0, In(T([3, 0, 3, 1]))),
        ("dim 1 (the CPU's fast path)", d((4, 5)), 1, In(T([4, 0, 2]))),
        ("dim -1 of (2,3,4)", d((2, 3, 4)), -1, In(T([3, 3, 0]))),
        ("int32 index", d((4, 5)), 0, In(T([2, 1], torch.int32))),
        ("0-d index", d((4, 5)), 1, In(T(2))),
        ("1-D self", d((7,)), 0, In(T([6, 0, 5]))),
        ("0-d self", d(()), 0, In(T([0]))),
        ("empty index", d((4, 5)), 0, In(T([], L))),
        ("transposed self, dim 1", In(data((5, 4), dtype, rng, special), lambda t: t.t()), 1, In(T([1, 4]))),
        ("stepped self, stepped index", In(data((8, 5), dtype, rng, special), lambda t: t[::2]), 0,
         In(T([3, 9, 0, 9, 1]), lambda t: t[::2])),
        ("out of range, dim 0: IndexError", d((4, 5)), 0, In(T([4]))),
        ("out of range, dim 1: RuntimeError", d((4, 5)), 1, In(T([5]))),
        ("negative index", d((4, 5)), 0, In(T([-1]))),
        ("2-D index", d((4, 5)), 0, In(T([[0]]))),
        ("float index", d((4, 5)), 0, In(T([0.0], torch.float32))),
        ("0-d self, 2 indices", d(()), 0, In(T([0, 0]))),
    ]
    return [wrap_call(overload, [x, dim, ix], desc, [dtype]) for desc, x, dim, ix in cases]


def gen_gather(row, overload, dtype, rng, special):
    d = lambda s: In(data(s, dtype, rng, special))  # noqa: E731
    r = lambda s, hi: torch.randint(0, hi, s, generator=rng)  # noqa: E731
    cases = [
        ("dim 1", d((3, 4)), 1, In(r((3, 2), 4)), {}),
        ("dim 0, index smaller", d((3, 4)), 0, In(r((2, 3), 3)), {}),
        ("dim -1 of (2,3,4)", d((2, 3, 4)), -1, In(r((2, 2, 5), 4)), {}),
        ("transposed self, transposed index", In(data((4, 3), dtype, rng, special), lambda t: t.t()), 1,
         In(r((2, 3), 4), lambda t: t.t()), {}),
        ("int32 index", d((3, 4)), 1, In(r((3, 4), 4).int()), {}),
        ("0-d", d(()), 0, In(T(0)), {}),
        ("1-D, 3000", d((3000,)), 0, In(r((2600,), 3000)), {}),
        ("empty index", d((3, 4)), 0, In(r((0, 4), 3)), {}),
        ("sparse_grad=True", d((3, 4)), 1, In(r((3, 2), 4)), {"sparse_grad": True}),
        ("out of range: RuntimeError", d((3, 4)), 1, In(T([[4]])), {}),
        ("negative index", d((3, 4)), 0, In(T([[-1]])), {}),
        ("rank mismatch", d((3, 4)), 0, In(T([0])), {}),
    ]
    return [wrap_call(overload, [x, dim, ix], desc, [dtype], kwargs=kw) for desc, x, dim, ix, kw in cases]


def gen_index_put(row, overload, dtype, rng, special):
    """_index_put_impl_(self, indices, values, accumulate, unsafe), in place."""
    d = lambda s, exact=False: In(data(s, dtype, rng, special, exact))  # noqa: E731
    m = T([[True, False, True], [False, False, True], [True, True, False], [False, True, False]], torch.bool)
    value = 2.5 if dtype.is_floating_point else (True if dtype == torch.bool else 3)
    cases = [
        ("x[idx] = rows", d((5, 3)), ix_list(T([4, 0, 2])), d((3, 3)), False),
        ("x[idx] = (3,) broadcast", d((5, 3)), ix_list(T([-1, 1])), d((3,)), False),
        ("x[:, idx] = v", d((4, 5)), ix_list(None, T([3, -1])), d((4, 2)), False),
        ("x[i, j] = v", d((4, 5)), ix_list(T([0, 3]), T([1, 4])), d((2,)), False),
        ("x[i, :, j] = v: apart", d((3, 4, 5)), ix_list(T([0, 2]), None, T([4, 1])), d((2, 4)), False),
        ("x[mask] = v", d((4, 3)), ix_list(m), d((6,)), False),
        ("x[mask] = CPU scalar (masked_fill)", d((4, 3)), ix_list(m), In(T(value, None), keep_cpu=True), False),
        ("0-d device value", d((5, 3)), ix_list(T([1, 3])), d(()), False),
        ("stepped self view (base kept)", In(data((6, 5), dtype, rng, special), lambda t: t[::2]),
         ix_list(T([2, 0])), d((2, 5)), False),
        ("transposed self", In(data((3, 5), dtype, rng, special), lambda t: t.t()), ix_list(T([4, 1])),
         d((2, 3)), False),
        ("int32 indices", d((5, 3)), ix_list(T([3, 0], torch.int32)), d((2, 3)), False),
        ("empty index", d((5, 3)), ix_list(T([], L)), d((0, 3)), False),
        ("accumulate, repeated rows", d((5, 3), True), ix_list(T([1, 1, 4, 1])), d((4, 3), True), True),
        ("accumulate x[:, idx] += (4,1) broadcast", d((4, 5), True), ix_list(None, T([0, 0, -1])),
         d((4, 1), True), True),
        ("accumulate x[mask] += v", d((4, 3), True), ix_list(m), d((6,), True), True),
        ("accumulate x[i, j], 1500 elements", d((40, 40), True),
         ix_list(torch.randint(0, 40, (1500,), generator=rng), torch.randint(0, 40, (1500,), generator=rng)),
         d((1500,), True), True),
        ("few rows of a 3000-element self (hashed slots)", d((100, 30)), ix_list(T([97, 3, 50])), d((3, 30)), False),
        ("accumulate into 3000 elements (hashed slots)", d((100, 30), True), ix_list(T([97, 3, 97, 64, 3])),
         d((5, 30), True), True),
        ("out of range", d((5, 3)), ix_list(T([5])), d((1, 3)), False),
        ("accumulate, out of range", d((5, 3)), ix_list(None, T([-4])), d((5, 1)), True),
        ("value shape mismatch", d((5, 3)), ix_list(T([0, 1])), d((3, 3)), False),
    ]
    other = torch.float64 if dtype != torch.float64 else torch.float32
    cases.append(("value dtype mismatch", d((5, 3)), ix_list(T([0])), In(torch.zeros(1, 3, dtype=other)), False))
    return [wrap_call(overload, [x, ix, v, acc], desc) for desc, x, ix, v, acc in cases]


def distinct(shape, dim, size, rng):
    """An index of `shape` whose values along `dim` are distinct below `size` (no destination is
    written twice)."""
    moved = list(shape)
    moved[dim], moved[-1] = moved[-1], moved[dim]
    n = math.prod(moved[:-1])
    rows = [torch.randperm(size, generator=rng)[: shape[dim]] for _ in range(n)]
    t = torch.stack(rows).reshape(moved) if rows else torch.zeros(moved, dtype=L)
    return t.transpose(dim, -1).contiguous()


def _scatter_inputs(dtype, rng, special, accum=False):
    d = lambda s: In(data(s, dtype, rng, special, accum=accum))  # noqa: E731
    return [
        ("dim 0", d((4, 5)), 0, In(distinct((3, 5), 0, 4, rng)), d((3, 5))),
        ("dim 1, src larger than index", d((4, 5)), 1, In(distinct((4, 3), 1, 5, rng)), d((5, 6))),
        ("dim -1 of (2,3,4)", d((2, 3, 4)), -1, In(distinct((2, 3, 2), 2, 4, rng)), d((2, 3, 2))),
        ("transposed self, transposed index", In(data((5, 4), dtype, rng, special, accum=accum), lambda t: t.t()), 0,
         In(distinct((3, 5), 0, 4, rng).t().contiguous(), lambda t: t.t()), d((3, 5))),
        ("int32 index", d((4, 5)), 0, In(distinct((2, 5), 0, 4, rng).int()), d((2, 5))),
        ("0-d", d(()), 0, In(T(0)), d(())),
        ("1-D, 3000", d((3000,)), 0, In(torch.randperm(3000, generator=rng)[:2000]), d((2000,))),
        ("empty index", d((4, 5)), 0, In(torch.zeros(0, 5, dtype=L)), d((0, 5))),
        ("20 of 3000 (hashed slots)", d((3000,)), 0, In(torch.randperm(3000, generator=rng)[:20]), d((20,))),
        ("out of range: RuntimeError", d((4, 5)), 1, In(T([[5]])), d((1, 1))),
        ("negative index", d((4, 5)), 0, In(T([[-1]])), d((1, 1))),
    ]


def gen_scatter(row, overload, dtype, rng, special):
    cases = []
    value = ".value" in overload
    if dtype == torch.bool:
        scalars = [True, False]
    elif dtype.is_floating_point:
        scalars = [2.5, -3] + ([math.nan, -math.inf, -0.0, 1e30] if special else [])
    else:
        scalars = [7, -1 if dtype != torch.uint8 else 255]
    for desc, x, dim, ix, src in _scatter_inputs(dtype, rng, special):
        if value:
            for s in scalars:
                cases.append(wrap_call(overload, [x, dim, ix, s], f"{desc} <- {s!r}", [dtype]))
        else:
            cases.append(wrap_call(overload, [x, dim, ix, src], desc, [dtype]))
    return cases


def gen_scatter_add(row, overload, dtype, rng, special):
    def sc(args):
        x, dim, ix, src = args[:4]
        ab = lambda t: t.double().abs()  # noqa: E731
        s = ab(x).scatter_add(dim, ix, ab(src))
        cnt = torch.zeros(x.shape, dtype=torch.float64).scatter_add(dim, ix, torch.ones(src.shape, dtype=torch.float64))
        return [((cnt + 1) * s + flush_scale(row, x.dtype, cnt), 1)]
    d = lambda s: In(data(s, dtype, rng, special, accum=True))  # noqa: E731
    r = lambda s, hi: torch.randint(0, hi, s, generator=rng)  # noqa: E731
    ins = _scatter_inputs(dtype, rng, special, accum=True)
    ins += [("repeated destinations", d((3, 4)), 0, In(r((6, 4), 3)), d((6, 4))),
            ("1200 destinations, 3000 contributions", d((40, 30)), 0, In(r((100, 30), 40)), d((100, 30))),
            ("3000 destinations, 60 contributions 64 apart (hashed, colliding)", d((3000,)), 0,
             In((torch.arange(60) * 64) % 2944), d((60,)))]
    return [wrap_call(overload, [x, dim, ix, src], desc, [dtype], scale=safe(sc)) for desc, x, dim, ix, src in ins]


def gen_index_add(row, overload, dtype, rng, special):
    alphas = [1] if dtype == torch.bool else ([1, 2, -1.5] if dtype.is_floating_point else [1, 2, -1])
    if dtype == torch.uint8:
        alphas = [1, 2]

    def sc(args, alpha):
        x, dim, ix, src = args[:4]
        ab = lambda t: t.double().abs()  # noqa: E731
        s = ab(x).index_add(dim, ix, ab(src) * abs(alpha))
        cnt = torch.zeros(x.shape, dtype=torch.float64).index_add(dim, ix, torch.ones(src.shape, dtype=torch.float64))
        return [((cnt + 1) * s + flush_scale(row, x.dtype, cnt), 1)]
    d = lambda s: In(data(s, dtype, rng, special, accum=True))  # noqa: E731
    ins = [
        ("dim 0, repeated", d((5, 3)), 0, In(T([1, 1, 4, 0])), d((4, 3))),
        ("dim 1", d((3, 5)), 1, In(T([4, 0, 4])), d((3, 3))),
        ("1-D", d((6,)), 0, In(T([5, 5, 0])), d((3,))),
        ("0-d", d(()), 0, In(T([0])), d(())),
        ("int32 index", d((5, 3)), 0, In(T([2, 2], torch.int32)), d((2, 3))),
        ("transposed self, stepped source", In(data((3, 5), dtype, rng, special, accum=True), lambda t: t.t()), 0,
         In(T([0, 4])), In(data((4, 3), dtype, rng, special, accum=True), lambda t: t[::2])),
        ("1500 destinations", d((300, 5)), 0, In(torch.randint(0, 300, (700,), generator=rng)), d((700, 5))),
        ("5 rows of a (300,10) self (hashed slots)", d((300, 10)), 0, In(T([7, 299, 7, 0, 7])), d((5, 10))),
        ("source slices broadcast (4,1)", d((5, 3)), 0, In(T([1, 1, 4, 0])), d((4, 1))),
        ("1-D source broadcast over rows", d((5, 3)), 0, In(T([1, 1, 4, 0])), d((4,))),
        ("dim 1 of (2,3,4), source (2,2,1)", d((2, 3, 4)), 1, In(T([2, 2])), d((2, 2, 1))),
        ("source slices too wide", d((5, 3)), 0, In(T([1, 2])), d((2, 5))),
        ("1-D self, 2-D source", d((5,)), 0, In(T([1, 2])), d((2, 2))),
        ("empty index", d((5, 3)), 0, In(T([], L)), d((0, 3))),
        ("out of range, 2-D: RuntimeError", d((5, 3)), 0, In(T([5])), d((1, 3))),
        ("out of range, 1-D: IndexError", d((5,)), 0, In(T([7])), d((1,))),
        ("negative index", d((5, 3)), 0, In(T([-1])), d((1, 3))),
    ]
    cases = []
    for desc, x, dim, ix, src in ins:
        for a in alphas:
            kw = {} if a == 1 else {"alpha": a}
            cases.append(wrap_call(overload, [x, dim, ix, src], f"{desc} alpha={a}", [dtype], kwargs=kw,
                                   scale=safe(lambda args, a=a: sc(args, a))))
    return cases


def gen_embedding_backward(row, overload, dtype, rng, special):
    def sc(args):
        g, ix, nw, pad, freq = args[:5]
        eb = torch.ops.aten.embedding_dense_backward
        s = eb(g.double().abs(), ix, nw, pad, freq)
        cnt = eb(torch.ones(g.shape, dtype=torch.float64), ix, nw, pad, False)
        return [((cnt + 1) * s + flush_scale(row, g.dtype, cnt), 1)]
    d = lambda s: In(data(s, dtype, rng, special, accum=True))  # noqa: E731
    ix6 = T([1, 4, 1, 0, 4, 1])
    ins = [
        ("(6,3), repeated", d((6, 3)), In(ix6), 5, -1, False),
        ("padding_idx 1", d((6, 3)), In(ix6), 5, 1, False),
        ("scale_grad_by_freq", d((6, 3)), In(ix6), 5, -1, True),
        ("padding_idx and scale_grad_by_freq", d((6, 3)), In(ix6), 5, 4, True),
        ("(2,3,4) grad, (2,3) indices", d((2, 3, 4)), In(T([[0, 2, 2], [2, 1, 0]])), 3, -1, False),
        ("int32 indices", d((6, 3)), In(ix6.int()), 5, -1, False),
        ("transposed grad", In(data((3, 6), dtype, rng, special, accum=True), lambda t: t.t()), In(ix6), 5, -1, False),
        ("1500 weights, 700 indices", d((700, 5)), In(torch.randint(0, 300, (700,), generator=rng)), 300, 7, True),
        ("1000 weights, 6 indices (hashed slots)", d((6, 5)), In(T([999, 3, 999, 0, 3, 999])), 1000, 3, True),
        ("empty indices", d((0, 3)), In(T([], L)), 5, -1, False),
        ("out of range: skipped, as torch's CPU kernel", d((3, 3)), In(T([7, 1, -2])), 5, -1, False),
        ("float indices", d((2, 3)), In(T([0.0, 1.0], torch.float32)), 5, -1, False),
    ]
    return [wrap_call(overload, [g, ix, nw, pad, freq], desc, [dtype], scale=safe(sc))
            for desc, g, ix, nw, pad, freq in ins]


def gen_nonzero(row, overload, dtype, rng, special):
    z = lambda s: In(small_ints(s, dtype, rng) if not special else data(s, dtype, rng, True))  # noqa: E731
    ins = [
        ("(3,4) with zeros", z((3, 4))),
        ("0-d", z(())),
        ("0-d zero", In(torch.zeros((), dtype=dtype))),
        ("empty (0,3)", z((0, 3))),
        ("transposed", In(small_ints((4, 3), dtype, rng), lambda t: t.t())),
        ("stepped", In(small_ints((6, 8), dtype, rng), lambda t: t[1::2, ::3])),
        ("3-D", z((2, 3, 4))),
        ("all zero", In(torch.zeros(5, 2, dtype=dtype))),
        ("1-D 3000: several chunks", z((3000,))),
    ]
    return [wrap_call(overload, [x], desc, [L]) for desc, x in ins]


def gen_masked_select(row, overload, dtype, rng, special):
    d = lambda s: In(data(s, dtype, rng, special))  # noqa: E731
    ins = [
        ("same shape", d((3, 4)), In(mask((3, 4), rng))),
        ("mask broadcast (4,)", d((3, 4)), In(mask((4,), rng))),
        ("self broadcast (1,4)", d((1, 4)), In(mask((3, 4), rng))),
        ("0-d mask", d((2, 3)), In(T(True, torch.bool))),
        ("empty", d((0, 4)), In(mask((4,), rng))),
        ("transposed self, stepped mask", In(data((4, 3), dtype, rng, special), lambda t: t.t()),
         In(mask((3, 8), rng), lambda t: t[:, ::2])),
        ("1-D 3000", d((3000,)), In(mask((3000,), rng))),
        ("int mask", d((3, 4)), In(torch.ones(3, 4, dtype=torch.uint8))),
    ]
    return [wrap_call(overload, [x, m], desc, [dtype]) for desc, x, m in ins]


GENERATORS = {
    "ix_index": gen_index, "ix_index_select": gen_index_select, "ix_gather": gen_gather,
    "ix_index_put": gen_index_put, "ix_scatter": gen_scatter, "ix_scatter_add": gen_scatter_add,
    "ix_index_add": gen_index_add, "ix_embedding_backward": gen_embedding_backward,
    "ix_nonzero": gen_nonzero, "ix_masked_select": gen_masked_select,
}
