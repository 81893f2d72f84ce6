#!/usr/bin/env python3
"""Run a command under the Khronos validation layer and fail on any message it logs.

    scripts/vkvalidate.py [--gpu-av] [--log PATH] -- CMD...

The layer (Debian's vulkan-validationlayers) is enabled through VK_INSTANCE_LAYERS, with core and
synchronization validation (plus GPU-assisted validation, which checks the device addresses that
shaders dereference, with --gpu-av). Its settings go in a vk_layer_settings.txt that
VK_LAYER_SETTINGS_PATH points at; they send every error, warning and performance warning to a
log file, because pytest's output capture would hide the layer's stderr. Before the command runs,
a canary process that uses vkml, with informational messages on, must log the layer's "Khronos
Validation Layer Active" status naming this settings file and the enabled validations (an empty
log proves nothing otherwise). Exit status: the command's, or 1 when the log has any message.
"""
import argparse
import os
import subprocess
import sys
import tempfile

LAYER = "VK_LAYER_KHRONOS_validation"
CANARY = (
    "import vkml_torch, torch\n"
    "assert vkml_torch.is_available(), vkml_torch.why_unavailable()\n"
    "(torch.ones(3, device='vkml') + 1).cpu()\n"
)


def settings(log, gpu_av, flags="error,warn,perf"):
    enables = ["VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT"]
    if gpu_av:
        enables.append("VK_VALIDATION_FEATURE_ENABLE_GPU_ASSISTED_EXT")
    return "\n".join([
        "khronos_validation.debug_action = VK_DBG_LAYER_ACTION_LOG_MSG",
        f"khronos_validation.log_filename = {log}",
        f"khronos_validation.report_flags = {flags}",
        "khronos_validation.enable_message_limit = false",
        "khronos_validation.enables = " + ",".join(enables),
        "",
    ])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gpu-av", action="store_true", help="also GPU-assisted validation (slower)")
    ap.add_argument("--log", help="where the layer writes (default: a temporary file, printed)")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if not cmd:
        ap.error("no command")
    d = tempfile.mkdtemp(prefix="vkml-validate-")
    log = os.path.abspath(a.log or os.path.join(d, "validation.log"))
    if os.path.exists(log):
        os.remove(log)
    what = "core + synchronization" + (" + GPU-assisted" if a.gpu_av else "")
    # the canary: same enables, informational messages on, its own log
    cdir = os.path.join(d, "canary")
    os.makedirs(cdir)
    clog = os.path.join(cdir, "canary.log")
    with open(os.path.join(cdir, "vk_layer_settings.txt"), "w") as f:
        f.write(settings(clog, a.gpu_av, "error,warn,perf,info"))
    cenv = dict(os.environ, VK_INSTANCE_LAYERS=LAYER, VK_LAYER_SETTINGS_PATH=cdir)
    canary = subprocess.run([sys.executable, "-c", CANARY], env=cenv, capture_output=True, text=True)
    status = open(clog, errors="replace").read() if os.path.exists(clog) else ""
    want = ["Khronos Validation Layer Active", f"Found at {cdir}", "SYNCHRONIZATION_VALIDATION"] + (
        ["GPU_ASSISTED"] if a.gpu_av else [])
    missing = [w for w in want if w not in status]
    if canary.returncode or missing:
        print(f"vkvalidate: the validation layer is not active as configured in a vkml process (is "
              f"vulkan-validationlayers installed?); the canary's log lacks {missing}; exit {canary.returncode}: "
              f"{canary.stderr[-800:]}", file=sys.stderr)
        return 1
    with open(os.path.join(d, "vk_layer_settings.txt"), "w") as f:
        f.write(settings(log, a.gpu_av))
    env = dict(os.environ, VK_INSTANCE_LAYERS=LAYER, VK_LAYER_SETTINGS_PATH=d)
    print(f"vkvalidate: {LAYER} ({what}) -> {log}: {' '.join(cmd)}", flush=True)
    rc = subprocess.call(cmd, env=env)
    text = open(log, errors="replace").read() if os.path.exists(log) else ""
    msgs = [ln for ln in text.splitlines() if ln.strip()]
    if msgs:
        n = sum(1 for ln in msgs if ln.startswith(("Validation", "VUID", "SYNC", "UNASSIGNED"))
                or "Validation Error" in ln or "Validation Warning" in ln or "Validation Performance" in ln)
        print(f"vkvalidate: the layer logged {len(msgs)} lines ({n} messages); first ones:", file=sys.stderr)
        print("\n".join(msgs[:40]), file=sys.stderr)
        return 1
    print(f"vkvalidate: 0 validation messages ({what})")
    return rc


if __name__ == "__main__":
    sys.exit(main())
