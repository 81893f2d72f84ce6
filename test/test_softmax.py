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
