# One device call that decides this branch (run from the repository root on the GPU machine:
# `bash scripts/coop_wg/gpu_check.sh`, with .vkdev carried and its prelude as ../shared/device says).
# Builds, times the workgroup-scope kernel against the subgroup one, a build without float controls
# and torch CUDA, then runs the gemm tests (every pipeline forced, coopmat_sg too) and the coopmat
# ones under VKML_CHECK=1.
. .vkdev/prelude.sh >/dev/null 2>&1
export MAX_JOBS=16 PYTHONPATH=$PWD:$PWD/.vkdev/pylib PYTHONUNBUFFERED=1 CXX=/usr/bin/g++ CC=/usr/bin/gcc
python3 setup.py -q build_ext --inplace > "${OUT:-/tmp}/build.log" 2>&1 || { tail -30 "${OUT:-/tmp}/build.log"; exit 1; }
echo "build: $SECONDS s"
python3 - <<'PY'
import sys, os, shutil; sys.path.insert(0, "scripts")
import shaders
os.makedirs("/tmp/noieee", exist_ok=True)
for stem in ("gemm_coop_wg",):
    out = f"/tmp/noieee/{stem}_f32.spv"
    assert shaders.compile_blob(f"shaders/{stem}.comp", "f32", False, out) == ""
    shutil.copy(out, f"/tmp/noieee/{stem}_f32_ieee.spv")
PY
AB_ROUNDS=1 timeout 150 python3 scripts/gpu_ab.py "h16:4096,4096,4096;h16:2048,2048,2048;b16:4096,4096,4096;h16:4096,4096,4096,t" \
  wg= sg=VKML_GEMM_PIPE=coopmat_sg noieee=VKML_SPIRV_DIR=/tmp/noieee cuda 2>&1 | tail -16
cd test
timeout 200 python3 -m pytest -q -p no:cacheprovider test_gemm.py test_spv_khr.py --tb=short 2>&1 | tail -8
VKML_CHECK=1 timeout 100 python3 -m pytest -q -p no:cacheprovider test_gemm.py -k coopmat --tb=short 2>&1 | tail -4
echo "done: $SECONDS s"
