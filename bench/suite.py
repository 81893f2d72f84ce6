"""Which cases run, at which sizes. Small sizes suit Mesa lavapipe (a CPU-type Vulkan device, for
correctness rather than speed); --full gives the sizes of issue 8, for a real GPU."""
from . import cases as C

SMALL = {
    "numel": [1 << 20],
    "dropout": 1 << 20,
    "rows": (1024, 1024),
    "mm": [256, 512],
    "skinny": (4096, 256),
    "bmm": (8, 128),
    "conv": (1, 64, 28),
    "embedding": (1000, 64, 1024),
    "mlp": (784, 256, 10, 64),
    "transformer": (64, 4, 128, 16, 4),
    "copy_mib": 16,
}
FULL = {
    "numel": [1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28],
    "dropout": 1 << 26,
    "rows": (4096, 4096),
    "mm": [256, 512, 1024, 2048, 4096, 8192],
    "skinny": (16384, 4096),
    "bmm": (32, 1024),
    "conv": (32, 64, 56),
    "embedding": (32000, 1024, 16384),
    "mlp": (784, 2048, 10, 256),
    "transformer": (512, 8, 2048, 128, 32),
    "copy_mib": 64,
}


def parse_numel(text):
    """"1M,16M,256M" or "1048576" -> [int]."""
    out = []
    for part in text.split(","):
        part = part.strip().upper()
        mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(part[-1:], 1)
        out.append(int(part[:-1] if mult > 1 else part) * mult)
    return out


def build(full, numel=None, mm=None, dtypes=("f32", "f16", "bf16")):
    s = dict(FULL if full else SMALL)
    if numel:
        s["numel"] = numel
    if mm:
        s["mm"] = mm
    out = [C.add_case(n) for n in s["numel"]]
    out += [C.chain8_case(n) for n in s["numel"]]
    out += [C.chain8_case(n, fuse=False) for n in s["numel"]]
    out += [C.dropout_case(s["dropout"]), C.randn_case(256, 2048)]
    out += [C.rows_case(k, *s["rows"]) for k in ("sum", "softmax", "layer_norm")]
    for dt in dtypes:
        out += [C.matmul_case(n, dt) for n in s["mm"]]
    out += [C.skinny_case(*s["skinny"], dt) for dt in dtypes]
    out += [C.bmm_case(*s["bmm"], dt) for dt in dtypes]
    out += [C.conv_case(*s["conv"])] + [C.conv_grad_case(*s["conv"], w) for w in ("input", "weight")]
    out += [C.conv_grad_case(*s["conv"], "input", stride=2)]
    out += [C.embedding_case(*s["embedding"])]
    out += [C.mlp_case(*s["mlp"]), C.transformer_case(*s["transformer"])]
    out += [C.dependent_ops_case(1000), C.record_case(1000)]
    out += [C.copy_case(d, p, s["copy_mib"]) for d in ("H2D", "D2H") for p in (False, True)]
    out += [C.d2d_case(s["copy_mib"] * 4)]
    return out


def select(cases, only):
    """Cases whose name contains any of the comma-separated words of `only` (case-insensitive)."""
    if not only:
        return cases
    words = [w.strip().lower() for w in only.split(",") if w.strip()]
    return [c for c in cases if any(w in c.name.lower() for w in words)]
