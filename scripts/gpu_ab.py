"""A/B micro-timings on a GPU (the lent machine; docs/performance.md): each setting in its own
child process, alternated over AB_ROUNDS rounds (default 2; the table gives the fastest round and
all of them), so settings read once per process (VKML_* variables) can be compared in one call.

  python3 scripts/gpu_ab.py CASES LABEL=ENV[,ENV...] [LABEL=...]  e.g. s127=VKML_GEMM_SPLIT_GROUPS=127 new=
  python3 scripts/gpu_ab.py CASES cuda                               torch CUDA, no vkml (a label)
CASES: ';'-separated: gemm:M,K,N[,t][,bt]  (t: A is the transpose of a contiguous [K, M], a weight
                          gradient; bt: B the transpose of a contiguous [N, K], nn.Linear's forward)
                      h16:M,K,N[,t][,bt]  (float16 operands and result)   b16: the same in bfloat16
                      sum0:R,C  (x.sum(0) of a contiguous [R, C])   sum1:R,C  (x.sum(1))
                      drop:R,C  (dropout p=0.1)   ln:R,C  (layer_norm over rows)   sm:R,C  (softmax over rows)
                      lnb:R,C  (layer_norm's backward: dx, dw, db)   full:N  (x.sum() of N elements)
                      bn:R,C  (training batch norm over the R rows of each of C channels)
Each child warms the GPU clock for 1 s, then per case (bench/timing.py's measure): the median of
5 runs of enough calls for ~50 ms, a sync ending each run; the max error against float64 on the CPU; and, on vkml, the
kernels' GPU times from vkml_torch.profile(). AB_WARM_N: the warm-up product's size (64 on
lavapipe).
"""
import json
import os
import subprocess
import sys
import time

import torch


def parse(cases):
    out = []
    for c in cases.split(";"):
        kind, dims = c.split(":")
        parts = dims.split(",")
        out.append((kind, [int(v) for v in parts if v not in ("t", "bt")], ("t" in parts, "bt" in parts), c))
    return out


def child(cases, devname):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from bench.timing import measure
    if devname == "vkml":
        import vkml_torch  # noqa: F401
        sync = torch.vkml.synchronize
    else:
        sync = torch.cuda.synchronize
    dev = torch.device(devname)
    g = torch.Generator().manual_seed(0)
    # clock warm-up: 1 s of a large product
    wn = int(os.environ.get("AB_WARM_N", "4096"))
    a = torch.randn(wn, wn, generator=g).to(dev)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 1.0:
        (a @ a).sum()
        sync()
    res = {}
    for kind, d, tr, name in parse(cases):
        if kind in ("gemm", "h16", "b16"):
            M, K, N = d
            A = torch.randn(K, M, generator=g).t() if tr[0] else torch.randn(M, K, generator=g)
            B = torch.randn(N, K, generator=g).t() if tr[1] else torch.randn(K, N, generator=g)
            if kind in ("h16", "b16"):
                A, B = (A.half(), B.half()) if kind == "h16" else (A.bfloat16(), B.bfloat16())
            ref = (A.double() @ B.double())
            Ad, Bd = A.to(dev), B.to(dev)
            fn = lambda: Ad @ Bd  # noqa: E731
            flop = 2 * M * K * N
        elif kind == "drop":  # dropout p=0.1 of a contiguous [R, C]; rate: GB/s of x read, y written, mask
            R, C = d
            X = torch.randn(R, C, generator=g)
            ref = X.double()
            Xd = X.to(dev)
            fn = lambda: torch.nn.functional.dropout(Xd, 0.1, training=True)  # noqa: E731
            flop = 9 * R * C
        elif kind == "ln":  # layer_norm over rows of [R, C]; rate: GB/s of x read, y written
            R, C = d
            X = torch.randn(R, C, generator=g)
            ref = torch.nn.functional.layer_norm(X.double(), (C,))
            Xd = X.to(dev)
            fn = lambda: torch.nn.functional.layer_norm(Xd, (C,))  # noqa: E731
            flop = 8 * R * C
        elif kind == "lnb":  # layer_norm's backward over rows of [R, C]; rate: GB/s of dy, x read, dx written
            R, C = d
            X, G = torch.randn(R, C, generator=g), torch.randn(R, C, generator=g)
            W = torch.randn(C, generator=g)
            m, r = X.mean(1, keepdim=True), (X.var(1, unbiased=False, keepdim=True) + 1e-5).rsqrt()
            ref = torch.ops.aten.native_layer_norm_backward(G.double(), X.double(), [C], m.double(), r.double(),
                                                            W.double(), W.double(), [True, True, True])[0]
            Xd, Gd, Wd, md, rd = (t.to(dev) for t in (X, G, W, m, r))
            fn = lambda: torch.ops.aten.native_layer_norm_backward(Gd, Xd, [C], md, rd, Wd, Wd, [True, True, True])[0]  # noqa: E731
            flop = 12 * R * C
        elif kind == "bn":  # training batch norm of [R, C] (BatchNorm1d, C channels); rate: GB/s of x read, y written
            R, C = d
            X = torch.randn(R, C, generator=g)
            ref = torch.nn.functional.batch_norm(X.double(), None, None, training=True)
            Xd = X.to(dev)
            fn = lambda: torch.nn.functional.batch_norm(Xd, None, None, training=True)  # noqa: E731
            flop = 8 * R * C
        elif kind == "full":  # x.sum() of N elements; rate: GB/s read
            N, = d
            X = torch.randn(N, generator=g)
            ref = X.double().sum()
            Xd = X.to(dev)
            fn = lambda: Xd.sum()  # noqa: E731
            flop = 4 * N
        elif kind == "sm":  # softmax over rows of [R, C]; rate: GB/s of x read, y written
            R, C = d
            X = torch.randn(R, C, generator=g)
            ref = torch.softmax(X.double(), 1)
            Xd = X.to(dev)
            fn = lambda: torch.softmax(Xd, 1)  # noqa: E731
            flop = 8 * R * C
        else:
            R, C = d
            X = torch.randn(R, C, generator=g)
            dim = 0 if kind == "sum0" else 1
            ref = X.double().sum(dim)
            Xd = X.to(dev)
            fn = lambda: Xd.sum(dim)  # noqa: E731
            flop = 4 * R * C  # bytes read
        y = fn()
        if kind == "drop":  # kept elements are x / 0.9, the others 0
            yc = y.cpu().double()
            keep = yc != 0
            err = ((yc[keep] * 0.9 - ref[keep]).abs().max() / ref.abs().max()).item()
        else:
            err = ((y.cpu().double() - ref).abs().max() / ref.abs().max().clamp_min(1e-30)).item()
        # bench's timing: warm-up, then the median of 5 runs of ~50 ms, each ended by a sync (these
        # ops are not elementwise, so no fusion skips the stores of dropped results)
        med, _ = measure(fn, dev, repeats=5, min_time=0.05, gpu_warm=0.3)
        kern = {}
        if devname == "vkml":  # one call under the profiler: its kernels' GPU times
            import vkml_torch
            with vkml_torch.profile() as prof:
                for _ in range(3):
                    y = fn()
                sync()
            for kn, _, s0, e0 in prof.kernels:
                kern[kn] = kern.get(kn, 0.0) + (e0 - s0) / 3e3
        rate = flop / med / 1e12 if kind in ("gemm", "h16", "b16") else flop / med / 1e9  # TFLOP/s or GB/s
        res[name] = {"us": med * 1e6, "rate": rate, "err": err, "kern": kern}
    print("RESULT " + json.dumps(res))


def main():
    if sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
        return
    cases, settings = sys.argv[1], sys.argv[2:]
    rounds = int(os.environ.get("AB_ROUNDS", "2"))
    table = {}
    for r in range(rounds):
        for s in settings:
            label, _, envs = s.partition("=")
            env = dict(os.environ)
            devname = "cuda" if label == "cuda" else "vkml"
            for kv in filter(None, envs.split(",")):
                k, _, v = kv.partition("=")
                env[k] = v
            p = subprocess.run([sys.executable, __file__, "--child", cases, devname], env=env,
                               capture_output=True, text=True, timeout=300)
            line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
            if not line:
                print(f"{label}: failed\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
                continue
            for name, v in json.loads(line[0][7:]).items():
                table.setdefault(name, {}).setdefault(label, []).append(v)
    for name, by in table.items():
        cells = []
        for label, vs in by.items():
            us = min(v["us"] for v in vs)
            cells.append(f"{label} {us:8.1f} us ({max(v['rate'] for v in vs):6.1f}) err {max(v['err'] for v in vs):.1e}"
                         " [" + " ".join("%.1f" % v["us"] for v in vs) + "]")
        print(f"{name:28s} " + " | ".join(cells))
        for label, vs in by.items():
            if vs[-1].get("kern"):
                print(f"{'':28s}   {label} kernels (us): " + ", ".join(f"{k} {v:.1f}" for k, v in vs[-1]["kern"].items()))


if __name__ == "__main__":
    main()
