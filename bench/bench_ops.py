#!/usr/bin/env python3
"""vkml vs torch CPU (and torch CUDA when present). See bench/README.md.

    python bench/bench_ops.py [--full | --small] [--cases a,b,c,d,e,f,g] [--repeats N] [--budget S]
                              [--mlp-sizes in,h1,h2,out,batch,steps] [--mlp-subprocess]

Cases: (a) host cost of recording a tiny op (vkml records without submitting; one synchronize
after the loop, reported separately), (b) the same with a synchronize after every op (eager
cost), (c) MLP training steps per second, (d) bandwidth of a large add, (e) a chain of 200 tiny
dependent ops and one synchronize, (f) float32 matmul TFLOP/s, (g) softmax over rows. Every figure
is the median of --repeats timed runs after a warm-up. Everything runs in this process except
CUDA's (c), which runs in a child process without vkml (pytorch issue #161129; see _mlp_child).
"""
import argparse
import json
import os
import subprocess
import sys
import textwrap

import torch

from bench_cases import (add_bandwidth, matmul_tflops, mlp_steps, op_chain, softmax_bandwidth,
                         tiny_eager, tiny_record)

CASES_PY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_cases.py")

# (small, full) sizes; "small" is the default on a CPU-type Vulkan device (Mesa lavapipe).
SIZES = {
    "tiny_ops": (2000, 2000),          # ops per timed loop in (a)
    "eager_ops": (200, 2000),          # ops per timed loop in (b)
    "mlp": ((784, 256, 256, 10, 64, 10), (784, 2048, 2048, 10, 64, 50)),  # in, h1, h2, out, batch, steps
    "add_numel": (1 << 22, 1 << 26),   # 4M / 64M float32 elements for (d)
    "add_iters": (5, 20),
    "chains": (5, 50),                 # chains of 200 ops per timed run in (e)
    "mm_n": (1024, 4096),              # (f)
    "softmax_n": (256, 4096),          # (g), n x n
    "softmax_iters": (20, 20),
}
CHAIN_LEN = 200
FOOTNOTE = ("[1] timed in a child process started with TORCH_DEVICE_BACKEND_AUTOLOAD=0 that never imports "
            "vkml_torch (same code, same sizes): once any PrivateUse1 backend is registered, CUDA "
            "backward fails in that process (pytorch issue #161129, the autograd engine asserts "
            "opt_ready_stream && opt_parent_stream).")

vkml_torch = None


def load_vkml():
    """(vkml_torch or None, why not). `import torch` may already have loaded it (backend autoload)."""
    global vkml_torch
    try:
        import vkml_torch as m
    except ImportError as e:  # the bench still compares CPU and CUDA without the extension
        return None, f"not importable ({e})"
    vkml_torch = m
    return m, ""


def stat(key):
    return vkml_torch.stats()[key] if vkml_torch is not None else 0


def mlp_steps_subprocess(dev_type, sizes, repeats, timeout=600):
    """Case (c) for one device in a child process that has no PrivateUse1 backend; steps/s."""
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    cmd = [sys.executable, CASES_PY, "mlp", dev_type, json.dumps(list(sizes)), str(repeats),
           str(torch.get_num_threads())]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"{dev_type} MLP child exited with {p.returncode}: {tail}")
    res = json.loads(p.stdout.strip().splitlines()[-1])
    if res["vkml_imported"] or res["privateuse1"] != "privateuseone":
        raise RuntimeError(f"{dev_type} MLP child had a PrivateUse1 backend registered: {res}")
    return res["steps_per_s"]


# ---- driver ---------------------------------------------------------------------------------------
def fmt(v):
    if v is None:
        return "-"
    return f"{v:,.1f}" if v >= 10 else f"{v:.3g}"


def ratio(v, ref):
    return "-" if v is None or not ref else f"{v / ref:.2f}x"


def pick_devices():
    devs, vk = [torch.device("cpu")], None
    vk_mod, why = load_vkml()
    if vk_mod is None:
        print(f"vkml: {why}; comparing the others only")
    elif not vk_mod.is_available():
        print(f"vkml: no device ({vk_mod.why_unavailable()}); comparing the others only")
    else:
        vk = torch.device("vkml", 0)
        devs.insert(0, vk)
        print(vk_mod.best_device()[1])
    if torch.cuda.is_available():
        devs.append(torch.device("cuda", 0))
        print(f"cuda: {torch.cuda.get_device_name(0)}")
    return devs, vk


def run_cases(devs, cases, pick, args):
    """[(label, unit, better, {device type: value}, [notes], {device types timed in a child})]."""
    rows = []
    if "a" in cases:
        n = pick["tiny_ops"]
        res, fin, notes = {}, {}, []
        for d in devs:
            res[d.type], fin[d.type], counts = tiny_record(d, n, args.repeats, stat)
            if d.type == "vkml":
                notes.append(f"vkml: {counts[0]} nodes recorded, {counts[1]} submit(s) for a loop of {n} ops")
                notes.append(f"vkml: of the synchronize, {counts[2]:,.0f} us building the batch "
                             f"({counts[2] / max(counts[0], 1):.2f} us/node: lowering, command recording), "
                             f"{counts[3]:,.0f} us waiting for the GPU")
        rows.append((f"(a) record c = a + b, 4 elements x {n}", "us/op", "lower", res, notes, set()))
        rows.append(("    then one synchronize", "us", "lower",
                     {k: v for k, v in fin.items() if k != "cpu"}, [], set()))
    if "b" in cases:
        n = pick["eager_ops"]
        rows.append((f"(b) c = a + b; synchronize, x {n}", "us/op", "lower",
                     {d.type: tiny_eager(d, n, args.repeats) for d in devs}, [], set()))
    if "c" in cases:
        m = pick["mlp"]
        res, notes, child = {}, [], set()
        for d in devs:
            if d.type == "cuda" or (d.type == "cpu" and args.mlp_subprocess):
                child.add(d.type)
                try:
                    res[d.type] = mlp_steps_subprocess(d.type, m, args.repeats)
                except (RuntimeError, subprocess.TimeoutExpired, ValueError) as e:
                    res[d.type] = None
                    notes.append(f"{d.type}: {e}")
            else:
                res[d.type] = mlp_steps(d, m, args.repeats)
        if child:
            notes.append(f"{', '.join(sorted(child))}: timed in a child process [1]")
        rows.append((f"(c) MLP {m[0]}-{m[1]}-{m[2]}-{m[3]} SGD, batch {m[4]}", "steps/s", "higher",
                     res, notes, child))
    if "d" in cases:
        numel, iters = pick["add_numel"], pick["add_iters"]
        rows.append((f"(d) add {numel / 2**20:.0f}M float32 (read 2 + write 1)", "GB/s", "higher",
                     {d.type: add_bandwidth(d, numel, iters, args.repeats) for d in devs}, [], set()))
    if "e" in cases:
        res, notes = {}, []
        for d in devs:
            res[d.type], counts = op_chain(d, CHAIN_LEN, pick["chains"], args.repeats, stat)
            if d.type == "vkml":
                notes.append(f"vkml: {counts[0]} nodes, {counts[1]} submit(s) for {pick['chains']} chains")
        rows.append((f"(e) chain of {CHAIN_LEN} tiny ops + synchronize", "kop/s", "higher", res, notes, set()))
    if "f" in cases:
        n, res, notes = pick["mm_n"], {}, []
        for d in devs:
            res[d.type], why = matmul_tflops(d, n, args.repeats, args.budget)
            if why:
                notes.append(f"{d.type}: {why}")
                print(f"(f) {d.type}: {why}")
        rows.append((f"(f) matmul {n} float32", "TFLOP/s", "higher", res, notes, set()))
    if "g" in cases:
        n, iters = pick["softmax_n"], pick["softmax_iters"]
        rows.append((f"(g) softmax rows {n}x{n} float32 (read + write)", "GB/s", "higher",
                     {d.type: softmax_bandwidth(d, n, iters, args.repeats) for d in devs}, [], set()))
    return rows


def print_table(rows, has_cuda):
    head = f"{'case':<50}{'unit':>8}{'vkml':>13}{'cpu':>13}"
    head += (f"{'cuda':>13}" if has_cuda else "") + f"{'vkml/cpu':>10}" + (f"{'vkml/cuda':>11}" if has_cuda else "")
    print(head)
    print("-" * len(head))
    child_used = False
    for label, unit, better, vals, notes, child in rows:
        cell = lambda k: fmt(vals.get(k)) + (" [1]" if k in child else "")  # noqa: E731
        child_used |= bool(child)
        v = vals.get("vkml")
        line = f"{label:<50}{unit:>8}{cell('vkml'):>13}{cell('cpu'):>13}"
        if has_cuda:
            line += f"{cell('cuda'):>13}"
        line += f"{ratio(v, vals.get('cpu')):>10}"
        if has_cuda:
            line += f"{ratio(v, vals.get('cuda')):>11}"
        print(line + f"   ({better} is better)")
        for note in notes:
            print(f"{'':<6}{note}")
    if child_used:
        print("\n" + textwrap.fill(FOOTNOTE, 100, subsequent_indent="    "))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--full", action="store_true", help="large sizes even on a CPU-type Vulkan device")
    size.add_argument("--small", action="store_true", help="small sizes even on a real GPU")
    ap.add_argument("--cases", default="a,b,c,d,e,f,g", help="comma-separated subset of a,b,c,d,e,f,g")
    ap.add_argument("--repeats", type=int, default=5, help="timed runs per figure (median reported)")
    ap.add_argument("--budget", type=float, default=15.0,
                    help="seconds per device for (f): a slower warm-up skips it, timed runs stop after it")
    ap.add_argument("--mlp-sizes", help="override (c)'s sizes: in,h1,h2,out,batch,steps")
    ap.add_argument("--mlp-subprocess", action="store_true",
                    help="time the CPU's (c) in the child process too (how CUDA's is timed; for testing)")
    args = ap.parse_args()
    cases = set(args.cases.split(","))
    unknown = cases - set("abcdefg")
    if unknown:
        ap.error(f"unknown case(s) {sorted(unknown)}; choose from a,b,c,d,e,f,g")

    devs, vk = pick_devices()
    cpu_vulkan = vk is not None and getattr(torch.vkml.get_device_properties(0), "type", "") == "cpu"
    full = args.full or not (args.small or cpu_vulkan)
    pick = {k: v[1] if full else v[0] for k, v in SIZES.items()}
    if args.mlp_sizes:
        pick["mlp"] = tuple(int(v) for v in args.mlp_sizes.split(","))
        if len(pick["mlp"]) != 6:
            sys.exit("--mlp-sizes needs 6 integers: in,h1,h2,out,batch,steps")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads, "
          f"{'full' if full else 'small'} sizes, median of {args.repeats}\n")
    rows = run_cases(devs, cases, pick, args)
    print_table(rows, any(d.type == "cuda" for d in devs))


if __name__ == "__main__":
    main()
