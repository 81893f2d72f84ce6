"""Random numbers drawn on the device (the random family: Philox4x32-10, docs/random.md).

What is checked, and why each check can fail:
- The stream: Philox itself against Random123's known answers (through random_'s full 64-bit range,
  which stores the raw words), and uniform_, bernoulli_, random_ and dropout's mask against an
  independent numpy implementation of the documented stream (bit for bit). normal_ and
  exponential_ against the textbook formulas in float64 on the same words, within a stated bound.
  Under VKML_CHECK=1 (the suite's second pass) every node is also compared bit for bit with the
  oracle (backend/cpu/random.cpp).
- Statistics with fixed seeds: means, variances and the Kolmogorov-Smirnov distance within bounds
  derived below. The seeds are fixed, so a pass is reproducible, not luck that could change.
- State: same seed -> same bytes; set_rng_state and torch.Generator("vkml") restore and carry it;
  successive draws differ (the offset advances by one per draw).
- Layouts and dtypes: float16/bfloat16 are the float32 draw rounded; in-place on a transposed or
  stepped view equals the contiguous draw of the view's shape, the rest of the base untouched;
  empty tensors; p = 0 and p = 1 exact; dropout train/eval and its gradient; > 65535 workgroups.
"""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
import vkml_torch

from helpers import DEV, assert_exact, check_mode, rng_mode

FLOATS = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
M32 = np.uint64(0xFFFFFFFF)


@pytest.fixture(autouse=True)
def device_stream():
    with rng_mode("device"):
        yield


# ---- an independent reference of the documented stream (numpy, uint64 arithmetic) ----------------
def philox(seed, offset, idx, words=4):
    """The words (4 uint32 words as uint64 arrays) of elements idx of the draw at (seed, offset)
    whose elements take `words` (1, 2 or 4) words each: block idx // (4 // words), turned so that
    word (idx % (4 // words)) * words comes first (docs/random.md)."""
    idx = np.asarray(idx, dtype=np.uint64)
    per = np.uint64(4 // words)
    blocks = philox_block(seed, offset, idx // per)
    first = ((idx % per) * np.uint64(words)).astype(np.int64)
    return [np.choose((first + j) % 4, blocks) for j in range(4)]


def philox_block(seed, offset, idx):
    """Blocks (4 uint32 words as uint64 arrays) at counters (idx, offset) and key seed."""
    idx = np.asarray(idx, dtype=np.uint64)
    c = [idx & M32, idx >> np.uint64(32), np.full_like(idx, offset & 0xFFFFFFFF),
         np.full_like(idx, offset >> 32)]
    k0, k1 = np.uint64(seed & 0xFFFFFFFF), np.uint64(seed >> 32)
    for r in range(10):
        if r:
            k0, k1 = (k0 + np.uint64(0x9E3779B9)) & M32, (k1 + np.uint64(0xBB67AE85)) & M32
        p0, p1 = np.uint64(0xD2511F53) * c[0], np.uint64(0xCD9E8D57) * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k0, p1 & M32, (p0 >> np.uint64(32)) ^ c[3] ^ k1, p0 & M32]
    return c


def ref_uniform01(w, dtype):
    """[0, 1): 24 bits of word 0 (float32 compute), or 53 bits of words 0-1 (float64)."""
    if dtype == torch.float64:
        return ((w[1] << np.uint64(32) | w[0]) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
    return (w[0] >> np.uint64(8)).astype(np.float64) * 2.0 ** -24


def state():
    s = torch.vkml.get_rng_state()
    assert s.numel() == 16
    seed, offset = np.frombuffer(s.numpy().tobytes(), dtype="<u8")
    return int(seed), int(offset)


def test_philox_known_answers():
    """Random123's kat_vectors for philox4x32-10, counter 0, key 0 (element 0 of offset 0, seed 0)
    and counter (i, offset) = (2^64-1, 2^64-1) with key 2^64-1."""
    torch.vkml.manual_seed(0)
    x = torch.empty(1, dtype=torch.int64, device=DEV).random_(-2 ** 63, None).cpu().item() % 2 ** 64
    assert x == 0xe169c58d6627e8d5  # words 6627e8d5 e169c58d
    w = philox_block(2 ** 64 - 1, 2 ** 64 - 1, [2 ** 64 - 1])
    assert [int(v[0]) for v in w] == [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]


def test_stream_uses_every_bit_of_seed_and_offset():
    """The key's high word (seed >> 32) and the counter's offset words: a seed and an offset past
    2^32, restored through set_rng_state, give the reference's words (random_'s full 64-bit range:
    word 1 above word 0, as in the known answer above)."""
    seed, off = 0xDEADBEEF12345678, (1 << 33) + 5
    torch.vkml.set_rng_state(torch.frombuffer(bytearray(np.array([seed, off], dtype="<u8").tobytes()),
                                              dtype=torch.uint8))
    assert state() == (seed, off)
    got = torch.empty(300, dtype=torch.int64, device=DEV).random_(-2 ** 63, None).cpu().numpy().view(np.uint64)
    w = philox(seed, off, np.arange(300), words=2)
    assert np.array_equal(got, (w[1] << np.uint64(32)) | w[0])
    assert state() == (seed, off + 1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_uniform_is_the_documented_stream(dtype):
    torch.vkml.manual_seed(1234)
    torch.rand(3, device=DEV)  # offset 1 next
    seed, off = state()
    got = torch.empty(1000, dtype=dtype, device=DEV).uniform_(-2, 3).cpu().double().numpy()
    u = ref_uniform01(philox(seed, off, np.arange(1000), words=1 if dtype == torch.float32 else 2), dtype)
    if dtype == torch.float32:  # u * (to - from) + from, two float32 roundings
        ref = (u.astype(np.float32) * np.float32(5) + np.float32(-2)).astype(np.float64)
    else:
        ref = u * 5.0 + -2.0
    assert np.array_equal(got, ref)
    assert state() == (seed, off + 1)


def test_bernoulli_random_and_dropout_mask_are_the_documented_stream():
    torch.vkml.manual_seed(77)
    seed, off = state()
    n = 4096
    ref_u = ref_uniform01(philox(seed, off, np.arange(n), words=1), torch.float32)
    got = torch.empty(n, device=DEV).bernoulli_(0.3).cpu().numpy()
    assert np.array_equal(got, (ref_u < np.float64(np.float32(0.3))).astype(np.float32))
    w = philox(seed, off + 1, np.arange(n), words=2)
    got = torch.empty(n, dtype=torch.int64, device=DEV).random_(-5, 9).cpu().numpy()
    assert np.array_equal(got, (w[0] % np.uint64(14)).astype(np.int64) - 5)
    big = 3 * 2 ** 40  # ranges from 2^32 up take 64 bits
    w = philox(seed, off + 2, np.arange(n), words=2)
    got = torch.empty(n, dtype=torch.int64, device=DEV).random_(0, big).cpu().numpy()
    assert np.array_equal(got, ((w[1] << np.uint64(32) | w[0]) % np.uint64(big)).astype(np.int64))
    for k, edge in enumerate((2 ** 32, 2 ** 32 + 5, 2 ** 33 - 1)):  # the first ranges that take 64 bits
        w = philox(seed, off + 3 + k, np.arange(n), words=2)  # (the campaign's random:251 took 32 up to 2^33)
        got = torch.empty(n, dtype=torch.int64, device=DEV).random_(-7, edge - 7).cpu().numpy()
        assert np.array_equal(got, ((w[1] << np.uint64(32) | w[0]) % np.uint64(edge)).astype(np.int64) - 7), edge
    x = torch.randn(n, device=DEV)
    seed, off = state()
    u = ref_uniform01(philox(seed, off, np.arange(n), words=1), torch.float32)
    out, mask = torch.native_dropout(x, 0.25, True)
    assert np.array_equal(mask.cpu().numpy(), u < 0.75)


def test_normal_and_exponential_follow_the_formulas():
    """normal = mean + std sqrt(-2 log u1) cos(2 pi u2), u1 = (2 (w0 >> 9) + 1) 2^-24 in (0, 1),
    u2 = (w1 >> 8) 2^-24; exponential = -log(u1) / lambda. The shader's log, sqrt and cos are
    polynomials and Newton steps in float32 (float64 for float64): a few float32 roundings each,
    so |z - z_exact| <= 2e-6 * (1 + |z|) is about 16 float32 ulps of |z| <= 6, a bound the
    float64 stream must meet 1e8 times tighter (2e-14)."""
    for dtype, bound in ((torch.float32, 2e-6), (torch.float64, 2e-14)):
        torch.vkml.manual_seed(5)
        seed, off = state()
        n = 20000
        z = torch.empty(n, dtype=dtype, device=DEV).normal_().cpu().double().numpy()
        e = torch.empty(n, dtype=dtype, device=DEV).exponential_(2.0).cpu().double().numpy()
        for k, (got, o) in enumerate(((z, off), (e, off + 1))):
            w = philox(seed, o, np.arange(n), words=(1 if dtype == torch.float32 else 2) * (2 if k == 0 else 1))
            if dtype == torch.float64:
                lo = (w[1] << np.uint64(32) | w[0]) >> np.uint64(12)
                u1 = (2 * lo + 1).astype(np.float64) * 2.0 ** -53
                u2 = ((w[3] << np.uint64(32) | w[2]) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
            else:
                u1 = (2 * (w[0] >> np.uint64(9)) + 1).astype(np.float64) * 2.0 ** -24
                u2 = (w[1] >> np.uint64(8)).astype(np.float64) * 2.0 ** -24
            ref = np.sqrt(-2 * np.log(u1)) * np.cos(2 * np.pi * u2) if k == 0 else -np.log(u1) / 2.0
            err = np.abs(got - ref) / (1 + np.abs(ref))
            assert err.max() <= bound, f"{dtype} {'normal' if k == 0 else 'exponential'}: {err.max():.3g}"


# ---- statistics --------------------------------------------------------------------------------
def ks_distance(x, cdf):
    x = np.sort(x)
    n = len(x)
    f = cdf(x)
    return max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))


NORMAL_CDF = np.vectorize(lambda v: 0.5 * (1 + math.erf(v / math.sqrt(2))))
N_STAT = 1 << 16
# Bounds: a mean within 6 standard errors (sigma / sqrt(n)), a variance within 6 standard errors of
# the sample variance (sqrt((mu4 - sigma^4) / n)); KS distance below 1.95 / sqrt(n) (the 0.1%
# critical value). With fixed seeds these either pass or fail every time.


@pytest.mark.parametrize("dtype", FLOATS)
def test_normal_statistics(dtype):
    torch.manual_seed(11)
    x = torch.empty(N_STAT, dtype=dtype, device=DEV).normal_(1.5, 2.0).cpu().double().numpy()
    n = len(x)
    assert abs(x.mean() - 1.5) < 6 * 2 / math.sqrt(n)
    assert abs(x.var() - 4.0) < 6 * math.sqrt((3 * 16 - 16) / n)
    # bfloat16 keeps 8 bits: rounding moves the CDF by up to 2^-8 * |x| * pdf < 0.004
    slack = 0.004 if dtype == torch.bfloat16 else 0.0005 if dtype == torch.float16 else 0
    assert ks_distance((x - 1.5) / 2, NORMAL_CDF) < 1.95 / math.sqrt(n) + slack


@pytest.mark.parametrize("dtype", FLOATS)
def test_uniform_statistics(dtype):
    torch.manual_seed(12)
    x = torch.empty(N_STAT, dtype=dtype, device=DEV).uniform_(-1, 3).cpu().double().numpy()
    n = len(x)
    assert x.min() >= -1 and x.max() < 3
    assert abs(x.mean() - 1) < 6 * math.sqrt(16 / 12 / n)
    slack = 2 ** -6 if dtype == torch.bfloat16 else 2 ** -9 if dtype == torch.float16 else 0  # rounding steps / 4
    assert ks_distance((x + 1) / 4, lambda v: np.clip(v, 0, 1)) < 1.95 / math.sqrt(n) + slack


def test_exponential_geometric_bernoulli_random_statistics():
    torch.manual_seed(13)
    n = N_STAT
    e = torch.empty(n, device=DEV).exponential_(4.0).cpu().double().numpy()
    assert e.min() > 0
    assert abs(e.mean() - 0.25) < 6 * 0.25 / math.sqrt(n)
    assert ks_distance(e, lambda v: 1 - np.exp(-4 * v)) < 1.95 / math.sqrt(n)
    g = torch.empty(n, device=DEV).geometric_(0.2).cpu().double().numpy()
    assert g.min() >= 1 and np.all(g == np.round(g))
    assert abs(g.mean() - 5) < 6 * math.sqrt(0.8 / 0.04 / n)
    for p in (0.05, 0.5, 0.9):
        b = torch.empty(n, dtype=torch.float16, device=DEV).bernoulli_(p).cpu().double().numpy()
        assert set(np.unique(b)) <= {0.0, 1.0}
        assert abs(b.mean() - p) < 6 * math.sqrt(p * (1 - p) / n)
    r = torch.randint(3, 10, (n,), device=DEV).cpu().numpy()
    counts = np.bincount(r - 3, minlength=7)
    assert r.min() == 3 and r.max() == 9
    assert np.all(np.abs(counts - n / 7) < 6 * math.sqrt(n * (1 / 7) * (6 / 7)))


@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
                                   torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_random_default_ranges(dtype):
    """random_() draws [0, max] for integers, [0, 2^digits] for floats, as torch."""
    top = {torch.bool: 1, torch.uint8: 255, torch.int8: 127, torch.int16: 2 ** 15 - 1, torch.int32: 2 ** 31 - 1,
           torch.int64: 2 ** 63 - 1, torch.float16: 2 ** 11, torch.bfloat16: 2 ** 8, torch.float32: 2 ** 24,
           torch.float64: 2 ** 53}[dtype]
    torch.manual_seed(3)
    x = torch.empty(4096, dtype=dtype, device=DEV).random_().cpu()
    v = x.to(torch.float64) if dtype.is_floating_point else x.to(torch.int64)
    assert v.min() >= 0 and v.max() <= top
    assert v.to(torch.float64).mean() > top * 0.4  # spread over the range (a mean of top/2 expected)
    if dtype.is_floating_point:
        assert bool((v == v.round()).all())


# ---- state ---------------------------------------------------------------------------------------
def test_reproducible_and_advancing():
    torch.manual_seed(42)
    a, b = torch.randn(257, device=DEV).cpu(), torch.randn(257, device=DEV).cpu()
    assert not torch.equal(a, b)  # the offset moved on
    torch.manual_seed(42)
    assert_exact(torch.randn(257, device=DEV).cpu(), a)
    st = torch.vkml.get_rng_state()
    c = torch.rand(100, device=DEV).cpu()
    torch.rand(5, device=DEV)
    torch.vkml.set_rng_state(st)
    assert_exact(torch.rand(100, device=DEV).cpu(), c)
    torch.vkml.manual_seed(9)
    assert state() == (9, 0) and torch.vkml.initial_seed() == 9
    torch.rand(4, device=DEV)
    torch.randn(0, device=DEV)  # empty: no draw, the offset stays
    assert state() == (9, 1)


def test_generator_object_carries_state():
    g = torch.Generator(DEV).manual_seed(5)
    assert g.device.type == torch.device(DEV).type and g.initial_seed() == 5 and g.get_offset() == 0
    a = torch.randn(64, device=DEV, generator=g).cpu()
    assert g.get_offset() == 1
    st = g.get_state()
    b = torch.rand(64, device=DEV, generator=g).cpu()
    g.set_state(st)
    assert_exact(torch.rand(64, device=DEV, generator=g).cpu(), b)
    torch.vkml.manual_seed(5)  # the default generator with the same seed gives the same numbers
    assert_exact(torch.randn(64, device=DEV).cpu(), a)
    g.manual_seed(5)
    g.set_offset(1)
    assert_exact(torch.rand(64, device=DEV, generator=g).cpu(), b)
    with pytest.raises(RuntimeError, match="CPUGeneratorImplState of size"):
        torch.vkml.set_rng_state(torch.zeros(3, dtype=torch.uint8))


def test_modes():
    assert vkml_torch.get_rng_mode() == "device"
    with pytest.raises(RuntimeError, match="random mode"):
        vkml_torch.set_rng_mode("gpu")
    vkml_torch.set_rng_mode("cpu")
    assert torch.vkml.get_rng_state().numel() > 16  # the CPU generator's state
    vkml_torch.set_rng_mode("device")
    assert torch.vkml.get_rng_state().numel() == 16


# ---- dtypes and layouts -------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["normal_", "uniform_", "exponential_"])
def test_narrow_floats_are_the_float32_draw_rounded(op):
    fill = {"normal_": lambda t: t.normal_(0.5, 3), "uniform_": lambda t: t.uniform_(-4, 4),
            "exponential_": lambda t: t.exponential_(0.5)}[op]
    torch.manual_seed(21)
    ref = fill(torch.empty(3000, device=DEV)).cpu()
    for dt in (torch.float16, torch.bfloat16):
        torch.manual_seed(21)
        got = fill(torch.empty(3000, dtype=dt, device=DEV)).cpu()
        if op == "uniform_":  # a value that rounds up to `to` is replaced by `from`, as torch
            ref_dt = ref.to(dt)
            ref_dt = torch.where(ref_dt >= 4, torch.tensor(-4.0, dtype=dt), ref_dt)
            assert_exact(got, ref_dt)
        else:
            assert_exact(got, ref.to(dt))


VIEWS = {
    "transposed": (lambda b: b.t(), (6, 8)),
    "stepped slice": (lambda b: b[:, ::2], (8, 3)),
    "stepped and transposed": (lambda b: b[:, ::2].t(), (3, 8)),
    "rows 1:3": (lambda b: b[1:3], (2, 6)),
}


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.int32])
def test_inplace_on_views(view, dtype):
    """Element i of the view (row-major) gets draw i: the contiguous draw of the view's shape."""
    fn, shape = VIEWS[view]
    fill = (lambda t: t.random_(0, 1000)) if not dtype.is_floating_point else (lambda t: t.normal_())
    torch.manual_seed(31)
    base = torch.full((8, 6), 7, dtype=dtype, device=DEV)
    fill(fn(base))
    torch.manual_seed(31)
    ref = fill(torch.empty(shape, dtype=dtype, device=DEV)).cpu()
    full = torch.full((8, 6), 7, dtype=dtype)
    fn(full).copy_(ref)
    assert_exact(base.cpu(), full, what=f"{view}: the whole base")


BLOCK_DRAWS = {
    "uniform_ float32": (torch.float32, lambda t: t.uniform_()),
    "normal_ float16": (torch.float16, lambda t: t.normal_()),
    "exponential_ bfloat16": (torch.bfloat16, lambda t: t.exponential_()),
    "normal_ float64": (torch.float64, lambda t: t.normal_()),
    "bernoulli_ bool": (torch.bool, lambda t: t.bernoulli_(0.3)),
    "bernoulli_ uint8": (torch.uint8, lambda t: t.bernoulli_(0.6)),
    "random_ int8": (torch.int8, lambda t: t.random_(-100, 100)),
    "random_ int16": (torch.int16, lambda t: t.random_(0, 30000)),
    "random_ int64": (torch.int64, lambda t: t.random_()),
}


@pytest.mark.parametrize("draw", BLOCK_DRAWS)
def test_block_path_equals_element_path(draw):
    """Dense operands aligned for 4-element blocks draw 4 elements per invocation, stored as whole
    words; a view one element off that alignment takes the per-element path (1- and 2-byte stores
    of their own). Same seed, same bytes, with 1,001 elements (a partial last block), the element
    before the view untouched. Each path is also compared with the oracle in the check pass."""
    dtype, fill = BLOCK_DRAWS[draw]
    n = 1001
    torch.manual_seed(41)
    aligned = fill(torch.zeros(n, dtype=dtype, device=DEV)).cpu()
    base = torch.zeros(n + 1, dtype=dtype, device=DEV)
    torch.manual_seed(41)
    fill(base[1:])
    want = torch.cat([torch.zeros(1, dtype=dtype), aligned])
    assert_exact(base.cpu(), want, what=draw)
    assert len(aligned.unique()) > 1, "a constant draw would not tell the paths apart"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_dropout_block_path_equals_element_path(dtype):
    """native_dropout's output and bool mask from an aligned input (4 elements per invocation) and
    from the same values one element off alignment (per element): the same bytes."""
    x = torch.randn(1002, dtype=dtype, device=DEV)[1:]
    torch.manual_seed(43)
    out_s, mask_s = torch.native_dropout(x, 0.3, True)
    torch.manual_seed(43)
    out_a, mask_a = torch.native_dropout(x.clone(), 0.3, True)
    assert_exact(mask_s.cpu(), mask_a.cpu())
    assert_exact(out_s.cpu(), out_a.cpu())
    assert 0 < int(mask_a.sum()) < 1001


def test_empty_and_bernoulli_edges():
    for dt in FLOATS:
        assert torch.empty(0, 4, dtype=dt, device=DEV).normal_().shape == (0, 4)
    x = torch.empty(1000, device=DEV)
    assert bool((x.bernoulli_(0.0).cpu() == 0).all())
    assert bool((x.bernoulli_(1.0).cpu() == 1).all())
    p = torch.tensor([0.0, 1.0] * 500, dtype=torch.float64, device=DEV)
    got = torch.empty(1000, dtype=torch.bool, device=DEV).bernoulli_(p).cpu()
    assert_exact(got, p.cpu().bool())
    pb = torch.rand(1, 7, device=DEV)  # broadcast p
    assert torch.empty(5, 7, dtype=torch.int64, device=DEV).bernoulli_(pb).cpu().max() <= 1
    assert_exact(torch.bernoulli(p).cpu(), p.cpu())
    with pytest.raises(RuntimeError, match="bernoulli_ expects p to be in"):
        x.bernoulli_(1.5)
    with pytest.raises(RuntimeError, match="expects std >= 0.0"):
        x.normal_(0, -1)
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to'"):
        torch.empty(3, dtype=torch.int64, device=DEV).random_(5, 2)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        torch.zeros(1, device=DEV).expand(3).uniform_()


@pytest.mark.parametrize("dtype", FLOATS)
def test_dropout_train_eval_and_gradient(dtype):
    torch.manual_seed(51)
    x = torch.randn(64, 33, dtype=dtype, device=DEV).requires_grad_()
    y = F.dropout(x, 0.4, training=True)
    mask = (y.detach() != 0).cpu()
    frac = mask.double().mean().item()
    assert abs(frac - 0.6) < 6 * math.sqrt(0.24 / mask.numel())
    wide = torch.float64 if dtype == torch.float64 else torch.float32  # torch's opmath type
    scale = torch.tensor(1 / 0.6, dtype=wide)
    xc = x.detach().cpu()
    ref = ((xc * mask).to(wide) * scale).to(dtype)  # torch: input * mask * (1 / (1 - p))
    assert_exact(y.detach().cpu(), ref)
    y.backward(torch.ones_like(y))
    assert_exact(x.grad.cpu(), (mask.to(wide) * scale).to(dtype))
    assert_exact(F.dropout(x, 0.4, training=False).detach().cpu(), xc)
    assert bool((F.dropout(x, 1.0, training=True).detach().cpu() == 0).all())
    out, m = torch.native_dropout(x.detach().t(), 0.5, True)  # a strided input
    assert m.dtype == torch.bool and out.shape == (33, 64)
    assert_exact(out.cpu(), ((x.detach().t().cpu() * m.cpu()).to(wide) * 2).to(dtype))


def test_randperm():
    torch.manual_seed(61)
    for n in (0, 1, 2, 1000):
        a = torch.randperm(n, device=DEV)
        assert a.device.type == torch.device(DEV).type and a.dtype == torch.int64
        assert_exact(a.cpu().sort().values, torch.arange(n))
    torch.manual_seed(62)
    a = torch.randperm(500, device=DEV).cpu()
    torch.manual_seed(62)
    assert_exact(torch.randperm(500, device=DEV).cpu(), a)
    assert not torch.equal(a, torch.arange(500))
    assert_exact(torch.randperm(20, dtype=torch.float32, device=DEV).cpu().sort().values, torch.arange(20.0))
    with pytest.raises(RuntimeError) as cpu_e:
        torch.randperm(-1)
    with pytest.raises(RuntimeError) as dev_e:
        torch.randperm(-1, device=DEV)
    assert str(dev_e.value) == str(cpu_e.value)


def test_over_65535_workgroups_and_check_mode():
    """65536 * 128 + 5 elements: a grid past one dimension's 65,535 groups. The tail is compared
    with the numpy stream; under check mode the oracle compares every element bit for bit."""
    n = 65536 * 128 + 5
    torch.manual_seed(71)
    seed, off = state()
    x = torch.empty(n, device=DEV).uniform_()
    tail = x[-300:].cpu().double().numpy()
    assert np.array_equal(tail, ref_uniform01(philox(seed, off, np.arange(n - 300, n), words=1), torch.float32))
    with check_mode():
        torch.empty(70000, device=DEV).normal_()
        torch.empty(3000, dtype=torch.float64, device=DEV).normal_()
        torch.empty(3000, dtype=torch.bfloat16, device=DEV).t().exponential_()
        F.dropout(torch.randn(5000, device=DEV), 0.3)


@pytest.mark.parametrize("op,draw", [("rng_normal", lambda: torch.empty(500, device=DEV).normal_()),
                                     ("rng_dropout", lambda: F.dropout(torch.ones(500, device=DEV), 0.5)),
                                     ("rng_random", lambda: torch.randint(0, 100, (500,), device=DEV))])
def test_check_mode_catches_a_broken_kernel(op, draw):
    """The oracle reproduces the draws, so a broken build of random.comp (broken_shaders.py: every
    store corrupted) fails check mode, naming the op; without check mode the wrong numbers come
    back (they differ from the built-in shader's for the same seed)."""
    from broken_shaders import broken_dir, loaded, stem_blobs
    torch.manual_seed(1)
    want = draw().cpu()
    vkml_torch.set_check(False)
    with loaded(broken_dir("random", stem_blobs("random", "int64" if op == "rng_random" else "float32"))):
        torch.manual_seed(1)
        assert not torch.equal(draw().cpu(), want), "broken shader not loaded"
        with pytest.raises(RuntimeError, match=rf"vkml check failed: op {op}\b.*exact"):
            with check_mode():
                draw().cpu()
    with check_mode():
        torch.manual_seed(1)
        assert_exact(draw().cpu(), want)
