"""Bad input to the reduce, softmax and nll rows (and max.dim/min.dim) raises exactly what torch
CPU raises: the same exception type and the same message, compared against the CPU here, never
hard-coded (the aten side runs torch's own structured metas, csrc/aten/structured.h). And out=
tensors of the wrong shape, or not contiguous, end as torch CPU leaves them: resized (with the
same warning), strides kept, values equal."""
import warnings

import pytest
import torch

from helpers import DEV, assert_close_row, assert_exact, row
from op_cases_nn import _softmax_scale

L, I32, F64 = torch.long, torch.int32, torch.float64


def x(d, *shape, dtype=torch.float32):
    g = torch.Generator().manual_seed(len(shape) * 7 + sum(shape))
    return torch.randn(shape, generator=g).to(dtype).to(d)


def e(d, *shape, dtype=torch.float32):
    return torch.empty(*shape, dtype=dtype, device=d)


def z(d, *shape, dtype=L):
    return torch.zeros(*shape, dtype=dtype, device=d)


AT = torch.ops.aten
NLL, NLL_B = AT.nll_loss_forward, AT.nll_loss_backward

ERRORS = {
    # reduce family
    "sum dim out of range": lambda d: x(d, 3, 4).sum(5),
    "sum dim twice": lambda d: x(d, 3, 4).sum((1, -1)),
    "sum out= dtype differs from dtype=": lambda d: torch.sum(x(d, 3, 4), 0, dtype=F64, out=e(d, 4)),
    "sum of a 0-d tensor over dim 1": lambda d: x(d).sum(1),
    "mean of int64": lambda d: x(d, 3, dtype=L).mean(),
    "mean dtype=int64": lambda d: x(d, 3, 4).mean(0, dtype=L),
    "mean into an int64 out=": lambda d: torch.mean(x(d, 3, 4), 0, out=e(d, 4, dtype=L)),
    "mean of float64 into a bool out=": lambda d: torch.mean(x(d, 3, 4, dtype=F64), 0, out=e(d, 4, dtype=torch.bool)),
    "mean out= dtype differs from dtype=": lambda d: torch.mean(x(d, 3, 4), 0, dtype=F64, out=e(d, 4)),
    "mean dim twice": lambda d: x(d, 3, 4).mean((0, 0)),
    "amax out= of another dtype": lambda d: torch.amax(x(d, 3, 4), 0, out=e(d, 4, dtype=F64)),
    "amax over an empty dim": lambda d: torch.amax(x(d, 0, 3), 0),
    "amax of an empty tensor, all dims": lambda d: torch.amax(x(d, 0)),
    "amin over an empty dim": lambda d: torch.amin(x(d, 2, 0), (0, 1)),
    "amax dim out of range": lambda d: torch.amax(x(d, 3, 4), -3),
    "amin dim twice": lambda d: torch.amin(x(d, 3, 4), (0, -2)),
    "max of an empty tensor": lambda d: torch.max(x(d, 0, 2)),
    "min of an empty tensor": lambda d: torch.min(x(d, 0)),
    "argmax of an empty tensor": lambda d: torch.argmax(x(d, 0)),
    "argmin over an empty dim": lambda d: torch.argmin(x(d, 0, 3), 0),
    "argmax dim out of range": lambda d: torch.argmax(x(d, 3, 4), 2),
    "argmax of bool": lambda d: torch.argmax(x(d, 3) > 0),
    "argmin of an empty bool": lambda d: torch.argmin(x(d, 0) > 0),
    "argmax out= int32": lambda d: torch.argmax(x(d, 3, 4), 0, out=e(d, 4, dtype=I32)),
    "max.dim over an empty dim": lambda d: torch.max(x(d, 0, 3), 0),
    "min.dim dim out of range": lambda d: torch.min(x(d, 3, 4), 2),
    "max.dim values out= of another dtype": lambda d: torch.max(x(d, 3, 4), 0, out=(e(d, 4, dtype=F64), e(d, 4, dtype=L))),
    "min.dim indices out= int32": lambda d: torch.min(x(d, 3, 4), 1, out=(e(d, 3), e(d, 3, dtype=I32))),
    # add/sub alpha (torch's alpha_check)
    "add int64 with a float alpha": lambda d: torch.add(x(d, 3, dtype=L), x(d, 3, dtype=L), alpha=0.5),
    "sub float with a complex alpha": lambda d: torch.sub(x(d, 3), x(d, 3), alpha=1j),
    "add bool with a bool alpha into int": lambda d: torch.add(x(d, 3, dtype=L), x(d, 3) > 0, alpha=True),
    # softmax family
    "softmax dim out of range": lambda d: torch._softmax(x(d, 3, 4), 2, False),
    "log_softmax dim out of range": lambda d: torch.log_softmax(x(d, 3, 4), -3),
    "softmax of a 0-d tensor over dim 1": lambda d: torch._softmax(x(d), 1, False),
    "softmax out= of another dtype": lambda d: torch._softmax(x(d, 3, 4), 1, False, out=e(d, 3, 4, dtype=F64)),
    "log_softmax out= of another dtype": lambda d: AT._log_softmax.out(x(d, 3, 4), 1, False, out=e(d, 0, dtype=F64)),
    "softmax backward shapes differ": lambda d: torch._softmax_backward_data(x(d, 2, 3), x(d, 2, 4), 1, torch.float32),
    "softmax backward dim out of range": lambda d: torch._softmax_backward_data(x(d, 2, 3), x(d, 2, 3), 2, torch.float32),
    "softmax backward output float64": lambda d: torch._softmax_backward_data(x(d, 2, 3), x(d, 2, 3, dtype=F64), 1, torch.float32),
    "log_softmax backward grad float64": lambda d: torch._log_softmax_backward_data(x(d, 2, 3, dtype=F64), x(d, 2, 3), 1, F64),
    "softmax backward out= of another dtype": lambda d: AT._softmax_backward_data.out(x(d, 2, 3), x(d, 2, 3), 1, torch.float32, out=e(d, 2, 3, dtype=F64)),
    # nll family
    "nll input 3-D": lambda d: NLL(x(d, 2, 3, 4), z(d, 2), None, 1, -100),
    "nll target 2-D": lambda d: NLL(x(d, 4, 3), z(d, 4, 1), None, 1, -100),
    "nll batch sizes differ": lambda d: torch.nn.functional.nll_loss(x(d, 4, 3), z(d, 5)),
    "nll 1-D input, 1-D target": lambda d: NLL(x(d, 3), z(d, 2), None, 1, -100),
    "nll weight of the wrong size": lambda d: NLL(x(d, 4, 3), z(d, 4), x(d, 2), 1, -100),
    "nll weight 2-D": lambda d: NLL(x(d, 4, 3), z(d, 4), x(d, 1, 3), 1, -100),
    "nll int32 target": lambda d: torch.nn.functional.nll_loss(x(d, 4, 3), z(d, 4, dtype=I32)),
    "nll float target": lambda d: torch.nn.functional.nll_loss(x(d, 4, 3), z(d, 4, dtype=torch.float32)),
    "nll int32 target, batch sizes differ": lambda d: NLL(x(d, 4, 3), z(d, 5, dtype=I32), None, 1, -100),
    "nll float64 weight": lambda d: NLL(x(d, 4, 3), z(d, 4), x(d, 3, dtype=F64), 1, -100),
    "nll output out= of another dtype": lambda d: NLL.output(x(d, 4, 3), z(d, 4), None, 1, -100, output=e(d, 0, dtype=F64), total_weight=e(d, 0)),
    "nll total_weight out= of another dtype": lambda d: NLL.output(x(d, 4, 3), z(d, 4), None, 0, -100, output=e(d, 4), total_weight=e(d, dtype=F64)),
    "nll backward grad_output not one element": lambda d: NLL_B(x(d, 3), x(d, 4, 3), z(d, 4), None, 1, -100, x(d)),
    "nll backward grad_output of the wrong length": lambda d: NLL_B(x(d, 3), x(d, 4, 3), z(d, 4), None, 0, -100, x(d)),
    "nll backward grad_output 2-D": lambda d: NLL_B(x(d, 4, 1), x(d, 4, 3), z(d, 4), None, 0, -100, x(d)),
    "nll backward total_weight not one element": lambda d: NLL_B(x(d), x(d, 4, 3), z(d, 4), None, 1, -100, x(d, 2)),
    "nll backward batch sizes differ": lambda d: NLL_B(x(d), x(d, 4, 3), z(d, 3), None, 1, -100, x(d)),
    "nll backward weight of the wrong size": lambda d: NLL_B(x(d), x(d, 4, 3), z(d, 4), x(d, 4), 1, -100, x(d)),
    "nll backward float64 grad_output": lambda d: NLL_B(x(d, dtype=F64), x(d, 4, 3), z(d, 4), None, 1, -100, x(d)),
    "nll backward float64 total_weight": lambda d: NLL_B(x(d), x(d, 4, 3), z(d, 4), None, 1, -100, x(d, dtype=F64)),
    "nll backward int32 target": lambda d: NLL_B(x(d), x(d, 4, 3), z(d, 4, dtype=I32), None, 1, -100, x(d)),
    "nll backward float64 weight": lambda d: NLL_B(x(d), x(d, 4, 3), z(d, 4), x(d, 3, dtype=F64), 1, -100, x(d)),
    "nll backward out= of another dtype": lambda d: NLL_B.grad_input(x(d), x(d, 4, 3), z(d, 4, dtype=I32), None, 1, -100, x(d), grad_input=e(d, 0, dtype=F64)),
}


def raised(f, d):
    try:
        r = f(d)
        if d != "cpu":
            torch.vkml.synchronize()
    except Exception as err:  # noqa: BLE001 -- the point is to compare whatever was raised
        return err
    pytest.fail(f"{d} raised nothing; returned {r!r:.200}")


@pytest.mark.parametrize("name", list(ERRORS))
def test_error_matches_cpu(name):
    cpu, got = raised(ERRORS[name], "cpu"), raised(ERRORS[name], DEV)
    assert (type(got), str(got)) == (type(cpu), str(cpu)), (
        f"\nCPU  raised {type(cpu).__name__}: {cpu}\nvkml raised {type(got).__name__}: {got}")


# out= tensors that torch resizes (with its warning when they held elements), or writes through
# their own strides: (function of the device and the out tensors, the out tensors' factory).
def _t(d):  # a [4, 3] out= tensor that is a transposed view (not contiguous)
    return e(d, 3, 4).t()


OUTS = {
    "sum into a wrong-shaped out=": (lambda d, o: torch.sum(x(d, 3, 4), 1, out=o), lambda d: e(d, 7)),
    "sum into an empty out=": (lambda d, o: torch.sum(x(d, 3, 4), 0, keepdim=True, out=o), lambda d: e(d, 0)),
    "sum into a transposed out=": (lambda d, o: torch.sum(x(d, 4, 5, 3), 1, out=o), _t),
    "mean into a wrong-shaped out=": (lambda d, o: torch.mean(x(d, 3, 4), (0, 1), out=o), lambda d: e(d, 2, 2)),
    "amax into a transposed out=": (lambda d, o: torch.amax(x(d, 4, 5, 3), 1, out=o), _t),
    "argmin into a wrong-shaped out=": (lambda d, o: torch.argmin(x(d, 3, 4), 1, out=o), lambda d: e(d, 1, dtype=L)),
    "max.dim into wrong-shaped outs=": (lambda d, o: torch.max(x(d, 3, 4), 1, keepdim=True, out=o),
                                        lambda d: (e(d, 5), e(d, 0, dtype=L))),
    "min.dim into transposed outs=": (lambda d, o: torch.min(x(d, 4, 5, 3), 1, out=o),
                                      lambda d: (_t(d), e(d, 3, 4, dtype=L).t())),
    "softmax into a wrong-shaped out=": (lambda d, o: AT._softmax.out(x(d, 3, 4), 1, False, out=o), lambda d: e(d, 12)),
    "log_softmax backward into a wrong-shaped out=": (
        lambda d, o: AT._log_softmax_backward_data.out(x(d, 4, 3), torch.log_softmax(x(d, 4, 3), 1), 1, torch.float32, out=o),
        lambda d: e(d, 3)),
    "nll into wrong-shaped outs=": (lambda d, o: NLL.output(x(d, 4, 3), z(d, 4), None, 0, -100, output=o[0], total_weight=o[1]),
                                    lambda d: (e(d, 2), e(d, 3))),
    "nll backward into a transposed out=": (
        lambda d, o: NLL_B.grad_input(x(d), x(d, 4, 3), torch.tensor([0, 2, 1, 2], device=d), None, 2, -100, x(d),
                                      grad_input=o), _t),
}


def _run_out(name, d):
    f, make = OUTS[name]
    outs = make(d)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        f(d, outs)
    outs = outs if isinstance(outs, tuple) else (outs,)
    return [o.cpu() for o in outs], [(o.shape, o.stride()) for o in outs], sorted(str(m.message) for m in w)


@pytest.mark.parametrize("name", list(OUTS))
def test_out_tensor_ends_as_on_cpu(name):
    cpu, cpu_layout, cpu_warn = _run_out(name, "cpu")
    got, layout, warn = _run_out(name, DEV)
    assert layout == cpu_layout, f"out= shapes/strides {layout}, CPU {cpu_layout}"
    assert warn == cpu_warn, f"warnings {warn}, CPU {cpu_warn}"
    for g, c in zip(got, cpu):
        if c.is_floating_point() and not name.startswith(("amax", "max", "min")):
            # sums, means, softmax, losses: the CPU's float32 results within the row's float32
            # rounding (relative 1e-5 of values of order 1, sums over at most 12 terms here)
            torch.testing.assert_close(g, c, rtol=1e-5, atol=1e-6)
        else:
            assert_exact(g, c)  # maxima, minima, indices: exact


@pytest.mark.parametrize("case", ["forward", "backward"])
def test_half_to_float_is_refused_as_on_cpu(case):
    """half_to_float (float16 in, float32 out) and its backward (float32 grad, float16
    input_dtype): torch's meta admits them, torch's CPU kernel refuses them, and so does vkml
    (RuntimeError, naming vkml where the CPU names itself)."""
    def f(d):
        if case == "forward":
            return torch._softmax(x(d, 3, 4, dtype=torch.float16), 1, True)
        return torch._softmax_backward_data(x(d, 3, 4), x(d, 3, 4), 1, torch.float16)
    cpu, got = raised(f, "cpu"), raised(f, DEV)
    assert type(got) is type(cpu) is RuntimeError, (cpu, got)
    if case == "forward":
        assert str(got) == str(cpu).replace("on CPU", "on vkml")
def test_softmax_into_a_transposed_out():
    """_softmax.out into a transposed out= tensor: the values of the functional op, written
    through out's strides. (torch 2.13's CPU kernel writes such an out as if it were contiguous,
    so the CPU's out= result is no reference here; its functional result is.)"""
    o = e(DEV, 3, 4).t()
    AT._softmax.out(x(DEV, 4, 3), 0, False, out=o)
    assert o.stride() == (1, 4)
    sc, n = _softmax_scale(x("cpu", 4, 3), 0)
    assert_close_row(row("softmax"), o.cpu(), torch._softmax(x("cpu", 4, 3).double(), 0, False).float(), sc, n)


@pytest.mark.parametrize("other", [(3, 2), (2, 2)])
def test_log_softmax_backward_shapes_differ(other):
    """torch's _log_softmax_backward_data checks no shapes (torch 2.13's CPU kernel then reads
    output flat, out of bounds for a smaller one): vkml raises _softmax_backward_data's error,
    the message torch's checkSameSize writes."""
    with pytest.raises(RuntimeError) as cpu:
        torch._softmax_backward_data(x("cpu", 2, 3), x("cpu", *other), 0, torch.float32)
    with pytest.raises(RuntimeError) as got:
        torch._log_softmax_backward_data(x(DEV, 2, 3), x(DEV, *other), 0, torch.float32)
    assert str(got.value) == str(cpu.value).replace("softmax_backward", "log_softmax_backward")


CATS = {
    "cat of no tensors": lambda d: torch.cat([]) if d == "cpu" else torch.cat([], out=e(d, 0)),
    "cat of a 0-d tensor": lambda d: torch.cat([x(d, 2), x(d)]),
    "cat dim out of range": lambda d: torch.cat([x(d, 2, 3), x(d, 2, 3)], 2),
    "cat of different ranks": lambda d: torch.cat([x(d, 2, 3), x(d, 2, 3, 1)]),
    "cat sizes differ outside dim": lambda d: torch.cat([x(d, 2, 3), x(d, 2, 4)], 0),
    "cat into an out= it cannot cast to": lambda d: torch.cat([x(d, 2), x(d, 2)], out=e(d, 4, dtype=L)),
    "cat into an out= that overlaps an input": lambda d: (lambda a: torch.cat([a[:2], a[2:4]], out=a[1:5]))(x(d, 6)),
}


@pytest.mark.parametrize("name", list(CATS))
def test_cat_error_matches_cpu(name):
    """cat's checks are torch's structured meta's (basic.cpp)."""
    if name == "cat of no tensors":  # nothing to dispatch on for vkml but an out= tensor
        cpu = raised(CATS[name], "cpu")
        got = raised(lambda d: torch.cat([], out=e(d, 0)), DEV)
        assert (type(got), str(got)) == (type(cpu), str(cpu))
        return
    cpu, got = raised(CATS[name], "cpu"), raised(CATS[name], DEV)
    assert (type(got), str(got)) == (type(cpu), str(cpu)), (
        f"\nCPU  raised {type(cpu).__name__}: {cpu}\nvkml raised {type(got).__name__}: {got}")


@pytest.mark.parametrize("case", ["promote", "skip empty 1-D", "channels_last", "resize out", "all skipped"])
def test_cat_as_cpu(case):
    """cat's result dtype (promotion), shape, memory format and out= resizing as torch CPU's."""
    def f(d):
        if case == "promote":
            return torch.cat([x(d, 2, 3), x(d, 1, 3, dtype=F64), x(d, 2, 3, dtype=torch.float16)])
        if case == "skip empty 1-D":
            return torch.cat([x(d, 0), x(d, 2, 3), x(d, 0), x(d, 1, 3)])
        if case == "channels_last":
            a = x(d, 2, 3, 4, 5).contiguous(memory_format=torch.channels_last)
            return torch.cat([a, a], 1)
        if case == "all skipped":
            return torch.cat([x(d, 0), x(d, 0)])
        out = e(d, 3, dtype=torch.float16)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            torch.cat([x(d, 2, 2), x(d, 1, 2)], out=out)
        return out, sorted(str(m.message) for m in w)
    cpu, got = f("cpu"), f(DEV)
    if case == "resize out":
        (cpu, cw), (got, gw) = cpu, got
        assert gw == cw
    assert (got.dtype, got.shape, got.stride()) == (cpu.dtype, cpu.shape, cpu.stride())
    assert_exact(got.cpu(), cpu)  # copies: exact
