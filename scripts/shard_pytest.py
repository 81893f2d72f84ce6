"""Run the suite as several pytest processes at once, the plain pass and the VKML_CHECK=1
VKML_MIN_SPEC=1 pass side by side (for the lent H200: 16 cores; NVIDIA's pipeline compiles make
one process slow there, about 11% of the suite in 280 s on 2026-12-01).

    python3 scripts/shard_pytest.py OUT [--plain 7] [--check 8] [--slice I/N] [--deadline S] [--files "A B"] [pytest args]

--slice I/N keeps every N-th collected test from the I-th (so N calls cover the suite). Writes
OUT/plain.log and OUT/check.log (every shard's output, with pytest's slowest-test durations) and
prints each shard's last line. --files: only these test files (default: the whole suite). A shard still running at the deadline is interrupted (rc 124 or 2:
pytest's summary then names the test it was in)."""
import argparse
import os
import subprocess
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--plain", type=int, default=7)
ap.add_argument("--check", type=int, default=8)
ap.add_argument("--slice", default="0/1")
ap.add_argument("--deadline", type=float, default=540)
ap.add_argument("--files", default="test", help="space-separated test files or directories to collect")
args, extra = ap.parse_known_args()
t0 = time.time()
col = subprocess.run([sys.executable, "-m", "pytest", *args.files.split(), "--collect-only", "-q", "-p", "no:cacheprovider", *extra],
                     capture_output=True, text=True)
ids = [line for line in col.stdout.splitlines() if "::" in line]
i, n = map(int, args.slice.split("/"))
ids = ids[i::n]
print(f"collected {len(ids)} (slice {args.slice}) in {time.time() - t0:.0f} s", flush=True)
procs = []
for name, count, env in (("plain", args.plain, {}), ("check", args.check, {"VKML_CHECK": "1", "VKML_MIN_SPEC": "1"})):
    for k in range(count):
        log = open(f"/tmp/shard_{name}{k}.log", "w")
        left = max(1, int(args.deadline - (time.time() - t0)))
        # SIGINT at the deadline: pytest then prints where it was and its summary (SIGKILL 15 s later)
        cmd = ["timeout", "-s", "INT", "-k", "15", str(left), sys.executable, "-m", "pytest", "-q", "-rfEs", "--durations=10",
               "-p", "no:cacheprovider", *ids[k::count]]
        procs.append((name, k, subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **env}), log))
for *_, p, log in procs:
    p.wait()
    log.close()
for name in ("plain", "check"):
    with open(os.path.join(args.out, f"{name}.log"), "w") as agg:
        for n2, k, p, _ in procs:
            if n2 == name:
                text = open(f"/tmp/shard_{name}{k}.log").read()
                agg.write(f"===== shard {k} rc {p.returncode}\n{text}\n")
                print(f"{name}[{k}] rc {p.returncode}: {text.strip().splitlines()[-1] if text.strip() else ''}")
print(f"total {time.time() - t0:.0f} s")
