"""Test parameters of the conv family: generators for convolution_overrideable and
convolution_backward_overrideable, run by test_ops.py on the CPU, on vkml and under check mode.

torch CPU has no kernel for the *_overrideable ops themselves (they are the PrivateUse1 hook of
its convolution), so each case names its CPU reference: aten.convolution and
aten.convolution_backward with the same arguments. The reference runs with oneDNN and NNPACK off: torch
CPU's own kernels (im2col and a GEMM) multiply the padding's zeros like any other input, so 0 * inf
is NaN there, as on vkml, while oneDNN (which torch picks for some float32 and bfloat16 shapes)
skips padding taps and NNPACK's transforms spread an infinity over the whole output
(docs/convolution.md, "Padding"); for finite values the paths differ only by rounding. The
backward-error scale of every result is the same op on the absolute values in float64 (each result is linear in each operand, so that is the
sum of the magnitudes of its terms); n bounds the terms behind one element.
"""
import itertools
import math

import torch

from op_cases import Case, In, rand, special_values

A = torch.ops.aten


def cpu_native(fn):
    """fn run by torch CPU's own convolution kernels (no oneDNN, no NNPACK): see the docstring.
    (torch.backends.mkldnn.flags() would also reset oneDNN's TF32 setting, with a warning.)"""
    def run(*args, **kwargs):
        was = torch._C._get_mkldnn_enabled(), torch._C._get_nnpack_enabled()
        torch._C._set_mkldnn_enabled(False)
        torch._C._set_nnpack_enabled(False)
        try:
            return fn(*args, **kwargs)
        finally:
            torch._C._set_mkldnn_enabled(was[0])
            torch._C._set_nnpack_enabled(was[1])
    return run


_CONV_NATIVE = cpu_native(A.convolution.default)
_F32_MAX = torch.finfo(torch.float32).max


def _may_overflow_a_product(x, w):
    """Whether a float32 product of a finite input and a finite weight element can pass float32's
    range. Its sum then depends on fma: rounded, the product is an infinity (+inf meets it: NaN);
    fused, it is not (+inf). torch CPU's GEMM fuses on some machines (torch 2.11 on the H200's
    host gave +inf where torch 2.13 here gives NaN); vkml's shaders are `precise` and never do."""
    def top(t):
        f = t.detach().double().abs()
        f = f[torch.isfinite(f)]
        return float(f.max()) if f.numel() else 0.0
    return x.dtype in (torch.float32, torch.bfloat16) and top(x) * top(w) >= _F32_MAX


def _rounded_products_conv(x, w, b, st, pad, dil, groups):
    """A (not transposed) convolution with every product rounded to float32 before it is added
    (in float64, so no partial sum overflows): what vkml's `precise` shaders and the oracle
    compute. Padding zeros are multiplied, as in torch CPU's im2col (0 * inf = NaN)."""
    d = x.dim() - 2
    n, c_in, c_out, ks = x.shape[0], x.shape[1], w.shape[0], w.shape[2:]
    xp = torch.nn.functional.pad(x.float(), [q for p in reversed(pad) for q in (p, p)])
    o = [(x.shape[2 + i] + 2 * pad[i] - dil[i] * (ks[i] - 1) - 1) // st[i] + 1 for i in range(d)]
    acc = torch.zeros((n, groups, c_out // groups, *o), dtype=torch.float64)
    for k in itertools.product(*[range(kk) for kk in ks]):
        sl = xp[(slice(None), slice(None)) + tuple(slice(k[i] * dil[i], k[i] * dil[i] + st[i] * (o[i] - 1) + 1, st[i])
                                                   for i in range(d))]
        xs = sl.reshape(n, groups, 1, c_in // groups, *o)
        ws = w[(slice(None), slice(None)) + k].float().reshape(1, groups, c_out // groups, c_in // groups, *[1] * d)
        acc += (xs * ws).double().sum(3)  # the float32 products, rounded (an overflow is an infinity)
    acc = acc.reshape(n, c_out, *o)
    if b is not None:
        acc += b.double().reshape(1, c_out, *[1] * d)
    return acc.to(x.dtype)


def _CONV(x, w, b, st, pad, dil, tr, op, groups):
    """torch CPU's convolution (its own kernels), or, where a float32 product can overflow, the
    rounded-products one (torch CPU's own answer there depends on its machine's fma)."""
    if not tr and _may_overflow_a_product(x, w):
        return _rounded_products_conv(x, w, b, st, pad, dil, groups)
    return _CONV_NATIVE(x, w, b, st, pad, dil, tr, op, groups)


_CONV_BWD = cpu_native(A.convolution_backward.default)

# (description, input shape, weight shape, bias, stride, padding, dilation, transposed,
#  output_padding, groups, input view, weight view)
_CL = lambda t: t.permute(0, 3, 1, 2)  # noqa: E731  a channels-last view of an NHWC base
_CONFIGS = [
    ("2-d", (2, 3, 6, 5), (4, 3, 3, 3), True, [1, 1], [0, 0], [1, 1], False, [0, 0], 1, None, None),
    ("2-d stride (2,1) padding (1,2) dilation (2,1)", (1, 2, 7, 8), (3, 2, 3, 2), False, [2, 1], [1, 2], [2, 1],
     False, [0, 0], 1, None, None),
    ("2-d groups 2", (2, 4, 5, 5), (6, 2, 3, 3), True, [1, 1], [1, 1], [1, 1], False, [0, 0], 2, None, None),
    ("2-d depthwise x2", (1, 3, 6, 6), (6, 1, 3, 3), True, [2, 2], [1, 1], [1, 1], False, [0, 0], 3, None, None),
    ("1-d stride 2 padding 1 dilation 2", (2, 3, 9), (4, 3, 3), True, [2], [1], [2], False, [0], 1, None, None),
    ("3-d", (1, 2, 4, 5, 4), (3, 2, 2, 3, 2), True, [1, 2, 1], [1, 0, 1], [1, 1, 2], False, [0, 0, 0], 1,
     None, None),
    ("transposed 2-d stride 2 output_padding 1", (2, 4, 3, 4), (4, 3, 3, 3), True, [2, 2], [1, 1], [1, 1], True,
     [1, 1], 1, None, None),
    ("transposed 2-d groups 2 dilation (2,1) output_padding (1,2)", (1, 4, 4, 3), (4, 2, 2, 3), True, [2, 3],
     [0, 1], [2, 1], True, [1, 2], 2, None, None),
    ("transposed 1-d", (2, 2, 5), (2, 3, 4), True, [3], [1], [1], True, [2], 1, None, None),
    ("transposed 3-d", (1, 2, 2, 3, 2), (2, 2, 2, 2, 3), False, [2, 1, 2], [0, 1, 1], [1, 2, 1], True,
     [1, 0, 0], 1, None, None),
    ("channels-last input, transposed weight view", (2, 5, 6, 3), (3, 4, 2, 3), True, [1, 1], [1, 0], [1, 1],
     False, [0, 0], 1, _CL, lambda t: t.transpose(0, 1)),
    ("sliced input [..., ::2], sliced weight [:, 1:]", (1, 2, 5, 10), (3, 3, 2, 2), True, [1, 1], [0, 0], [1, 1],
     False, [0, 0], 1, lambda t: t[..., ::2], lambda t: t[:, 1:]),
    ("2-d, 264 terms per weight gradient element (workgroup sums)", (2, 2, 13, 12), (2, 2, 2, 2), True, [1, 1],
     [0, 0], [1, 1], False, [0, 0], 1, None, None),
    ("empty batch", (0, 3, 5, 5), (4, 3, 3, 3), True, [1, 1], [0, 0], [1, 1], False, [0, 0], 1, None, None),
]


def _shape(base, view):
    return tuple((view(base) if view else base).shape)


def _fwd_terms(w, transposed, groups, bias):
    c0, k = w[0], math.prod(w[2:])
    return (c0 // groups if transposed else w[1]) * k + (1 if bias else 0)


def _abs(t):
    return None if t is None else t.double().abs()


def _cpu_has(dtype, dil, tr):
    """torch CPU's integer convolutions: int64 everywhere, narrower ones neither dilated nor
    transposed (its slow_conv_dilated and slow_conv_transpose kernels are float-only)."""
    return dtype.is_floating_point or dtype == torch.int64 or (not tr and all(d == 1 for d in dil))


def gen_conv(row, overload, dtype, rng, special):
    cases = []
    if special:  # special values in the input; weight and bias ones, so no float product overflows
        v = special_values(dtype, with_max=False)
        x = In(v.reshape(1, 1, -1))
        for tr in (False, True) if _cpu_has(dtype, [1], True) else (False,):
            args = [x, In(torch.ones((1, 1, 3), dtype=dtype)), In(torch.ones((1,), dtype=dtype)), [1], [1], [1], tr,
                    [0], 1]
            cases.append(_fwd_case(f"special values, 1-d, transposed={tr}", args, 4))
        return cases
    for desc, xs, ws, bias, st, pad, dil, tr, op, g, xv, wv in _CONFIGS:
        if not _cpu_has(dtype, dil, tr):
            continue
        x = In(rand(xs, dtype, rng), xv)
        w = In(rand(ws, dtype, rng), wv)
        wshape = _shape(w.base, wv)
        c_out = wshape[1] * g if tr else wshape[0]
        b = In(rand((c_out,), dtype, rng)) if bias else None
        args = [x, w, b, st, pad, dil, tr, op, g]
        cases.append(_fwd_case(desc, args, _fwd_terms(wshape, tr, g, bias)))
    # a bad argument: both raise (torch's own check, message and type)
    bad = [In(rand((1, 4, 5, 5), dtype, rng)), In(rand((6, 4, 3, 3), dtype, rng)), None, [1, 1], [0, 0], [1, 1],
           False, [0, 0], 3]
    cases.append(Case("groups 3 with 4 input channels (error)", bad, ref=_CONV))
    return cases


def _fwd_case(desc, args, n):
    def scale(x):
        return [(A.convolution.default(_abs(x[0]), _abs(x[1]), _abs(x[2]), *x[3:]), n)]
    return Case(desc, args, scale=scale, ref=_CONV)


def gen_conv_bwd(row, overload, dtype, rng, special):
    cases = []
    configs = _CONFIGS
    if special:  # special values in grad_output; input and weight ones
        length = len(special_values(dtype, with_max=False))
        configs = [("special values in grad_output, 1-d", (1, 1, length), (1, 1, 3), True, [1], [1], [1], False,
                    [0], 1, None, None)]
    for desc, xs, ws, bias, st, pad, dil, tr, op, g, xv, wv in configs:
        x = In(rand(xs, dtype, rng) if not special else torch.ones(xs, dtype=dtype), xv)
        w = In(rand(ws, dtype, rng) if not special else torch.ones(ws, dtype=dtype), wv)
        xshape, wshape = _shape(x.base, xv), _shape(w.base, wv)
        y = A.convolution.default(torch.zeros(xshape), torch.zeros(wshape), None, st, pad, dil, tr, op, g)
        if special:
            v = special_values(dtype, with_max=False)
            gy = In(v.reshape(y.shape))
        else:
            gy = In(rand(tuple(y.shape), dtype, rng))
        args = [gy, x, w, st, pad, dil, tr, op, g, [True, True, True]]
        c_out = y.shape[1]
        n_in = (wshape[1] if tr else wshape[0] // g) * math.prod(wshape[2:])
        small = xshape if tr else tuple(y.shape)
        n_w = small[0] * math.prod(small[2:])
        n_b = y.shape[0] * math.prod(y.shape[2:])

        def scale(a, n_in=n_in, n_w=n_w, n_b=n_b, c_out=c_out):
            gi, gw, gb = A.convolution_backward.default(_abs(a[0]), _abs(a[1]), _abs(a[2]), [c_out], *a[3:])
            return [(gi, n_in), (gw, n_w), (gb, n_b)]

        def ref(gy, x, w, st, pad, dil, tr, op, g, mask, c_out=c_out):
            return _CONV_BWD(gy, x, w, [c_out], st, pad, dil, tr, op, g, mask)
        cases.append(Case(desc, args, scale=scale, ref=ref))
    return cases


GENERATORS = {"conv_forward": gen_conv, "conv_backward": gen_conv_bwd}
