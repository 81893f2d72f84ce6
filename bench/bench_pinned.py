"""Uploads from pinned memory: `x.to("vkml", non_blocking=True)` with x pinned (x.pin_memory(): the
device's mapped staging memory, which the GPU copies from directly) against x in ordinary pageable
memory (copied into a staging buffer on the host first, then by the GPU), and the blocking copy
from pinned memory (its bytes are captured at the call, as from pageable memory).

Times the call (host, recording) and the call plus torch.vkml.synchronize() (the whole upload), as
medians over --repeats, and prints GB/s of the whole upload.

    python bench/bench_pinned.py [--mib 64] [--repeats 9]
"""
import argparse
import statistics
import time

import torch
import vkml_torch  # noqa: F401


def time_upload(src, non_blocking, repeats):
    calls, totals = [], []
    for _ in range(repeats + 1):  # the first one warms the allocator's pools
        torch.vkml.synchronize()
        t0 = time.perf_counter()
        d = src.to("vkml", non_blocking=non_blocking)
        t1 = time.perf_counter()
        torch.vkml.synchronize()
        t2 = time.perf_counter()
        calls.append(t1 - t0)
        totals.append(t2 - t0)
        del d
    return statistics.median(calls[1:]), statistics.median(totals[1:])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=9)
    a = ap.parse_args()
    n = a.mib * (1 << 20) // 4
    pageable = torch.rand(n)
    pinned = pageable.pin_memory()
    assert pinned.is_pinned() and not pageable.is_pinned()
    print(f"{torch.vkml.get_device_name()}: upload of {a.mib} MiB float32, median of {a.repeats}")
    print(f"{'source':<34} {'call ms':>9} {'call+sync ms':>13} {'GB/s':>7}")
    rows = [("pageable, non_blocking=True", pageable, True), ("pinned, non_blocking=False", pinned, False),
            ("pinned, non_blocking=True", pinned, True)]
    for name, src, nb in rows:
        call, total = time_upload(src, nb, a.repeats)
        print(f"{name:<34} {call * 1e3:9.2f} {total * 1e3:13.2f} {a.mib * (1 << 20) / total / 1e9:7.2f}")


if __name__ == "__main__":
    main()
