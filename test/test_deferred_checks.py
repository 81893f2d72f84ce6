"""Checks that need device data raise at the next synchronisation, as CUDA's device-side asserts
do, and never give a silently wrong value (issue 7, finding 5): an out-of-range class target of
nll_loss / cross_entropy raises torch's IndexError "Target 5 is out of bounds." when a value is
next observed (.item(), .cpu(), printing, torch.vkml.synchronize()). Before, the bad sample was
dropped from the mean and its gradient was 0."""
import pytest
import torch
import torch.nn.functional as F

from helpers import DEV, check_mode


def _x(n=2, c=3):
    return torch.randn(n, c, generator=torch.Generator().manual_seed(0))


def _cpu_error(f):
    with pytest.raises(IndexError) as e:
        f("cpu")
    return str(e.value)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("target", [[1, 5], [-3, 1], [0, 3]], ids=["5", "-3", "C"])
def test_out_of_range_target_raises_torchs_index_error(reduction, target):
    def f(dev):
        return F.cross_entropy(_x().to(dev), torch.tensor(target).to(dev), reduction=reduction).cpu()
    msg = _cpu_error(f)
    assert msg == f"Target {[t for t in target if t < 0 or t >= 3][0]} is out of bounds."
    with pytest.raises(IndexError, match=f"^{msg}$"):
        f(DEV)
    # raised once: the device carries on, and the next loss is right
    good = torch.tensor([1, 2])
    got = F.cross_entropy(_x().to(DEV), good.to(DEV), reduction=reduction).cpu()
    assert torch.allclose(got, F.cross_entropy(_x(), good, reduction=reduction), rtol=1e-5, atol=1e-6)


# Under check mode (VKML_CHECK=1) each node runs as it is recorded, so the error comes from the
# op itself; otherwise from the synchronisation. Both are inside each `raises` block below.

def test_raised_at_synchronize_and_item():
    with pytest.raises(IndexError, match=r"^Target 7 is out of bounds\.$"):  # the first bad sample, as the CPU
        F.nll_loss(_x().to(DEV), torch.tensor([7, 9]).to(DEV), reduction="none")  # recorded, not run
        torch.vkml.synchronize()
    with pytest.raises(IndexError, match=r"^Target 5 is out of bounds\.$"):
        F.cross_entropy(_x().to(DEV), torch.tensor([1, 5]).to(DEV)).item()


def test_first_failure_in_order_is_reported():
    """Two bad losses in one batch: the first recorded is reported; within it the first sample."""
    x = _x(4).to(DEV)
    with pytest.raises(IndexError, match=r"^Target 8 is out of bounds\.$"):
        a = F.cross_entropy(x, torch.tensor([0, 1, 8, 6]).to(DEV))
        b = F.cross_entropy(x, torch.tensor([4, 0, 0, 0]).to(DEV))
        (a + b).item()
    torch.vkml.synchronize()  # nothing left over


def test_backward_of_a_bad_loss_raises():
    xv = _x().to(DEV).requires_grad_()
    with pytest.raises(IndexError, match=r"^Target 4 is out of bounds\.$"):
        loss = F.cross_entropy(xv, torch.tensor([1, 4]).to(DEV))
        loss.backward()
        xv.grad.cpu()


def test_nll_backward_alone_checks():
    x = _x()
    with pytest.raises(IndexError, match=r"^Target 3 is out of bounds\.$"):
        gi = torch.ops.aten.nll_loss_backward(torch.tensor(1.0).to(DEV), x.to(DEV), torch.tensor([2, 3]).to(DEV),
                                              None, 1, -100, torch.tensor(2.0).to(DEV))
        gi.cpu()


@pytest.mark.parametrize("kw", [{}, {"ignore_index": 7}, {"weight": torch.tensor([1.0, 2.0, 0.5])}],
                         ids=["default", "ignore 7", "weight"])
def test_ignored_and_valid_targets_do_not_raise(kw):
    t = torch.tensor([1, -100, 2, 7] if "ignore_index" in kw else [1, -100, 2, 0])
    if "ignore_index" in kw:
        t[1] = 0
    x = _x(4)
    kw_dev = {k: (v.to(DEV) if torch.is_tensor(v) else v) for k, v in kw.items()}
    got = F.cross_entropy(x.to(DEV), t.to(DEV), **kw_dev).cpu()
    assert torch.allclose(got, F.cross_entropy(x, t, **kw), rtol=1e-5)


def test_unbatched_input():
    with pytest.raises(IndexError, match=r"^Target 3 is out of bounds\.$"):
        F.cross_entropy(torch.randn(3).to(DEV), torch.tensor(3).to(DEV)).item()


def test_check_mode_raises_at_once():
    """Check mode runs each node as it is recorded: the error comes from the op itself."""
    with pytest.raises(IndexError, match=r"^Target 5 is out of bounds\.$"):
        with check_mode():
            F.cross_entropy(_x().to(DEV), torch.tensor([1, 5]).to(DEV))
    torch.vkml.synchronize()
