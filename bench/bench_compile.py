"""Which pipelines the driver takes long to compile: run a workload, then list every pipeline made
(vkml_torch.pipeline_cache()["made"]), slowest first, with the total.

    python bench/bench_compile.py                 # the demo's training (python -m vkml_torch.demo)
    python bench/bench_compile.py --ops           # also matmul, softmax, sum, layer_norm, Adam
    VKML_CACHE_DIR=off python bench/bench_compile.py   # nothing from vkml's disk cache

A cold figure needs the driver's own shader cache empty too (NVIDIA: __GL_SHADER_DISK_CACHE=0, or
__GL_SHADER_DISK_CACHE_PATH set to an empty folder; scripts/device_test.sh bench does that).
"""
import argparse
import contextlib
import io
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402

import vkml_torch  # noqa: E402


def ops(dev):
    """A few families the demo does not reach, at small sizes (the shapes do not change the
    pipeline; the dtype and the chosen tile do)."""
    for dt in (torch.float32, torch.float16):
        a = torch.randn(256, 256, dtype=dt).to(dev)
        (a @ a).sum().item()
        a.softmax(-1).sum(-1).cpu()
        torch.nn.functional.layer_norm(a, (256,)).cpu()
    x = torch.randn(1, 4096).to(dev)
    w = torch.randn(4096, 256).to(dev)
    (x @ w).cpu()
    lin = torch.nn.Linear(64, 64).to(dev)
    opt = torch.optim.Adam(lin.parameters())
    lin(torch.randn(8, 64).to(dev)).square().mean().backward()
    opt.step()
    lin.weight.cpu()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", action="store_true", help="also run a few op families the demo lacks")
    ap.add_argument("--top", type=int, default=15, help="how many pipelines to list")
    args = ap.parse_args()
    t0 = time.perf_counter()
    from vkml_torch import demo
    with contextlib.redirect_stdout(io.StringIO()):
        demo.main()
    t_demo = time.perf_counter() - t0
    if args.ops:
        ops(torch.device("vkml"))
    wall = time.perf_counter() - t0
    made = vkml_torch.pipeline_cache()["made"]
    total = sum(m["ms"] for m in made)
    hits = sum(m["cache_hit"] for m in made)
    print(f"{len(made)} pipelines made ({hits} from the disk cache) in {total / 1e3:.2f} s of "
          f"{wall:.2f} s wall (the demo: {t_demo:.2f} s); slowest first:")
    print(f"{'shader':<28} {'opcode':>7} {'ms':>10} {'cache':>6}")
    for m in sorted(made, key=lambda m: -m["ms"])[:args.top]:
        print(f"{m['shader']:<28} {m['opcode']:>7} {m['ms']:>10.1f} {'hit' if m['cache_hit'] else '-':>6}")
    by_shader = {}
    for m in made:
        n, ms = by_shader.get(m["shader"], (0, 0.0))
        by_shader[m["shader"]] = (n + 1, ms + m["ms"])
    print("by shader: " + ", ".join(f"{s} {n}x {ms / 1e3:.2f} s"
                                    for s, (n, ms) in sorted(by_shader.items(), key=lambda kv: -kv[1][1])))


if __name__ == "__main__":
    main()
