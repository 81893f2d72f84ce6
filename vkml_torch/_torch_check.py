"""Refuse, with a message, to load _C under a torch it was not compiled against.

_C links against libtorch's C++ API, which changes between torch minor releases: loaded under
another torch it fails on a missing symbol at best and crashes later at worst. setup.py records
the torch it built against in _build_info.py, beside _C; this runs before _C is imported."""
import re


def _minor(version):
    return tuple(int(x) for x in re.findall(r"\d+", str(version))[:2])


def check(torch_version):
    """Raise ImportError unless torch_version has the major.minor that _C was built for."""
    try:
        from ._build_info import TORCH_REQUIREMENT, TORCH_VERSION
    except ImportError:
        raise ImportError(
            "vkml_torch is not built: its extension vkml_torch._C is missing. Install it with "
            "`pip install --no-build-isolation .` (or `make build`) in the source tree.") from None
    if _minor(torch_version) != _minor(TORCH_VERSION):
        raise ImportError(
            f"vkml_torch was built against torch {TORCH_VERSION} ({TORCH_REQUIREMENT}), but this "
            f"Python has torch {torch_version}: its C++ extension would not load safely. Reinstall "
            f"vkml_torch built against this torch (`pip install --no-build-isolation --force-reinstall "
            f"--no-deps <vkml-torch source>`), or install torch {'.'.join(map(str, _minor(TORCH_VERSION)))}. "
            "Meanwhile TORCH_DEVICE_BACKEND_AUTOLOAD=0 keeps `import torch` from loading vkml_torch.")
