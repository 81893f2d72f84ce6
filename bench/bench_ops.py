#!/usr/bin/env python3
"""vkml vs torch CPU (and torch CUDA when present), in one process. See bench/README.md.

    python bench/bench_ops.py [--full | --small] [--cases a,b,c,d] [--repeats N]

Cases: (a) host cost of recording a tiny op (vkml records without submitting; one synchronize
after the loop, reported separately), (b) the same with a synchronize after every op (eager
cost), (c) MLP training steps per second, (d) bandwidth of a large add. Every figure is the median
of --repeats timed runs after a warm-up.
"""
import argparse
import statistics
import time

import torch
from torch import nn

try:
    import vkml_torch
except ImportError as e:  # the bench still compares CPU and CUDA without the extension
    vkml_torch, _import_error = None, str(e)

# (small, full) sizes; "small" is the default on a CPU-type Vulkan device (Mesa lavapipe).
SIZES = {
    "tiny_ops": (2000, 2000),          # ops per timed loop in (a)
    "eager_ops": (200, 2000),          # ops per timed loop in (b)
    "mlp": ((784, 256, 256, 10, 64, 10), (784, 2048, 2048, 10, 64, 50)),  # in, h1, h2, out, batch, steps
    "add_numel": (1 << 22, 1 << 26),   # 4M / 64M float32 elements for (d)
    "add_iters": (5, 20),
}


def sync_fn(dev):
    if dev.type == "vkml":
        return torch.vkml.synchronize
    if dev.type == "cuda":
        return torch.cuda.synchronize
    return lambda: None


def median_of(repeats, fn):
    return statistics.median(fn() for _ in range(repeats))


def stat(key):
    return vkml_torch.stats()[key] if vkml_torch is not None else 0


# ---- (a) and (b): tiny ops ------------------------------------------------------------------------
def tiny_record(dev, n, repeats):
    """(us per op while recording, us for the one synchronize after the loop,
    (vkml nodes, vkml submits) of the last loop)."""
    sync = sync_fn(dev)
    a, b = torch.ones(4, device=dev), torch.ones(4, device=dev)
    for _ in range(100):
        c = a + b
    sync()
    rec, fin = [], []
    for _ in range(repeats):
        counts = (stat("nodes"), stat("submits"))
        t0 = time.perf_counter()
        for _ in range(n):
            c = a + b
        t1 = time.perf_counter()
        sync()
        t2 = time.perf_counter()
        rec.append((t1 - t0) / n * 1e6)
        fin.append((t2 - t1) * 1e6)
        counts = (stat("nodes") - counts[0], stat("submits") - counts[1])
    del c
    return statistics.median(rec), statistics.median(fin), counts


def tiny_eager(dev, n, repeats):
    """us per op with a synchronize after every op."""
    sync = sync_fn(dev)
    a, b = torch.ones(4, device=dev), torch.ones(4, device=dev)
    for _ in range(20):
        c = a + b
        sync()

    def once():
        t0 = time.perf_counter()
        for _ in range(n):
            c = a + b
            sync()
        return (time.perf_counter() - t0) / n * 1e6
    return median_of(repeats, once)


# ---- (c): MLP training steps ----------------------------------------------------------------------
def mlp_steps(dev, sizes, repeats):
    d_in, h1, h2, d_out, batch, steps = sizes
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(d_in, h1), nn.ReLU(), nn.Linear(h1, h2), nn.ReLU(),
                          nn.Linear(h2, d_out)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.randn(batch, d_in).to(dev)
    y = torch.randint(0, d_out, (batch,)).to(dev)
    sync = sync_fn(dev)

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

    for _ in range(3):
        step()
    sync()

    def once():
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        sync()
        return steps / (time.perf_counter() - t0)
    return median_of(repeats, once)


# ---- (d): large add bandwidth -----------------------------------------------------------------
def add_bandwidth(dev, numel, iters, repeats):
    """GB/s counting the bytes read and written (3 x 4 bytes per element)."""
    a = torch.ones(numel).to(dev)
    b = torch.ones(numel).to(dev)
    c = torch.empty(numel, device=dev)
    sync = sync_fn(dev)
    torch.add(a, b, out=c)
    sync()

    def once():
        t0 = time.perf_counter()
        for _ in range(iters):
            torch.add(a, b, out=c)
        sync()
        return 12 * numel * iters / (time.perf_counter() - t0) / 1e9
    return median_of(repeats, once)


# ---- driver ---------------------------------------------------------------------------------------
def fmt(v):
    if v is None:
        return "-"
    return f"{v:,.1f}" if v >= 10 else f"{v:.3g}"


def ratio(v, ref):
    return "-" if v is None or not ref else f"{v / ref:.2f}x"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--full", action="store_true", help="large sizes even on a CPU-type Vulkan device")
    size.add_argument("--small", action="store_true", help="small sizes even on a real GPU")
    ap.add_argument("--cases", default="a,b,c,d", help="comma-separated subset of a,b,c,d")
    ap.add_argument("--repeats", type=int, default=5, help="timed runs per figure (median reported)")
    args = ap.parse_args()
    cases = set(args.cases.split(","))

    devs = [torch.device("cpu")]
    vk = None
    if vkml_torch is None:
        print(f"vkml: not importable ({_import_error}); comparing the others only")
    elif not vkml_torch.is_available():
        print(f"vkml: no device ({vkml_torch.why_unavailable()}); comparing the others only")
    else:
        vk = torch.device("vkml", 0)
        devs.insert(0, vk)
        print(vkml_torch.best_device()[1])
    if torch.cuda.is_available():
        devs.append(torch.device("cuda", 0))
        print(f"cuda: {torch.cuda.get_device_name(0)}")

    cpu_vulkan = vk is not None and getattr(torch.vkml.get_device_properties(0), "type", "") == "cpu"
    full = args.full or not (args.small or cpu_vulkan)
    pick = {k: v[1] if full else v[0] for k, v in SIZES.items()}
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads, "
          f"{'full' if full else 'small'} sizes, median of {args.repeats}\n")

    rows = []  # (label, unit, better, {device type: value}, note)
    if "a" in cases:
        n = pick["tiny_ops"]
        res, fin, note = {}, {}, ""
        for d in devs:
            res[d.type], fin[d.type], counts = tiny_record(d, n, args.repeats)
            if d.type == "vkml":
                note = f"vkml: {counts[0]} nodes recorded, {counts[1]} submit(s) for a loop of {n} ops"
        rows.append((f"(a) record c = a + b, 4 elements x {n}", "us/op", "lower", res, note))
        rows.append(("    then one synchronize", "us", "lower",
                     {k: v for k, v in fin.items() if k != "cpu"}, ""))
    if "b" in cases:
        n = pick["eager_ops"]
        rows.append((f"(b) c = a + b; synchronize, x {n}", "us/op", "lower",
                     {d.type: tiny_eager(d, n, args.repeats) for d in devs}, ""))
    if "c" in cases:
        m = pick["mlp"]
        label = f"(c) MLP {m[0]}-{m[1]}-{m[2]}-{m[3]} SGD, batch {m[4]}"
        rows.append((label, "steps/s", "higher",
                     {d.type: mlp_steps(d, m, args.repeats) for d in devs}, ""))
    if "d" in cases:
        numel, iters = pick["add_numel"], pick["add_iters"]
        rows.append((f"(d) add {numel / 2**20:.0f}M float32 (read 2 + write 1)", "GB/s", "higher",
                     {d.type: add_bandwidth(d, numel, iters, args.repeats) for d in devs}, ""))

    has_cuda = any(d.type == "cuda" for d in devs)
    head = f"{'case':<46}{'unit':>8}{'vkml':>11}{'cpu':>11}"
    head += (f"{'cuda':>11}" if has_cuda else "") + f"{'vkml/cpu':>10}" + (f"{'vkml/cuda':>11}" if has_cuda else "")
    print(head)
    print("-" * len(head))
    for label, unit, better, vals, note in rows:
        v = vals.get("vkml")
        line = f"{label:<46}{unit:>8}{fmt(v):>11}{fmt(vals.get('cpu')):>11}"
        if has_cuda:
            line += f"{fmt(vals.get('cuda')):>11}"
        line += f"{ratio(v, vals.get('cpu')):>10}"
        if has_cuda:
            line += f"{ratio(v, vals.get('cuda')):>11}"
        print(line + f"   ({better} is better)")
        if note:
            print(f"{'':<6}{note}")


if __name__ == "__main__":
    main()
