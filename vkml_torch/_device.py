"""torch.vkml: what torch.cuda users reach for, for the vkml devices.

vkml:0 .. vkml:N-1 are the usable Vulkan 1.3 devices in the order discrete, integrated, virtual,
CPU (VKML_DEVICE=K keeps only the K-th; VKML_FAKE_DEVICES=N presents one as N, for tests). As with
CUDA, the current device is per thread, new tensors go to it, and kernels run on their tensors'
device whatever the current one is."""
import torch

from . import _C



def is_available():
    """Whether a usable Vulkan 1.3 device was found (vkml_torch.why_unavailable() says why not)."""
    return _C.is_available()


def device_count():
    """The number of vkml devices (0 when no Vulkan device is usable)."""
    return _C.device_count()


def current_device():
    """The index of the calling thread's current vkml device (0 until set_device())."""
    return _C.current_device()


def _index(device, optional=False):
    if device is None:
        return current_device()
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != "vkml":
            raise ValueError(f"expected a vkml device, got {device}")
        return current_device() if device.index is None else device.index
    i = int(device)
    return current_device() if optional and i < 0 else i


def _check(i):
    n = device_count()
    if not 0 <= i < max(n, 1):
        raise RuntimeError(f"vkml: invalid device ordinal: the device index is out of range. "
                           f"It must be in [0, {n}), but got {i}.")


def set_device(device):
    """Make `device` (an index, "vkml:N" or torch.device) the calling thread's current vkml device:
    new tensors on "vkml" go there. An absent index raises RuntimeError (invalid device ordinal)."""
    i = _index(device)
    _check(i)
    if device_count():
        _C.set_device(i)


class device:
    """Context manager: `device` is the current vkml device inside, the previous one after.
    A negative index or None leaves the current device as it is (as torch.cuda.device)."""

    def __init__(self, device):
        self.idx = -1 if device is None else _index(device)
        self.prev = -1

    def __enter__(self):
        self.prev = current_device()
        if self.idx >= 0:
            set_device(self.idx)
        return self

    def __exit__(self, *exc):
        if self.idx >= 0 and device_count():
            _C.set_device(self.prev)
        return False


def synchronize(device=None):
    """Submit everything pending on the device (default: the current one) and wait for it."""
    i = _index(device, optional=True)
    _check(i)
    _C.synchronize(i)


class _Properties:
    def __init__(self, info):
        self.__dict__.update(info)

    def __repr__(self):
        return (f"_VkmlDeviceProperties(name='{self.name}', type='{self.type}', "
                f"api_version='{self.api_version}', driver_version='{self.driver_version}', "
                f"total_memory={self.total_memory // (1 << 20)}MB)")


def get_device_properties(device=None):
    """The device's name, type, Vulkan api_version, driver_version, total_memory (bytes of its
    largest device-local heap), vendor and device ids, and the limits the backend uses."""
    i = _index(device, optional=True)
    _check(i)
    return _Properties(_C.device_info(i))


def get_device_name(device=None):
    """The Vulkan device's name, e.g. "NVIDIA H200" or "llvmpipe (LLVM 15.0.6, 256 bits)"."""
    return get_device_properties(device).name


# Memory statistics in torch.cuda's shapes (memory_stats, memory_summary, memory_allocated, ...).
from ._memory import (empty_cache, max_memory_allocated, max_memory_reserved, mem_get_info,  # noqa: E402,F401
                      memory_allocated, memory_reserved, memory_stats, memory_summary,
                      reset_accumulated_memory_stats, reset_peak_memory_stats)


# Random numbers (docs/random.md): drawn on the device with Philox4x32-10 from the generator's
# (seed, offset); in the CPU stream mode (VKML_RNG=cpu, set_rng_mode("cpu")) drawn on the host
# with torch's CPU generator, so a seed gives exactly torch CPU's numbers.
def manual_seed(seed):
    """Seed the device's default generator (torch.manual_seed seeds it too): its Philox seed (the
    offset goes back to 0) and the CPU generator of the CPU stream mode."""
    seed = int(seed)
    if not -(1 << 63) <= seed < (1 << 64):  # torch's CPU generator's range and message
        raise ValueError(f"Overflow when unpacking long long: seed {seed} is outside [-2**63, 2**64)")
    _C.rng_manual_seed(seed + (1 << 64) if seed < 0 else seed)


manual_seed_all = manual_seed


def seed():
    """Seed the default generator from a non-deterministic source."""
    _C.rng_seed()


seed_all = seed


def initial_seed():
    """The default generator's current seed."""
    return _C.rng_initial_seed()


def get_rng_state(device="vkml"):
    """The default generator's state as a CPU uint8 tensor: 16 bytes (Philox seed and offset,
    little-endian uint64) in the device mode, torch's CPU generator state in the CPU stream mode."""
    return torch.frombuffer(bytearray(_C.rng_get_state()), dtype=torch.uint8)


def get_rng_state_all():
    """[get_rng_state()] per device: they share one generator (random ops draw on the host)."""
    return [get_rng_state() for _ in range(max(device_count(), 1))]


def set_rng_state(new_state, device="vkml"):
    """Restore a state from get_rng_state(): 16 bytes restore the Philox state, a CPU generator
    state the CPU stream's generator."""
    _C.rng_set_state(new_state.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())


def set_rng_state_all(new_states):
    """set_rng_state(new_states[0]): the devices share one generator."""
    set_rng_state(new_states[0])


def _is_in_bad_fork():
    """True in a process forked after the parent had started vkml (Vulkan cannot be used there)."""
    return _C.is_in_bad_fork()


def get_amp_supported_dtype():
    """The dtypes torch.autocast may use on vkml: float16 and bfloat16."""
    return [torch.float16, torch.bfloat16]


def is_initialized():
    """Whether the device is usable (it opens on first use; there is no separate init); false in
    a bad fork (torch.cuda's rule)."""
    return not _C.is_in_bad_fork() and _C.is_available()


def _lazy_init():
    pass
