"""The tiled convolution kernels against the direct ones: shaders/conv_tile.comp against conv.comp
for both passes it runs, a convolution's forward and a transposed convolution's forward or a
convolution's input gradient (strided: one stride-1 dispatch per phase, up to 8, lower_conv.cpp
phases());
conv_wtile.comp (then conv_wgrad.comp's tree over its sums)
against conv_wgrad.comp for weight gradients. The same terms in the same order, so the same bytes, in
every float dtype, over edge tiles in all three directions (positions, channels, terms), strides,
padding, dilation, groups, 1-, 2- and 3-d, channels-last and sliced operands, NaN/Inf (an
infinite weight where the input gradient's border taps are no terms), products that overflow,
unscaled randn and fewer terms than one slice. Each kernel is forced with VKML_CONV_PIPE in a child process (environment
switches are read once per process; this file run as a script), the tiled one under VKML_CHECK=1
so the oracle checks every node too; the parent compares the two bit for bit and the tiled one
with torch CPU within the row's bound (TOL_GEMM: docs/convolution.md). Then which kernel the
shape picks when nothing is forced."""
import os
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
FNS = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
TFNS = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}
A = torch.ops.aten


def _cases():
    """(id, kind, operand, weight, bias or None, keyword arguments) on the CPU, float64, before the
    dtype. kind "conv": the operand is the input; "transposed": the input of a transposed
    convolution; "input grad": the output gradient of a convolution whose input has
    kw["in_shape"]."""
    g = torch.Generator().manual_seed(0)
    r = lambda *s: torch.rand(*s, generator=g, dtype=torch.float64) * 4 - 2  # noqa: E731
    out = [
        ("edge tiles 3x3 pad 1", "conv", r(2, 20, 9, 11), r(70, 20, 3, 3), r(70), dict(padding=1)),
        ("stride dilation padding", "conv", r(1, 17, 13, 10), r(24, 17, 3, 2), r(24), dict(stride=(2, 3), padding=(2, 1), dilation=(2, 1))),
        ("groups 2", "conv", r(2, 32, 6, 6), r(40, 16, 3, 3), None, dict(groups=2, padding=1)),
        ("conv1d", "conv", r(3, 24, 50), r(33, 24, 5), r(33), dict(stride=3, padding=4)),
        ("conv3d", "conv", r(1, 8, 5, 6, 7), r(18, 8, 2, 3, 2), r(18), dict(padding=1)),
        ("1x1", "conv", r(2, 64, 5, 5), r(130, 64, 1, 1), None, {}),
        ("fewer terms than a slice", "conv", r(1, 3, 6, 6), r(20, 3, 2, 2), r(20), {}),
        ("unscaled randn", "conv", torch.randn(1, 64, 10, 10, generator=g, dtype=torch.float64),
         torch.randn(64, 64, 3, 3, generator=g, dtype=torch.float64), None, dict(padding=1)),
        # to_big: W is [C0, C1 / groups, *K]; the result has C1 (x groups) channels
        ("transposed 3x3 pad 1", "transposed", r(2, 20, 9, 11), r(20, 70, 3, 3), r(70), dict(padding=1)),
        ("transposed groups dilation", "transposed", r(1, 24, 7, 6), r(24, 20, 2, 3), None, dict(groups=2, dilation=(2, 1))),
        ("transposed 3d", "transposed", r(1, 18, 4, 5, 3), r(18, 17, 2, 2, 3), r(17), dict(padding=(0, 1, 1))),
        ("input grad 3x3 pad 1", "input grad", r(2, 40, 8, 9), r(40, 24, 3, 3), None, dict(padding=1, in_shape=(2, 24, 8, 9))),
        ("input grad 1d dilation", "input grad", r(3, 20, 30), r(20, 33, 4), None, dict(padding=2, dilation=3, in_shape=(3, 33, 35))),
        # Strided: 4, 3 and 4 phases. With stride 2 and dilation 2 (rows) half the phases have no
        # tap at all (their results are +0); with a 1-tap kernel and stride 4, three of four.
        ("input grad stride 2 3x3 pad 1", "input grad", r(2, 40, 5, 6), r(40, 24, 3, 3), None,
         dict(stride=2, padding=1, in_shape=(2, 24, 10, 11))),
        ("input grad stride 2 dilation (2, 1)", "input grad", r(1, 20, 4, 4), r(20, 18, 3, 2), None,
         dict(stride=2, padding=(1, 0), dilation=(2, 1), in_shape=(1, 18, 9, 8))),
        ("input grad 1d stride 3", "input grad", r(2, 22, 7), r(22, 17, 5), None, dict(stride=3, padding=2, in_shape=(2, 17, 20))),
        ("input grad 1d stride 4 one tap", "input grad", r(2, 24, 4), r(24, 18, 1), None, dict(stride=4, in_shape=(2, 18, 13))),
        ("transposed stride 2", "transposed", r(1, 20, 5, 6), r(20, 24, 3, 3), r(24), dict(stride=2, padding=1, output_padding=1)),
    ]
    x, w = r(2, 18, 7, 7), r(24, 18, 3, 3)
    x[0, 3, 2, 2], x[1, 0, 0, 6], w[5, 1, 1, 1], w[7, 2, 0, 0] = float("nan"), float("inf"), float("-inf"), float("inf")
    out.append(("NaN and Inf", "conv", x, w, r(24), dict(padding=1)))
    x, w = r(1, 16, 5, 5), r(16, 16, 3, 3)
    x[0, 2, 1, 1], w[3, 2, 0, 0], w[3, 5, 1, 1] = -1e30, 4.5e15, float("inf")  # a product past float32's range
    out.append(("overflowing product", "conv", x, w, None, {}))
    # An infinite weight element: the input gradient's border positions have no term through it
    # (no NaN there), the inner ones an infinite term (the masked slices of conv_tile.comp).
    gy, w = r(1, 20, 6, 6), r(20, 18, 3, 3)
    w[4, 2, 0, 0], w[9, 17, 2, 1], gy[0, 1, 3, 3] = float("inf"), float("nan"), float("inf")
    out.append(("input grad Inf weight", "input grad", gy, w, None, dict(padding=1, in_shape=(1, 18, 6, 6))))
    gy, w = r(1, 20, 4, 4), r(20, 18, 3, 3)
    w[4, 2, 0, 0], w[9, 17, 1, 2], gy[0, 1, 2, 2] = float("inf"), float("nan"), float("-inf")
    out.append(("input grad stride 2 Inf weight", "input grad", gy, w, None, dict(stride=2, padding=1, in_shape=(1, 18, 8, 8))))
    # Weight gradients (shaders/conv_wtile.comp, then conv_wgrad.comp's tree): the operand is the
    # output gradient, the "weight" slot the convolution's input. At least 256 terms (batch x
    # positions) each; 312 = 2 x 128 + 56 gives lanes of 3 and of 2 terms; 70 x 180 results make
    # edge tiles both ways.
    out += [
        ("weight grad 3x3 pad 1", "weight grad", r(2, 70, 12, 13), r(2, 20, 12, 13), None, dict(padding=1, w_shape=(70, 20, 3, 3))),
        ("weight grad stride dilation", "weight grad", r(2, 24, 15, 9), r(2, 17, 30, 24), None,
         dict(stride=(2, 3), padding=(2, 1), dilation=(2, 1), w_shape=(24, 17, 3, 2))),
        ("weight grad conv1d", "weight grad", r(8, 33, 35), r(8, 24, 100), None, dict(stride=3, padding=4, w_shape=(33, 24, 5))),
        ("weight grad conv3d", "weight grad", r(2, 18, 7, 7, 9), r(2, 8, 6, 7, 8), None, dict(padding=1, w_shape=(18, 8, 2, 3, 2))),
    ]
    gy, x = r(2, 16, 12, 12), r(2, 16, 12, 12)
    gy[0, 3, 5, 5], x[1, 2, 0, 0], x[0, 7, 4, 4] = float("nan"), float("inf"), float("-inf")
    out.append(("weight grad NaN and Inf", "weight grad", gy, x, None, dict(padding=1, w_shape=(16, 16, 3, 3))))
    # (drawn last: a case drawn earlier would change the generator's values for the ones above)
    out.append(("input grad 1d stride 2 dilation 3 groups 2", "input grad", r(2, 40, 11), r(40, 18, 4), None,
                dict(stride=2, padding=3, dilation=3, groups=2, in_shape=(2, 36, 25))))
    # 3-d, stride 2: 8 phases (a 3-d U-Net's downsampling and upsampling layers)
    out.append(("input grad 3d stride 2", "input grad", r(1, 20, 3, 4, 3), r(20, 17, 3, 3, 2), None,
                dict(stride=2, padding=1, in_shape=(1, 17, 6, 7, 5))))
    out.append(("transposed 3d stride 2", "transposed", r(1, 18, 3, 3, 4), r(18, 16, 2, 2, 2), r(16), dict(stride=2)))
    return out


def _run(kind, x, w, b, kw):
    """The case's pass on x's device."""
    if kind == "conv":
        return FNS[x.dim() - 2](x, w, b, **kw)
    if kind == "transposed":
        return TFNS[x.dim() - 2](x, w, b, **kw)
    d = x.dim() - 2
    kw = dict(kw)
    if kind == "weight grad":  # x: the output gradient, w: the convolution's input
        st, pad, dil = ([v] * d if isinstance(v, int) else list(v)
                        for v in (kw.get("stride", 1), kw.get("padding", 0), kw.get("dilation", 1)))
        weight = torch.empty(kw["w_shape"], dtype=x.dtype, device=x.device)
        fn = A.convolution_backward if x.device.type == "cpu" else A.convolution_backward_overrideable
        extra = [None] if x.device.type == "cpu" else []
        return fn(x, w, weight, *extra, st, pad, dil, False, [0] * d, 1, [False, True, False])[1]
    shape = kw.pop("in_shape")
    st, pad, dil = ([v] * d if isinstance(v, int) else list(v)
                    for v in (kw.get("stride", 1), kw.get("padding", 0), kw.get("dilation", 1)))
    inp = torch.empty(shape, dtype=x.dtype, device=x.device)
    if x.device.type == "cpu":
        return A.convolution_backward(x, inp, w, None, st, pad, dil, False, [0] * d, kw.get("groups", 1),
                                      [True, False, False])[0]
    return A.convolution_backward_overrideable(x, inp, w, st, pad, dil, False, [0] * d, kw.get("groups", 1),
                                               [True, False, False])[0]


def _layouts(x, w):
    """(suffix, x, w): as they are, channels-last, and views that are not dense."""
    yield "", x, w
    if x.dim() == 4:
        yield " channels_last", x.contiguous(memory_format=torch.channels_last), w.contiguous(memory_format=torch.channels_last)
        xs = torch.cat([x, x], 1)[:, 1:1 + x.shape[1]]  # sliced channels: offset and a channel stride
        wt = w.transpose(2, 3).contiguous().transpose(2, 3)  # the kernel's dims swapped in memory
        yield " sliced", xs, wt


def _dtypes():
    import vkml_torch
    out = [torch.float32, torch.float16, torch.bfloat16]
    return out + [torch.float64] if vkml_torch._C.device_info(0)["float64"] else out


def _inputs():
    """{key: (kind, x, w, b, kwargs)} in every dtype and layout."""
    out = {}
    for dtype in _dtypes():
        for name, kind, x, w, b, kw in _cases():
            for suffix, xl, wl in _layouts(x.to(dtype), w.to(dtype)):
                out[f"{name}{suffix} {dtype}"] = (kind, xl, wl, None if b is None else b.to(dtype), kw)
    return out


def child(pipe, path):
    """Every case on vkml with VKML_CONV_PIPE=pipe; saves the results and the kernels that ran."""
    import vkml_torch
    from helpers import same_view
    assert os.environ.get("VKML_CONV_PIPE") == pipe
    results = {}
    with vkml_torch.profile() as p:
        for key, (kind, x, w, b, kw) in _inputs().items():
            dev = [None if t is None else same_view(t, "vkml") for t in (x, w, b)]
            results[key] = _run(kind, *dev, kw).cpu()
    torch.save({"results": results, "kernels": sorted({k[0] for k in p.kernels if "conv" in k[0]})}, path)


def _run_child(pipe, path, check):
    env = dict(os.environ, VKML_CONV_PIPE=pipe, VKML_CHECK="1" if check else "0")
    env.setdefault("VKML_MIN_SPEC", "0")
    p = subprocess.run([sys.executable, os.path.abspath(__file__), pipe, path], cwd=HERE, env=env,
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, f"VKML_CONV_PIPE={pipe} failed:\n{p.stdout[-3000:]}\n{p.stderr[-6000:]}"
    return torch.load(path)


def _reference(kind, x, w, b, kw, dtype):
    """torch CPU's own kernels in the contract's precision (float32 for the narrow dtypes, rounded
    once), each product rounded where one can overflow; and the backward-error scale (the same
    pass on absolute values, in float64)."""
    from families.conv import _may_overflow_a_product, _rounded_products_conv, cpu_native
    wide = lambda t: None if t is None else (t.float() if dtype in (torch.float16, torch.bfloat16) else t)  # noqa: E731
    if kind == "conv" and _may_overflow_a_product(wide(x), wide(w)):
        d = x.dim() - 2
        st, pad, dil = ([v] * d if isinstance(v, int) else list(v)
                        for v in (kw.get("stride", 1), kw.get("padding", 0), kw.get("dilation", 1)))
        ref = _rounded_products_conv(wide(x), wide(w), wide(b), st, pad, dil, kw.get("groups", 1))
    else:
        ref = cpu_native(_run)(kind, wide(x), wide(w), wide(b), kw)
    scale = _run(kind, x.double().abs(), w.double().abs(), None if b is None else b.double().abs(), kw)
    return ref.to(dtype), scale


def _terms(kind, x, w, b, kw):
    """Terms behind one result element (a bound: a to_big result reaches fewer kernel taps)."""
    if kind == "weight grad":  # batch x output positions
        return x.shape[0] * x[0, 0].numel()
    per_tap = w.shape[1] if kind == "conv" else w.shape[0] // kw.get("groups", 1)
    return per_tap * w[0, 0].numel() + (b is not None)


def test_tiled_same_bytes_as_direct_and_close_to_cpu():
    from helpers import assert_close_row, row
    with tempfile.TemporaryDirectory() as tmp:
        tiled = _run_child("tiled", os.path.join(tmp, "tiled.pt"), check=True)
        direct = _run_child("direct", os.path.join(tmp, "direct.pt"), check=False)
    # tiled: conv_tile, and for weight gradients conv_wtile then conv_wgrad's tree over its sums
    assert tiled["kernels"] and all(any(s in k for s in ("conv_tile", "conv_wtile", "conv_wgrad")) for k in tiled["kernels"]) \
        and any("conv_wtile" in k for k in tiled["kernels"]), tiled["kernels"]
    assert direct["kernels"] and not any("conv_tile" in k or "conv_wtile" in k for k in direct["kernels"]), direct["kernels"]
    fwd, bwd = row("convolution"), row("convolution_backward")
    inputs = _inputs()
    assert set(tiled["results"]) == set(direct["results"]) == set(inputs)
    for key, (kind, x, w, b, kw) in inputs.items():
        t, d = tiled["results"][key], direct["results"][key]
        assert t.shape == d.shape and torch.equal(t.contiguous().view(torch.uint8), d.contiguous().view(torch.uint8)), \
            f"{key}: the tiled kernel's bytes differ from the direct kernel's"
        ref, scale = _reference(kind, x, w, b, kw, x.dtype)
        assert_close_row(fwd if kind == "conv" or kind == "transposed" else bwd, t, ref, scale, _terms(kind, x, w, b, kw), what=key)
    nan = tiled["results"]["NaN and Inf torch.float32"]
    assert nan.isnan().any() and nan.isinf().any(), "the special-values case made no NaN or Inf"
    assert tiled["results"]["overflowing product torch.float32"].isnan().any(), "no overflowing product met an infinity"
    for key in ("input grad Inf weight torch.float32", "input grad stride 2 Inf weight torch.float32"):
        grad = tiled["results"][key]
        assert grad.isnan().any() and not grad.isnan().all(), f"{key}: the infinite weight made no NaN, or only NaN"
    wg = tiled["results"]["weight grad NaN and Inf torch.float32"]
    assert wg.isnan().any() and not wg.isnan().all(), "the weight gradient's NaN/Inf made no NaN, or only NaN"


# (id, pass, input or output-gradient shape, weight shape, groups, stride, dtype, the kernel wanted)
CHOICES = [
    ("ResNet-like layer", "conv", (1, 32, 8, 8), (32, 32, 3, 3), 1, 1, torch.float32, "conv_tile"),
    ("32 channels a group", "conv", (1, 32, 8, 8), (64, 16, 3, 3), 2, 1, torch.bfloat16, "conv_tile"),
    ("depthwise: 1 channel a group", "conv", (1, 32, 8, 8), (32, 1, 3, 3), 32, 1, torch.float32, "conv_f"),
    ("8 output channels", "conv", (1, 3, 8, 8), (8, 3, 3, 3), 1, 1, torch.float32, "conv_f"),
    ("9 terms", "conv", (1, 1, 8, 8), (32, 1, 3, 3), 1, 1, torch.float32, "conv_f"),
    ("9 positions", "conv", (1, 32, 3, 3), (32, 32, 3, 3), 1, 1, torch.float32, "conv_f"),
    ("integers: direct", "conv", (1, 32, 8, 8), (32, 32, 3, 3), 1, 1, torch.int32, "conv_i64"),
    # with stride s, the input gradient runs as s^d stride-1 phases, tiled up to 8 (one dispatch each)
    ("input gradient, stride 1", "input grad", (1, 32, 8, 8), (32, 32, 3, 3), 1, 1, torch.float32, "conv_tile"),
    ("input gradient, stride 2: 4 phases", "input grad", (1, 32, 4, 4), (32, 32, 3, 3), 1, 2, torch.float32, "conv_tile"),
    ("input gradient, stride 3: 9 phases", "input grad", (1, 32, 3, 3), (32, 32, 3, 3), 1, 3, torch.float32, "conv_f"),
    # weight gradients: tiled from 256 terms (batch x positions) and 1,024 results, one group
    ("weight gradient, 256 terms", "weight grad", (1, 32, 16, 16), (32, 32, 3, 3), 1, 1, torch.float32, "conv_wtile"),
    ("weight gradient, 255 terms", "weight grad", (1, 32, 15, 17), (32, 32, 3, 3), 1, 1, torch.float32, "conv_wgrad"),
    ("weight gradient, 2 groups", "weight grad", (1, 32, 16, 16), (32, 16, 3, 3), 2, 1, torch.float32, "conv_wgrad"),
    ("weight gradient, 900 results", "weight grad", (1, 10, 16, 16), (10, 10, 3, 3), 1, 1, torch.float32, "conv_wgrad"),
]


def choice_child():
    """Prints, as JSON, the conv kernels each CHOICES case ran, with nothing forced."""
    import json
    import vkml_torch
    assert "VKML_CONV_PIPE" not in os.environ
    out = {}
    for name, kind, xs, ws, groups, stride, dtype, _ in CHOICES:
        x, w = torch.ones(xs, dtype=dtype).to("vkml"), torch.ones(ws, dtype=dtype).to("vkml")
        torch.vkml.synchronize()
        with vkml_torch.profile() as p:
            if kind == "conv":
                F.conv2d(x, w, groups=groups, padding=1).cpu()
            elif kind == "weight grad":  # x: the output gradient; stride 1, padding 1: same spatial size
                inp = torch.ones(1, ws[1] * groups, *xs[2:], dtype=dtype, device="vkml")
                A.convolution_backward_overrideable(x, inp, w, [1, 1], [1, 1], [1, 1], False, [0, 0], groups,
                                                    [False, True, False])[1].cpu()
            else:
                inp = torch.empty(1, ws[1] * groups, 8, 8, dtype=dtype, device="vkml")
                torch.vkml.synchronize()
                before = vkml_torch.stats()["barriers"]
                A.convolution_backward_overrideable(x, inp, w, [stride] * 2, [1, 1], [1, 1], False, [0, 0], groups,
                                                    [True, False, False])[0]
                torch.vkml.synchronize()
                out[name + " barriers"] = vkml_torch.stats()["barriers"] - before
        out[name] = [k[0] for k in p.kernels if "conv" in k[0]]
    print(json.dumps(out))


def test_choice_by_shape():
    """Which kernel each shape gets when nothing is forced: in a child process without
    VKML_CONV_PIPE, so the test means the same whatever the caller's environment."""
    import json
    env = {k: v for k, v in os.environ.items() if k != "VKML_CONV_PIPE"}
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "choice"], cwd=HERE, env=env,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f"{p.stdout[-3000:]}\n{p.stderr[-6000:]}"
    got = json.loads(p.stdout.strip().splitlines()[-1])
    for name, *_, want in CHOICES:
        # conv_wtile is followed by conv_wgrad's tree over its partial sums
        ran = got[name][:1] if want == "conv_wtile" and got[name][1:] and "conv_wgrad" in got[name][1] else got[name]
        if name.endswith("4 phases"):  # one conv_tile dispatch per phase, no barrier between them
            assert len(ran) == 4 and all(want in k for k in ran), f"{name}: ran {ran}"
            assert got[name + " barriers"] == got["input gradient, stride 1 barriers"] == 0, got
            ran = ran[:1]
        assert len(ran) == 1 and want in ran[0], f"{name}: ran {got[name]}, wanted {want}"


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    if sys.argv[1] == "choice":
        choice_child()
    else:
        child(sys.argv[1], sys.argv[2])
