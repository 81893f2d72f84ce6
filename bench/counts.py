"""What vkml ran for a case: dispatches (and fused nodes, barriers) per step, and for the Adam
step dispatches per parameter, fused and unfused, in the foreach and for-loop forms. torch only
at import (the CUDA child imports cases.py): vkml_torch comes in as the argument `vk`."""
import torch


def _delta(vk, fn):
    """vk.stats() differences over fn(), everything before it and fn's own work synchronized."""
    torch.vkml.synchronize()
    s0 = vk.stats()
    fn()
    torch.vkml.synchronize()
    s1 = vk.stats()
    return {k: s1[k] - s0[k] for k in ("nodes", "dispatches", "fused", "fused_steps", "barriers")}


def per_step(step, vk):
    """One more step: its dispatches, fused nodes and barriers."""
    d = _delta(vk, step)
    fused = f" ({d['fused']} fused node(s) for {d['fused_steps']} elementwise)" if d["fused"] else ""
    return f"per step: {d['nodes']} node(s), {d['dispatches']} dispatch(es){fused}, {d['barriers']} barrier(s)"


def adam_counts(vk, params, foreach):
    """Dispatches per parameter of one Adam step (torch.optim.Adam, foreach or for-loop form),
    with fusion on and off: (fused, unfused, fused nodes). A fresh optimizer on the same
    parameters and their gradients; its first two steps (state creation) are not counted."""
    opt = torch.optim.Adam(params, lr=1e-3, foreach=foreach)
    opt.step()
    opt.step()
    on = vk.fuse_enabled()
    try:
        vk.set_fuse(True)
        fused = _delta(vk, opt.step)
        vk.set_fuse(False)
        unfused = _delta(vk, opt.step)
    finally:
        vk.set_fuse(on)
    n = len(params)
    return fused["dispatches"] / n, unfused["dispatches"] / n, fused["fused"]


def adam(step, vk):
    """The case's parameters stepped by Adam in both forms: dispatches per parameter."""
    params = [p for p in step.params if p.grad is not None]
    if not params:
        return "Adam: no gradients to count with"
    parts = []
    for foreach, form in ((True, "foreach"), (False, "for-loop")):
        f, u, nodes = adam_counts(vk, params, foreach)
        parts.append(f"{form} {f:.2f} fused ({nodes} fused node(s)), {u:.2f} unfused")
    return f"Adam step, dispatches per parameter ({len(params)} parameters): " + "; ".join(parts)
