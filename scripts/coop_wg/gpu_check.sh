# One device call that decides a workgroup-scope kernel change (run from the repository root on
# the GPU machine: `bash scripts/coop_wg/gpu_check.sh`, with .vkdev carried and its prelude as
# ../shared/device says; about 480 s with the build). Builds, checks how every coopmat kernel
# rounds (rnd.py), runs the gemm tests (every pipeline forced, coopmat_sg too) and the coopmat
# ones under VKML_CHECK=1, then times the workgroup-scope kernel against the subgroup one and
# torch CUDA.
. .vkdev/prelude.sh >/dev/null 2>&1
export MAX_JOBS=16 PYTHONPATH=$PWD:$PWD/.vkdev/pylib PYTHONUNBUFFERED=1 CXX=/usr/bin/g++ CC=/usr/bin/gcc
python3 setup.py -q build_ext --inplace > "${OUT:-/tmp}/build.log" 2>&1 || { tail -30 "${OUT:-/tmp}/build.log"; exit 1; }
echo "build: $SECONDS s"
python3 scripts/coop_wg/rnd.py 2>&1 | grep -v Warning
cd test
timeout 300 python3 -m pytest -q -p no:cacheprovider test_gemm.py --tb=line 2>&1 | tail -20
VKML_CHECK=1 timeout 60 python3 -m pytest -q -p no:cacheprovider test_gemm.py -k coopmat --tb=short 2>&1 | tail -4
echo "tests: $SECONDS s"
cd ..
AB_ROUNDS=1 timeout 120 python3 scripts/gpu_ab.py "h16:4096,4096,4096;h16:4096,4096,4096,t;h16:2048,2048,2048" \
  wg= sg=VKML_GEMM_PIPE=coopmat_sg cuda 2>&1 | grep -v Warning
echo "done: $SECONDS s"
