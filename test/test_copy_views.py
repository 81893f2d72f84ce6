"""Copies between the CPU and vkml and within vkml for every dtype pair; views; scalars; printing."""
import contextlib
import itertools
import math

import pytest
import torch
import vkml_torch

from helpers import ALL_DTYPES, DEV, assert_exact, check_mode, stats

NAMES = {d: str(d).replace("torch.", "") for d in ALL_DTYPES}


def values(src, dst):
    """Values whose conversion src -> dst is defined in C++ (so torch CPU's answer is the spec):
    no NaN/Inf or out-of-range floats into integers, no negatives into uint8 from floats."""
    def signed(d):
        return d.is_floating_point or d in (torch.int8, torch.int16, torch.int32, torch.int64)
    if src == torch.bool:
        return [0, 1, 1, 0]
    v = [0, 1, 2, 3, 7, 100, 127]
    if signed(src) and (signed(dst) or not src.is_floating_point):
        v += [-1, -7, -100, -128]  # int -> narrower int wraps modulo 2**bits, as in C++20
    if src.is_floating_point:
        v += [0.25, 0.5, 1.5, 2.5, 99.75, 126.5]
        if signed(dst):
            v += [-0.5, -2.5, -99.75]
        if dst.is_floating_point or dst == torch.bool:
            v += [math.nan, math.inf, -math.inf, -0.0, 1e-30, 65504.0, 70000.0, 1e-8, 3e38,
                  1 + 2**-11, 1 + 3 * 2**-11, 1 + 2**-8, 1 + 3 * 2**-8,  # f16 / bf16 round-half-even ties
                  2**-126 / 4, 1e-40]  # float32 denormals
    elif not dst.is_floating_point and dst != torch.bool:
        wide = {torch.int16: [300, -200], torch.int32: [300, -200, 70000, -70000],
                torch.int64: [300, -200, 70000, 2**40 + 5, -(2**40) - 5]}
        v += [x for x in wide.get(src, []) if torch.iinfo(src).min <= x <= torch.iinfo(src).max]
    else:  # int -> float: rounding of big integers
        if src == torch.int64:
            v += [2**53 + 1, 2**60 + 2**36 + 1, -(2**60) - 2**36 - 1]  # double rounding via f64 would differ
        if src == torch.int32:
            v += [2**24 + 1, 2**31 - 1, 16777219]
        if src == torch.int16:
            v += [2049, 32767, -32768]
    x = torch.tensor(v, dtype=torch.float64 if src.is_floating_point else torch.int64)
    if src.is_floating_point:
        return x.to(src).tolist()
    lo, hi = torch.iinfo(src).min, torch.iinfo(src).max
    return [a for a in v if lo <= a <= hi]


def src_tensor(src, dst):
    v = values(src, dst)
    t = torch.tensor(v, dtype=torch.float64 if src.is_floating_point else torch.int64).to(src)
    return t.repeat(2)  # even length, so it can be viewed as 2 x n and transposed


PAIRS = list(itertools.product(ALL_DTYPES, ALL_DTYPES))


@pytest.mark.parametrize("src,dst", PAIRS, ids=[f"{NAMES[a]}-{NAMES[b]}" for a, b in PAIRS])
def test_copy_dtype_pairs(src, dst):
    x = src_tensor(src, dst)
    want = x.to(dst)
    # cpu -> vkml with conversion; vkml -> vkml conversion; vkml -> cpu with conversion
    assert_exact(x.to(DEV, dst).cpu(), want, what="cpu->vkml with dtype")
    xv = x.to(DEV)
    assert_exact(xv.cpu(), x, what="cpu->vkml->cpu same dtype")
    with check_mode():
        assert_exact(xv.to(dst).cpu(), want, what="vkml->vkml .to(dtype)")
    assert_exact(xv.to("cpu", dst), want, what="vkml->cpu with dtype")
    # non-contiguous source and destination through copy_
    x2 = x.view(2, -1)
    want2 = x2.t().to(dst)
    d = torch.zeros(x2.shape[1] + 1, 4, dtype=dst, device=DEV)
    d[1:, ::2].copy_(x2.to(DEV).t())  # strided vkml -> strided vkml, converting
    ref = torch.zeros(x2.shape[1] + 1, 4, dtype=dst)
    ref[1:, ::2] = want2
    assert_exact(d.cpu(), ref, what="strided vkml->vkml copy_")
    c = torch.zeros(x2.shape[1], 2, dtype=dst)
    c.copy_(x2.to(DEV).t())  # strided vkml -> cpu
    assert_exact(c, want2, what="strided vkml->cpu copy_")
    v = torch.zeros(2, x2.shape[1], dtype=dst, device=DEV).t()
    v.copy_(x2.t())  # strided cpu -> strided vkml
    assert_exact(v.cpu(), want2, what="strided cpu->vkml copy_")


@pytest.mark.parametrize("dt", [torch.complex64, torch.complex128])
def test_complex_raises_clear_error(dt):
    with pytest.raises((RuntimeError, TypeError, NotImplementedError)) as e:
        torch.zeros(2, dtype=dt).to(DEV).cpu()
    assert "complex" in str(e.value).lower(), str(e.value)


def test_views_share_storage_and_match():
    base_cpu = torch.arange(60, dtype=torch.float32)
    base = base_cpu.to(DEV)
    views = {
        "view": lambda t: t.view(3, 4, 5),
        "reshape contiguous": lambda t: t.reshape(6, 10),
        "reshape of transposed (copies)": lambda t: t.view(6, 10).t().reshape(60),
        "as_strided": lambda t: t.as_strided((3, 4), (7, 2), 5),
        "transpose": lambda t: t.view(3, 4, 5).transpose(0, 2),
        "permute": lambda t: t.view(3, 4, 5).permute(1, 2, 0),
        "slice with step": lambda t: t.view(6, 10)[1:5:2, ::3],
        "negative-free narrow": lambda t: t.narrow(0, 7, 11),
        "expand": lambda t: t[:5].view(1, 5).expand(4, 5),
        "squeeze/unsqueeze": lambda t: t.view(1, 60, 1).squeeze(0).unsqueeze(0).squeeze(-1),
        "select": lambda t: t.view(3, 20)[2],
        "0-dim select": lambda t: t[17],
        "unfold-free diagonal stride": lambda t: t.view(6, 10).diagonal(),
    }
    for name, f in views.items():
        assert_exact(f(base).cpu(), f(base_cpu), what=name)
        assert f(base).shape == f(base_cpu).shape and f(base).stride() == f(base_cpu).stride(), name
    # a write through a view lands in the base
    v = base.view(6, 10)[1:5:2, ::3]
    v.fill_(-1)
    base_cpu.view(6, 10)[1:5:2, ::3].fill_(-1)
    assert_exact(base.cpu(), base_cpu, what="write through a stepped view")
    assert base.view(6, 10).untyped_storage().data_ptr() == base.untyped_storage().data_ptr()


def test_set_():
    a = torch.arange(12, dtype=torch.float32).to(DEV)
    b = torch.empty(0, device=DEV)
    b.set_(a)
    assert_exact(b.cpu(), a.cpu())
    b.set_(a.untyped_storage(), 2, (2, 3), (3, 1))
    assert_exact(b.cpu(), torch.arange(12.0).as_strided((2, 3), (3, 1), 2))
    b.fill_(0)  # shared storage: visible through a
    want = torch.arange(12.0)
    want[2:8] = 0
    assert_exact(a.cpu(), want)
    c = torch.empty(0, device=DEV)
    c.set_()
    assert c.numel() == 0 and c.device.type == "vkml"


def test_resize_():
    a = torch.arange(6, dtype=torch.int32).to(DEV)
    a.resize_(2, 3)
    assert_exact(a.cpu(), torch.arange(6, dtype=torch.int32).view(2, 3))
    a.resize_(4, 5)  # grows; the first 6 elements keep their values
    assert a.shape == (4, 5)
    assert_exact(a.cpu().view(-1)[:6], torch.arange(6, dtype=torch.int32))
    a.fill_(3)
    assert_exact(a.cpu(), torch.full((4, 5), 3, dtype=torch.int32))
    a.resize_(0)
    assert a.numel() == 0 and a.cpu().shape == (0,)


@pytest.mark.parametrize("dt", ALL_DTYPES, ids=[NAMES[d] for d in ALL_DTYPES])
def test_item_bool_tolist(dt):
    src = torch.tensor([[1.5, -2.0, 0.0], [3.25, 100.0, 7.0]])
    src = (src.abs() if dt == torch.uint8 else src).to(dt)  # no negative float -> uint8 (undefined)
    t = src.to(DEV)
    for i in range(2):
        for j in range(3):
            got = t[i, j].item()
            assert type(got) is type(src[i, j].item()) and got == src[i, j].item(), (i, j, got)
            assert bool(t[i, j]) == bool(src[i, j])
    assert t.tolist() == src.tolist()
    assert t[1].tolist() == src[1].tolist()
    assert t[0, 2].tolist() == src[0, 2].tolist()
    with pytest.raises(RuntimeError):
        bool(t)  # more than one element: same error as on the CPU


def test_item_flushes_pending_work():
    x = torch.ones(4).to(DEV)
    y = (x * 3 + 1).sum()
    assert y.item() == 16.0
    assert stats()["pending"] == 0


def _expected_repr(cpu_repr):
    """The CPU repr with torch's device suffix, which comes before any size=/dtype= suffix."""
    suffixes = [", size=", ", dtype=", ", requires_grad=", ", grad_fn="]
    cut = min([i for s in suffixes if (i := cpu_repr.find(s)) >= 0] or [len(cpu_repr) - 1])
    return cpu_repr[:cut] + ", device='vkml:0'" + cpu_repr[cut:]


REPR_CASES = {
    "float32 2-D": torch.tensor([[1.5, -2.0], [3.25, 1e-3]]),
    "float32 big/small": torch.tensor([1e30, -1e-30, 3.0]),
    "float nan inf": torch.tensor([math.nan, math.inf, -math.inf, -0.0, 1.0]),
    "int32": torch.tensor([1, -2, 3], dtype=torch.int32),
    "int64": torch.tensor([[1, 2], [3, 4]]),
    "bool": torch.tensor([True, False]),
    "float16": torch.tensor([0.1, 2.5], dtype=torch.float16),
    "bfloat16": torch.tensor([0.1, 2.5], dtype=torch.bfloat16),
    "float64": torch.tensor([0.1, 1 / 3], dtype=torch.float64),
    "0-dim": torch.tensor(2.5),
    "empty": torch.zeros(0, 3),
    "summarized (2000 elements)": torch.arange(2000, dtype=torch.float32).view(40, 50),
    "transposed": torch.arange(6.0).view(2, 3).t(),
}


@pytest.mark.parametrize("name", list(REPR_CASES))
def test_print_repr(name, capsys):
    c = REPR_CASES[name]
    v = c.contiguous().to(DEV)
    if not c.is_contiguous():
        v = c.t().contiguous().to(DEV).t()
    want = _expected_repr(repr(c))
    assert repr(v) == want
    assert str(v) == want
    print(v)
    assert capsys.readouterr().out == want + "\n"


@pytest.mark.parametrize("dt", [torch.float32, torch.int64, torch.bool, torch.float16])
def test_nonzero_matches_cpu(dt):
    """nonzero's output size depends on the data: read back once, indices from the host (exact)."""
    x = (torch.arange(24).reshape(2, 3, 4) % 5 - 2).to(dt)
    x_t = x.transpose(0, 2)
    for t in (x, x_t, x[:, :0], x.flatten()[3]):
        got = torch.nonzero(t.to(DEV))
        assert got.device.type == "vkml"
        assert_exact(got.cpu(), torch.nonzero(t), what=f"nonzero of {tuple(t.shape)}")


OVERLAP = {  # copies torch's CPU rejects: the written-to tensor overlaps its source, or itself
    "shifted right": lambda x: x[1:].copy_(x[:-1]),
    "shifted left": lambda x: x[:-1].copy_(x[1:]),
    "expanded destination": lambda x: x[:1].expand(4).copy_(x[4:]),
    "transposed onto itself": lambda x: x.view(2, 2, 2)[0].copy_(x.view(2, 2, 2)[0].t()),
}


@pytest.mark.parametrize("name", list(OVERLAP))
def test_overlapping_copy_raises_as_on_cpu(name):
    """Issue 7, finding 6: `x[1:].copy_(x[:-1])` was accepted (and raced on the GPU)."""
    f = OVERLAP[name]
    with pytest.raises(RuntimeError) as cpu:
        f(torch.arange(8.0))
    assert str(cpu.value).startswith("unsupported operation:")
    x = torch.arange(8.0, device=DEV)
    with pytest.raises(RuntimeError) as e:
        f(x)
        torch.vkml.synchronize()
    assert str(e.value) == str(cpu.value)
    assert_exact(x.cpu(), torch.arange(8.0))  # untouched


def test_non_overlapping_copies_of_one_storage_work():
    x, y = torch.arange(8.0, device=DEV), torch.arange(8.0)
    for t in (x, y):
        t[:4].copy_(t[4:])  # disjoint halves
        t.copy_(t)  # the same view: nothing to do
        t[::2].copy_(t[1::2])  # interleaved, disjoint
    assert_exact(x.cpu(), y)


@pytest.mark.parametrize("dt", [torch.uint8, torch.bool, torch.float16, torch.bfloat16, torch.int16],
                         ids=lambda d: NAMES[d])
def test_copy_of_a_broadcast_element_at_an_unaligned_address(dt):
    """A single element broadcast over the destination (copy_ of an expand, or of a 0-dim view),
    narrower than 4 bytes and at a byte offset that is not a multiple of 4: the raw copy reads its
    word and takes the element's bits at the offset's byte (the mutation campaign's
    elementwise:175, offset * 8 -> offset / 8, read byte 0 of the word instead)."""
    base = (torch.arange(11) * 37 % 251).to(dt)
    for i in range(1, 8):
        for mode in (contextlib.nullcontext, check_mode):
            with mode():
                src = base.to(DEV)[i]
                out = torch.zeros(13, dtype=dt, device=DEV)
                out.copy_(src.expand(13))
                out2 = torch.zeros(2, 5, dtype=dt, device=DEV)
                out2[:] = src
                assert_exact(out.cpu(), base[i].expand(13), what=f"expand of element {i}, {mode.__name__}")
                assert_exact(out2.cpu(), base[i].expand(2, 5), what=f"0-dim element {i}, {mode.__name__}")


@pytest.mark.parametrize("dt", [torch.float32, torch.float16, torch.uint8, torch.int64], ids=lambda d: NAMES[d])
def test_dense_tail_writes_nothing_past_the_view(dt):
    """A dense result of 5, 6 or 7 elements (its last block of 4 is partial) that is a slice of a
    longer tensor: the elements after it stay as they were, through copy_, an out= add and an
    in-place op (the mutation campaign's elementwise:150 let the tail block write all 4)."""
    for n in (5, 6, 7):
        for mode in (contextlib.nullcontext, check_mode):
            with mode():
                a = (torch.arange(16) % 9 + 1).to(dt)
                b = (torch.arange(16) % 5 + 2).to(dt)
                base = torch.full((16,), 3, dtype=dt, device=DEV)
                out = base[:n]
                out.copy_(a.to(DEV)[:n])
                base2 = torch.full((16,), 3, dtype=dt, device=DEV)
                torch.add(a.to(DEV)[:n], b.to(DEV)[:n], out=base2[:n])
                base3 = a.to(DEV)
                base3[:n].mul_(b.to(DEV)[:n])
                keep = torch.full((16 - n,), 3, dtype=dt)
                what = f"n {n}, {mode.__name__}"
                assert_exact(base.cpu(), torch.cat([a[:n], keep]), what=f"copy_, {what}")
                assert_exact(base2.cpu(), torch.cat([a[:n] + b[:n], keep]), what=f"add out=, {what}")
                assert_exact(base3.cpu(), torch.cat([a[:n] * b[:n], a[n:]]), what=f"mul_, {what}")


@pytest.mark.parametrize("dt", [torch.float32, torch.float16, torch.int8, torch.float64, torch.int64],
                         ids=lambda d: NAMES[d])
def test_clone_of_a_transposed_tensor_keeps_its_layout_and_values(dt):
    """clone() of a transposed or permuted tensor keeps its strides (torch's preserve_format), so
    it is a same-dtype copy between two dense views that are not contiguous: not a buffer copy but
    elementwise.comp's raw-bits block path, every block but the first at a nonzero offset (the
    mutation campaign's elementwise:184, pc.a + oa -> pc.a - oa, read the wrong blocks there)."""
    x = (torch.arange(33 * 65) * 37 % 251 - 125).to(dt).reshape(33, 65)
    p = (torch.arange(3 * 5 * 7 * 4) % 97 - 48).to(dt).reshape(3, 5, 7, 4)
    for mode in (contextlib.nullcontext, check_mode):
        with mode():
            y = x.to(DEV).t().clone()
            q = p.to(DEV).permute(2, 0, 3, 1).clone()
            assert y.stride() == x.t().stride() and q.stride() == p.permute(2, 0, 3, 1).stride()
            assert_exact(y.cpu(), x.t(), what=f"x.t().clone(), {mode.__name__}")
            assert_exact(q.cpu(), p.permute(2, 0, 3, 1), what=f"permute().clone(), {mode.__name__}")


def _copy_kernels(fn):
    """The kernel names the profiler gives fn's GPU work."""
    torch.vkml.synchronize()
    with vkml_torch.profile() as p:
        fn()
        torch.vkml.synchronize()
    return [row[0] for row in p.summary()]


@pytest.mark.parametrize("shader", [0, 1], ids=["buffer-copy", "shader"])
@pytest.mark.parametrize("dt", [torch.float32, torch.float64, torch.float16, torch.uint8, torch.int64],
                         ids=lambda d: NAMES[d])
def test_device_to_device_copies(dt, shader):
    """A dense copy between device buffers (copy_ of same-dtype dense tensors) runs as
    vkCmdCopyBuffer or, as on GPUs by default (Limits::copy_shader), as elementwise.comp's raw-bit
    copy in 8- or 4-byte words where the length and both addresses allow (a buffer copy otherwise).
    Either way the destination gets the source's bytes exactly (random bit patterns: NaN payloads,
    -0.0, denormals) at every length and offset, and nothing outside the destination view changes."""
    size = torch.empty(0, dtype=dt).element_size()
    g = torch.Generator().manual_seed(3)
    vkml_torch._C._set_copy_shader(shader)
    try:
        for n in [1, 2, 3, 4, 5, 7, 8, 9, 31, 1000, 4099]:
            for so, do in [(0, 0), (1, 0), (0, 1), (2, 2), (3, 1)]:
                src_cpu = torch.randint(0, 256, ((n + so) * size,), generator=g, dtype=torch.uint8).view(dt)
                buf_cpu = torch.full(((n + do + 2) * size,), 0xAB, dtype=torch.uint8).view(dt)
                buf = buf_cpu.to(DEV)
                buf[do:do + n].copy_(src_cpu.to(DEV)[so:so + n])
                want = buf_cpu.clone()
                want[do:do + n] = src_cpu[so:so + n]
                got = buf.cpu()
                assert torch.equal(got.view(torch.uint8), want.view(torch.uint8)), (n, so, do)
    finally:
        vkml_torch._C._set_copy_shader(-1)


def test_device_to_device_copy_path():
    """Which copy runs: the shader where switched on and the bytes and addresses are whole 4-byte
    words, else the buffer copy (odd byte counts, odd addresses, or the switch off)."""
    x = torch.randn(1000, device=DEV)
    y = torch.empty(1001, device=DEV)
    b = torch.arange(9, dtype=torch.uint8, device=DEV)
    c = torch.empty(9, dtype=torch.uint8, device=DEV)
    try:
        vkml_torch._C._set_copy_shader(1)
        assert _copy_kernels(lambda: y[:1000].copy_(x)) == ["copy device->device [elementwise_i64]"]
        assert _copy_kernels(lambda: y[1:].copy_(x)) == ["copy device->device [elementwise_i64]"]  # 4-byte words
        assert _copy_kernels(lambda: c[1:].copy_(b[:8])) == ["copy device->device"]  # odd address
        assert _copy_kernels(lambda: c.copy_(b)) == ["copy device->device"]  # 9 bytes
        vkml_torch._C._set_copy_shader(0)
        assert _copy_kernels(lambda: y[:1000].copy_(x)) == ["copy device->device"]
    finally:
        vkml_torch._C._set_copy_shader(-1)
    # the last copies: x into y[:1000] (after x into y[1:], which left x[999] at y[1000]); b into c
    assert torch.equal(y[:1000].cpu(), x.cpu()) and torch.equal(y[1000].cpu(), x[999].cpu())
    assert torch.equal(c.cpu(), b.cpu())
