"""Does recording overlap execution? N tiny adds, then one synchronize, timed in two child
processes: the pending bound at its default (VKML_MAX_PENDING=4096: full batches go to the GPU
without waiting while recording goes on) and above N (one batch, submitted at the synchronize).
Prints the wall time of each, the split from vkml_torch.stats(), and the ratio.

    python bench/bench_flush.py [--ops 40000] [--repeats 5]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def child(n, repeats):
    import torch
    import vkml_torch
    a, b = torch.ones(4, device="vkml"), torch.ones(4, device="vkml")
    for _ in range(100):
        c = a + b
    torch.vkml.synchronize()
    walls, last = [], {}
    for _ in range(repeats):
        s0 = vkml_torch.stats()
        t0 = time.perf_counter()
        for _ in range(n):
            c = a + b
        t1 = time.perf_counter()
        torch.vkml.synchronize()
        t2 = time.perf_counter()
        s1 = vkml_torch.stats()
        walls.append((t2 - t0) * 1e3)
        last = {"record_ms": (t1 - t0) * 1e3, "sync_ms": (t2 - t1) * 1e3, "submits": s1["submits"] - s0["submits"],
                "submit_ms": (s1["submit_us"] - s0["submit_us"]) / 1e3, "wait_ms": (s1["wait_us"] - s0["wait_us"]) / 1e3}
    del c
    print(json.dumps(dict(last, wall_ms=statistics.median(walls))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", type=int, default=40000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.ops, args.repeats)
    res = {}
    for label, pending in (("bound 4096 (async batches)", "4096"), (f"bound {args.ops + 1} (one batch)", str(args.ops + 1))):
        env = dict(os.environ, VKML_MAX_PENDING=pending)
        p = subprocess.run([sys.executable, __file__, "--child", "--ops", str(args.ops), "--repeats", str(args.repeats)],
                           env=env, capture_output=True, text=True, timeout=600)
        if p.returncode:
            sys.exit(f"child with VKML_MAX_PENDING={pending} failed: {p.stderr.strip()[-500:]}")
        res[label] = json.loads(p.stdout.strip().splitlines()[-1])
    print(f"{args.ops} tiny adds then one synchronize, median of {args.repeats} (ms)")
    for label, r in res.items():
        print(f"  {label:32s} wall {r['wall_ms']:9.1f}  (recording {r['record_ms']:.1f}, synchronize {r['sync_ms']:.1f};"
              f" {r['submits']} submits, building {r['submit_ms']:.1f}, waiting {r['wait_ms']:.1f})")
    w = [r["wall_ms"] for r in res.values()]
    print(f"  async / one batch: {w[0] / w[1]:.2f}x (lower is better)")


if __name__ == "__main__":
    main()
