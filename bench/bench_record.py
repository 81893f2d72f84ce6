"""Per-op recording cost: tiny ops recorded on vkml (lazy, nothing runs until the synchronize
after each loop, which is not timed) against the same ops run eagerly by torch CPU on the same
tiny tensors, interleaved loop by loop in one process so that both see the same machine load.

    .venv/bin/python bench/bench_record.py [--rounds 15] [--n 1000] [--ops add,mul_s,relu,add_]

Prints, per op, the median and range (min-max) over the rounds of vkml's and CPU's us/op and of
their ratio (each round's vkml loop over the CPU loop right after it), and the ratio of the two
fastest loops ("best"): load from other processes only ever adds time, so on a shared machine the
fastest loops are the least disturbed figures."""
import argparse
import statistics
import time

import torch
import vkml_torch  # noqa: F401


def ops(dev):
    a, b = torch.ones(4, device=dev), torch.ones(4, device=dev)
    return {
        "add": lambda: a + b,
        "mul_s": lambda: a * 2.0,
        "relu": lambda: a.relu(),
        "add_": lambda: a.add_(b),
        "neg": lambda: -a,
        "lt": lambda: a < b,
        "lerp_": lambda: a.lerp_(b, 0.1),                   # Adam's first moment (a row)
        "addcmul_": lambda: a.addcmul_(b, b, value=0.01),  # its second moment (a row)
        "addcdiv_": lambda: a.addcdiv_(b, b, value=-0.01),  # its update (a row)
    }


def loop(f, n):
    t0 = time.perf_counter()
    for _ in range(n):
        f()
    return (time.perf_counter() - t0) / n * 1e6


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--ops", default="add,mul_s,relu,add_")
    args = p.parse_args()
    vk, cpu = ops(torch.device("vkml")), ops(torch.device("cpu"))
    sync = torch.vkml.synchronize
    for name in args.ops.split(","):
        fv, fc = vk[name], cpu[name]
        for _ in range(3):  # warm-up: pipelines, allocator, caches
            loop(fv, args.n)
            sync()
            loop(fc, args.n)
        rv, rc, rr = [], [], []
        for _ in range(args.rounds):
            v = loop(fv, args.n)
            sync()
            c = loop(fc, args.n)
            rv.append(v), rc.append(c), rr.append(v / c)

        def q(xs):
            return f"{statistics.median(xs):5.2f} [{min(xs):.2f}-{max(xs):.2f}]"
        print(f"{name:6s} vkml {q(rv)} us  cpu {q(rc)} us  ratio {q(rr)}x  best {min(rv) / min(rc):.2f}x",
              flush=True)


if __name__ == "__main__":
    main()
