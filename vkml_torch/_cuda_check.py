"""The warning for processes that have CUDA too (pytorch issue #161129).

Once a PrivateUse1 backend has a name (torch.utils.rename_privateuse1_backend("vkml"), which is
what makes the "vkml" device string exist), torch's at::getAccelerator() returns PrivateUse1 in
every case, also for CUDA tensors. Autograd's engine asks it for the stream of each node, finds none
for CUDA nodes, falls back to the accelerator's (vkml's) current stream and then records a CUDA
event on it: CUDA backward fails with an internal assert. The fix (PR #161130) was not merged.

It cannot be avoided from vkml's side without patching torch: the choice is made from the name
alone (c10::is_privateuse1_backend_registered()), before any hook or guard of ours is asked, and
without the name there is no "vkml" device. So processes that train on CUDA should not load vkml:
TORCH_DEVICE_BACKEND_AUTOLOAD=0 stops `import torch` from importing vkml_torch.
"""
import warnings

import torch

MESSAGE = ("vkml_torch: this torch is a CUDA build and CUDA is available. With vkml loaded, "
           "torch.accelerator is vkml even for CUDA tensors, and CUDA backward fails on an internal "
           "assert (pytorch issue #161129, unfixed). In processes that train on CUDA, set "
           "TORCH_DEVICE_BACKEND_AUTOLOAD=0 so that `import torch` does not load vkml_torch.")

_warned = False


def cuda_in_process():
    """Whether this torch was built with CUDA and a CUDA device is usable. Asks NVML first where
    it answers: unlike torch.cuda.is_available() it does not start the CUDA driver, so a process
    that imports vkml can still fork CUDA workers."""
    if not torch.version.cuda:
        return False
    try:
        nvml = getattr(torch.cuda, "_device_count_nvml", None)
        n = nvml() if nvml else -1
        return n > 0 if n >= 0 else bool(torch.cuda.is_available())
    except Exception:  # a broken CUDA install: no CUDA to collide with
        return False


def warn_once():
    """Warn (once per process) when CUDA is usable in this process too."""
    global _warned
    if _warned or not cuda_in_process():
        return False
    _warned = True
    warnings.warn(MESSAGE, RuntimeWarning, stacklevel=3)
    return True
