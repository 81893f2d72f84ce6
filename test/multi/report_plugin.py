"""pytest plugin for the child processes of test_multi_device.py: writes each test's outcome
(and failure text) to the JSON file named by VKML_REPORT."""
import json
import os

_results = {}


def pytest_runtest_logreport(report):
    if report.when == "call" or report.outcome != "passed":
        prev = _results.get(report.nodeid)
        if prev and prev["outcome"] != "passed":
            return
        _results[report.nodeid] = {"outcome": report.outcome, "longrepr": str(report.longrepr or "")[-6000:]}


def pytest_sessionfinish(session):
    with open(os.environ["VKML_REPORT"], "w") as f:
        json.dump(_results, f)
