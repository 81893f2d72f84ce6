"""torch.vkml: what torch.cuda users reach for, for the vkml device (one device, index 0)."""
import torch

from . import _C



def is_available():
    return _C.is_available()


def device_count():
    return _C.device_count()


def current_device():
    return 0


def _index(device):
    if device is None:
        return 0
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != "vkml":
            raise ValueError(f"expected a vkml device, got {device}")
        return device.index or 0
    return int(device)


def set_device(device):
    i = _index(device)
    if i != 0 and i >= device_count():
        raise RuntimeError(f"vkml: device index {i} is out of range ({device_count()} device(s))")


class device:
    """Context manager selecting a vkml device (there is one: index 0)."""

    def __init__(self, device):
        self.idx = _index(device)
        self.prev = 0

    def __enter__(self):
        set_device(self.idx)
        return self

    def __exit__(self, *exc):
        return False


def synchronize(device=None):
    """Submit everything pending and wait for it."""
    _C.synchronize()


class _Properties:
    def __init__(self, info):
        self.__dict__.update(info)

    def __repr__(self):
        return (f"_VkmlDeviceProperties(name='{self.name}', type='{self.type}', "
                f"api_version='{self.api_version}', driver_version='{self.driver_version}', "
                f"total_memory={self.total_memory // (1 << 20)}MB)")


def get_device_properties(device=None):
    _index(device)
    return _Properties(_C.device_info())


def get_device_name(device=None):
    return get_device_properties(device).name


def memory_allocated(device=None):
    return _C.memory_stats()["allocated"]


def memory_reserved(device=None):
    return _C.memory_stats()["reserved"]


def max_memory_allocated(device=None):
    return _C.memory_stats()["max_allocated"]


def empty_cache():
    _C.empty_cache()


# Random numbers: the device's generator is a CPU generator (csrc/aten/random.h); random ops draw
# on the host and copy to the device, so a seed gives exactly torch CPU's numbers.
def manual_seed(seed):
    seed = int(seed)
    if not -(1 << 63) <= seed < (1 << 64):  # torch's CPU generator's range and message
        raise ValueError(f"Overflow when unpacking long long: seed {seed} is outside [-2**63, 2**64)")
    _C.rng_manual_seed(seed + (1 << 64) if seed < 0 else seed)


manual_seed_all = manual_seed


def seed():
    _C.rng_seed()


seed_all = seed


def initial_seed():
    return _C.rng_initial_seed()


def get_rng_state(device="vkml"):
    """The generator's state as a CPU uint8 tensor (torch's CPU generator format)."""
    return torch.frombuffer(bytearray(_C.rng_get_state()), dtype=torch.uint8)


def get_rng_state_all():
    return [get_rng_state()]


def set_rng_state(new_state, device="vkml"):
    _C.rng_set_state(new_state.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())


def set_rng_state_all(new_states):
    set_rng_state(new_states[0])


def _is_in_bad_fork():
    return False


def get_amp_supported_dtype():
    return [torch.float16, torch.bfloat16]


def is_initialized():
    return _C.is_available()


def _lazy_init():
    pass
