"""vkml_torch: a PyTorch device backend for any Vulkan 1.3 GPU.

`import vkml_torch` (or torch's backend autoload) registers the device "vkml":
`tensor.to("vkml")`, `model.to("vkml")`, and `torch.vkml` (the counterpart of `torch.cuda`).
"""


def _autoload():
    """Entry point for torch's `torch.backends` autoload: importing the package is the work.

    Defined before `import torch`: when this package is imported first, torch's autoload runs
    inside that import and looks this function up on the half-initialised module."""


import atexit  # noqa: E402

import torch  # noqa: E402

from . import _torch_check  # noqa: E402

_torch_check.check(torch.__version__)  # before _C: it only loads under the torch it was built for

from . import _C  # noqa: E402
from . import _decomp  # noqa: E402
from . import _device  # noqa: E402
from ._profile import profile  # noqa: E402
from ._trace import trace  # noqa: E402

__all__ = ["best_device", "is_available", "why_unavailable", "stats", "set_check", "check_enabled",
           "set_fuse", "fuse_enabled", "set_eager", "flushes_subnormals", "pipeline_cache", "trace", "profile",
           "set_rng_mode", "get_rng_mode"]

_registered = False


def _register():
    global _registered
    if _registered:
        return
    _registered = True
    if torch._C._get_privateuse1_backend_name() != "vkml":
        torch.utils.rename_privateuse1_backend("vkml")
    torch._register_device_module("vkml", _device)
    torch.utils.generate_methods_for_privateuse1_backend(for_tensor=True, for_module=True, for_storage=True)
    _decomp.register()
    if torch.distributed.is_available():  # (torch builds without it have no gloo to build on)
        from . import distributed
        distributed.register()  # the "vkml" torch.distributed backend (gloo, staged through the host)
    from . import _cuda_check
    _cuda_check.warn_once()  # CUDA in the same process: pytorch issue #161129


_register()
atexit.register(_C._save_pipeline_caches)  # before the driver's own exit handlers (pipelines.cpp)

def is_available():
    """Whether a usable Vulkan 1.3 device was found (the device opens on first use)."""
    return _C.is_available()


def why_unavailable():
    """Why no device is usable ("" when one is): no loader, no Vulkan 1.3 device, a missing feature."""
    return _C.why_unavailable()


def best_device():
    """(torch.device, reason): the vkml device when a Vulkan device is usable, else the CPU."""
    if _C.is_available():
        i = _C.device_info(0)
        idx = _C.device_index(0)
        return (torch.device("vkml", 0),
                f"using Vulkan device {idx}: {i['name']} ({i['type']}, Vulkan {i['api_version']}, "
                f"driver {i['driver_version']})")
    return torch.device("cpu"), f"no usable Vulkan device ({_C.why_unavailable()}); using the CPU"


def stats(device=None):
    """The device's counters since process start (default: the current device): nodes,
    dispatches, submits, flushes, pending, checked, fused (fused nodes submitted) and fused_steps
    (the elementwise nodes they replaced), fused_specialized (fused dispatches that ran a pipeline
    compiled for their program: docs/fusion.md), barriers (pipeline barriers between dispatches: only
    where one depends on another), submit_us / wait_us: host time spent building and submitting
    batches (lowering each node, recording commands) and waiting for them to finish, and
    pipelines / pipeline_cache_hits: pipelines compiled, and how many of them the on-disk
    pipeline cache held (see pipeline_cache()).
    """
    from ._device import _index
    return _C.stats(_index(device))


def pipeline_cache(device=None):
    """The device's pipeline cache on disk: {"file", "loaded_bytes", "created", "cache_hits"}.
    The file is VKML_CACHE_DIR (default $XDG_CACHE_HOME/vkml or ~/.cache/vkml) /
    pipelines-<the driver's pipelineCacheUUID>.bin, read when the device opens and written at exit
    when new pipelines were made, so a second run of a program compiles none (where the driver
    reports it, cache_hits == created). VKML_CACHE_DIR=off keeps no file ("file" is then "").
    "made" lists every pipeline made so far, in order: {"shader", "opcode", "ms" (the host's wall
    time in vkCreateComputePipelines: the driver's compile, or its cache lookup), "cache_hit"};
    bench/bench_compile.py prints them, slowest first, for the demo's training."""
    from ._device import _index
    return _C.pipeline_cache(_index(device))


def flushes_subnormals(dtype=torch.float32):
    """Whether the device's arithmetic in `dtype`'s compute type (float32 for float32, float16 and
    bfloat16; float64) flushes subnormal inputs and results to zero. Vulkan allows this unless a
    shader asks to preserve them; NVIDIA's driver flushes float32. Probed once by running x * 1 on
    subnormals (one small submit). See docs/architecture.md, "Subnormals"."""
    if not dtype.is_floating_point:
        return False
    return _C.flushes_subnormals(dtype == torch.float64)


def set_check(on):
    """Check mode on or off, as VKML_CHECK=1 sets it at start: every op also runs on the CPU oracle
    and a result beyond the op's tolerance raises `vkml check failed: ...`. Pending work runs first."""
    _C.set_check(bool(on))


def set_fuse(on):
    """Fusion on or off, as VKML_FUSE=0 turns it off at start: at each flush, runs of elementwise
    nodes over one shape become one fused dispatch (docs/fusion.md). The bytes are the same either
    way; this switch exists to compare them. Pending work runs first."""
    _C.set_fuse(bool(on))


def fuse_enabled():
    """Whether fusion of elementwise chains is on."""
    return _C.fuse_enabled()


def check_enabled():
    """Whether check mode is on."""
    return _C.check_enabled()


def set_eager(on):
    """Eager mode on or off, as VKML_EAGER=1 sets it at start: submit and wait after every op."""
    _C.set_eager(bool(on))


def set_rng_mode(mode):
    """Where random ops draw, as VKML_RNG sets it at start (docs/random.md): "device" (the default:
    Philox4x32-10 on the GPU, reproducible for a seed on any device) or "cpu" (on the host with
    torch's CPU generator and copied: for a seed, exactly torch CPU's numbers)."""
    _C.set_rng_mode(str(mode))


def get_rng_mode():
    """"device" or "cpu": see set_rng_mode."""
    return _C.rng_mode()
