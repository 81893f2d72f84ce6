"""vkml_torch.trace(): which aten ops reach the vkml device, and by which path."""
import contextlib

from . import _C


def _counts():
    out = {}
    for (op, path), n in _C._trace_counts().items():
        out.setdefault(op, {})[path] = n
    return out


@contextlib.contextmanager
def trace():
    """Counts every aten op that reaches vkml inside the block, by path: "native" (an op-table
    row), "composite" (written once from rows), "decomposition" (torch._decomp), "cpu_fallback"
    (VKML_CPU_FALLBACK=1) or "missing" (no vkml kernel: the op raised NotImplementedError).

        with vkml_torch.trace() as t:
            model(x.to("vkml"))
        t  # {"aten::addmm": {"native": 2}, "aten::gelu": {"missing": 1}, ...}

    The dict is filled when the block exits (also when it raises). VKML_TRACE=1 logs each op the
    first time it is seen and prints the counts at exit, for a whole program."""
    before = _counts()
    result = {}
    _C._trace_begin()
    try:
        yield result
    finally:
        _C._trace_end()
        for op, paths in _counts().items():
            for path, n in paths.items():
                d = n - before.get(op, {}).get(path, 0)
                if d:
                    result.setdefault(op, {})[path] = d
