"""Inputs are converted to the common dtype before an elementwise op computes (TensorIterator's
rule), even where the compute type is wider: a 0-dim float32 device tensor next to a float16
tensor is rounded to float16 first. The generated cases rarely see the difference (one rounding
in ~2^10 sums), so mutant elementwise:102 (the rounding of b skipped) survived them."""
import pytest
import torch

from helpers import DEV, assert_exact, check_mode

HALF_ULP = 2.0 ** -11  # half the float16 spacing at 1.0


@pytest.mark.parametrize("narrow", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("side", ["b", "a"])
def test_wider_0dim_operand_rounds_to_the_common_dtype_first(narrow, side):
    half = HALF_ULP if narrow == torch.float16 else 2.0 ** -8
    one = torch.ones(4, dtype=narrow)
    # just above half an ulp: as float32 the sum rounds up; rounded to the narrow dtype first it
    # is exactly half an ulp and the tie goes to even (1.0)
    tiny = torch.tensor(half + half * 2 ** -12, dtype=torch.float32)
    args = (one, tiny) if side == "b" else (tiny, one)
    ref = torch.add(*args)
    assert ref.dtype == narrow and bool((ref == 1).all()), "torch's rule is not what this test assumes"
    for checked in (False, True):
        with check_mode() if checked else _nothing():
            got = torch.add(*(t.to(DEV) for t in args)).cpu()
        assert_exact(got, ref, what=f"check={checked}")


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *e):
        return False
