"""Ops registered for vkml from torch's own decompositions (torch._decomp), one line each.

These are rarely hot: a decomposed call runs in Python and records the ops it is made of (each a
native row, checked by the oracle like any other). Cost per call against a native row:
docs/performance.md. The no-silent-CPU rule holds: an op the decomposition needs and vkml lacks
raises NotImplementedError (or runs on the CPU with a warning under VKML_CPU_FALLBACK=1).
"""
import torch
from torch._decomp import decomposition_table

from . import _C

aten = torch.ops.aten

# The ops, each decomposed into rows vkml has (test/test_decomp.py runs each against torch CPU).
OPS = [
    aten.hardtanh.default, aten.hardtanh_backward.default, aten.relu6.default,
    aten.hardsigmoid.default, aten.hardsigmoid_backward.default,
    aten.hardswish.default, aten.hardswish_backward.default,
    aten.leaky_relu.default, aten.leaky_relu_backward.default, aten.threshold.default,
    aten.rsub.Tensor, aten.rsub.Scalar, aten.silu_backward.default,
    aten.sgn.default, aten.lerp.Tensor, aten.huber_loss.default, aten.smooth_l1_loss.default,
    # torch 2.15 routes `x[index] = scalar` through index_fill_ (the Tensor-value forms are not
    # registered: the decomposition rejects the 0-dim CPU value torch accepts there)
    aten.index_fill.int_Scalar, aten.index_fill_.int_Scalar,
    aten.index_copy.default, aten.index_copy_.default, aten.index_copy.out,  # what index_fill uses
]

_lib = None


def _traced(name, fn):
    def run(*args, **kwargs):
        _C._trace_decomposition(name)
        return fn(*args, **kwargs)
    return run


def register():
    global _lib
    if _lib is not None:
        return
    _lib = torch.library.Library("aten", "IMPL")
    for op in OPS:
        # An op torch already decomposes above the device (CompositeImplicitAutograd) must not be
        # registered: autograd would lose its formula. (relu6 is one: it becomes hardtanh.)
        if torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "CompositeImplicitAutograd"):
            continue
        _lib.impl(op, _traced(f"aten::{op._schema.name.split('::')[1]}"
                              + (f".{op._overloadname}" if op._overloadname != "default" else ""),
                              decomposition_table[op]), "PrivateUse1")
