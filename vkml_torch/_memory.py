"""torch.vkml's memory statistics in torch.cuda's shapes.

The vkml allocator is a c10::DeviceAllocator (csrc/aten/device_impl.cpp), so torch.accelerator's
memory functions read it; these are the torch.cuda-named counterparts. Device memory only: pinned
host memory (tensor.pin_memory()) and upload staging are not counted. Two pools as in torch's CUDA
caching allocator: small (requests up to 1 MiB, from 2 MiB segments) and large.
"""
import torch

from . import _C


def _index(device):
    if device is None:
        return torch.accelerator.current_device_index() if _C.is_available() else 0
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != "vkml":
            raise ValueError(f"Expected a vkml device, but got: {device}")
        return _C.current_device() if device.index is None else device.index
    return int(device)


def memory_stats(device=None):
    """The allocator's counters as torch.cuda.memory_stats() names them, in a sorted OrderedDict:
    ``"allocated_bytes.all.current"``, ``"reserved_bytes.large_pool.peak"``, ``"num_ooms"``, ...
    ``active`` equals ``allocated`` (a freed block is reusable at once: nodes run in recording
    order); ``inactive_split`` counts the free blocks inside segments that are partly in use.
    Empty when no Vulkan device is available."""
    if not _C.is_available():
        return __import__("collections").OrderedDict()
    return torch.accelerator.memory_stats(_index(device))


def memory_summary(device=None, abbreviated=False):
    """memory_stats() as the table torch.cuda.memory_summary() prints (same rows and columns)."""
    stats = memory_stats(device)
    if not stats:
        return f"vkml: no Vulkan device ({_C.why_unavailable()})\n"

    def fmt_size(sz, pref):
        prefix = "B  "
        for p in ["KiB", "MiB", "GiB", "TiB", "PiB"]:
            if pref < 768 * 1024:
                break
            prefix, sz, pref = p, sz // 1024, pref / 1024
        return f"{sz:6d} {prefix}"

    def fmt_count(cnt, pref):
        prefix = " "
        for p in ["K", "M"]:
            if pref < 750 * 1000:
                break
            prefix, cnt, pref = p, cnt // 1000, pref / 1000
        return f"{cnt:7d} {prefix} "

    rows = [("allocated_bytes", "Allocated memory", fmt_size), ("active_bytes", "Active memory", fmt_size),
            ("requested_bytes", "Requested memory", fmt_size), ("reserved_bytes", "GPU reserved memory", fmt_size),
            ("inactive_split_bytes", "Non-releasable memory", fmt_size), ("allocation", "Allocations", fmt_count),
            ("active", "Active allocs", fmt_count), ("segment", "GPU reserved segments", fmt_count),
            ("inactive_split", "Non-releasable allocs", fmt_count)]
    cols = ("current", "peak", "allocated", "freed")
    lines = ["=" * 75, f" {'':16} PyTorch vkml memory summary, device ID {_index(device):<17d} ", "-" * 75,
             f"  {'':9} vkml OOMs: {stats['num_ooms']:<12d} | {'':6} alloc retries: {stats['num_alloc_retries']:<13d}  ",
             "=" * 75, "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  "]
    for key, name, f in rows:
        lines.append("-" * 75)
        subs = [("all", name)] + ([] if abbreviated else [("large_pool", "      from large pool"),
                                                          ("small_pool", "      from small pool")])
        ref = [stats[f"{key}.all.{c}"] for c in cols]
        for sub, label in subs:
            vals = [stats[f"{key}.{sub}.{c}"] for c in cols]
            lines.append(f" {label:<21} | " + " | ".join(f(v, r) for v, r in zip(vals, ref)) + " ")
    for key, name in [("oversize_allocations", "Oversize allocations"), ("oversize_segments", "Oversize GPU segments")]:
        lines.append("-" * 75)
        vals = [stats[f"{key}.{c}"] for c in cols]
        lines.append(f" {name:<21} | " + " | ".join(fmt_count(v, v) for v in vals) + " ")
    lines.append("=" * 75)
    return "|" + "|\n|".join(lines) + "|\n"


def memory_allocated(device=None):
    """Bytes of device memory held by tensors now (rounded up to the allocator's 512-byte blocks)."""
    return memory_stats(device).get("allocated_bytes.all.current", 0)


def max_memory_allocated(device=None):
    """The peak of memory_allocated() since start or reset_peak_memory_stats()."""
    return memory_stats(device).get("allocated_bytes.all.peak", 0)


def memory_reserved(device=None):
    """Bytes of device memory the allocator holds from the driver (in use or cached)."""
    return memory_stats(device).get("reserved_bytes.all.current", 0)


def max_memory_reserved(device=None):
    """The peak of memory_reserved() since start or reset_peak_memory_stats()."""
    return memory_stats(device).get("reserved_bytes.all.peak", 0)


def reset_peak_memory_stats(device=None):
    """Peaks start again from the current values."""
    if _C.is_available():
        torch.accelerator.reset_peak_memory_stats(_index(device))


def reset_accumulated_memory_stats(device=None):
    """The allocated/freed totals (and the retry and OOM counts) start again from zero."""
    if _C.is_available():
        torch.accelerator.reset_accumulated_memory_stats(_index(device))


def mem_get_info(device=None):
    """(free, total) bytes of the device's largest device-local heap, as this process sees it:
    total minus what the vkml allocator has reserved (other processes' use is not visible)."""
    return torch.accelerator.get_memory_info(_index(device))


def empty_cache():
    """Give cached, unused device memory back to the driver (pending work runs first)."""
    _C.empty_cache()
