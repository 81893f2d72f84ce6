"""The ratio table: each device's figure, vkml/CPU and vkml/CUDA, and the notes."""
import textwrap

FOOTNOTE = ("[1] timed in a child process started with TORCH_DEVICE_BACKEND_AUTOLOAD=0 that never imports "
            "vkml_torch (same cases, same sizes, the parent's CPU thread count): once any PrivateUse1 backend "
            "is registered, CUDA backward fails in that process (pytorch issue #161129).")


def fmt(v):
    if v is None:
        return "-"
    return f"{v:,.1f}" if v >= 100 else f"{v:.3g}"


def ratio(r, ref):
    v, w = r.get("value") if r else None, ref.get("value") if ref else None
    if v is None or not w:
        return "-"
    return f"{v / w:.2f}x" if v / w >= 0.1 else f"{v / w:.2g}x"


def cell(r):
    if not r:
        return "-"
    if r["value"] is not None:
        return fmt(r["value"])
    return {"missing": "missing", "skipped": "skipped", "n/a": "n/a"}.get(r["status"], "error")


def print_table(cases, results, child=()):
    devs = [d for d in ("vkml", "cpu", "cuda") if d in results]
    w = max(len(c.name) for c in cases) + 2
    head = f"{'case':<{w}}{'unit':>8}" + "".join(f"{d + (' [1]' if d in child else ''):>12}" for d in devs)
    if "vkml" in results:
        head += f"{'vkml/cpu':>10}" + (f"{'vkml/cuda':>11}" if "cuda" in results else "")
    print(head)
    print("-" * len(head))
    group = None
    for c in cases:
        if c.group != group:
            group = c.group
            print(f"[{group}]")
        rs = {d: results[d].get(c.name) for d in devs}
        line = f"{c.name:<{w}}{c.unit:>8}" + "".join(f"{cell(rs[d]):>12}" for d in devs)
        if "vkml" in results:
            line += f"{ratio(rs['vkml'], rs.get('cpu')):>10}"
            if "cuda" in results:
                line += f"{ratio(rs['vkml'], rs['cuda']):>11}"
        print(line + f"  ({c.better} is better)")
        notes = [f"{d}: {r['note']}" for d, r in rs.items() if r and r.get("note") and r["status"] != "n/a"]
        for note in ([c.note] if c.note else []) + notes:
            print(textwrap.fill(note, 110, initial_indent="    ", subsequent_indent="      "))
    if child:
        print("\n" + textwrap.fill(FOOTNOTE, 100, subsequent_indent="    "))
