# vkml-torch: `make demo` and `make test` are all a newcomer needs. Both run `setup` first, which
# installs what is missing (Debian packages, a .venv with torch, the extension) and is quick when
# nothing is. Overridable: PYTHON (the interpreter the venv is made from), VENV, MAX_JOBS,
# TESTS / CHECK_TESTS (what each pytest pass runs), PYTEST_ARGS, PYTEST_JOBS, BENCH_ARGS.

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV ?= .venv
VPY := $(VENV)/bin/python
MAX_JOBS ?= 2
TORCH_PIN ?= torch==2.13.0
PYTEST_ARGS ?= -q
# The two pytest passes run their files on PYTEST_JOBS worker processes (pytest-xdist, a file's tests
# on one worker); 1 runs them in this process. 2 workers on the 2-core machine: 1.3x (test_check,
# test_gemm and test_norm: 385 s one after the other, 292 s on two; lavapipe already spreads a
# large dispatch over both cores, and each worker compiles the pipelines it uses).
PYTEST_JOBS ?= 2
XDIST := $(if $(filter-out 0 1,$(PYTEST_JOBS)),-n $(PYTEST_JOBS) --dist loadfile)
TESTS ?= test
# The second pass runs with VKML_CHECK=1 VKML_MIN_SPEC=1; narrow it with e.g. CHECK_TESTS="-m check test".
# It leaves out the files whose tests would run exactly as in the first pass: test_check.py sets
# check mode itself, test_env.py's children drop every VKML_* variable, and the rest test host-side
# behaviour (packaging, the docs, the CUDA warning, the benchmark harness) or read the built SPIR-V
# (test_spirv, test_spv_khr). 2.4 of its 10.6 min.
CHECK_SAME := test_check.py test_env.py test_packaging.py test_api_docs.py test_cuda_warning.py test_bench.py \
              test_spirv.py test_spv_khr.py
# Likewise test_norm's 70,000-group test, which sets check mode itself, over a grid split the same
# way there (lavapipe's limit is min-spec's 65,535 a dimension): 48 s. And test_fast_paths' test of the
# specialized pipelines (elementwise; reduce, softmax, gemm), which force them and the generic ones
# and compare the two only: 41 + 9 s. (--deselect takes a node id
# relative to the rootdir; under make compat the rootdir is test/, so there it runs.) test_ops.py's cases run once in this pass,
# not lazily and then checked (both would be checked runs).
CHECK_SAME_TESTS := test/test_norm.py::test_more_than_65535_groups \
                    test/test_fast_paths.py::test_elementwise_specialized_pipelines_same_bytes \
                    test/test_fast_paths.py::test_dtype_specialized_pipelines_same_bytes
CHECK_TESTS ?= test $(addprefix --ignore=test/,$(CHECK_SAME)) $(addprefix --deselect=,$(CHECK_SAME_TESTS))
BENCH_ARGS ?=
# The part of the suite `make test` also runs under the Khronos validation layer (core and
# synchronization validation; `make validate` runs all of it, with GPU-assisted validation too).
VALIDATE_TESTS ?= test/test_lazy.py test/test_copy_views.py test/test_check.py test/test_training.py \
                  test/test_fuzz.py
# With PYTEST_JOBS > 1 the slice runs as two processes side by side, each under its own layer and
# log: the tests whose names match VALIDATE_SPLIT (pytest -k), and the others. test_check's
# broken-shader tests alone took 2/3 of the slice's 250 s; all of them in one half took 191 s
# against the other's 114 (2026-12-07), so the two layer-norm ones (the slowest) go with the rest.
VALIDATE_SPLIT ?= every_row_broken_shader_caught and not layer_norm
# test_check.py sets check mode itself, so in `make test` it runs once, in the validation slice (which
# fails on its test failures as well as on any layer message, and fails outright when the layer is
# missing), not also in the first pass: 193 s of that pass's 1,302 worker-seconds (2026-12-07).
# `make pytest` alone and `make compat` still run it.
PLAIN_IGNORE := $(if $(and $(filter test,$(TESTS)),$(filter test/test_check.py,$(VALIDATE_TESTS))),--ignore=test/test_check.py)
FUZZ_CASES ?= 10000
FUZZ_ARGS ?=
MUTATE_ARGS ?=

APT_PKGS := mesa-vulkan-drivers libvulkan-dev libvulkan-volk-dev glslc spirv-tools vulkan-tools \
            ninja-build ccache vulkan-validationlayers
# Installed after torch, never together with it (so nothing can pull a different torch).
PY_PKGS := numpy pybind11 pytest pytest-xdist expecttest scikit-learn ninja setuptools wheel hypothesis

BUILD := build
comma := ,
DEPS_STAMP := $(VENV)/.vkml-deps
EXT_STAMP := $(VENV)/.vkml-ext
SRCLIST := $(BUILD)/.vkml-srclist
EXT_SRCS := $(shell find csrc shaders -type f 2>/dev/null | sort) setup.py pyproject.toml
EXT_SO := $(wildcard vkml_torch/_C*.so)
EXT_EDITABLE := $(wildcard $(VENV)/lib/python3*/site-packages/__editable__*vkml_torch*.pth)
# pip's verbosity for the build (e.g. PIP_BUILD_ARGS=-v shows every compile).
PIP_BUILD_ARGS ?= -q
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
	@echo "make build   set up and (re)build the extension (pip install -e .) if its sources changed"
	@echo "make validate  the whole suite under the Khronos validation layer, GPU-assisted validation too"
	@echo "make fuzz    $(FUZZ_CASES) fuzz cases of every op row against torch CPU and the oracle"
	@echo "make mutate  the shader mutation campaign (resumable; MUTATE_ARGS=\"--family reduce --limit 20\")"
	@echo "make bench   python -m bench \$$BENCH_ARGS (e.g. BENCH_ARGS=--full; --help lists the options)"
	@echo "make clean   remove build outputs (distclean also removes $(VENV))"
	@echo "make wheel   build dist/vkml_torch-*.whl; make smoke installs it into a fresh venv and checks it"
	@echo "make docs    regenerate docs/api.md from the docstrings"
	@echo "make compat TORCH=2.15.0   build and test against that torch in .venv-torch2.15.0"

setup: apt venv ext
build: setup

demo: setup
	$(VPY) -m vkml_torch.demo

# The validation slice runs even when the pytest passes fail; either failing fails make test.
test: layering setup
	@rc=0; \
	$(MAKE) --no-print-directory pytest TESTS="$(TESTS) $(PLAIN_IGNORE)" || rc=1; \
	$(MAKE) --no-print-directory validation || rc=1; \
	exit $$rc

layering:
	@$(PYTHON) scripts/check_layering.py
	@out="$$($(PYTHON) scripts/check_layering.py --self-test 2>&1)" \
	  || { echo "$$out"; echo "check_layering --self-test failed" >&2; exit 1; }

# Both passes run even when the first fails (more to read per CI run); either failing fails make.
pytest: setup
	@rc=0; \
	echo "$(VPY) -m pytest $(PYTEST_ARGS) $(XDIST) $(TESTS)"; \
	$(VPY) -m pytest $(PYTEST_ARGS) $(XDIST) $(TESTS) || rc=1; \
	echo "VKML_CHECK=1 VKML_MIN_SPEC=1 $(VPY) -m pytest $(PYTEST_ARGS) $(XDIST) $(CHECK_TESTS)"; \
	VKML_CHECK=1 VKML_MIN_SPEC=1 $(VPY) -m pytest $(PYTEST_ARGS) $(XDIST) $(CHECK_TESTS) || rc=1; \
	exit $$rc

# A slice of the suite under the validation layer: any message fails make test.
validation: setup
	@if [ -z "$(XDIST)" ]; then \
	  echo "$(VPY) scripts/vkvalidate.py -- $(VPY) -m pytest $(PYTEST_ARGS) $(VALIDATE_TESTS)"; \
	  exec $(VPY) scripts/vkvalidate.py -- $(VPY) -m pytest $(PYTEST_ARGS) $(VALIDATE_TESTS); \
	fi; \
	mkdir -p $(BUILD); rc=0; \
	echo "validation, two processes: $(VALIDATE_TESTS) -k '$(VALIDATE_SPLIT)' / -k 'not ($(VALIDATE_SPLIT))'"; \
	$(VPY) scripts/vkvalidate.py -- $(VPY) -m pytest $(PYTEST_ARGS) $(VALIDATE_TESTS) -k "$(VALIDATE_SPLIT)" \
	  > $(BUILD)/validation-split.log 2>&1 & pid=$$!; \
	$(VPY) scripts/vkvalidate.py -- $(VPY) -m pytest $(PYTEST_ARGS) $(VALIDATE_TESTS) -k "not ($(VALIDATE_SPLIT))" || rc=1; \
	wait $$pid || rc=1; \
	echo "--- the -k '$(VALIDATE_SPLIT)' half:"; cat $(BUILD)/validation-split.log; \
	exit $$rc

# The whole suite, both passes, under core + synchronization + GPU-assisted validation.
validate: setup
	$(VPY) scripts/vkvalidate.py --gpu-av -- $(VPY) -m pytest $(PYTEST_ARGS) $(TESTS)
	VKML_CHECK=1 VKML_MIN_SPEC=1 $(VPY) scripts/vkvalidate.py --gpu-av -- $(VPY) -m pytest $(PYTEST_ARGS) $(CHECK_TESTS)

fuzz: setup
	$(VPY) scripts/fuzz.py --cases $(FUZZ_CASES) $(FUZZ_ARGS)

mutate: setup
	$(VPY) scripts/mutate.py $(MUTATE_ARGS)

bench: setup
	$(VPY) -m bench $(BENCH_ARGS)

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

# ---- the extension: `pip install --no-build-isolation -e .`, as a user would run it (setup.py keeps
# ninja's objects in build/, so a rebuild compiles only what changed). The package, its metadata and
# the torch.backends entry point come from pyproject.toml. Rebuilt when a file in csrc/ or shaders/
# changes, appears or disappears, or setup.py or pyproject.toml changes.
ext: $(EXT_STAMP)

$(SRCLIST): FORCE
	@mkdir -p $(BUILD); printf '%s\n' $(EXT_SRCS) >"$@.tmp"; \
	if cmp -s "$@.tmp" "$@"; then rm "$@.tmp"; else mv "$@.tmp" "$@"; fi

$(EXT_STAMP): $(EXT_SRCS) $(SRCLIST) $(DEPS_STAMP) $(if $(and $(EXT_SO),$(EXT_EDITABLE)),,FORCE) | apt
	@echo "setup: building vkml_torch._C: pip install --no-build-isolation -e . (MAX_JOBS=$(MAX_JOBS)$(if $(CCACHE_PATH),$(comma) ccache))"
	$(BUILD_ENV) $(VPY) -m pip install $(PIP_BUILD_ARGS) --no-build-isolation --no-deps -e .
	@touch "$@"

rebuild:
	rm -f "$(EXT_STAMP)"
	$(MAKE) build

# ---- cleaning: also uninstall, or `import torch` in the venv would try to load an extension that
# is gone (through the entry point).
clean:
	@if [ -x "$(VPY)" ]; then $(VPY) -m pip uninstall -y -q vkml-torch 2>/dev/null || true; fi
	rm -rf $(BUILD) dist vkml_torch/_C*.so vkml_torch/_build_info.py *.egg-info .pytest_cache "$(EXT_STAMP)"
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +

distclean: clean
	rm -rf "$(VENV)"

FORCE:

# ---- packaging: the wheel, and installing as a new user would (fresh venvs, no source tree) -----
# `make wheel` builds dist/vkml_torch-*.whl against the venv's torch (SPIR-V inside _C). `make smoke`
# installs the wheel into a fresh venv that has only torch ($(SMOKE_TORCH)), and with SMOKE="wheel
# source" also the source tree, plain and editable (a full compile in a venv of its own: minutes);
# from an empty directory it checks that `import torch` alone loads vkml and that the demo trains.
.PHONY: wheel smoke
SMOKE ?= wheel
SMOKE_TORCH ?= $(TORCH_PIN)

wheel: setup
	@rm -f dist/vkml_torch-*.whl
	$(BUILD_ENV) $(VPY) -m pip wheel $(PIP_BUILD_ARGS) --no-build-isolation --no-deps -w dist .
	@ls dist/vkml_torch-*.whl

smoke: $(if $(filter wheel,$(SMOKE)),wheel,)
	@for how in $(SMOKE); do \
	  if [ "$$how" = wheel ]; then what="$$(ls dist/vkml_torch-*.whl)"; else what=.; fi; \
	  PATH="$(CCACHE_PATH)$$PATH" MAX_JOBS=$(MAX_JOBS) PYTHON=$(PYTHON) \
	    scripts/smoke_install.sh "$(SMOKE_TORCH)" "$$how" "$$what"; done

# ---- docs/api.md, generated from the docstrings (test/test_api_docs.py fails `make test` when the
# file is out of date).
.PHONY: docs
docs: setup
	$(VPY) scripts/gen_api_docs.py

# ---- compat: build and test against another torch release, in a venv of its own -----------------
# `make compat TORCH=2.15.0` makes .venv-torch2.15.0 with PyPI's default wheel of that torch (CUDA
# dependencies and all: a large download; a local pip constraints file capping torch is ignored
# for it), builds and installs the extension there with `pip install --no-build-isolation .`
# (objects in build/compat-torch2.15.0: the main venv's build is not touched), then runs both
# passes of the suite against the installed package from that directory, so that the source
# tree's vkml_torch (built for the main venv's torch) is not the one imported.
.PHONY: compat
TORCH ?=
COMPAT_VENV = .venv-torch$(TORCH)
COMPAT_DIR = $(BUILD)/compat-torch$(TORCH)
COMPAT_PY = $(abspath $(COMPAT_VENV))/bin/python
# TESTS / CHECK_TESTS with their test paths (and --ignore= ones) made absolute (pytest runs from COMPAT_DIR).
compat_args = $(foreach a,$(1),$(if $(filter test%,$(a)),$(CURDIR)/$(a),$(patsubst --ignore=test%,--ignore=$(CURDIR)/test%,$(a))))

compat: apt
	@[ -n "$(TORCH)" ] || { echo "usage: make compat TORCH=2.15.0" >&2; exit 2; }
	@[ -x "$(COMPAT_PY)" ] || { echo "compat: creating $(COMPAT_VENV)"; $(PYTHON) -m venv "$(COMPAT_VENV)"; }
	PIP_CONSTRAINT=/dev/null $(COMPAT_PY) -m pip install -q "torch==$(TORCH)"
	PIP_CONSTRAINT=/dev/null $(COMPAT_PY) -m pip install -q $(PY_PKGS)
	@mkdir -p $(COMPAT_DIR)
	PATH="$(CCACHE_PATH)$$PATH:$(abspath $(COMPAT_VENV))/bin" MAX_JOBS=$(MAX_JOBS) TORCH_DEVICE_BACKEND_AUTOLOAD=0 \
	  VKML_BUILD_TEMP=$(abspath $(COMPAT_DIR))/obj \
	  $(COMPAT_PY) -m pip install $(PIP_BUILD_ARGS) --no-build-isolation --no-deps --force-reinstall .
	@cd $(COMPAT_DIR) && rc=0; \
	echo "torch $(TORCH): pytest $(PYTEST_ARGS) test"; \
	$(COMPAT_PY) -m pytest $(PYTEST_ARGS) -p no:cacheprovider $(call compat_args,$(TESTS)) || rc=1; \
	echo "torch $(TORCH): VKML_CHECK=1 VKML_MIN_SPEC=1 pytest $(PYTEST_ARGS) test"; \
	VKML_CHECK=1 VKML_MIN_SPEC=1 $(COMPAT_PY) -m pytest $(PYTEST_ARGS) -p no:cacheprovider $(call compat_args,$(CHECK_TESTS)) || rc=1; \
	exit $$rc
