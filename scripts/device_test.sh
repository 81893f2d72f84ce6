#!/usr/bin/env bash
# Build and test on the lent GPU machine (internal). Set up once in the repo root:
#   mkdir -p .vkdev && cp -r ../shared/device/* .vkdev/ && echo /.vkdev/ >> .git/info/exclude
#   mkdir -p .vkdev/pylib && cp -r .venv/lib/python3.11/site-packages/expecttest* .vkdev/pylib/
# (expecttest, which torch's OpInfo database needs, is not installed there; hypothesis is not
# either, and its wheel has a native part for Python 3.11 only, so test_fuzz.py is left out).
# Then, through the device tool with carry [".vkdev"]:
#   bash scripts/device_test.sh suite 0/2      the first half of both passes (~10 min), then 1/2
#   bash scripts/device_test.sh bench          the demo cold and warm, and the benchmarks
#   bash scripts/device_test.sh perf           the training steps, kernels against CUDA (gpu_ab.py), the
#        Transformer step's profile (~6 min with the build)
#   bash scripts/device_test.sh mutate [T...]  the mutation campaign, 10 mutants side by side: first each
#        target's tests on the unmutated shaders (--baseline; a target that fails them is left out),
#        then the mutants not yet in .vkdev/mutate.jsonl until the time is up; T...: only these
#        targets, no baseline. Start from the kept results (cp docs/mutation/h200.jsonl
#        .vkdev/mutate.jsonl); $OUT/mutate.jsonl is all results so far: copy it to .vkdev/ for the
#        next call, and back to docs/mutation/h200.jsonl less its "timeout" records (a survivor's
#        whole selection can pass the limit under contention, and the report does not count a
#        timeout as a kill; run them again with mutate.py --retry-timeouts and fewer --jobs;
#        docs/testing.md).
#   bash scripts/device_test.sh ids "X Y ..." [JOBS] [TIMEOUT]  these mutants again (e.g. survivors after a
#        new test, or timeouts), JOBS side by side (default 6), TIMEOUT s each (default 300), into
#        $OUT/ids.jsonl: append its finished records to docs/mutation/h200.jsonl.
# Results land in $OUT (build.log, plain.log, check.log, bench.log, bench.json, mutate.*).
set -u
. .vkdev/prelude.sh >/dev/null 2>&1
export MAX_JOBS=16 PYTHONPATH=$PWD:$PWD/.vkdev/pylib PYTHONUNBUFFERED=1
# The system g++: a toolchain that links its own libstdc++ pieces into the .so crashes the process
# (seen with /opt/gcc there).
export CXX=/usr/bin/g++ CC=/usr/bin/gcc
python3 setup.py -q build_ext --inplace > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "build: $SECONDS s"
if [ "${1:-suite}" = suite ]; then
  # One process gets through ~11% of the suite in 280 s there; 15 side by side, both passes, do
  # about 40% of each pass in 450 s, so a half per call fits in the 600 s limit.
  python3 scripts/shard_pytest.py "$OUT" --slice "${2:-0/2}" --deadline $((555 - SECONDS)) --ignore=test/test_fuzz.py
  grep -hE "^(FAILED|ERROR)" "$OUT/plain.log" | head -40
  echo "--- check:"; grep -hE "^(FAILED|ERROR)" "$OUT/check.log" | head -40
elif [ "$1" = mutate ]; then
  shift
  [ -f .vkdev/mutate.jsonl ] && cp .vkdev/mutate.jsonl "$OUT/mutate.jsonl"
  fams=()
  if [ $# -eq 0 ]; then
    python3 scripts/mutate.py --baseline --jobs 10 --timeout $((400 - SECONDS)) > "$OUT/baseline.log" 2>&1
    grep baseline: "$OUT/baseline.log" | cut -c1-300
    for t in $(grep -oP "mutate: \K\S+(?= baseline: passes)" "$OUT/baseline.log"); do fams+=(--family "$t"); done
    [ ${#fams[@]} -gt 0 ] || exit 1
  else
    for t in "$@"; do fams+=(--family "$t"); done
  fi
  python3 scripts/mutate.py "${fams[@]}" --jobs 10 --timeout 300 --deadline $((575 - SECONDS)) \
    --results "$OUT/mutate.jsonl" > "$OUT/mutate.log" 2>&1
  grep -E "^mutate:|WARNING" "$OUT/mutate.log" | head -20
  python3 scripts/mutate.py --report --results "$OUT/mutate.jsonl" | head -25
elif [ "$1" = ids ]; then
  ids=(); for i in $2; do ids+=(--id "$i"); done
  python3 scripts/mutate.py "${ids[@]}" --jobs "${3:-6}" --timeout "${4:-300}" --deadline $((570 - SECONDS)) \
    --results "$OUT/ids.jsonl" > "$OUT/ids.log" 2>&1
  grep -E "^\[|^mutate:" "$OUT/ids.log" | head -40
elif [ "$1" = perf ]; then
  # The training steps and the kernels they spend on, with the same-call CUDA figures; output in
  # $OUT/perf.log (the call's tail may cut it), the profile's trace in $OUT/profile.json.
  {
    echo "=== bench [$SECONDS s]"
    timeout 150 python3 -m bench --only Transformer,MLP,"matmul 4096 f32",dropout,layer_norm,softmax \
      --json "$OUT/bench.json" 2>&1 | grep -vE "RuntimeWarning|_register" | tail -30
    echo "=== kernels against CUDA (scripts/gpu_ab.py) [$SECONDS s]"
    timeout 120 python3 scripts/gpu_ab.py "sum0:4096,512;sum0:65536,64;drop:4096,512;drop:4096,2048;ln:4096,512;sm:32768,128;sm:4096,4096;gemm:4096,4096,4096;gemm:2048,4096,512,t;h16:4096,4096,4096" new= cuda
    echo "=== the Transformer step's profile [$SECONDS s]"
    timeout 80 python3 -m bench --profile Transformer --steps 3 --trace "$OUT/profile.json" 2>&1 | grep -A24 "^kernel"
    echo "done: $SECONDS s"
  } > "$OUT/perf.log" 2>&1
  cat "$OUT/perf.log"
else
  # cold: an empty vkml pipeline cache and an empty NVIDIA shader cache; warm: both kept
  rm -rf /tmp/demo-cache && mkdir -p /tmp/demo-cache
  for run in cold warm; do
    VKML_CACHE_DIR=/tmp/demo-cache/vkml __GL_SHADER_DISK_CACHE_PATH=/tmp/demo-cache/nv \
      /usr/bin/time -f "demo $run: %e s" python3 -m vkml_torch.demo 2>&1 | tail -2
  done
  timeout 400 python3 -m bench --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.log" | tail -80
  timeout 100 python3 bench/bench_flush.py 2>&1 | tee -a "$OUT/bench.log"
fi
