"""Packaging: the metadata pip installed (pyproject.toml), the torch range, the clear error under
another torch. Installing into fresh venvs is `make smoke` (scripts/smoke_install.sh): too slow here."""
import importlib.metadata
import os
import re
import subprocess
import sys
import tomllib

import pytest
import torch
import vkml_torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def minor(v):
    return tuple(int(x) for x in re.findall(r"\d+", v)[:2])


def test_pyproject_declares_the_entry_point_and_build_system():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        meta = tomllib.load(f)
    assert meta["project"]["entry-points"]["torch.backends"] == {"vkml": "vkml_torch:_autoload"}
    assert meta["build-system"]["build-backend"] == "setuptools.build_meta"
    assert any(r.startswith("torch") for r in meta["build-system"]["requires"])
    assert "dependencies" in meta["project"]["dynamic"]  # setup.py: the torch it was built against


def test_installed_metadata_states_the_torch_it_was_built_for():
    try:
        dist = importlib.metadata.distribution("vkml-torch")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("vkml-torch is not pip-installed (make build installs it editable)")
    eps = [e for e in dist.entry_points if e.group == "torch.backends"]
    assert [(e.name, e.value) for e in eps] == [("vkml", "vkml_torch:_autoload")]
    reqs = [r for r in dist.requires or [] if r.startswith("torch")]
    major, mnr = minor(torch.__version__)
    assert reqs == [f"torch<{major}.{mnr + 1},>={major}.{mnr}"], reqs
    from vkml_torch import _build_info
    assert _build_info.TORCH_VERSION == torch.__version__
    assert dist.version == "0.1.0"


@pytest.mark.parametrize("fake", ["2.99.0", "1.13.1+cu117"])
def test_another_torch_is_a_clear_import_error_before_the_extension_loads(fake, tmp_path):
    code = (f"import sys, torch; torch.__version__ = {fake!r}\n"
            "try:\n    import vkml_torch\nexcept ImportError as e:\n    print('ImportError:', e)\n"
            "print('_C loaded:', 'vkml_torch._C' in sys.modules)\n")
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    # From an empty directory: the vkml_torch under test is the one this interpreter imports.
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"but this Python has torch {fake}" in r.stdout, r.stdout
    assert f"built against torch {torch.__version__}" in r.stdout, r.stdout
    assert "TORCH_DEVICE_BACKEND_AUTOLOAD=0" in r.stdout
    assert r.stdout.strip().endswith("_C loaded: False"), r.stdout


def test_same_minor_release_is_accepted():
    from vkml_torch import _torch_check
    major, mnr = minor(torch.__version__)
    _torch_check.check(f"{major}.{mnr}.7")  # patch releases keep the C++ ABI
    with pytest.raises(ImportError, match="built against torch"):
        _torch_check.check(f"{major}.{mnr + 1}.0")


def test_the_extension_carries_the_shaders():
    # The wheel needs no build tree: every SPIR-V blob is inside _C (build/gen is only its source).
    so = vkml_torch._C.__file__
    data = open(so, "rb").read()
    assert data.count(b"\x03\x02\x23\x07") > 10, "no SPIR-V magic numbers inside _C"  # 0x07230203 LE
