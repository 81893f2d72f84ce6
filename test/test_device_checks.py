"""Operands on another device get torch's same-device error, in every op; a 0-dim CPU tensor is
still accepted where torch accepts one; device indices that do not exist raise (issue 7, findings
1 and 6). Before, a CPU tensor's pointer reached the shaders as a device address: garbage, then a
segfault.

torch's rule, which vkml follows: ops that native_functions.yaml does not mark `device_check:
NoCheck` get the check of torch's generated wrappers ("... but got mat2 is on cpu, different from
other tensors on vkml:0 (when checking argument in method aten::mm)"); the others (TensorIterator
ops) check in the kernel and allow 0-dim CPU tensors ("... but found at least two devices, vkml:0
and cpu!").
"""
import re

import pytest
import torch
import torch.nn.functional as F

from generators import GENERATORS
from helpers import DEV, assert_exact, dtype_of, resolve, rows
from op_cases import In, is_inplace, out_names

SAME_DEVICE = r"^Expected all tensors to be on the same device, but "
# torch's own check in the index meta (index.Tensor), which runs before TensorIterator's
INDEX_DEVICE = r"^indices should be either on cpu or on the same device as the indexed tensor"


def _plain(a):
    """A tensor argument (not a list of index tensors, not a CPU 0-dim one by design)."""
    return isinstance(a, In) and not a.keep_cpu and torch.is_tensor(a.cpu())


def _cases(r):
    dt = "float32" if "float32" in r["dtypes"] else r["dtypes"][0]
    out = []
    for ov in r["overloads"]:
        rng = torch.Generator().manual_seed(2)
        cases = GENERATORS[r["aten"]](r, ov, dtype_of(dt), rng, False)
        big = [c for c in cases if any(_plain(a) and a.cpu().dim() > 0 and a.cpu().numel() > 1 for a in c.args)]
        if big:
            out.append((ov, big[0]))
    return out


def _row_ids():
    return [(r["name"], ov, c) for r in rows() if r["overloads"] for ov, c in _cases(r)]


@pytest.mark.parametrize("name,overload,case", _row_ids(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_row_rejects_a_cpu_operand(name, overload, case):
    """Table-driven: each tensor argument (and out= tensor) of each row overload, in turn on the
    CPU while the others are on vkml, raises torch's same-device error before anything runs."""
    op = resolve(overload)
    tensor_args = [i for i, a in enumerate(case.args) if _plain(a) and a.cpu().dim() > 0]
    outs = list(case.outs)
    assert tensor_args or outs
    for which in [("arg", i) for i in tensor_args] + [("out", k) for k in outs]:
        args = []
        for i, a in enumerate(case.args):
            if isinstance(a, In):
                args.append(a.make("cpu" if which == ("arg", i) else DEV)[0])
            else:
                args.append(a)
        kw = dict(case.kwargs)
        for k, d in case.outs.items():
            kw[k] = torch.empty(1, dtype=d, device="cpu" if which == ("out", k) else DEV)
        on_dev = [a for a in args if torch.is_tensor(a) and a.device.type != "cpu"]
        on_dev += [t for t in kw.values() if torch.is_tensor(t) and t.device.type != "cpu"]
        if not on_dev or (is_inplace(overload) and which == ("arg", 0)):
            continue  # nothing on vkml, or a CPU self: torch dispatches to the CPU kernel
        with pytest.raises(RuntimeError, match=SAME_DEVICE + "|" + INDEX_DEVICE):
            op(*args, **kw)
            torch.vkml.synchronize()
    torch.vkml.synchronize()


def _v(*shape):
    return torch.ones(*shape, device=DEV)


def _c(*shape):
    return torch.ones(*shape)


# The ops of the issue and composites (ops made of rows): one CPU operand each.
MIXED = {
    "mm": lambda: torch.ones(2, 3, device=DEV) @ torch.ones(3, 2),
    "mm cpu self": lambda: torch.mm(_c(64, 64), _v(64, 64)),
    "addmm bias": lambda: torch.addmm(_c(2, 2), _v(2, 3), _v(3, 2)),
    "addmm mat2": lambda: torch.addmm(_v(2, 2), _v(2, 3), _c(3, 2)),
    "addmm 0-dim cpu bias": lambda: torch.addmm(torch.tensor(1.0), _v(2, 3), _v(3, 2)),  # CUDA rejects it too
    "bmm": lambda: torch.bmm(_v(2, 2, 3), _c(2, 3, 2)),
    "mv": lambda: torch.mv(_v(2, 3), _c(3)),
    "dot": lambda: torch.dot(_v(3), _c(3)),
    "linear": lambda: F.linear(_v(4, 3), _c(2, 3)),
    "linear bias": lambda: F.linear(_v(4, 3), _v(2, 3), _c(2)),
    "matmul": lambda: torch.matmul(_c(5, 3), _v(3)),
    "matmul batched": lambda: torch.matmul(_v(2, 4, 3), _c(3, 2)),
    "nll_loss cpu target": lambda: F.nll_loss(_v(3, 4), torch.tensor([0, 1, 2])),
    "nll_loss cpu weight": lambda: F.nll_loss(_v(3, 4), torch.tensor([0, 1, 2], device=DEV), weight=_c(4)),
    "cross_entropy cpu target": lambda: F.cross_entropy(_v(3, 4), torch.tensor([0, 1, 2])),
    "_softmax_backward_data": lambda: torch.ops.aten._softmax_backward_data(_v(2, 3), _c(2, 3), 1, torch.float32),
    "_log_softmax_backward_data": lambda: torch.ops.aten._log_softmax_backward_data(_c(2, 3), _v(2, 3), 1, torch.float32),
    "threshold_backward 0-dim cpu": lambda: torch.ops.aten.threshold_backward(_v(3), torch.tensor(1.0), 0.0),
    "sum out=": lambda: torch.sum(torch.tensor(3.0), 0, out=torch.empty((), device=DEV)),
    "cat": lambda: torch.cat([_v(2), _c(2)]),
    "cat out=": lambda: torch.cat([_v(2), _v(2)], out=torch.empty(4)),
    "masked_select cpu mask": lambda: torch.masked_select(_v(3), torch.ones(3, dtype=torch.bool)),
    "where cpu condition": lambda: torch.where(torch.ones(3, dtype=torch.bool), _v(3), _v(3)),
    "where cpu other": lambda: torch.where(_v(3) > 0, _v(3), _c(3)),
    "add": lambda: _v(3) + _c(3),
    "lerp": lambda: torch.lerp(_v(3), _c(3), 0.5),
    "addcmul": lambda: torch.addcmul(_v(3), _c(3), _v(3)),
    "addcdiv": lambda: torch.addcdiv(_v(3), _v(3), _c(3)),
    "mse_loss": lambda: F.mse_loss(_v(3), _c(3)),
    "mse_loss_backward": lambda: torch.ops.aten.mse_loss_backward(_v(()), _v(3), _c(3), 1),
    "maximum": lambda: torch.maximum(_v(3), _c(3)),
    "clamp_min tensor": lambda: torch.clamp_min(_v(3), _c(3)),
    "max.dim out=": lambda: torch.max(_v(2, 3), 1, out=(torch.empty(2), torch.empty(2, dtype=torch.long))),
    "set_ cpu storage": lambda: _v(3).set_(_c(3).untyped_storage()),
}


@pytest.mark.parametrize("name", list(MIXED))
def test_mixed_devices_raise(name):
    with pytest.raises(RuntimeError, match=SAME_DEVICE + "|^Attempted to set the storage of a tensor on device"):
        MIXED[name]()
        torch.vkml.synchronize()
    assert_exact((_v(2) + 1).cpu(), torch.full((2,), 2.0))  # the device still works


def test_wrapper_message_is_torchs():
    """Checked ops: the wording of torch's c10::impl::common_device_check_failure, argument named."""
    with pytest.raises(RuntimeError) as e:
        torch.ones(2, 3, device=DEV) @ torch.ones(3, 2)
    assert str(e.value).splitlines()[0] == (
        "Expected all tensors to be on the same device, but got mat2 is on cpu, different from other "
        "tensors on vkml:0 (when checking argument in method aten::mm)")
    with pytest.raises(RuntimeError, match=re.escape("but got target is on cpu")):
        F.nll_loss(_v(3, 4), torch.tensor([0, 1, 2]))


def test_issue_reproducer_no_crash():
    """The issue's reproducer: 200 CPU @ vkml products used to segfault at the next synchronisation."""
    a = torch.ones(64, 64, device=DEV)
    with pytest.raises(RuntimeError, match=SAME_DEVICE):
        torch.ones(2, 3, device=DEV) @ torch.ones(3, 2)
    for _ in range(200):
        with pytest.raises(RuntimeError, match=SAME_DEVICE):
            torch.ones(64, 64) @ a
    torch.vkml.synchronize()
    assert_exact((a @ a).cpu(), torch.full((64, 64), 64.0))


# Where torch accepts a 0-dim CPU tensor among vkml ones (TensorIterator ops, fill_, masked_fill,
# where): the same values as on the CPU.
ZERO_DIM = {
    "add": lambda d: torch.arange(4.0, device=d) + torch.tensor(2.5),
    "mul int": lambda d: torch.arange(4, device=d) * torch.tensor(3),
    "rsub (2 - x)": lambda d: 2 - torch.arange(4.0, device=d),
    "0-dim cpu - x": lambda d: torch.tensor(2.0) - torch.arange(4.0, device=d),
    "0-dim cpu / x": lambda d: torch.tensor(1.0) / (torch.arange(4.0, device=d) + 1),
    "0-dim cpu double - half": lambda d: torch.tensor(1.0, dtype=torch.float64) - torch.arange(4.0, device=d).half() / 3,
    "0-dim cpu int - x": lambda d: torch.tensor(7) - torch.arange(4, device=d),
    "0-dim cpu maximum": lambda d: torch.maximum(torch.tensor(1.5), torch.arange(4.0, device=d)),
    "where 0-dim other": lambda d: torch.where(torch.arange(4.0, device=d) > 1, torch.arange(4.0, device=d), torch.tensor(-1.0)),
    "where 0-dim cond": lambda d: torch.where(torch.tensor(True), torch.arange(4.0, device=d), torch.zeros(4, device=d)),
    "masked_fill 0-dim value": lambda d: torch.arange(4.0, device=d).masked_fill(torch.arange(4, device=d) > 1, torch.tensor(9.0)),
    "copy_ from cpu": lambda d: torch.empty(3, device=d).copy_(torch.arange(3.0)),
    "lerp 0-dim end": lambda d: torch.lerp(torch.arange(4.0, device=d), torch.tensor(10.0), 0.25),
    "addcmul 0-dim tensor1": lambda d: torch.addcmul(torch.arange(4.0, device=d), torch.tensor(2.0), torch.arange(4.0, device=d)),
}


@pytest.mark.parametrize("name", list(ZERO_DIM))
def test_zero_dim_cpu_tensor_accepted(name):
    assert_exact(ZERO_DIM[name](DEV).cpu(), ZERO_DIM[name]("cpu"))


def test_lbfgs_strong_wolfe():
    """LBFGS's strong-Wolfe line search computes `float - tensor` (rsub: a CPU scalar first
    operand), which reached an internal assert. It must train as on the CPU."""
    def run(dev):
        p = torch.tensor([-1.5, 2.0], device=dev, requires_grad=True)
        opt = torch.optim.LBFGS([p], line_search_fn="strong_wolfe", max_iter=20)

        def closure():
            opt.zero_grad()
            loss = (1 - p[0]) ** 2 + 100 * (p[1] - p[0] ** 2) ** 2  # Rosenbrock: the search brackets
            loss.backward()
            return loss
        for _ in range(5):
            loss = opt.step(closure)
        return float(loss), p.detach().cpu()
    cpu_loss, cpu_p = run("cpu")
    loss, p = run(DEV)
    # both converge to the minimum at (1, 1); float32 paths differ after a hundred steps
    assert loss < 1e-6 and cpu_loss < 1e-6
    assert torch.allclose(p, cpu_p, atol=1e-3)


INVALID_DEVICE = {
    "ones vkml:1": lambda: torch.ones(3, device="vkml:1"),
    "empty vkml:1": lambda: torch.empty(2, 2, device="vkml:1"),
    "empty_strided vkml:1": lambda: torch.empty_strided((2,), (1,), device="vkml:1"),
    "to vkml:1": lambda: torch.ones(3).to("vkml:1"),
    "vkml:0 + vkml:1": lambda: torch.ones(3, device="vkml:0") + torch.ones(3, device="vkml:1"),
    "vkml:7": lambda: torch.zeros(1, device="vkml:7"),
    "set_device(1)": lambda: torch.vkml.set_device(1),
    "device(1) context": lambda: torch.vkml.device(1).__enter__(),
}


@pytest.mark.parametrize("name", list(INVALID_DEVICE))
def test_invalid_device_ordinal(name):
    """As CUDA's "invalid device ordinal" (RuntimeError), worded as torch_openreg does."""
    assert torch.vkml.device_count() == 1
    with pytest.raises(RuntimeError, match=r"invalid device ordinal.*It must be in \[0, 1\), but got \d"):
        INVALID_DEVICE[name]()
    assert torch.ones(2, device="vkml:0").device == torch.device("vkml", 0)
