"""torch.vkml: what torch.cuda users reach for, for the vkml device (one device, index 0)."""
import torch

from . import _C

_seed = 67280421310721  # torch's default seed


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


# Random numbers: no random op runs on the device yet; the seed state lives here so that
# torch.manual_seed() and code that saves/restores RNG state keep working.
def manual_seed(seed):
    global _seed
    _seed = int(seed)


manual_seed_all = manual_seed


def seed():
    import random
    manual_seed(random.getrandbits(63))


seed_all = seed


def initial_seed():
    return _seed


def get_rng_state(device="vkml"):
    return torch.tensor([_seed], dtype=torch.int64).view(torch.uint8)


def set_rng_state(new_state, device="vkml"):
    manual_seed(int(new_state.view(torch.int64)[0]))


def _is_in_bad_fork():
    return False


def get_amp_supported_dtype():
    return [torch.float16, torch.bfloat16]


def is_initialized():
    return _C.is_available()


def _lazy_init():
    pass
