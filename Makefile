# vkml-torch: `make demo` and `make test` are all a newcomer needs. Both run `setup` first, which
# installs what is missing (Debian packages, a .venv with torch, the extension) and is quick when
# nothing is. Overridable: PYTHON (the interpreter the venv is made from), VENV, MAX_JOBS,
# TESTS / CHECK_TESTS (what each pytest pass runs), PYTEST_ARGS, BENCH_ARGS.

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV ?= .venv
VPY := $(VENV)/bin/python
MAX_JOBS ?= 2
TORCH_PIN ?= torch==2.13.0
PYTEST_ARGS ?= -q
TESTS ?= test
# The second pass runs with VKML_CHECK=1 VKML_MIN_SPEC=1; narrow it with e.g. CHECK_TESTS="-m check test".
CHECK_TESTS ?= test
BENCH_ARGS ?=
# The part of the suite `make test` also runs under the Khronos validation layer (core and
# synchronization validation; `make validate` runs all of it, with GPU-assisted validation too).
VALIDATE_TESTS ?= test/test_lazy.py test/test_copy_views.py test/test_check.py test/test_training.py \
                  test/test_fuzz.py
FUZZ_CASES ?= 10000
FUZZ_ARGS ?=
MUTATE_ARGS ?=

APT_PKGS := mesa-vulkan-drivers libvulkan-dev libvulkan-volk-dev glslc spirv-tools vulkan-tools \
            ninja-build ccache vulkan-validationlayers
# Installed after torch, never together with it (so nothing can pull a different torch).
PY_PKGS := numpy pybind11 pytest expecttest scikit-learn ninja setuptools wheel hypothesis

BUILD := build
comma := ,
DEPS_STAMP := $(VENV)/.vkml-deps
EXT_STAMP := $(VENV)/.vkml-ext
SRCLIST := $(BUILD)/.vkml-srclist
EXT_SRCS := $(shell find csrc shaders -type f 2>/dev/null | sort) setup.py
EXT_SO := $(wildcard vkml_torch/_C*.so)
EXT_PTH := $(wildcard $(VENV)/lib/python3*/site-packages/vkml_torch-dev.pth)
# torch wraps its ninja compiles in ccache itself when ccache is on PATH; /usr/lib/ccache on PATH
# covers older torch too. (CXX="ccache g++" breaks torch's ninja file: it quotes it as one word.)
CCACHE_PATH := $(if $(wildcard /usr/lib/ccache),/usr/lib/ccache:,)
# Building imports torch; torch would autoload a registered but not yet built vkml_torch.
# The venv's ninja goes last: a system ninja of another version would find its build log "too
# old"/"too new" and rebuild everything whenever someone builds by hand with the other one.
BUILD_ENV := PATH="$(CCACHE_PATH)$$PATH:$(abspath $(VENV))/bin" MAX_JOBS=$(MAX_JOBS) \
             TORCH_DEVICE_BACKEND_AUTOLOAD=0

.PHONY: help setup apt venv build rebuild ext demo test layering pytest validation validate fuzz mutate bench \
        clean distclean FORCE

help:
	@echo "make demo    train a small MLP on the best device (sets everything up first)"
	@echo "make test    layering check + pytest, then pytest again with VKML_CHECK=1 VKML_MIN_SPEC=1"
	@echo "make build   set up and (re)build the extension if csrc/, shaders/ or setup.py changed"
	@echo "make validate  the whole suite under the Khronos validation layer, GPU-assisted validation too"
	@echo "make fuzz    $(FUZZ_CASES) fuzz cases of every op row against torch CPU and the oracle"
	@echo "make mutate  the shader mutation campaign (resumable; MUTATE_ARGS=\"--family reduce --limit 20\")"
	@echo "make bench   bench/bench_ops.py \$$BENCH_ARGS (e.g. BENCH_ARGS=--full)"
	@echo "make clean   remove build outputs (distclean also removes $(VENV))"

setup: apt venv ext
build: setup

demo: setup
	$(VPY) -m vkml_torch.demo

test: layering setup pytest validation

layering:
	@$(PYTHON) scripts/check_layering.py
	@out="$$($(PYTHON) scripts/check_layering.py --self-test 2>&1)" \
	  || { echo "$$out"; echo "check_layering --self-test failed" >&2; exit 1; }

# Both passes run even when the first fails (more to read per CI run); either failing fails make.
pytest: setup
	@rc=0; \
	echo "$(VPY) -m pytest $(PYTEST_ARGS) $(TESTS)"; \
	$(VPY) -m pytest $(PYTEST_ARGS) $(TESTS) || rc=1; \
	echo "VKML_CHECK=1 VKML_MIN_SPEC=1 $(VPY) -m pytest $(PYTEST_ARGS) $(CHECK_TESTS)"; \
	VKML_CHECK=1 VKML_MIN_SPEC=1 $(VPY) -m pytest $(PYTEST_ARGS) $(CHECK_TESTS) || rc=1; \
	exit $$rc

# A slice of the suite under the validation layer: any message fails make test.
validation: setup
	$(VPY) scripts/vkvalidate.py -- $(VPY) -m pytest $(PYTEST_ARGS) $(VALIDATE_TESTS)

# The whole suite, both passes, under core + synchronization + GPU-assisted validation.
validate: setup
	$(VPY) scripts/vkvalidate.py --gpu-av -- $(VPY) -m pytest $(PYTEST_ARGS) $(TESTS)
	VKML_CHECK=1 VKML_MIN_SPEC=1 $(VPY) scripts/vkvalidate.py --gpu-av -- $(VPY) -m pytest $(PYTEST_ARGS) $(CHECK_TESTS)

fuzz: setup
	$(VPY) scripts/fuzz.py --cases $(FUZZ_CASES) $(FUZZ_ARGS)

mutate: setup
	$(VPY) scripts/mutate.py $(MUTATE_ARGS)

bench: setup
	$(VPY) bench/bench_ops.py $(BENCH_ARGS)

# ---- Debian packages: dpkg -s each; apt-get only what is missing ---------------------------------
apt:
	@if ! command -v dpkg >/dev/null; then \
	  echo "setup: no dpkg here; make sure these (or your distribution's equivalents) are installed: $(APT_PKGS)"; \
	  exit 0; fi; \
	missing=""; for p in $(APT_PKGS); do dpkg -s "$$p" >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	[ -z "$$missing" ] && exit 0; \
	echo "setup: installing Debian packages:$$missing"; \
	if [ "$$(id -u)" = 0 ]; then sudo=""; \
	elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo="sudo -n"; \
	else echo "setup: missing Debian packages; as root run:" >&2; \
	  echo "  apt-get update && apt-get install -y --no-install-recommends$$missing" >&2; exit 1; fi; \
	$$sudo apt-get update -qq; \
	$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing

# ---- the venv: torch by exact pin, alone and CPU-only; then the rest ----------------------------
# Prints the requirements in argv that the venv lacks (torch: lacks a 2.11-2.14 release).
define PY_NEED
import importlib.metadata as md, re, sys
for name in sys.argv[1:]:
    try:
        v = md.version(name)
    except md.PackageNotFoundError:
        print(name); continue
    if name == "torch" and not (2, 11) <= tuple(int(x) for x in re.findall(r"\d+", v)[:2]) <= (2, 14):
        print(name)
endef
# Reads pip's --dry-run report of the torch install; fails if it would bring CUDA packages.
define PY_NO_CUDA
import json, sys
items = json.load(open(sys.argv[1]))["install"]
names = [i["metadata"]["name"] + "==" + i["metadata"]["version"] for i in items]
cuda = [n for n in names if n.lower().startswith(("nvidia-", "triton", "cuda-"))]
if cuda:
    sys.exit("setup: refusing: pip would install a CUDA torch (" + ", ".join(cuda[:4]) + ", ...).\n"
             "  Install a CPU build of torch 2.11-2.14 into $(VENV) yourself (from PyTorch's CPU wheel "
             "index), then rerun make.")
print("setup: installing " + ", ".join(n for n in names if n.startswith("torch==")))
endef
export PY_NEED PY_NO_CUDA

venv: $(DEPS_STAMP)

# Always checked (a few ms: metadata only, no imports); the stamp changes only when the torch or
# python in the venv does, which is what makes the extension rebuild.
$(DEPS_STAMP): FORCE
	@[ -x "$(VPY)" ] || { echo "setup: creating $(VENV) with $(PYTHON)"; $(PYTHON) -m venv "$(VENV)"; }
	@if [ -n "$$($(VPY) -c "$$PY_NEED" torch)" ]; then \
	  $(VPY) -m pip install -q --dry-run --report "$(VENV)/.torch-plan.json" "$(TORCH_PIN)" >/dev/null; \
	  $(VPY) -c "$$PY_NO_CUDA" "$(VENV)/.torch-plan.json"; \
	  $(VPY) -m pip install -q "$(TORCH_PIN)"; fi
	@need="$$($(VPY) -c "$$PY_NEED" $(PY_PKGS) | tr '\n' ' ')"; \
	if [ -n "$$need" ]; then echo "setup: installing $$need"; $(VPY) -m pip install -q $$need; fi
	@$(VPY) -c 'import sys, importlib.metadata as m; print(sys.version.split()[0], m.version("torch"))' >"$@.tmp"; \
	if cmp -s "$@.tmp" "$@"; then rm "$@.tmp"; else mv "$@.tmp" "$@"; echo "setup: venv ready (python, torch: $$(cat $@))"; fi

# ---- the extension: build_ext --inplace (ninja keeps objects in build/ for incremental rebuilds)
# plus a dist-info for the torch.backends entry point and a .pth that puts the repo on sys.path.
# Rebuilt when a file in csrc/ or shaders/ changes, appears or disappears, or setup.py changes.
define PY_REGISTER
import glob, json, os, shutil, sys, sysconfig
root, made = os.path.abspath(sys.argv[1]), sys.argv[2]
sp = sysconfig.get_paths()["purelib"]
for old in glob.glob(os.path.join(sp, "vkml_torch-*.dist-info")):
    shutil.rmtree(old)
src = glob.glob(os.path.join(made, "vkml_torch-*.dist-info"))[0]
dst = os.path.join(sp, os.path.basename(src))
shutil.copytree(src, dst)
with open(os.path.join(dst, "INSTALLER"), "w") as f:
    f.write("make\n")
with open(os.path.join(dst, "direct_url.json"), "w") as f:
    json.dump({"url": "file://" + root, "dir_info": {"editable": True}}, f)
pth = os.path.join(sp, "vkml_torch-dev.pth")
with open(pth, "w") as f:
    f.write(root + "\n")
rec = [os.path.relpath(p, sp) for p in glob.glob(os.path.join(dst, "*"))] + [os.path.basename(pth)]
with open(os.path.join(dst, "RECORD"), "w") as f:
    f.writelines(r + ",,\n" for r in rec + [os.path.relpath(os.path.join(dst, "RECORD"), sp)])
endef
export PY_REGISTER

ext: $(EXT_STAMP)

$(SRCLIST): FORCE
	@mkdir -p $(BUILD); printf '%s\n' $(EXT_SRCS) >"$@.tmp"; \
	if cmp -s "$@.tmp" "$@"; then rm "$@.tmp"; else mv "$@.tmp" "$@"; fi

$(EXT_STAMP): $(EXT_SRCS) $(SRCLIST) $(DEPS_STAMP) $(if $(and $(EXT_SO),$(EXT_PTH)),,FORCE) | apt
	@echo "setup: building vkml_torch._C (MAX_JOBS=$(MAX_JOBS)$(if $(CCACHE_PATH),$(comma) ccache))"
	@rm -rf $(BUILD)/dist-info; mkdir -p $(BUILD)/dist-info
	$(BUILD_ENV) $(abspath $(VPY)) setup.py -q build_ext --inplace dist_info --output-dir $(BUILD)/dist-info
	@$(VPY) -c "$$PY_REGISTER" . $(BUILD)/dist-info
	@touch "$@"

rebuild:
	rm -f "$(EXT_STAMP)"
	$(MAKE) build

# ---- cleaning: also unregister the entry point, or `import torch` in the venv would try to load
# an extension that is gone.
define PY_UNREGISTER
import glob, os, shutil, sysconfig
sp = sysconfig.get_paths()["purelib"]
for p in glob.glob(os.path.join(sp, "vkml_torch-*.dist-info")):
    shutil.rmtree(p)
for p in glob.glob(os.path.join(sp, "vkml_torch-dev.pth")):
    os.remove(p)
endef
export PY_UNREGISTER

clean:
	@if [ -x "$(VPY)" ]; then $(VPY) -c "$$PY_UNREGISTER"; fi
	rm -rf $(BUILD) vkml_torch/_C*.so *.egg-info .pytest_cache "$(EXT_STAMP)"
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +

distclean: clean
	rm -rf "$(VENV)"

FORCE:
