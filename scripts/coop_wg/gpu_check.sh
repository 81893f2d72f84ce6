# One device call that decides a workgroup-scope kernel change (run from the repository root on
# the GPU machine: `bash scripts/coop_wg/gpu_check.sh`, with .vkdev carried and its prelude as
# ../shared/device says; about 400 s with the build). Builds, checks how every coopmat kernel
# rounds (rnd.py), times the workgroup-scope kernels against the subgroup ones and torch CUDA,
# then runs the gemm tests (every pipeline forced, coopmat_sg too) and the coopmat ones under
# VKML_CHECK=1 (last: the longest, and a cut-off call still reports the rest).
. .vkdev/prelude.sh >/dev/null 2>&1
export MAX_JOBS=16 PYTHONPATH=$PWD:$PWD/.vkdev/pylib PYTHONUNBUFFERED=1 CXX=/usr/bin/g++ CC=/usr/bin/gcc
python3 setup.py -q build_ext --inplace > "${OUT:-/tmp}/build.log" 2>&1 || { tail -30 "${OUT:-/tmp}/build.log"; exit 1; }
echo "build: $SECONDS s"
python3 -c "import torch, vkml_torch; print({k: v for k, v in vkml_torch._C.device_info(0).items() if 'coop' in k})" 2>&1 | grep -v Warn
python3 scripts/coop_wg/rnd.py 2>&1 | grep -v Warning
AB_ROUNDS=1 timeout 100 python3 scripts/gpu_ab.py "b16:4096,4096,4096;h16:4096,4096,4096" \
  wg= sg=VKML_GEMM_PIPE=coopmat_sg cuda 2>&1 | grep -v Warning
echo "timed: $SECONDS s"
cd test
timeout 240 python3 -m pytest -q -p no:cacheprovider test_gemm.py --tb=short 2>&1 | tail -25
echo "tests: $SECONDS s"
VKML_CHECK=1 timeout 60 python3 -m pytest -q -p no:cacheprovider test_gemm.py -k coopmat --tb=short 2>&1 | tail -4
echo "done: $SECONDS s"
