#!/usr/bin/env python3
"""The layering gate: every #include in csrc/ may only point DOWN the layer order.

    util 0 . core 1 . graph 2 . backend/api 3 . backend/cpu | backend/vulkan 4 . dispatch | plan 5
    . aten 6 . python 7

Two layers of the same rank (cpu/vulkan, dispatch/plan) may not include each other. Only aten and
python may include torch, ATen, c10, pybind11 or Python headers. Every file under csrc/ must belong
to a layer. Includes that resolve outside csrc/ (shaders/params.h, build/gen/op_codes.h) are fine.

Each run also redraws the layer diagram in docs/architecture.md (between the layers:begin/end
markers) from the same scan, so the picture and the gate cannot disagree.

    scripts/check_layering.py               check, redraw the diagram; exit 1 on any violation
    scripts/check_layering.py --no-docs     check only
    scripts/check_layering.py --self-test   prove the gate can fail (synthetic trees in a temp dir)

Standard library only: runs with any python3 >= 3.8.
"""
import argparse
import contextlib
import io
import os
import re
import sys
import tempfile
from collections import Counter

# (layer, rank), bottom to top. A path belongs to the longest matching prefix.
LAYERS = [
    ("util", 0), ("core", 1), ("graph", 2), ("backend/api", 3),
    ("backend/cpu", 4), ("backend/vulkan", 4), ("dispatch", 5), ("plan", 5),
    ("aten", 6), ("python", 7),
]
RANK = dict(LAYERS)
TORCH_OK = {"aten", "python"}
TORCH_PREFIXES = ("torch/", "ATen/", "c10/", "pybind11/", "caffe2/")
TORCH_FILES = ("Python.h", "pybind11.h")
EXTS = (".h", ".hpp", ".cpp", ".cc", ".def", ".inc")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
BEGIN, END = "<!-- layers:begin -->", "<!-- layers:end -->"


def layer_of(rel):
    """Layer of a path relative to csrc/ (forward slashes), or None."""
    best = None
    for name, _ in LAYERS:
        if rel == name or rel.startswith(name + "/"):
            if best is None or len(name) > len(best):
                best = name
    return best


def allowed(src, dst):
    return src == dst or RANK[dst] < RANK[src]


def csrc_files(csrc):
    for dirpath, dirnames, filenames in os.walk(csrc):
        dirnames.sort()
        for f in sorted(filenames):
            if f.endswith(EXTS):
                yield os.path.join(dirpath, f)


def resolve(root, csrc, including, target):
    """Where the preprocessor finds a quoted include: the including file's directory, then the
    -I paths (csrc, shaders, build/gen). Returns a path relative to csrc/, or None when the target
    is outside csrc/ (found elsewhere, or not found at all: generated files may not exist yet)."""
    local = os.path.normpath(os.path.join(os.path.dirname(including), target))
    if os.path.exists(local) and local.startswith(csrc + os.sep):
        return os.path.relpath(local, csrc).replace(os.sep, "/")
    if os.path.exists(os.path.join(csrc, target)):
        return os.path.normpath(target).replace(os.sep, "/")
    for d in ("shaders", os.path.join("build", "gen")):
        if os.path.exists(os.path.join(root, d, target)):
            return None
    # Not found anywhere: judge it by its path, so an include of a file not written yet (or
    # misspelled) is still held to the layer its path names.
    return target if layer_of(target) else None


def scan(root):
    """Returns (files per layer, include-edge counts, violations as strings)."""
    root = os.path.abspath(root)
    csrc = os.path.join(root, "csrc")
    files = Counter({name: 0 for name, _ in LAYERS})
    edges = Counter()
    bad = []
    for path in csrc_files(csrc):
        rel = os.path.relpath(path, csrc).replace(os.sep, "/")
        shown = "csrc/" + rel
        src = layer_of(rel)
        if src is None:
            bad.append(f"{shown}:1 -> (file is in no layer; move it under one of: "
                       + ", ".join(n for n, _ in LAYERS) + ")")
            continue
        files[src] += 1
        with open(path, encoding="utf-8", errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                m = INCLUDE_RE.match(line)
                if not m:
                    continue
                kind, target = m.groups()
                if target.startswith(TORCH_PREFIXES) or os.path.basename(target) in TORCH_FILES:
                    if src not in TORCH_OK:
                        bad.append(f"{shown}:{lineno} -> {target} (torch/pybind headers only in "
                                   f"csrc/aten and csrc/python; {src} is plain C++)")
                    edges[(src, "torch")] += 1
                    continue
                if kind == "<":
                    continue
                dst_rel = resolve(root, csrc, path, target)
                if dst_rel is None:
                    continue
                dst = layer_of(dst_rel)
                if dst is None:
                    bad.append(f"{shown}:{lineno} -> {target} (target csrc/{dst_rel} is in no layer)")
                    continue
                edges[(src, dst)] += 1
                if not allowed(src, dst):
                    why = (f"{src} ({RANK[src]}) may not include {dst} ({RANK[dst]})"
                           + (": same rank, siblings stay apart" if RANK[src] == RANK[dst] else
                              ": includes point down only"))
                    bad.append(f"{shown}:{lineno} -> {target} ({why})")
    return files, edges, bad


def node_id(name):
    return name.replace("/", "_")


def diagram(files, edges):
    """Markdown for the docs block: a mermaid drawing plus a plain text table of the same scan."""
    out = [BEGIN,
           "<!-- Generated by scripts/check_layering.py from the includes in csrc/. Do not edit. -->",
           "", "```mermaid", "flowchart TD"]
    for name, rank in reversed(LAYERS):
        n = files[name]
        label = f"{name} · {rank}<br/>" + (f"{n} file{'s' if n != 1 else ''}" if n else "empty")
        out.append(f'  {node_id(name)}["{label}"]')
    if any(d == "torch" for _, d in edges):
        out.append('  torch[("torch / pybind11")]')
    for (src, dst), n in sorted(edges.items(), key=lambda e: (-RANK[e[0][0]], e[0])):
        if src == dst:
            continue
        ok = dst == "torch" and src in TORCH_OK or dst != "torch" and allowed(src, dst)
        arrow = "-->" if ok else "-. VIOLATION .->"
        out.append(f"  {node_id(src)} {arrow}|{n}| {node_id(dst)}")
    empty = [node_id(n) for n, _ in LAYERS if not files[n]]
    out.append("  classDef empty stroke-dasharray: 4 4,color:#888")
    if empty:
        out.append("  class " + ",".join(empty) + " empty")
    out += ["```", "", "Same scan as text (an arrow is `#include`; the count is how many):", "", "```"]
    width = max(len(n) for n, _ in LAYERS)
    out.append(f"{'rank':<5}{'layer':<{width + 2}}{'files':>5}   includes")
    for name, rank in reversed(LAYERS):
        targets = sorted(((d, n) for (s, d), n in edges.items() if s == name and d != name),
                         key=lambda t: (-RANK.get(t[0], 9), t[0]))
        inc = ", ".join(f"{d} {n}" for d, n in targets) or ("(empty layer)" if not files[name] else "-")
        within = edges.get((name, name), 0)
        if within:
            inc += f"  (+{within} within)"
        out.append(f"{rank:<5}{name:<{width + 2}}{files[name]:>5}   {inc}")
    out += ["```", END]
    return "\n".join(out)


def write_docs(root, text):
    """Replaces the marked block in docs/architecture.md. Returns True when the file changed."""
    path = os.path.join(root, "docs", "architecture.md")
    if not os.path.exists(path):
        return False
    with open(path, encoding="utf-8") as f:
        doc = f.read()
    i, j = doc.find(BEGIN), doc.find(END)
    if i < 0 or j < i:
        print(f"check_layering: {path} has no {BEGIN} ... {END} block; diagram not written",
              file=sys.stderr)
        return False
    new = doc[:i] + text + doc[j + len(END):]
    if new == doc:
        return False
    with open(path, "w", encoding="utf-8") as f:
        f.write(new)
    return True


def run(root, docs=True, quiet=False):
    files, edges, bad = scan(root)
    if docs and write_docs(root, diagram(files, edges)):
        print("check_layering: redrew the layer diagram in docs/architecture.md")
    for b in bad:
        print(b)
    if bad:
        print(f"check_layering: {len(bad)} violation(s); layer order: "
              + " . ".join(f"{n} {r}" for n, r in LAYERS), file=sys.stderr)
        return 1
    if not quiet:
        n_files = sum(files.values())
        n_edges = sum(n for (s, d), n in edges.items() if d != "torch")
        print(f"check_layering: ok ({n_files} files, {n_edges} includes inside csrc/, all pointing down)")
    return 0


def self_test():
    """Synthetic trees: a clean one must pass, each kind of violation must fail."""
    cases = [
        ("clean", {"util/a.h": "", "graph/g.h": '#include "util/a.h"\n#include "params.h"\n',
                   "aten/x.cpp": '#include <ATen/core/Tensor.h>\n#include "graph/g.h"\n'}, 0),
        ("upward include", {"util/a.h": '#include "graph/g.h"\n', "graph/g.h": ""}, 1),
        ("cpu includes vulkan", {"backend/cpu/o.cpp": '#include "backend/vulkan/v.h"\n',
                                 "backend/vulkan/v.h": ""}, 1),
        ("dispatch includes plan", {"dispatch/d.cpp": '#include "plan/p.h"\n', "plan/p.h": ""}, 1),
        ("torch below aten", {"core/c.h": "#include <torch/library.h>\n"}, 1),
        ("pybind11 in dispatch", {"dispatch/d.cpp": "#include <pybind11/pybind11.h>\n"}, 1),
        ("file in no layer", {"misc/m.h": ""}, 1),
        ("same-directory upward include", {"graph/g.h": "", "util/a.h": "", "util/b.h":
                                           '#include "../graph/g.h"\n'}, 1),
        ("include of a not-yet-written upper file", {"core/c.h": '#include "aten/nothere.h"\n'}, 1),
    ]
    failures = 0
    for name, tree, want in cases:
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "shaders"))
            open(os.path.join(tmp, "shaders", "params.h"), "w").close()
            for rel, text in tree.items():
                p = os.path.join(tmp, "csrc", rel)
                os.makedirs(os.path.dirname(p), exist_ok=True)
                with open(p, "w") as f:
                    f.write(text)
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
                got = run(tmp, docs=False, quiet=True)
        status = "ok  " if got == want else "FAIL"
        failures += got != want
        detail = buf.getvalue().strip().splitlines()
        print(f"{status} {name}: exit {got} (want {want})" + (f"  [{detail[0]}]" if detail else ""))
    print("check_layering self-test: " + ("passed" if not failures else f"{failures} case(s) wrong"))
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    help="repository root (default: this script's)")
    ap.add_argument("--no-docs", action="store_true", help="do not redraw docs/architecture.md")
    ap.add_argument("--write-docs", action="store_true", help="redraw the diagram (the default)")
    ap.add_argument("--self-test", action="store_true", help="prove the gate fails on bad trees")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    return run(a.root, docs=not a.no_docs)


if __name__ == "__main__":
    sys.exit(main())
