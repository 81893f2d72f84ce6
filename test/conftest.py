"""Suite setup: skip everything, visibly, only when no Vulkan device is usable; reset test hooks.

An `import vkml_torch` failure is NOT a skip: it means the extension is broken or unbuilt, and the
suite errors out. VKML_TEST_REQUIRE_DEVICE=1 (for CI) turns "no device" into a failure as well.
"""
import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))  # `import helpers` from any rootdir

import vkml_torch  # noqa: E402  (ImportError here is a real failure, not a skip)

AVAILABLE = bool(vkml_torch.is_available())
WHY = "" if AVAILABLE else vkml_torch.why_unavailable()
INITIAL_CHECK = bool(vkml_torch.check_enabled())
INITIAL_EAGER = os.environ.get("VKML_EAGER", "") == "1"
INITIAL_FUSE = bool(vkml_torch.fuse_enabled()) if AVAILABLE else True
INITIAL_SPECIALIZE = vkml_torch._C._specialize() if AVAILABLE else -1


def pytest_report_header(config):
    if AVAILABLE:
        return f"vkml: {vkml_torch.best_device()[1]}; check={INITIAL_CHECK} eager={INITIAL_EAGER}"
    return f"vkml: UNAVAILABLE ({WHY}); every test is skipped"


def pytest_collection_modifyitems(config, items):
    if AVAILABLE:
        return
    if os.environ.get("VKML_TEST_REQUIRE_DEVICE") == "1":
        raise pytest.UsageError(f"VKML_TEST_REQUIRE_DEVICE=1 but vkml is unavailable: {WHY}")
    mark = pytest.mark.skip(reason=f"no usable Vulkan device for vkml: {WHY}")
    for item in items:
        item.add_marker(mark)


def pytest_terminal_summary(terminalreporter):
    if not AVAILABLE:
        terminalreporter.write_line(f"vkml UNAVAILABLE, whole suite skipped: {WHY}", red=True)


@pytest.fixture(autouse=True)
def _reset_hooks():
    """Each test starts and ends with the process-wide hooks as the environment set them."""
    yield
    if not AVAILABLE:
        return
    want = os.environ.get("VKML_SPIRV_DIR", "")  # read now: scripts/mutate.py's worker sets it per mutant
    if vkml_torch._C._spirv_dir() != want:
        vkml_torch._C._set_spirv_dir(want)
    vkml_torch.set_check(INITIAL_CHECK)
    vkml_torch.set_eager(INITIAL_EAGER)
    vkml_torch.set_fuse(INITIAL_FUSE)
    if vkml_torch._C._specialize() != INITIAL_SPECIALIZE:
        vkml_torch._C._set_specialize(INITIAL_SPECIALIZE)
    torch.vkml.synchronize()  # nothing of this test may leak into the next one
