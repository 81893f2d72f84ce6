"""Several vkml devices: test/multi/cases_multi_device.py run in a process with
VKML_FAKE_DEVICES=2 (the variable is read when vkml starts, so it needs a process of its own).
Each case there is reported here as its own test, by its pytest id."""
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(__file__)
CASES = os.path.join(HERE, "multi", "cases_multi_device.py")


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    report = tmp_path_factory.mktemp("multi") / "report.json"
    env = dict(os.environ, VKML_FAKE_DEVICES="2", PYTHONPATH=HERE + os.pathsep + os.environ.get("PYTHONPATH", ""))
    plugin = os.path.join(HERE, "multi", "report_plugin.py")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "report_plugin",
                        CASES],
                       capture_output=True, text=True, timeout=600,
                       env=dict(env, VKML_REPORT=str(report), PYTHONPATH=os.path.dirname(plugin) + os.pathsep + env["PYTHONPATH"]))
    if not report.exists():
        pytest.fail(f"the multi-device process wrote no report (rc {r.returncode}):\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}")
    return json.loads(report.read_text()), r.stdout + r.stderr


def case_ids():
    import ast
    tree = ast.parse(open(CASES).read())
    return [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]


@pytest.mark.parametrize("name", case_ids())
def test_multi_device(outcomes, name):
    results, log = outcomes
    mine = {k: v for k, v in results.items() if k.split("::")[-1].split("[")[0] == name}
    assert mine, f"{name} did not run in the multi-device process:\n{log[-3000:]}"
    failed = {k: v for k, v in mine.items() if v["outcome"] != "passed"}
    assert not failed, "\n\n".join(f"{k}: {v['outcome']}\n{v['longrepr']}" for k, v in failed.items())
