"""Host cost per call of an op registered from torch._decomp (vkml_torch/_decomp.py) against a
native row doing the same work, on 4-element tensors, recording only (one synchronize after).

    .venv/bin/python bench/bench_decomp.py [--n 2000] [--repeats 5]
"""
import argparse
import statistics
import time

import torch
import torch.nn.functional as F
import vkml_torch  # noqa: F401


def per_call_us(fn, x, n, repeats):
    for _ in range(50):
        fn(x)
    torch.vkml.synchronize()
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn(x)
        runs.append((time.perf_counter() - t0) / n * 1e6)
        torch.vkml.synchronize()
    return statistics.median(runs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    x = torch.randn(4, device="vkml")
    cases = [("hardtanh (decomposition: one clamp)", lambda t: F.hardtanh(t, -0.5, 0.5)),
             ("clamp (native row)", lambda t: torch.clamp(t, -0.5, 0.5)),
             ("leaky_relu (decomposition: gt, mul, where)", lambda t: F.leaky_relu(t, 0.1)),
             ("relu (native row)", torch.relu)]
    xc = x.cpu()
    print(f"{'case':45s} {'vkml us/call':>12s} {'cpu us/call':>12s}")
    for name, fn in cases:
        print(f"{name:45s} {per_call_us(fn, x, a.n, a.repeats):12.1f} {per_call_us(fn, xc, a.n, a.repeats):12.1f}")


if __name__ == "__main__":
    main()
