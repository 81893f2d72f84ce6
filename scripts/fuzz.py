#!/usr/bin/env python3
"""`make fuzz`: N fuzz cases (test/test_fuzz.py) in child pytest processes, counting what happened.

    .venv/bin/python scripts/fuzz.py --cases 10000 [--seed S] [--hang-s 120] [--log build/fuzz/cases.jsonl]

The child logs every case (VKML_FUZZ_LOG) before and after running it and records a failure
instead of stopping. A child that dies in a case is a crash; one whose case runs past --hang-s is
a hang (the child's faulthandler ends it). Either way the run goes on in a new child with the next
seed until N cases are done. Prints cases, passed (compared), error parity (torch CPU and vkml
raised the same exception type), wrong results, known issue 7 findings, crashes, hangs and the
time; the params of each failure, to paste into test/test_fuzz_regressions.py. Exits 1 on any
failure, crash or hang.
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    ap.add_argument("--hang-s", type=float, default=120)
    ap.add_argument("--log", default=os.path.join(ROOT, "build", "fuzz", "cases.jsonl"))
    a = ap.parse_args()
    os.makedirs(os.path.dirname(a.log), exist_ok=True)
    open(a.log, "w").close()
    t0 = time.time()
    counts = collections.Counter()
    failures, findings = [], collections.Counter()
    seed, done = a.seed, 0
    while done < a.cases:
        env = dict(os.environ, VKML_FUZZ_CASES=str(a.cases - done), VKML_FUZZ_SEED=str(seed),
                   VKML_FUZZ_LOG=a.log, VKML_FUZZ_HANG_S=str(a.hang_s))
        start = sum(1 for _ in open(a.log))
        child = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x",
                                "test/test_fuzz.py::test_fuzz"], cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        recs = [json.loads(ln) for ln in open(a.log).readlines()[start:] if ln.strip()]
        params, last_start = {}, None
        for r in recs:
            if r["status"] == "start":
                params[r["i"]], last_start = r["params"], r
                continue
            last_start = None
            done += 1
            counts[r["status"]] += 1
            if r["status"] == "fail":
                failures.append((r["msg"], params.get(r["i"])))
            elif r["status"] == "known":
                findings[r["finding"]] += 1
        if last_start is not None:  # the child died inside a case
            done += 1
            hung = (time.time() - last_start["t"]) >= a.hang_s * 0.9 or "Timeout" in child.stdout[-3000:]
            kind = "hang" if hung else "crash"
            counts[kind] += 1
            failures.append((f"{kind}: child exited {child.returncode}: {child.stdout[-1500:]}", last_start["params"]))
        elif child.returncode not in (0,) and not recs:
            sys.exit(f"fuzz: the child failed before any case:\n{child.stdout[-3000:]}")
        seed += 1
    secs = time.time() - t0
    print(f"fuzz: {done} cases in {secs:.0f} s (seed {a.seed}): {counts['ok']} compared, "
          f"{counts['error-parity']} same error as torch CPU, {counts['unsupported']} NotImplementedError "
          f"(no vkml kernel for that dtype), {counts['fail']} wrong results or errors, "
          f"{counts['known']} known (issue 7 findings, open bugs) {dict(findings)}, {counts['crash']} crashes, "
          f"{counts['hang']} hangs")
    with open(os.path.join(os.path.dirname(a.log), "failures.txt"), "w") as f:
        for msg, params in failures:
            f.write(f"FAIL {msg}\n  params = {params}\n\n")
    for msg, params in failures[:50]:
        print(f"\nFAIL {msg[:1500]}\n  params = {params}")
    if len(failures) > 50:
        print(f"\n... {len(failures) - 50} more in {os.path.join(os.path.dirname(a.log), 'failures.txt')}")
    return 1 if (counts["fail"] or counts["crash"] or counts["hang"]) else 0


if __name__ == "__main__":
    sys.exit(main())
