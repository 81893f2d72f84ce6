"""The timed cases of bench_ops.py, one function per case; torch only, never vkml_torch.

Run as a script it is the child process of case (c) (see bench/README.md, pytorch issue #161129):

    TORCH_DEVICE_BACKEND_AUTOLOAD=0 python bench/bench_cases.py mlp DEVICE '[784,256,256,10,64,10]' REPEATS THREADS

prints one JSON line: steps_per_s, plus what the child saw of the PrivateUse1 backend, so the parent
can tell that no backend was registered in it.
"""
import json
import statistics
import sys
import time

import torch
from torch import nn


def sync_fn(dev):
    if dev.type == "vkml":
        return torch.vkml.synchronize
    if dev.type == "cuda":
        return torch.cuda.synchronize
    return lambda: None


def median_of(repeats, fn):
    return statistics.median(fn() for _ in range(repeats))


# ---- (a) and (b): tiny ops ------------------------------------------------------------------------
def tiny_record(dev, n, repeats, stat):
    """(us per op while recording, us for the one synchronize after the loop,
    (nodes, submits, submit_us, wait_us) of the last loop as counted by stat(key))."""
    sync = sync_fn(dev)
    a, b = torch.ones(4, device=dev), torch.ones(4, device=dev)
    for _ in range(100):
        c = a + b
    sync()
    rec, fin = [], []
    for _ in range(repeats):
        keys = ("nodes", "submits", "submit_us", "wait_us")
        counts = [stat(k) for k in keys]
        t0 = time.perf_counter()
        for _ in range(n):
            c = a + b
        t1 = time.perf_counter()
        sync()
        t2 = time.perf_counter()
        rec.append((t1 - t0) / n * 1e6)
        fin.append((t2 - t1) * 1e6)
        counts = [stat(k) - c for k, c in zip(keys, counts)]
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


# ---- (e): a chain of dependent tiny ops, one synchronize ----------------------------------------
def op_chain(dev, length, chains, repeats, stat):
    """(kop/s over `chains` chains of `length` dependent ops on 4 elements, each chain followed by
    one synchronize; (nodes, submits) of the last timed run)."""
    sync = sync_fn(dev)
    a, b, c = (torch.full((4,), v, device=dev) for v in (1.0, 1e-3, 0.5))

    def chain():
        y = a  # the first op makes a new tensor: a itself is never written
        for _ in range(length // 2):
            y = y * c
            y = y + b
        sync()
        return y
    chain()
    counts = (0, 0)

    def once():
        nonlocal counts
        before = (stat("nodes"), stat("submits"))
        t0 = time.perf_counter()
        for _ in range(chains):
            chain()
        dt = time.perf_counter() - t0
        counts = (stat("nodes") - before[0], stat("submits") - before[1])
        return length // 2 * 2 * chains / dt / 1e3
    return median_of(repeats, once), counts


# ---- (f): matmul ----------------------------------------------------------------------------------
def matmul_tflops(dev, n, repeats, budget_s):
    """(TFLOP/s of an n x n float32 matmul, why skipped or shortened, or ""). A warm-up slower than
    budget_s skips the device; timed runs stop once budget_s is spent (median of those done)."""
    g = torch.Generator().manual_seed(0)
    a = torch.randn(n, n, generator=g).to(dev)
    b = torch.randn(n, n, generator=g).to(dev)
    sync = sync_fn(dev)
    t0 = time.perf_counter()
    c = a @ b
    sync()
    warm = time.perf_counter() - t0
    if warm > budget_s:
        return None, f"skipped: one warm-up matmul took {warm:.1f} s (--budget {budget_s:g} s)"
    runs, spent = [], 0.0
    while len(runs) < repeats and (not runs or spent + runs[-1] <= budget_s):
        t0 = time.perf_counter()
        c = a @ b
        sync()
        runs.append(time.perf_counter() - t0)
        spent += runs[-1]
    del c
    note = f"median of {len(runs)} run(s), --budget {budget_s:g} s spent" if len(runs) < repeats else ""
    return 2 * n ** 3 / statistics.median(runs) / 1e12, note


# ---- (g): softmax over rows -----------------------------------------------------------------------
def softmax_bandwidth(dev, n, iters, repeats):
    """GB/s of softmax over the rows of an n x n float32 matrix, counting one read and one write."""
    x = torch.randn(n, n, generator=torch.Generator().manual_seed(0)).to(dev)
    sync = sync_fn(dev)
    y = torch.softmax(x, dim=1)
    sync()

    def once():
        t0 = time.perf_counter()
        for _ in range(iters):
            torch.softmax(x, dim=1)
        sync()
        return 8 * n * n * iters / (time.perf_counter() - t0) / 1e9
    del y
    return median_of(repeats, once)


def _mlp_child(argv):
    """The child process of case (c): same mlp_steps, same sizes, in a process without vkml."""
    dev, sizes, repeats, threads = torch.device(argv[0]), json.loads(argv[1]), int(argv[2]), int(argv[3])
    torch.set_num_threads(threads)
    steps = mlp_steps(dev, sizes, repeats)
    print(json.dumps({"device": str(dev), "steps_per_s": steps, "vkml_imported": "vkml_torch" in sys.modules,
                      "privateuse1": torch._C._get_privateuse1_backend_name()}))


if __name__ == "__main__":
    if len(sys.argv) != 6 or sys.argv[1] != "mlp":
        sys.exit("usage: bench_cases.py mlp DEVICE SIZES_JSON REPEATS THREADS")
    _mlp_child(sys.argv[2:])
