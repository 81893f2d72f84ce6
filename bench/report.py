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


def fusion_ratios(cases, vkml):
    """[{case, fused, unfused, ratio}]: each case with an unfused twin (cases.UNFUSED), vkml's
    figures with fusion on and off, measured in this process, and fused/unfused."""
    from .cases import UNFUSED
    names = {c.name for c in cases}
    out = []
    for c in cases:
        twin = c.name + UNFUSED
        if not c.fuse or twin not in names:
            continue
        f, u = (vkml.get(n, {}).get("value") for n in (c.name, twin))
        r = f / u if f and u else None
        if c.better == "lower" and r:
            r = 1 / r
        out.append({"case": c.name, "unit": c.unit, "fused": f, "unfused": u, "ratio": r})
    return out


def print_fusion(rows):
    if not rows:
        return
    print("\nvkml fusion, same process (vkml_torch.set_fuse):")
    for r in rows:
        ratio = f"{r['ratio']:.2f}x" if r["ratio"] else "-"
        print(f"  {r['case']}: fused {fmt(r['fused'])} {r['unit']}, unfused {fmt(r['unfused'])} {r['unit']}: "
              f"fused/unfused {ratio}")


def markdown(doc):
    """The JSON file's table as Markdown (for docs/performance.md): python -m bench.report FILE."""
    devs = [d for d in ("vkml", "cpu", "cuda") if any(d in c["results"] for c in doc["cases"])]
    child = set(doc["info"].get("child_process", []))
    head = ["case", "unit"] + [d + (" [1]" if d in child else "") for d in devs]
    head += [f"vkml/{d}" for d in devs if d != "vkml" and "vkml" in devs]
    out = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for c in doc["cases"]:
        rs = c["results"]
        row = [c["name"], c["unit"]] + [cell(rs.get(d)) for d in devs]
        row += [ratio(rs.get("vkml"), rs.get(d)) for d in devs if d != "vkml" and "vkml" in devs]
        out.append("| " + " | ".join(row) + " |")
    notes = sorted({r["note"] for c in doc["cases"] for r in c["results"].values()
                    if r.get("status") in ("missing", "error", "skipped")})
    return "\n".join(out + ([""] + [f"- {n}" for n in notes] if notes else []))


if __name__ == "__main__":
    import json
    import sys
    with open(sys.argv[1]) as f:
        print(markdown(json.load(f)))
