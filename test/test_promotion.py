"""Inputs are converted to the common dtype before an elementwise op computes (TensorIterator's
rule), even where the compute type is wider: a 0-dim float32 device tensor next to a float16
tensor is rounded to float16 first. The generated cases rarely see the difference (one rounding
in ~2^10 sums), so mutant elementwise:102 (the rounding of b skipped) survived them."""
import contextlib

import pytest
import torch
import vkml_torch

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
        with check_mode() if checked else contextlib.nullcontext():
            got = torch.add(*(t.to(DEV) for t in args)).cpu()
        assert_exact(got, ref, what=f"check={checked}")


@pytest.mark.parametrize("dt", [torch.float16, torch.bfloat16])
def test_clamp_bound_rounds_to_the_tensor_dtype_before_comparing(dt):
    """torch CPU converts clamp's bound to the tensor's dtype (Scalar.to<Half>) and then compares:
    a min of 1e-8 is +0 in float16, and clamp(-0.0, min=+0) keeps -0.0 (std::max's a < b ? b : a).
    Compared unrounded, -0.0 < 1e-8 takes the bound and stores +0 (the mutation campaign's
    ew_ops:4, the bound of clamp left in float32 for float16 and bfloat16). Bitwise, so the sign
    of zero counts; bfloat16 (whose range holds 1e-8) checks the same path keeps its values."""
    a = torch.tensor([-0.0, 0.0, -1.0, 1e-3, 2.0, -0.0, 3e-8, -5e-9], dtype=dt)
    # 1e-40 as a bfloat16 bound is a float32 subnormal, which a device that flushes them (the
    # H200; docs/architecture.md, "NaN, infinities, signed zero and subnormals") makes 0
    keep_sub = dt == torch.float16 or not vkml_torch.flushes_subnormals(torch.float32)
    for lo in (1e-8, -1e-8, 2.5e-8) + ((1e-40,) if keep_sub else ()):
        for mode in (contextlib.nullcontext, check_mode):
            with mode():
                got = torch.clamp(a.to(DEV), min=lo)
                got2 = a.to(DEV).clamp(min=lo, max=1.0)
                assert_exact(got.cpu(), torch.clamp(a, min=lo), what=f"clamp(min={lo}) {dt}")
                assert_exact(got2.cpu(), a.clamp(min=lo, max=1.0), what=f"clamp(min={lo}, max=1) {dt}")
