"""Timing one case on one device: warm up, then the median of several timed runs, each ended by a
device synchronize. torch only (the CUDA child process imports this, never vkml_torch)."""
import statistics
import time

import torch


def sync_fn(dev):
    if dev.type == "vkml":
        return torch.vkml.synchronize
    if dev.type == "cuda":
        return torch.cuda.synchronize
    return lambda: None


class NotApplicable(Exception):
    """The case means nothing on this device (a host-device copy on the CPU)."""


def measure(step, dev, repeats=5, min_time=0.05, budget=20.0, warmup=2, warm_time=1.0,
            sync_each=False, sync_in_timing=True, gpu_warm=1.0):
    """(seconds per step: the median over `repeats` runs, note). A run repeats step() enough times
    to last about min_time, then synchronizes (inside the timed span unless sync_in_timing is
    False: then only the host's side is timed). Warm-up: at least 2 steps, then up to `warmup`
    steps or warm_time seconds, and on a GPU (vkml, cuda) steps for at least gpu_warm seconds after
    the first step: the GPU's clocks follow its load. The H200 measured a 4096 matmul at 5.8
    TFLOP/s in a process's first 0.1 s and at 29 in the next process; on the H100 the SM clock sat
    at 345 MHz (of 1,980) through seconds of pipeline compilation in a first step and took about
    0.4 s of steps to come back, so a floor counted from the start (compilation included) timed a
    Transformer step at 0.3x its speed (docs/performance.md, "Seventh session"). A first step
    slower than budget / 3 skips the case (value None);
    timed runs stop once budget is spent (the note says of how many runs the median is).

    A step's result is held until the synchronize that ends it under sync_each (and in the
    warm-up): vkml's fusion skips the stores of results freed before their batch runs (dead), so a
    step whose result is dropped at once, or whose output the next step overwrites, would be timed
    without its writes. Cases that time one op's bandwidth set sync_each (bench/cases.py)."""
    sync = sync_fn(dev)
    t0 = time.perf_counter()
    out = step()
    sync()
    del out
    first = time.perf_counter() - t0
    if first > budget / 3:
        return None, f"skipped: the first step took {first:.1f} s (--budget {budget:g} s)"
    done, last = 1, first
    floor = min(gpu_warm, budget / 3) if dev.type in ("vkml", "cuda") else 0.0
    tw = time.perf_counter()  # the GPU floor counts from here: a first step's compiling leaves it idle
    while done < 2 or (done < warmup and time.perf_counter() - t0 < warm_time) or time.perf_counter() - tw < floor:
        t1 = time.perf_counter()
        out = step()
        sync()
        del out
        last = time.perf_counter() - t1
        done += 1
    iters = max(1, min(10000, int(min_time / max(last, 1e-9))))
    runs, spent = [], 0.0
    for _ in range(repeats):
        t1 = time.perf_counter()
        for _ in range(iters):
            out = step()
            if sync_each:
                sync()
            del out
        if sync_in_timing:
            sync()
        dt = time.perf_counter() - t1
        if not sync_in_timing:
            sync()
        runs.append(dt / iters)
        spent += time.perf_counter() - t1
        if spent > budget:
            break
    note = f"median of {len(runs)} run(s): --budget {budget:g} s spent" if len(runs) < repeats else ""
    return statistics.median(runs), note
