"""Running the cases on one device, in this process: never crashes the suite. A case that fails
on vkml is run under vkml_torch.trace() to name the ops the backend lacks ("missing")."""
import dataclasses
import gc

import torch

from .timing import NotApplicable, measure


def _free(dev):
    gc.collect()
    if dev.type == "vkml":
        torch.vkml.synchronize()
        torch.vkml.empty_cache()
    elif dev.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


def _missing_ops(counts):
    return sorted(op for op, paths in counts.items() if paths.get("missing"))


def run_one(case, dev, args, trace=None, vk=None):
    """{"status": ok | missing | skipped | n/a | error, "value", "seconds", "note"} for one case
    on one device. trace: vkml_torch.trace on vkml (the first attempt runs under it). vk: the
    vkml_torch module on vkml, for a case run with fusion off and for the case's counts."""
    if vk is not None and not case.fuse:
        on = vk.fuse_enabled()
        vk.set_fuse(False)
        try:
            return run_one(dataclasses.replace(case, fuse=True), dev, args, trace, vk)
        finally:
            vk.set_fuse(on)
    opts = dict(case.opts)
    counted = ""
    try:
        if trace is not None:
            failed = None
            with trace() as counts:  # (filled when the block exits)
                try:
                    step = case.build(dev)
                    step()
                    torch.vkml.synchronize()
                except Exception as e:
                    failed = e
            if failed is not None:
                missing = _missing_ops(counts)
                if missing:
                    return {"status": "missing", "value": None, "note": "missing: " + ", ".join(missing)}
                raise failed
        else:
            step = case.build(dev)
        t, note = measure(step, dev, repeats=args.repeats, min_time=args.min_time, budget=args.budget, **opts)
        if vk is not None and case.counts is not None and t is not None:
            try:  # a count that fails loses the count, not the figure
                counted = case.counts(step, vk)
            except Exception as e:
                counted = f"counts failed: {type(e).__name__}: {str(e).strip()[:120]}"
    except NotApplicable as e:
        return {"status": "n/a", "value": None, "note": f"n/a: {e}"}
    except Exception as e:  # report, go on with the next case
        msg = str(e).strip().splitlines()[0][:160] if str(e).strip() else ""
        return {"status": "error", "value": None, "note": f"error: {type(e).__name__}: {msg}"}
    finally:
        step = None
        _free(dev)
    if t is None:
        return {"status": "skipped", "value": None, "note": note}
    return {"status": "ok", "value": case.value(t), "seconds": t, "note": "; ".join(n for n in (note, counted) if n)}


def run_device(cases, dev, args, trace=None, log=None, vk=None):
    """{case name: result} for every case. In a series (sizes growing), a case whose predicted step
    (the last size's time scaled by the work) exceeds budget / 3 is skipped without running."""
    out, last = {}, {}
    for case in cases:
        prev = last.get(case.series) if case.series else None
        if prev and prev[1] * case.work / prev[0] > args.budget / 3:
            pred = prev[1] * case.work / prev[0]
            out[case.name] = {"status": "skipped", "value": None,
                              "note": f"skipped: predicted {pred:.1f} s per step from the smaller size "
                                      f"(--budget {args.budget:g} s)"}
        else:
            out[case.name] = run_one(case, dev, args, trace, vk)
        r = out[case.name]
        if r["status"] == "ok" and case.series:
            last[case.series] = (case.work, r["seconds"])
        if log:
            log(f"  {dev.type:5s} {case.name}: " + (f"{r['value']:.4g} {case.unit}" if r["value"] is not None
                                                    else r["note"]))
    return out
