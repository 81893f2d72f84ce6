"""vkml against torch CPU (same process) and torch CUDA (a child process), case by case.

    python -m bench [--full | --small] [--only WORDS] [--numel 1M,16M] [--mm 256,1024] [--repeats N]
                    [--budget S] [--threads N] [--json PATH] [--list] [--cpu-in-child]
    python -m bench --profile WORDS [--steps N] [--trace PATH]

Prints a table of each device's figure and the ratios vkml/CPU and vkml/CUDA, and writes the
same as JSON (default build/bench.json). See bench/README.md."""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time

import torch

from . import suite
from .report import fusion_ratios, print_fusion, print_table
from .run import run_device

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def child_results(dev_type, args, timeout=3600):
    """{case: result} of every selected case on dev_type, timed in a child process that has no
    PrivateUse1 backend; raises RuntimeError when the child fails or had one."""
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    a = {"full": args.full_sizes, "numel": args.numel, "mm": args.mm, "only": args.only, "repeats": args.repeats,
         "min_time": args.min_time, "budget": args.budget, "threads": torch.get_num_threads()}
    p = subprocess.run([sys.executable, "-m", "bench.child", dev_type, json.dumps(a)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=timeout)
    if args.verbose and p.stderr:
        print(p.stderr, end="", file=sys.stderr)
    if p.returncode != 0:
        tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"{dev_type} child exited with {p.returncode}: {tail}")
    res = json.loads(p.stdout.strip().splitlines()[-1])
    if res["vkml_imported"] or res["privateuse1"] != "privateuseone":
        raise RuntimeError(f"{dev_type} child had a PrivateUse1 backend registered "
                           f"(vkml_imported={res['vkml_imported']}, privateuse1={res['privateuse1']!r})")
    return res["results"]


def load_vkml():
    """(vkml_torch or None, a line about the device)."""
    try:
        import vkml_torch
    except ImportError as e:
        return None, f"vkml: not importable ({e}); comparing the others only"
    if not vkml_torch.is_available():
        return None, f"vkml: no device ({vkml_torch.why_unavailable()}); comparing the others only"
    return vkml_torch, vkml_torch.best_device()[1]


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--full", action="store_true", help="issue 8's sizes even on a CPU-type Vulkan device")
    size.add_argument("--small", action="store_true", help="small sizes even on a real GPU")
    ap.add_argument("--only", default="", help="comma-separated words: run the cases whose name contains one")
    ap.add_argument("--numel", type=suite.parse_numel, help="elementwise sizes, e.g. 1M,64M,256M")
    ap.add_argument("--mm", type=lambda s: [int(v) for v in s.split(",")], help="square matmul sizes, e.g. 256,4096")
    ap.add_argument("--repeats", type=int, default=5, help="timed runs per figure (the median is reported)")
    ap.add_argument("--min-time", type=float, default=0.05, help="seconds a timed run lasts at least")
    ap.add_argument("--budget", type=float, default=20.0,
                    help="seconds per case and device: a first step over a third of it skips the case")
    ap.add_argument("--threads", type=int, default=0,
                    help="torch CPU threads (default: torch's choice); on a shared machine 1 is steadier")
    ap.add_argument("--json", default=os.path.join(ROOT, "build", "bench.json"), help="where the JSON goes")
    ap.add_argument("--list", action="store_true", help="list the selected cases and exit")
    ap.add_argument("--cpu-in-child", action="store_true",
                    help="time the CPU in the child process too (how CUDA is timed; tests the path without CUDA)")
    ap.add_argument("--profile", default="", metavar="WORDS",
                    help="instead of the table: run the matching cases on vkml under vkml_torch.profile() "
                         "and print the profiler's table (e.g. --profile MLP)")
    ap.add_argument("--steps", type=int, default=5, help="steps profiled per case with --profile (after warm-up)")
    ap.add_argument("--warm", type=float, default=1.0,
                    help="with --profile: seconds of steps after the first, before profiling (GPU clocks ramp up)")
    ap.add_argument("--trace", default=os.path.join(ROOT, "build", "profile.json"),
                    help="with --profile: the Chrome trace of the last case goes here")
    ap.add_argument("--verbose", "-v", action="store_true", help="print each figure as it is measured")
    return ap.parse_args(argv)


def profile_cases(cases, vk, args):
    """Each case's steps on vkml under vkml_torch.profile(), after a warm-up; prints the table."""
    dev, sync = torch.device("vkml", 0), torch.vkml.synchronize
    for c in cases:
        on = vk.fuse_enabled()
        vk.set_fuse(on and c.fuse)  # the unfused twin of a case runs unfused here too
        try:
            step = c.build(dev)
            # The first steps create the pipelines; then steps for a second, so that the GPU's
            # clocks have come up (bench/timing.py measure says why).
            step()
            sync()
            t0, done = time.perf_counter(), 1
            while done < 3 or time.perf_counter() - t0 < args.warm:
                out = step()
                sync()
                del out
                done += 1
            with vk.profile() as p:
                for _ in range(args.steps):
                    out = step()  # held until the synchronize (bench/timing.py measure says why)
                    if c.opts.get("sync_each"):
                        sync()
                    del out
        finally:
            vk.set_fuse(on)
        print(f"\n{c.name}: {args.steps} step(s) profiled")
        p.table()
        os.makedirs(os.path.dirname(os.path.abspath(args.trace)), exist_ok=True)
        p.export_chrome_trace(args.trace)
        print(f"Chrome trace: {args.trace} (open in https://ui.perfetto.dev)")
        step = None
    return 0


def main(argv=None):
    args = parse_args(argv)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    vk, line = load_vkml()
    cpu_vulkan = vk is not None and vk._C.device_info()["type"] == "cpu"
    args.full_sizes = args.full or not (args.small or cpu_vulkan or vk is None)
    cases = suite.select(suite.build(args.full_sizes, args.numel, args.mm), args.profile or args.only)
    if args.profile:
        if vk is None:
            sys.exit(line)
        print(line)
        return profile_cases(cases, vk, args)
    if args.list:
        for c in cases:
            print(f"{c.group:12s} {c.name}  [{c.unit}]")
        return 0
    if not cases:
        sys.exit(f"no case matches --only {args.only!r} (python -m bench --list shows them)")
    has_cuda = torch.cuda.is_available()
    print(line)
    if has_cuda:
        print(f"cuda: {torch.cuda.get_device_name(0)} (timed in a child process)")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads, "
          f"{'full' if args.full_sizes else 'small'} sizes, median of {args.repeats}\n")
    log = (lambda s: print(s, flush=True)) if args.verbose else None
    results, child = {}, []
    if vk is not None:
        results["vkml"] = run_device(cases, torch.device("vkml", 0), args, trace=vk.trace, log=log, vk=vk)
    for dev_type in ["cpu"] + (["cuda"] if has_cuda else []):
        if dev_type == "cpu" and not args.cpu_in_child:
            results["cpu"] = run_device(cases, torch.device("cpu"), args, log=log)
            continue
        child.append(dev_type)
        try:
            results[dev_type] = child_results(dev_type, args)
        except (RuntimeError, subprocess.TimeoutExpired, ValueError) as e:
            results[dev_type] = {c.name: {"status": "error", "value": None, "note": f"error: {e}"} for c in cases}
    print_table(cases, results, child)
    fusion = fusion_ratios(cases, results.get("vkml", {}))
    print_fusion(fusion)
    info = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "torch": torch.__version__, "python": platform.python_version(), "host": platform.node(),
            "cpu_threads": torch.get_num_threads(), "sizes": "full" if args.full_sizes else "small",
            "repeats": args.repeats, "vkml_device": vk._C.device_info() if vk is not None else None,
            "cuda_device": torch.cuda.get_device_name(0) if has_cuda else None, "child_process": child,
            "fusion": fusion}
    doc = {"info": info, "cases": [{"name": c.name, "group": c.group, "unit": c.unit, "better": c.better,
                                    "note": c.note, "results": {d: r[c.name] for d, r in results.items()}}
                                   for c in cases]}
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"\nJSON: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
