"""max.dim / min.dim (values and indices): composed of the amax/amin and argmax/argmin rows, so
the expected values are torch CPU's and both nodes run under check mode too. Exact: a maximum and
its index involve no rounding."""
import pytest
import torch

from helpers import DEV, assert_exact, check_mode

INPUTS = {
    "ties and NaN": torch.tensor([[1.0, 3.0, 3.0, -2.0], [float("nan"), 2.0, -1.0, float("nan")],
                                  [-float("inf"), -float("inf"), 0.0, -0.0]]),
    "transposed": torch.arange(24, dtype=torch.float32).reshape(4, 6).t() % 5,
    "int64 3-D": (torch.arange(60, dtype=torch.int64).reshape(3, 4, 5) * 7919) % 13,
    "float16 stepped": torch.linspace(-3, 3, 40).reshape(5, 8).to(torch.float16)[:, ::3],
}


@pytest.mark.parametrize("name", list(INPUTS))
@pytest.mark.parametrize("fn", ["max", "min"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_values_and_indices_match_cpu(name, fn, keepdim):
    x = INPUTS[name]
    for dim in range(-x.dim(), x.dim()):
        want = getattr(torch, fn)(x, dim, keepdim)
        for checked in (False, True):
            with check_mode() if checked else torch.no_grad():
                got = getattr(torch, fn)(x.to(DEV), dim, keepdim)
                values, indices = got.values.cpu(), got.indices.cpu()
            assert_exact(values, want.values, what=f"{fn}(dim={dim}) values")
            assert_exact(indices, want.indices, what=f"{fn}(dim={dim}) indices")


def test_out_variant_resizes_and_returns_outs():
    x = INPUTS["ties and NaN"]
    v = torch.empty(0, device=DEV)
    i = torch.empty(0, dtype=torch.int64, device=DEV)
    r = torch.max(x.to(DEV), 1, out=(v, i))
    assert r[0] is v and r[1] is i
    want = torch.max(x, 1)
    assert_exact(v.cpu(), want.values)
    assert_exact(i.cpu(), want.indices)


def test_empty_reduced_dim_raises_like_cpu():
    x = torch.ones(0, 3)
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
        torch.max(x, 0)
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
        torch.max(x.to(DEV), 0)
    want = torch.max(x, 1)  # reducing a non-empty dim of an empty tensor is fine
    got = torch.max(x.to(DEV), 1)
    assert got.values.shape == want.values.shape and got.indices.dtype == torch.int64
