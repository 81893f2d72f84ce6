"""Random numbers: dropout and randn on vkml (device draws, and the CPU stream mode that draws on the
host and uploads) against torch CPU in the same process, and torch CUDA when this process has it.
Each case warms up, times with a device sync and reports the median of several runs.

    .venv/bin/python bench/bench_random.py            # small sizes (lavapipe, a CPU "GPU")
    .venv/bin/python bench/bench_random.py --full     # dropout on 64M elements, randn 64M (a real GPU)

Prints elements per second and the ratio vkml / torch CPU (and vkml / CUDA where present).
"""
import argparse
import statistics
import time

import torch
import torch.nn.functional as F
import vkml_torch


def sync(dev):
    if dev == "vkml":
        torch.vkml.synchronize()
    elif dev == "cuda":
        torch.cuda.synchronize()


def timed(dev, fn, repeats, warmup=2):
    for _ in range(warmup):
        fn()
    sync(dev)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        sync(dev)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def cases(n):
    def dropout(dev):
        x = torch.randn(n, device=dev)
        return lambda: F.dropout(x, 0.1, training=True)

    def randn(dev):
        out = torch.empty(n, device=dev)
        return lambda: out.normal_()

    def rand(dev):
        out = torch.empty(n, device=dev)
        return lambda: out.uniform_()

    return {"dropout p=0.1": dropout, "randn (normal_)": randn, "rand (uniform_)": rand}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--full", action="store_true", help="64M elements (for a real GPU)")
    ap.add_argument("--n", type=int, default=0, help="elements (default 1M, 64M with --full)")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    n = args.n or (64 << 20 if args.full else 1 << 20)
    devs = ["cpu", "vkml"] + (["cuda"] if torch.cuda.is_available() else [])
    print(f"{n:,} float32 elements; median of {args.repeats}; vkml on {vkml_torch.best_device()[1]}")
    print(f"{'case':<18}{'device':<14}{'Melem/s':>10}{'vs cpu':>9}{'vs cuda':>9}")
    for name, make in cases(n).items():
        rates = {}
        for dev in devs:
            modes = ["device", "cpu"] if dev == "vkml" else [None]
            for mode in modes:
                if mode:
                    vkml_torch.set_rng_mode(mode)
                label = dev if not mode else f"vkml/{mode}"
                t = timed(dev, make(dev), args.repeats)
                rates[label] = n / t / 1e6
        vkml_torch.set_rng_mode("device")
        for label, r in rates.items():
            vs_cpu = f"{r / rates['cpu']:.2f}x"
            vs_cuda = f"{r / rates['cuda']:.2f}x" if "cuda" in rates else "-"
            print(f"{name:<18}{label:<14}{r:>10.1f}{vs_cpu:>9}{vs_cuda:>9}")


if __name__ == "__main__":
    main()
