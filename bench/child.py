"""The child process that times a device without vkml (pytorch issue #161129: once a PrivateUse1
backend is registered, CUDA backward asserts `opt_ready_stream && opt_parent_stream`).

    TORCH_DEVICE_BACKEND_AUTOLOAD=0 python -m bench.child DEVICE ARGS_JSON

ARGS_JSON: {"full", "numel", "mm", "only", "repeats", "min_time", "budget", "threads"}. Prints one
JSON line: {"results": {case: result}, "vkml_imported", "privateuse1"}, so that the parent can
tell that no backend was registered here."""
import json
import sys
from types import SimpleNamespace

import torch

from . import suite
from .run import run_device


def child_main(argv):
    dev, a = torch.device(argv[0]), SimpleNamespace(**json.loads(argv[1]))
    torch.set_num_threads(a.threads)
    cases = suite.select(suite.build(a.full, a.numel, a.mm), a.only)
    res = run_device(cases, dev, a, log=lambda s: print(s, file=sys.stderr, flush=True))
    print(json.dumps({"results": res, "vkml_imported": "vkml_torch" in sys.modules,
                      "privateuse1": torch._C._get_privateuse1_backend_name()}))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python -m bench.child DEVICE ARGS_JSON")
    child_main(sys.argv[1:])
