#!/usr/bin/env bash
# Installs vkml-torch as a new user would and checks it from an empty directory (no source tree on
# sys.path): `import torch` alone must register the vkml device (the torch.backends entry point)
# and `python -m vkml_torch.demo` must train, with nothing but torch installed besides.
#   scripts/smoke_install.sh TORCH_SPEC wheel DIST.whl   the wheel, in a fresh venv
#   scripts/smoke_install.sh TORCH_SPEC source SRC_DIR   pip install --no-build-isolation SRC_DIR,
#       then (uninstalled) pip install --no-build-isolation -e SRC_DIR, in one fresh venv that
#       also has setuptools, wheel and ninja (what a build without isolation needs). Its objects
#       go to a directory of its own (VKML_BUILD_TEMP): its torch lives elsewhere, so it compiles
#       everything once, without disturbing build/.
# PYTHON picks the interpreter.
set -euo pipefail
torch_spec=$1 how=$2 what=$(realpath "$3")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"${PYTHON:-python3}" -m venv "$work/venv"
py=$work/venv/bin/python

check() {  # $1: what was installed
  echo "smoke($1): installed: $("$py" -m pip list --format=freeze 2>/dev/null | grep -iE '^(torch|vkml|numpy|scikit)' | tr '\n' ' ')"
  (cd "$work" && env -u PYTHONPATH -u TORCH_DEVICE_BACKEND_AUTOLOAD "$py" - <<'PY'
import sys
import torch  # nothing else: the entry point must load the backend
assert "vkml_torch" in sys.modules, "import torch did not autoload vkml_torch"
import vkml_torch
t = torch.arange(6, dtype=torch.float32).to("vkml")
got = (t * 2 + 1).cpu().tolist()
assert got == [1.0, 3.0, 5.0, 7.0, 9.0, 11.0], got
print(f"smoke: import torch loaded vkml_torch from {vkml_torch.__file__}; "
      f"accelerator {torch.accelerator.current_accelerator()}: {got}")
PY
  )
  (cd "$work" && env -u PYTHONPATH "$py" -m vkml_torch.demo)
  echo "smoke($1): ok"
}

echo "smoke($how): fresh venv, installing $torch_spec"
"$py" -m pip install -q "$torch_spec"
case $how in
  wheel)
    "$py" -m pip install -q "$what"
    check wheel ;;
  source)
    "$py" -m pip install -q setuptools wheel ninja
    export VKML_BUILD_TEMP=$work/obj
    "$py" -m pip install -q --no-build-isolation "$what"
    check "pip install $what"
    "$py" -m pip uninstall -q -y vkml-torch
    "$py" -m pip install -q --no-build-isolation -e "$what"
    check "pip install -e $what" ;;
  *) echo "smoke: unknown mode $how" >&2; exit 2 ;;
esac
