"""The benchmark cases: each builds its tensors on a device and returns one step to time. torch
only: the CUDA child process imports this module, and must never import vkml_torch.

A case's `work` is what one step does, in the unit's terms: bytes for GB/s, floating-point
operations for TFLOP/s, ops for kop/s and us/op; steps/s and ms need none."""
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from .counts import adam, per_step
from .timing import NotApplicable

UNITS = {  # unit: (better, value from (seconds per step, work))
    "GB/s": ("higher", lambda t, w: w / t / 1e9),
    "TFLOP/s": ("higher", lambda t, w: w / t / 1e12),
    "kop/s": ("higher", lambda t, w: w / t / 1e3),
    "steps/s": ("higher", lambda t, w: 1 / t),
    "us/op": ("lower", lambda t, w: t / w * 1e6),
    "ms": ("lower", lambda t, w: t * 1e3),
}
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


@dataclass
class Case:
    name: str
    group: str
    unit: str
    work: float
    build: object           # build(dev) -> step()
    series: str = ""        # cases of one series grow in work: a slow device skips the larger ones
    opts: dict = field(default_factory=dict)  # for timing.measure (sync_each, warmup, ...)
    note: str = ""
    fuse: bool = True       # False: vkml runs it with fusion off (vkml_torch.set_fuse), for the ratio
    counts: object = None   # counts(step, vk) -> note: vkml's dispatch counts (bench/counts.py)

    @property
    def better(self):
        return UNITS[self.unit][0]

    def value(self, seconds):
        return UNITS[self.unit][1](seconds, self.work)


def _rand(*shape, dtype=torch.float32, dev="cpu", seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).to(dtype).to(dev)


def fmt_numel(n):
    return f"{n >> 20}M" if n >= 1 << 20 else f"{n >> 10}K"


# ---- elementwise, reductions, normalisation -------------------------------------------------------
# Elementwise cases end each step with a synchronize, its result still held: unsynchronized, vkml
# would fuse the steps of a run and skip the stores that a later step overwrites or that nobody
# holds (2026-12-05 on the H100: "add 64M" at 15 TB/s, past the card's 3.35), timing less work
# than the case names. CUDA's side synchronizes the same way.
SYNC_EACH = {"sync_each": True}


def add_case(numel):
    def build(dev):
        a, b = _rand(numel, dev=dev), _rand(numel, dev=dev, seed=1)
        c = torch.empty(numel, device=dev)
        return lambda: torch.add(a, b, out=c)
    return Case(f"add {fmt_numel(numel)} f32", "elementwise", "GB/s", 12 * numel, build, "add",
                note="2 reads + 1 write; synchronized each step", opts=SYNC_EACH)


def chain8_case(numel, fuse=True):
    """Fused on vkml (one dispatch), or with fuse=False the same chain unfused (eight dispatches),
    in the same process: report.py prints the fused/unfused ratio."""
    def build(dev):
        if not fuse and dev.type != "vkml":
            raise NotApplicable("fusion is vkml's: the fused case is this device's figure")
        x = _rand(numel, dev=dev)

        def step():
            y = x * 1.5
            y = y + 0.5
            y = y.relu()
            y = y * 0.9
            y = y - 0.1
            y = y.abs()
            y = y * 2.0
            return y + 1.0
        return step
    return Case(f"chain of 8 elementwise {fmt_numel(numel)} f32" + ("" if fuse else UNFUSED), "elementwise",
                "GB/s", 8 * numel, build, "chain8" if fuse else "chain8-unfused",
                note="counts 1 read + 1 write: the bytes a fused kernel moves; synchronized each step",
                fuse=fuse, counts=per_step, opts=SYNC_EACH)


UNFUSED = ", unfused (vkml fusion off)"


def dropout_case(numel):
    def build(dev):
        x = _rand(numel, dev=dev)
        return lambda: F.dropout(x, 0.1, training=True)
    return Case(f"dropout p=0.1 {fmt_numel(numel)} f32", "elementwise", "GB/s", 8 * numel, build, "dropout",
                note="counts 1 read + 1 write; random numbers drawn where the device draws them; "
                "synchronized each step", opts=SYNC_EACH)


def randn_case(rows, cols):
    def build(dev):
        return lambda: torch.randn(rows, cols, device=dev)
    return Case(f"randn {rows}x{cols} f32", "elementwise", "ms", 1, build, note="time per call, synchronized")


def rows_case(kind, rows, cols):
    def build(dev):
        x = _rand(rows, cols, dev=dev)
        if kind == "sum":
            return lambda: x.sum(dim=1)
        if kind == "softmax":
            return lambda: torch.softmax(x, dim=1)
        w, b = _rand(cols, dev=dev, seed=1), _rand(cols, dev=dev, seed=2)
        return lambda: F.layer_norm(x, (cols,), w, b)
    io = {"sum": 4 * rows * cols + 4 * rows, "softmax": 8 * rows * cols, "layer_norm": 8 * rows * cols}[kind]
    return Case(f"{kind} over rows {rows}x{cols} f32", "reduction", "GB/s", io, build, kind,
                note="1 read" if kind == "sum" else "1 read + 1 write")


# ---- matmul -------------------------------------------------------------------------------------
def matmul_case(n, dt):
    def build(dev):
        a, b = _rand(n, n, dtype=DTYPES[dt], dev=dev), _rand(n, n, dtype=DTYPES[dt], dev=dev, seed=1)
        return lambda: a @ b
    return Case(f"matmul {n} {dt}", "matmul", "TFLOP/s", 2 * n ** 3, build, f"mm-{dt}")


def skinny_case(k, n, dt):
    es = DTYPES[dt].itemsize

    def build(dev):
        a, b = _rand(1, k, dtype=DTYPES[dt], dev=dev), _rand(k, n, dtype=DTYPES[dt], dev=dev, seed=1)
        return lambda: a @ b
    return Case(f"matmul m=1 k={k} n={n} {dt}", "matmul", "GB/s", es * (k * n + k + n), build, f"skinny-{dt}",
                note="memory-bound: counts the bytes of both operands and the result")


def bmm_case(batch, n, dt):
    def build(dev):
        a = _rand(batch, n, n, dtype=DTYPES[dt], dev=dev)
        b = _rand(batch, n, n, dtype=DTYPES[dt], dev=dev, seed=1)
        return lambda: torch.bmm(a, b)
    return Case(f"bmm {batch}x{n}x{n} {dt}", "matmul", "TFLOP/s", 2 * batch * n ** 3, build, f"bmm-{dt}")


# ---- layers ---------------------------------------------------------------------------------------
def conv_case(batch, ch, hw):
    def build(dev):
        x = _rand(batch, ch, hw, hw, dev=dev)
        w = _rand(ch, ch, 3, 3, dev=dev, seed=1) * 0.05
        return lambda: F.conv2d(x, w, padding=1)
    return Case(f"conv2d 3x3 {ch}->{ch} {hw}x{hw} batch {batch} f32 (ResNet layer)", "layers", "TFLOP/s",
                2 * batch * ch * hw * hw * ch * 9, build, "conv")


def conv_grad_case(batch, ch, hw, which, stride=1):
    """The same layer's input or weight gradient alone (aten.convolution_backward with one output
    asked for): a training step's other two convolutions. stride 2: a downsampling layer's (the
    input gradient then runs as 4 phases, docs/convolution.md)."""
    ho = (hw - 1) // stride + 1

    def build(dev):
        x = _rand(batch, ch, hw, hw, dev=dev)
        w = _rand(ch, ch, 3, 3, dev=dev, seed=1) * 0.05
        gy = _rand(batch, ch, ho, ho, dev=dev, seed=2)
        mask, k = [which == "input", which == "weight", False], 0 if which == "input" else 1
        return lambda: torch.ops.aten.convolution_backward(gy, x, w, None, [stride] * 2, [1, 1], [1, 1], False, [0, 0], 1,
                                                           mask)[k]
    st = f" stride {stride}" if stride != 1 else ""
    return Case(f"conv2d 3x3 {ch}->{ch} {hw}x{hw}{st} batch {batch} f32, {which} gradient", "layers", "TFLOP/s",
                2 * batch * ch * ho * ho * ch * 9, build, f"conv-{which}{st.replace(' ', '-')}")


def embedding_case(vocab, dim, n):
    def build(dev):
        w = _rand(vocab, dim, dev=dev)
        idx = torch.randint(0, vocab, (n,), generator=torch.Generator().manual_seed(0)).to(dev)
        return lambda: F.embedding(idx, w)
    return Case(f"embedding {n} of {vocab}x{dim} f32", "layers", "GB/s", 8 * n * dim + 8 * n, build, "emb",
                note="rows read + written, indices read")


# ---- training steps -------------------------------------------------------------------------------
def mlp_case(d_in, h, d_out, batch):
    def build(dev):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(d_in, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU(), nn.Linear(h, d_out)).to(dev)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        x, y = _rand(batch, d_in, dev=dev), torch.randint(0, d_out, (batch,)).to(dev)

        def step():
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
        step.params = list(model.parameters())  # counts.adam steps them again with their gradients
        return step
    return Case(f"MLP {d_in}-{h}-{h}-{d_out} Adam, batch {batch}, sync each step", "training", "steps/s", 1,
                build, opts={"sync_each": True, "warmup": 30}, counts=adam)


def transformer_case(d_model, nhead, ff, seq, batch):
    def build(dev):
        torch.manual_seed(0)
        layer = nn.TransformerEncoderLayer(d_model, nhead, ff, batch_first=True).to(dev)
        opt = torch.optim.Adam(layer.parameters(), lr=1e-4)
        x = _rand(batch, seq, d_model, dev=dev)

        def step():
            opt.zero_grad()
            layer(x).pow(2).mean().backward()
            opt.step()
        return step
    return Case(f"TransformerEncoderLayer d={d_model} heads={nhead} ff={ff}, {batch}x{seq} tokens, Adam",
                "training", "steps/s", 1, build, opts={"sync_each": True, "warmup": 10},
                note="dropout 0.1 (the default): random numbers every step")


# ---- host cost, copies ----------------------------------------------------------------------------
def dependent_ops_case(n=1000):
    def build(dev):
        a, b, c = (torch.full((4,), v, device=dev) for v in (1.0, 1e-3, 0.5))
        sync = {"vkml": lambda: torch.vkml.synchronize(), "cuda": torch.cuda.synchronize}.get(dev.type, lambda: None)

        def step():
            y = a
            for _ in range(n // 2):
                y = y * c
                y = y + b
            sync()
        return step
    return Case(f"{n} dependent tiny ops (4 elements) + sync", "host", "kop/s", n, build)


def record_case(n=1000):
    def build(dev):
        a, b = torch.ones(4, device=dev), torch.ones(4, device=dev)

        def step():
            for _ in range(n):
                a + b
        return step
    return Case(f"record c = a + b (4 elements), host time, no sync", "host", "us/op", n, build,
                opts={"sync_in_timing": False}, note="the host's cost per op (synchronize not timed)")


def _pinned_for(t, dev, pinned):
    """A pinned case measures dev's pinned memory or nothing: with a CUDA build of torch,
    pin_memory() is CUDA's allocator even with vkml loaded (torch asks CUDA first), and the copy
    would take vkml's pageable path under the pinned name (H100, 2026-12-06)."""
    if pinned and dev.type != "cuda" and not t.is_pinned():
        raise NotApplicable(f"pin_memory() did not give {dev.type}'s pinned memory (a CUDA build of torch)")


def copy_case(direction, pinned, mib):
    numel = mib * (1 << 20) // 4

    def build(dev):
        if dev.type == "cpu":
            raise NotApplicable("a host-device copy")
        if direction == "H2D":
            src = torch.rand(numel)
            src = src.pin_memory() if pinned else src
            _pinned_for(src, dev, pinned)
            return lambda: src.to(dev, non_blocking=True)
        x = torch.rand(numel).to(dev)
        if not pinned:
            return lambda: x.to("cpu")
        # .pin_memory() asks the accelerator (vkml where it is loaded); empty(pin_memory=True)
        # asks CUDA first, on a CUDA build
        dst = torch.empty(numel).pin_memory()
        _pinned_for(dst, dev, pinned)
        return lambda: dst.copy_(x, non_blocking=True)
    kind = "pinned" if pinned else "pageable"
    return Case(f"{direction} copy {mib} MiB {kind}", "copies", "GB/s", numel * 4, build, f"copy-{direction}-{kind}")


def d2d_case(mib):
    """copy_ between two dense tensors on the device: counts 1 read + 1 write."""
    numel = mib * (1 << 20) // 4

    def build(dev):
        x = _rand(numel, dev=dev)
        y = torch.empty(numel, device=dev)
        return lambda: y.copy_(x)
    return Case(f"D2D copy_ {mib} MiB", "copies", "GB/s", 2 * numel * 4, build, "copy-D2D",
                note="1 read + 1 write; synchronized each step", opts=SYNC_EACH)
