"""Softmax edge cases the generated cases miss (found by scripts/mutate.py's survivors)."""
import pytest
import torch

from helpers import DEV, assert_close_row, check_mode, row
from op_cases_nn import _softmax_scale


@pytest.mark.parametrize("name,fn", [("softmax", torch.softmax), ("log_softmax", torch.log_softmax)])
@pytest.mark.parametrize("at", [5, 127, 128, 700, 999])
def test_row_maximum_anywhere_in_a_long_row(name, fn, at):
    """The maximum subtracted before exp must be the whole row's: with it beyond the first 128
    elements (one workgroup's first pass) and large enough, exp of a partial maximum overflows.
    (Mutant softmax:66, the max loop stepping backwards, survived every other test.)"""
    x = torch.linspace(-3, 3, 2 * 1000, dtype=torch.float32).reshape(2, 1000)
    x[0, at] = 200.0  # exp(200 - 3) overflows float32
    x[1, (at * 7) % 1000] = -150.0
    ref = fn(x.double(), 1).float()
    sc, n = _softmax_scale(x, 1)
    for mode in ("lazy", "check"):
        if mode == "check":
            with check_mode():
                got = fn(x.to(DEV), 1).cpu()
        else:
            got = fn(x.to(DEV), 1).cpu()
        assert got.isfinite().all(), f"{name} {mode}: non-finite result with the maximum at {at}"
        assert_close_row(row(name), got, ref, sc, n, what=mode)


def test_row_maximum_in_chunk_128_of_a_row_over_128_chunks():
    """Rows over 128 chunks of 65536 (8,388,608 elements): pass 2 takes the maximum of the chunk
    maxima 128 at a time, so chunk 128's must be in it; with a partial maximum exp overflows.
    (Mutant softmax:89, that loop stepping 129, survived the other tests.) The suite's check-mode
    pass runs it against the oracle too."""
    n = 129 * 65536 + 10
    x = torch.zeros(1, n)
    x[0, 128 * 65536 + 5] = 100.0  # exp(100 - 0) overflows float32
    ref = torch.softmax(x.double(), 1).float()
    got = torch.softmax(x.to(DEV), 1).cpu()
    sc, k = _softmax_scale(x, 1)
    assert got.isfinite().all(), "non-finite result: the row maximum was not the whole row's"
    assert_close_row(row("softmax"), got, ref, sc, k)


@pytest.mark.parametrize("n", [2 * 65536 + 1, 2 * 65536 + 2])
def test_a_row_just_past_two_chunks_reads_only_its_own_elements(n):
    """Rows of 2 * 65536 + 1 and + 2 elements: three chunks, the last holding one or two. Each
    chunk's bounds must be the row's: with chunks one element longer (mutant softmax:21, kChunk
    65536 -> 65537, which survived) the third starts past the row's end, its length wraps, and it
    reads the next row, whose first elements are 100 here."""
    x = torch.linspace(-2, 2, 2 * n, dtype=torch.float32).reshape(2, n)
    x[1, :8] = 100.0
    x[0, 5] = 3.0
    for name, fn in (("softmax", torch.softmax), ("log_softmax", torch.log_softmax)):
        ref = fn(x.double(), 1).float()
        sc, k = _softmax_scale(x, 1)
        got = fn(x.to(DEV), 1).cpu()
        assert_close_row(row(name), got, ref, sc, k)


@pytest.mark.parametrize("name,fn", [("softmax", torch.softmax), ("log_softmax", torch.log_softmax)])
def test_each_long_row_uses_its_own_chunk_partials(name, fn):
    """Three rows of two chunks (65536 each) and a bit: pass 2 must combine row r's own chunk
    partials (r * parts + p). Row 1's maximum, 100, is in its second chunk; with another row's
    partials its exp overflows. (Mutant softmax:90, `row * parts` -> `row / parts`, survived the
    single-row tests.)"""
    n = 2 * 65536 + 7
    x = torch.linspace(-2, 2, 3 * n, dtype=torch.float32).reshape(3, n)
    x[1, 65536 + 11] = 100.0
    x[2, 3] = -90.0
    ref = fn(x.double(), 1).float()
    sc, k = _softmax_scale(x, 1)
    got = fn(x.to(DEV), 1).cpu()
    assert got.isfinite().all(), f"{name}: non-finite result: a row took another row's chunk partials"
    assert_close_row(row(name), got, ref, sc, k)
