"""Sizes the generated cases do not reach, each found missing by a surviving mutant
(scripts/mutate.py; docs/testing.md lists them): GEMM outputs over several 32x32 tiles and every
register position of a tile, NLL batches over one workgroup and strided weights, reductions and
softmax over more than 65,535 rows (a 2-D grid)."""
import pytest
import torch

from helpers import DEV, assert_close_row, assert_exact, check_mode, row
from op_cases_nn import _gemm_scale, _nll_scale, _softmax_scale, _sum_scale


def both(fn):
    """fn() on vkml lazily and in check mode, results on the CPU."""
    lazy = fn()
    with check_mode():
        checked = fn()
    return [lazy, checked]


@pytest.mark.parametrize("m,k,n", [(70, 37, 45), (33, 5, 65)])
def test_gemm_several_tiles(m, k, n):
    """Mutant gemm:123 (only the first of each invocation's 4 columns accumulated) survived outputs
    at most 5 wide."""
    g = torch.Generator().manual_seed(m)
    a, b = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
    c = torch.randn(2, m, k, generator=g)
    sc, kk = _gemm_scale(a, b)
    for got in both(lambda: (a.to(DEV) @ b.to(DEV)).cpu()):
        assert_close_row(row("mm"), got, a @ b, sc, kk)
    sc, kk = _gemm_scale(c, b)
    for got in both(lambda: torch.bmm(c.to(DEV), b.expand(2, k, n).to(DEV)).cpu()):
        assert_close_row(row("bmm"), got, torch.bmm(c, b.expand(2, k, n)), sc, kk)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_batch_over_a_workgroup_and_strided_weight(reduction):
    """Mutants nll:57 (the mean/sum loop stepping 129) and nll:63 (the weight stride divided)
    survived batches of at most 200 and contiguous weights."""
    g = torch.Generator().manual_seed(3)
    x = torch.log_softmax(torch.randn(300, 5, generator=g), 1)
    t = torch.randint(0, 5, (300,), generator=g)
    w = torch.rand(10, generator=g) + 0.5
    red = {"none": 0, "mean": 1, "sum": 2}[reduction]
    op = torch.ops.aten.nll_loss_forward.default  # F.nll_loss would make the weight contiguous
    ref = op(x, t, w[::2], red, -100)[0]
    sc, n = _nll_scale([x, t, w[::2], red, -100])[0]
    for got in both(lambda: op(x.to(DEV), t.to(DEV), w.to(DEV)[::2], red, -100)[0].cpu()):
        assert_close_row(row("nll_loss"), got, ref, sc, n)


def test_reductions_over_more_than_65535_rows():
    """Mutant reduce:75 (the grid's group count x / y instead of x * y) survived: no test had more
    outputs than one grid dimension holds."""
    x = torch.randn(70000, 3, generator=torch.Generator().manual_seed(5))
    sc, n = _sum_scale(x, [1], False, False)
    for got in both(lambda: x.to(DEV).sum(1).cpu()):
        assert_close_row(row("sum"), got, x.sum(1), sc, n)
    for got in both(lambda: x.to(DEV).amax(1).cpu()):
        assert_exact(got, x.amax(1))
    for got in both(lambda: x.to(DEV).argmax(1).cpu()):
        assert_exact(got, x.argmax(1))


def test_softmax_over_more_than_65535_rows():
    """Mutant softmax:21 (a group past the last row not returning) survived: no test had more rows
    than one grid dimension holds, where the grid rounds up."""
    x = torch.randn(70001, 2, generator=torch.Generator().manual_seed(6))
    sc, n = _softmax_scale(x, 1)
    for got in both(lambda: torch.log_softmax(x.to(DEV), 1).cpu()):
        assert_close_row(row("log_softmax"), got, torch.log_softmax(x.double(), 1).float(), sc, n)
