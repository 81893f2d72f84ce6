"""vkml_torch.profile(): the GPU time of every kernel, from Vulkan timestamp queries."""
import json
import time
import warnings

from . import _C

_active = False


class Profile:
    """What one `with vkml_torch.profile() as p:` block ran on the GPU; filled when the block exits.

    kernels: [(name, submission, start_ns, end_ns)], one per dispatch or copy, in GPU order. The
    name is the op-table row and its shader ("add [elementwise_f32]"), "fused(mul,add,exp) [fused_f32]"
    for a fused chain (one kernel), or "copy host->device" etc.
    Times are the device's timestamps in ns (their own clock), relative to the first batch's start.
    submissions: [(ticket, start_ns, end_ns)], one per batch: from when it could start (everything
    before it done) to its end. wall_s: the block's host time, synchronizations included.
    available: False when the device has no timestamps (why says so; the block still runs)."""

    def __init__(self):
        self.kernels, self.submissions = [], []
        self.wall_s = 0.0
        self.available, self.why = True, ""
        self.lost = 0
        self.host = {}  # vkml_torch.stats() over the block: nodes, submits, submit_us, wait_us

    # ---- derived figures ------------------------------------------------------------------------
    def gpu_time_ns(self):
        """Sum of the kernels' durations."""
        return sum(e - s for _, _, s, e in self.kernels)

    def gaps_ns(self):
        """Idle time between consecutive batches: the next one's start minus this one's end (0 when
        the next was already queued)."""
        sub = self.submissions
        return [max(0.0, b[1] - a[2]) for a, b in zip(sub, sub[1:])]

    def summary(self):
        """[(kernel, calls, total_ns, mean_ns, share of GPU time)], by total time, largest first."""
        agg = {}
        for name, _, s, e in self.kernels:
            c = agg.setdefault(name, [0, 0.0])
            c[0] += 1
            c[1] += e - s
        total = self.gpu_time_ns() or 1.0
        rows = [(k, n, t, t / n, t / total) for k, (n, t) in agg.items()]
        return sorted(rows, key=lambda r: (-r[2], r[0]))

    # ---- output ---------------------------------------------------------------------------------
    def table_text(self, limit=None):
        """The text that p.table() prints."""
        if not self.available:
            return f"vkml profile: no GPU timestamps ({self.why}); nothing was timed"
        rows = self.summary()
        shown = rows if limit is None else rows[:limit]
        w = max([len("kernel")] + [len(r[0]) for r in shown])
        out = [f"{'kernel':<{w}} {'calls':>7} {'total ms':>10} {'mean us':>10} {'% GPU':>7}"]
        out.append("-" * len(out[0]))
        for k, n, t, m, f in shown:
            out.append(f"{k:<{w}} {n:>7} {t / 1e6:>10.3f} {m / 1e3:>10.2f} {100 * f:>6.1f}%")
        if len(shown) < len(rows):
            out.append(f"... {len(rows) - len(shown)} more kernel(s)")
        gaps = self.gaps_ns()
        busy = self.gpu_time_ns()
        span = (self.submissions[-1][2] - self.submissions[0][1]) if self.submissions else 0.0
        out.append("-" * len(out[0]))
        out.append(f"GPU busy {busy / 1e6:.3f} ms in {len(self.kernels)} kernel(s), {len(self.submissions)} "
                   f"submission(s); first start to last end {span / 1e6:.3f} ms; block wall {self.wall_s * 1e3:.3f} ms")
        if gaps:
            out.append(f"idle between submissions: {sum(gaps) / 1e6:.3f} ms over {len(gaps)} gap(s), "
                       f"longest {max(gaps) / 1e3:.1f} us")
        else:
            out.append("idle between submissions: none (fewer than 2 submissions)")
        if self.host:
            h = self.host
            out.append(f"host: {h['nodes']} node(s) recorded, {h['submits']} submit(s); building batches "
                       f"{h['submit_us'] / 1e3:.3f} ms, waiting for the GPU {h['wait_us'] / 1e3:.3f} ms")
        if self.lost:
            out.append(f"{self.lost} command(s) not timed: their queries could not be read back")
        return "\n".join(out)

    def table(self, limit=None):
        """Prints the kernels sorted by total GPU time (calls, total, mean, % of GPU time), then
        GPU busy time, the idle gaps between submissions and the host's side."""
        print(self.table_text(limit))

    def __str__(self):
        return self.table_text()

    def export_chrome_trace(self, path):
        """Writes Chrome trace JSON (chrome://tracing, https://ui.perfetto.dev): each kernel a
        complete event on the track "kernels", each batch on the track "submissions"."""
        ev = [{"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "vkml GPU"}},
              {"name": "thread_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "kernels"}},
              {"name": "thread_name", "ph": "M", "pid": 0, "tid": 1, "args": {"name": "submissions"}}]
        for name, sub, s, e in self.kernels:
            ev.append({"name": name, "cat": "kernel", "ph": "X", "pid": 0, "tid": 0, "ts": s / 1e3,
                       "dur": (e - s) / 1e3, "args": {"submission": sub}})
        for t, s, e in self.submissions:
            ev.append({"name": f"submission {t}", "cat": "submission", "ph": "X", "pid": 0, "tid": 1,
                       "ts": s / 1e3, "dur": (e - s) / 1e3, "args": {"ticket": t}})
        with open(path, "w") as f:
            json.dump({"traceEvents": ev, "displayTimeUnit": "ns"}, f)


class profile:
    """Times every GPU kernel (dispatch or copy) submitted inside the block, with Vulkan timestamp
    queries written around it; work pending before the block runs first, untimed.

        with vkml_torch.profile() as p:
            train_step()
        p.table()                          # by total time: calls, total, mean, % of GPU time, gaps
        p.export_chrome_trace("t.json")    # open in https://ui.perfetto.dev

    The block ends with a synchronize. Outside a block no query is written. A device without
    timestamps (timestampValidBits 0) warns, runs the block untimed and says why in p.table().
    Blocks do not nest.

    p (a Profile) also has: kernels [(name, submission, start_ns, end_ns)], one per dispatch or
    copy, named by op-table row and shader ("add [elementwise_f32]"), by the rows of a fused chain
    ("fused(mul,add,exp) [fused_f32]") or "copy host->device";
    submissions [(ticket, start_ns, end_ns)]; summary() (the table's rows); gpu_time_ns();
    gaps_ns() (idle GPU time between consecutive submissions); table_text(); wall_s; host (the
    block's vkml_torch.stats() counts). GPU times are on the device's clock, from the first
    submission's start."""

    def __enter__(self):
        global _active
        if _active:
            raise RuntimeError("vkml_torch.profile() blocks do not nest")
        self.p = Profile()
        why = _C._profile_set(True)  # runs what is pending first
        if why:
            self.p.available, self.p.why = False, why
            warnings.warn(f"vkml_torch.profile(): no GPU timestamps ({why}); the block runs untimed",
                          stacklevel=2)
        _active = True
        self._s0 = _C.stats()
        self._t0 = time.perf_counter()
        return self.p

    def __exit__(self, *exc):
        global _active
        kernels, subs, lost = [], [], 0
        try:
            _C.synchronize()
            kernels, subs, lost = _C._profile_take()
        except Exception:
            if exc[0] is None:  # else the block's own error is the one to see
                raise
        finally:
            self.p.wall_s = time.perf_counter() - self._t0
            _active = False
            try:
                _C._profile_set(False)
            except Exception:
                if exc[0] is None:
                    raise
        s1 = _C.stats()
        self.p.host = {k: s1[k] - self._s0[k] for k in ("nodes", "submits", "submit_us", "wait_us")}
        t0 = subs[0][1] if subs else 0.0
        self.p.kernels = [(n, k, s - t0, e - t0) for n, k, s, e in kernels]
        self.p.submissions = [(k, s - t0, e - t0) for k, s, e in subs]
        self.p.lost = lost
        return False
