"""The index family at the Python level (docs/indexing.md): advanced indexing as users write it,
autograd through it, nn.Embedding training, determinism of puts and accumulation, the deferred
out-of-range errors, the reduce= variants that are not there, and launches past 65,535
workgroups. Op-level cases (every overload, dtype, layout) are in test/families/index.py."""
import pytest
import torch
import vkml_torch

from helpers import DEV, assert_close_row, assert_exact, check_mode, row, stats


def v(t):
    return t.to(DEV)


def accum_scale(counts, magnitudes):
    """TOL_ACCUM's scale: k * sum |terms| per destination (k = contributions + the old value)."""
    return (counts.double() + 1) * magnitudes.double()


# ---- advanced indexing as written in Python -------------------------------------------------------

def test_python_indexing_forms():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 5, 6, generator=g)
    i, j = torch.tensor([3, 0, -1, 3]), torch.tensor([[1], [3]])
    m = x[:, :, 0] > 0
    xv = v(x)
    forms = {
        "x[i]": lambda t, i, j, m: t[i],
        "x[:, i]": lambda t, i, j, m: t[:, i],
        "x[..., i]": lambda t, i, j, m: t[..., i],
        "x[i, :, j] (apart: result dims first)": lambda t, i, j, m: t[j, :, i],
        "x[:, j, i] (adjacent, broadcast)": lambda t, i, j, m: t[:, j, i],
        "x[m]": lambda t, i, j, m: t[m],
        "x[m, 2]": lambda t, i, j, m: t[m, 2],
        "x[1:3, [0, 2]]": lambda t, i, j, m: t[1:3, [0, 2]],
        "x[None, i]": lambda t, i, j, m: t[None, i],
        "x[x > 0]": lambda t, i, j, m: t[t > 0],
    }
    for name, f in forms.items():
        assert_exact(f(xv, v(i), v(j), v(m)).cpu(), f(x, i, j, m), what=name)
    assert_exact(xv[[1, 2]].cpu(), x[[1, 2]], what="python list index (a CPU tensor)")


def test_python_assignment_forms():
    x = torch.arange(24.0).reshape(4, 6)
    i = torch.tensor([2, 0])
    cases = {
        "x[i] = 7": lambda t, i: t.__setitem__(i, 7.0),
        "x[:, i] = rows": lambda t, i: t.__setitem__((slice(None), i), torch.arange(8.0, device=t.device).reshape(4, 2)),
        "x[x > 10] = 0": lambda t, i: t.__setitem__(t > 10, 0.0),
        "x[mask] = tensor": lambda t, i: t.__setitem__(t > 20, torch.tensor([1.0, 2.0, 3.0], device=t.device)),
        "x[i] += 1": lambda t, i: t.__setitem__(i, t[i] + 1),
        "index_put_ accumulate": lambda t, i: t.index_put_((torch.tensor([1, 1, 3], device=t.device),),
                                                           torch.ones(3, 6, device=t.device), accumulate=True),
        "index_add_": lambda t, i: t.index_add_(0, torch.tensor([3, 3], device=t.device),
                                                torch.ones(2, 6, device=t.device), alpha=2),
        "masked_scatter_": lambda t, i: t.masked_scatter_(t > 12, torch.arange(24.0, device=t.device).neg()),
    }
    for name, f in cases.items():
        ref, got = x.clone(), v(x)
        f(ref, i)
        f(got, v(i))
        assert_exact(got.cpu(), ref, what=name)


def test_masked_scatter_errors_match_torch():
    x, m = torch.zeros(3, 4), torch.tensor([True, False, True, True])
    for f, err in [(lambda t, m: t.masked_scatter_(m, torch.ones(5, device=t.device)), "Number of elements of source"),
                   (lambda t, m: t.masked_scatter_(m.int(), torch.ones(12, device=t.device)), "only supports boolean"),
                   (lambda t, m: t.masked_scatter_(m, torch.ones(12, dtype=torch.float64, device=t.device)),
                    "same dtypes")]:
        with pytest.raises(RuntimeError, match=err):
            f(x.clone(), m)
        with pytest.raises(RuntimeError, match=err):
            f(v(x), v(m))
            torch.vkml.synchronize()


def test_where_argwhere_and_printing():
    x = torch.tensor([[0.0, -1.5, 0.0], [2.0, float("nan"), -0.0]])
    xv = v(x)
    for a, b in zip(torch.where(xv != 0), torch.where(x != 0)):
        assert_exact(a.cpu(), b)
    assert_exact(torch.argwhere(xv).cpu(), torch.argwhere(x))
    assert str(xv).startswith("tensor([[ 0.0000, -1.5000,  0.0000],")  # printing runs masked_select


@pytest.mark.skipif(vkml_torch.check_enabled(), reason="check mode synchronises after every node")
def test_nonzero_reads_back_once():
    """Data-dependent sizes need one synchronisation, no more: the count."""
    x = v(torch.tensor([0, 3, 0, 7, 1]))
    torch.vkml.synchronize()
    before = stats()
    out = torch.nonzero(x)
    sel = torch.masked_select(x, x > 0)
    after = stats()
    assert after["flushes"] - before["flushes"] == 2  # one per op: nonzero, masked_select
    assert_exact(out.cpu(), torch.tensor([[1], [3], [4]]))
    assert_exact(sel.cpu(), torch.tensor([3, 7, 1]))


# ---- autograd -------------------------------------------------------------------------------------

def _grads(f, *shapes, seed=0):
    g = torch.Generator().manual_seed(seed)
    xs = [torch.randn(*s, generator=g, dtype=torch.float32) for s in shapes]
    cpu = [x.clone().requires_grad_() for x in xs]
    dev = [v(x).requires_grad_() for x in xs]
    f(*cpu).backward()
    f(*dev).backward()
    return [(d.grad.cpu(), c.grad) for d, c in zip(dev, cpu)]


def test_autograd_through_indexing():
    i = torch.tensor([2, 0, 2, 2, 1])  # repeats: the backward accumulates
    w = torch.randn(5, 3, generator=torch.Generator().manual_seed(3))
    cnt = torch.bincount(i, minlength=4).double()[:, None].expand(4, 3)
    for name, f, k in [
        ("x[i] * w", lambda x: (x[i.to(x.device)] * w.to(x.device)).sum(), cnt),
        ("x[:, i]", lambda x: (x.t()[:, i.to(x.device)] * w.t().to(x.device)).sum(), cnt),
    ]:
        (got, ref), = _grads(f, (4, 3))
        mag = torch.zeros(4, 3, dtype=torch.float64).index_add_(0, i, w.double().abs())
        assert_close_row(row("index_put_acc"), got, ref, scale=accum_scale(k, mag), what=name)
    m = torch.tensor([[True, False, True], [False, False, True], [True, True, True], [False] * 3])
    (got, ref), = _grads(lambda x: (x[m.to(x.device)] ** 2).sum(), (4, 3))
    assert_close_row(row("mul"), got, ref, what="x[mask] ** 2")  # one contribution each: x * 2, exact


def test_autograd_through_gather_index_select_masked_select():
    idx = torch.tensor([[0, 2, 2], [1, 1, 0]])
    sel = torch.tensor([3, 0, 3])
    (got, ref), = _grads(lambda x: (torch.gather(x, 1, idx.to(x.device)) * 3).sum(), (2, 4))
    assert_exact(got, ref, what="gather backward (scatter_add of 3s: exact)")
    (got, ref), = _grads(lambda x: x.index_select(1, sel.to(x.device)).sum(), (2, 4))
    assert_exact(got, ref, what="index_select backward (index_add_ of ones: exact)")
    (got, ref), = _grads(lambda x: torch.masked_select(x, x > 0).sum(), (3, 4))
    assert_exact(got, ref, what="masked_select backward (masked_scatter_)")


def test_embedding_training_matches_cpu():
    """nn.Embedding forward, backward and SGD steps, unchanged code, against torch CPU: padding_idx
    keeps its row, scale_grad_by_freq divides by the counts."""
    for kw in ({}, {"padding_idx": 1}, {"scale_grad_by_freq": True}):
        torch.manual_seed(0)
        cpu = torch.nn.Sequential(torch.nn.Embedding(50, 8, **kw), torch.nn.Flatten(), torch.nn.Linear(8 * 6, 1))
        dev = torch.nn.Sequential(torch.nn.Embedding(50, 8, **kw), torch.nn.Flatten(), torch.nn.Linear(8 * 6, 1))
        dev.load_state_dict(cpu.state_dict())
        dev.to(DEV)
        opt_c = torch.optim.SGD(cpu.parameters(), lr=0.1)
        opt_d = torch.optim.SGD(dev.parameters(), lr=0.1)
        g = torch.Generator().manual_seed(1)
        for step in range(3):
            ids = torch.randint(0, 50, (16, 6), generator=g)
            ids[0, :3] = 1  # repeats, and the padding row when there is one
            y = torch.randn(16, 1, generator=g)
            for model, opt, d in ((cpu, opt_c, "cpu"), (dev, opt_d, DEV)):
                opt.zero_grad()
                loss = torch.nn.functional.mse_loss(model(ids.to(d)), y.to(d))
                loss.backward()
                opt.step()
            if "padding_idx" in kw:
                assert not dev[0].weight.grad[1].cpu().any(), "padding row got a gradient"
        # three steps of products and sums in another order: float32 rounding, not algorithm, apart
        torch.testing.assert_close(dev[0].weight.detach().cpu(), cpu[0].weight.detach(), rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(dev[2].weight.detach().cpu(), cpu[2].weight.detach(), rtol=1e-5, atol=1e-6)


# ---- determinism ----------------------------------------------------------------------------------

def _bits(t):
    return t.cpu().view(torch.int32) if t.dtype == torch.float32 else t.cpu()


def test_accumulation_is_deterministic():
    """10,000 contributions onto 7 destinations (index_put_ accumulate, scatter_add,
    embedding backward): the same bytes every run, and within TOL_ACCUM of the CPU."""
    g = torch.Generator().manual_seed(5)
    i = torch.randint(0, 7, (10000,), generator=g)
    val = torch.randn(10000, generator=g) * 1000
    runs = []
    for _ in range(3):
        a = torch.zeros(7, device=DEV).index_put_((v(i),), v(val), accumulate=True)
        b = torch.zeros(7, device=DEV).scatter_add_(0, v(i), v(val))
        c = torch.ops.aten.embedding_dense_backward(v(val[:, None]), v(i), 7, -1, False)
        runs.append([_bits(a), _bits(b), _bits(c)])
    for r in runs[1:]:
        for x, y in zip(r, runs[0]):
            assert torch.equal(x, y)
    ref = torch.zeros(7).index_put_((i,), val, accumulate=True)
    scale = accum_scale(torch.bincount(i, minlength=7), torch.zeros(7, dtype=torch.float64).index_add_(0, i, val.double().abs()))
    assert_close_row(row("index_put_acc"), runs[0][0].view(torch.float32), ref, scale=scale)
    assert torch.equal(runs[0][0], runs[0][1]), "index_put_ and scatter_add sum in the same order"


def test_duplicate_puts_are_deterministic():
    """Duplicate destinations without accumulate: torch leaves the winner undefined; vkml keeps
    the last in iteration order, every run, and the oracle agrees (check mode)."""
    i = torch.tensor([1, 3, 1, 1, 3, 0])
    val = torch.tensor([10.0, 20.0, 30.0, 40.0, 50.0, 60.0])
    want = torch.tensor([60.0, 40.0, 0.0, 50.0])
    for _ in range(3):
        assert_exact(torch.zeros(4, device=DEV).index_put_((v(i),), v(val)).cpu(), want)
        assert_exact(torch.zeros(4, device=DEV).scatter_(0, v(i), v(val)).cpu(), want)
    with check_mode():
        assert_exact(torch.zeros(4, device=DEV).index_put_((v(i),), v(val)).cpu(), want)


# ---- out-of-range indices: deferred to the next synchronisation, never silent ----------------------

@pytest.mark.skipif(vkml_torch.check_enabled(), reason="check mode raises at the op: the next test")
def test_out_of_range_raises_at_the_next_synchronisation():
    x = v(torch.arange(6.0))
    y = x[v(torch.tensor([1, 9]))]  # recorded; the GPU finds 9 when it runs
    z = y * 2  # anything recorded after it
    with pytest.raises(IndexError, match=r"^index 9 is out of bounds for dimension 0 with size 6$"):
        z.cpu()
    assert_exact(x[v(torch.tensor([5, -6]))].cpu(), torch.tensor([5.0, 0.0]))  # raised once; the device goes on
    y = x[v(torch.tensor([-7]))]
    with pytest.raises(IndexError, match="index -7 is out of bounds"):
        torch.vkml.synchronize()
    y = x[v(torch.tensor([6]))]
    torch.vkml.empty_cache()  # flushes too: the finding is kept for the next synchronisation
    with pytest.raises(IndexError, match="index 6 is out of bounds"):
        y.sum().item()


def test_out_of_range_errors_per_op_match_cpu():
    x = torch.zeros(3, 4)
    bad = torch.tensor([[4]])
    cases = [
        ("x[:, 4]", lambda t, d: t[:, torch.tensor([4], device=d)]),
        ("index_put_", lambda t, d: t.index_put_((torch.tensor([3], device=d),), torch.ones(4, device=d))),
        ("index_put_ accumulate", lambda t, d: t.index_put_((torch.tensor([-4], device=d),), torch.ones(4, device=d),
                                                            accumulate=True)),
        ("gather", lambda t, d: torch.gather(t, 1, bad.to(d))),
        ("scatter_", lambda t, d: t.scatter_(1, bad.to(d), 1.0)),
        ("scatter_add_", lambda t, d: t.scatter_add_(1, bad.to(d), torch.ones(1, 1, device=d))),
        ("index_select dim 0", lambda t, d: t.index_select(0, torch.tensor([3], device=d))),
        ("index_select dim 1", lambda t, d: t.index_select(1, torch.tensor([4], device=d))),
        ("index_add_ dim 0", lambda t, d: t.index_add_(0, torch.tensor([3], device=d), torch.ones(1, 4, device=d))),
        ("embedding", lambda t, d: torch.nn.functional.embedding(torch.tensor([3], device=d), t)),
    ]
    for name, f in cases:
        with pytest.raises(Exception) as cpu_err:
            f(x.clone(), "cpu")
        with pytest.raises(Exception) as dev_err:
            r = f(v(x), DEV)
            r.cpu()
        assert type(dev_err.value) is type(cpu_err.value), f"{name}: {dev_err.value!r} vs {cpu_err.value!r}"
        assert str(dev_err.value).splitlines()[0] == str(cpu_err.value).splitlines()[0], name


def test_out_of_range_under_check_mode_raises_at_the_op():
    with check_mode():
        with pytest.raises(IndexError, match="index 9 is out of bounds"):
            v(torch.arange(3.0))[v(torch.tensor([9]))]


def test_out_of_range_touches_nothing_else():
    """The kernel skips a bad index: no write lands outside self (here: the neighbour view)."""
    base = v(torch.zeros(2, 4))
    row0, row1 = base[0], base[1]
    with pytest.raises(IndexError):  # at the op under check mode, else at the synchronisation
        row0.index_put_((v(torch.tensor([1, 7])),), v(torch.tensor([5.0, 6.0])))
        torch.vkml.synchronize()
    assert_exact(row1.cpu(), torch.zeros(4))


def test_embedding_backward_skips_out_of_range_like_cpu():
    g = torch.ones(3, 2)
    ix = torch.tensor([7, 1, -2])
    ref = torch.ops.aten.embedding_dense_backward(g, ix, 5, -1, False)
    assert_exact(torch.ops.aten.embedding_dense_backward(v(g), v(ix), 5, -1, False).cpu(), ref)


# ---- what is not there says so --------------------------------------------------------------------

def test_scatter_reduce_variants_raise_naming_the_op():
    x, i, s = v(torch.zeros(3)), v(torch.tensor([0, 1])), v(torch.ones(2))
    with pytest.raises(NotImplementedError, match="scatter.reduce"):
        x.scatter_(0, i, s, reduce="add")
    with pytest.raises(NotImplementedError, match="scatter.value_reduce"):
        x.scatter_(0, i, 2.0, reduce="multiply")
    with pytest.raises(NotImplementedError, match="scatter_reduce.two"):
        x.scatter_reduce(0, i, s, reduce="amax")


# ---- launches past 65,535 workgroups --------------------------------------------------------------

@pytest.mark.parametrize("what", ["gather", "accumulate"])
def test_more_than_65535_workgroups(what):
    """2^23 + 999 elements walked (gather) or destinations (accumulate: its per-destination
    passes): over 65,535 groups of 128 in one grid dimension, which grid2 spreads over two."""
    n = (1 << 23) + 999
    g = torch.Generator().manual_seed(2)
    if what == "gather":
        src = torch.randn(5000, generator=g)
        i = torch.randint(-5000, 5000, (n,), generator=g)
        assert_exact(v(src)[v(i)].cpu(), src[i])
    else:
        i = torch.randint(0, n, (3000,), generator=g)
        i[:1000] = n - 1  # the last destination, in the last workgroup, many times
        got = torch.zeros(n, device=DEV).scatter_add_(0, v(i), torch.ones(3000, device=DEV)).cpu()
        assert_exact(got, torch.zeros(n).scatter_add_(0, i, torch.ones(3000)))  # counts: exact


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.bool])
def test_index_fill_and_index_copy(dtype):
    """index_fill(_) with a scalar and index_copy(_) run through torch._decomp's decompositions
    (vkml_torch/_decomp.py; torch 2.15 routes `x[i] = scalar` through index_fill_): the CPU's
    values on contiguous and transposed tensors, along each dim, and its IndexError out of range."""
    x = (torch.arange(12) % 5).reshape(3, 4).to(dtype)
    i = torch.tensor([2, 0])
    for base in (x, x.t().contiguous().t()):
        for dim in (0, 1):
            v = True if dtype == torch.bool else 3
            assert_exact(base.to(DEV).index_fill(dim, i.to(DEV), v), base.index_fill(dim, i, v))
            got = base.to(DEV)
            got.index_fill_(dim, i.to(DEV), v)
            assert_exact(got, base.clone().index_fill_(dim, i, v))
            src = torch.ones(2, 4).to(dtype) if dim == 0 else torch.ones(3, 2).to(dtype)
            assert_exact(base.to(DEV).index_copy(dim, i.to(DEV), src.to(DEV)), base.index_copy(dim, i, src))
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        x.to(DEV).index_fill_(0, torch.tensor([5]).to(DEV), 1).cpu()
