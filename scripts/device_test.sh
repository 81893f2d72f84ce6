#!/usr/bin/env bash
# Build and test on the lent GPU machine (internal). Set up once in the repo root:
#   mkdir -p .vkdev && cp -r ../shared/device/* .vkdev/ && echo /.vkdev/ >> .git/info/exclude
# then run this through the device tool with carry [".vkdev"]:  bash scripts/device_test.sh
# Results land in $OUT (build.log, test_plain.log, test_check.log, bench.log).
set -u
. .vkdev/prelude.sh >/dev/null 2>&1
# expecttest (needed by torch's OpInfo database, test/test_opinfo.py) is not installed there: the
# set-up copies it from the local venv into .vkdev/pylib:
#   mkdir -p .vkdev/pylib && cp -r .venv/lib/python3.11/site-packages/expecttest .vkdev/pylib/
export MAX_JOBS=16 PYTHONPATH=$PWD:$PWD/.vkdev/pylib PYTHONUNBUFFERED=1
# The system g++: a toolchain that links its own libstdc++ pieces into the .so crashes the process
# (seen with /opt/gcc there).
export CXX=/usr/bin/g++ CC=/usr/bin/gcc
python3 setup.py -q build_ext --inplace > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
python3 -m pytest test -q -rs -p no:cacheprovider > "$OUT/test_plain.log" 2>&1
echo "plain: $(tail -1 "$OUT/test_plain.log")"
VKML_CHECK=1 VKML_MIN_SPEC=1 python3 -m pytest test -q -rs -p no:cacheprovider > "$OUT/test_check.log" 2>&1
echo "check+min-spec: $(tail -1 "$OUT/test_check.log")"
grep -E "^FAILED" "$OUT/test_plain.log" | head -60
echo "--- check-pass failures not in plain:"
comm -13 <(grep -E "^FAILED" "$OUT/test_plain.log" | sort) <(grep -E "^FAILED" "$OUT/test_check.log" | sort) | head -20
python3 -m vkml_torch.demo 2>&1 | tail -3
timeout 400 python3 -m bench --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.log" | tail -80
timeout 100 python3 bench/bench_flush.py 2>&1 | tee -a "$OUT/bench.log"
