"""Property-based fuzzing of every op-table row against torch CPU and the oracle (hypothesis).

Each drawn case (test/fuzz_cases.py: a row, one of its overloads and dtypes, shapes up to 6-d
including empty and 0-dim ones, broadcasting, transposed / sliced / stepped / expanded layouts,
NaN, infinities, signed zeros, subnormals, huge and tiny values, dtype limits) goes through
test_ops.run_case: torch CPU is the reference, vkml runs it lazily and again in check mode (the
oracle verifies every node), and both results must match within the row's tolerance, or vkml must
raise the exception type torch CPU raises. Rows come from op_table(), so a new row is fuzzed
without editing this file.

`make test` runs VKML_FUZZ_CASES (default 300) cases from a fixed seed; `make fuzz` runs 10,000
through scripts/fuzz.py, which sets VKML_FUZZ_LOG: every case is then logged and a failure is
recorded instead of stopping the run (the script counts crashes and hangs by watching the log).
A failing case prints its params: paste them into test_fuzz_regressions.py.
"""
import faulthandler
import json
import os
import time

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

import vkml_torch
from fuzz_cases import NoCase, build, finish, fuzz_generated
from generators import FUZZ
from helpers import row as table_row
from test_fuzz_regressions import known_finding
from test_ops import run_case

CASES = int(os.environ.get("VKML_FUZZ_CASES", "300"))
SEED = int(os.environ.get("VKML_FUZZ_SEED", "20261201"))
LOG = os.environ.get("VKML_FUZZ_LOG", "")  # set by scripts/fuzz.py: log every case, keep going
HANG_S = float(os.environ.get("VKML_FUZZ_HANG_S", "120"))


FAMILY = os.environ.get("VKML_FUZZ_FAMILY")  # scripts/mutate.py: one family's rows


def _rows():
    # no try: an op table that cannot be read is a failure, not a reason to skip
    return [r for r in vkml_torch._C.op_table() if r["overloads"] and (not FAMILY or r["family"] == FAMILY)]


ROWS = _rows()


@st.composite
def fuzz_params(draw):
    r = draw(st.sampled_from(ROWS))
    ov = draw(st.sampled_from(r["overloads"]))
    dt = draw(st.sampled_from(r["dtypes"]))
    return finish(FUZZ.get(r["aten"], fuzz_generated)(draw, r, ov, dt), r)


def unsupported(e, msg):
    """vkml raised NotImplementedError ("no kernel for this dtype"), which the README documents as
    what an op without a kernel does, where torch CPU computed a result or raised another error; or
    the family's generator has no case for the drawn overload, dtype and mode (NoCase)."""
    return isinstance(e, (NotImplementedError, NoCase)) or "vkml raised NotImplementedError" in msg


def check_params(p):
    """One case; raises AssertionError (or the exception vkml raised) when vkml disagrees."""
    return run_case(table_row(p["row"]), p["ov"], build(p))


class _Log:
    def __init__(self, path):
        self.f = open(path, "a", buffering=1) if path else None
        self.n = 0

    def write(self, **rec):
        if self.f:
            rec["t"] = time.time()
            self.f.write(json.dumps(rec) + "\n")


_log = _Log(LOG)


def _one(p):
    _log.n += 1
    _log.write(i=_log.n, status="start", params=repr(p))
    faulthandler.dump_traceback_later(HANG_S, exit=True)  # a hang ends the process, loudly
    try:
        compared = check_params(p)
    except Exception as e:
        msg = f"{type(e).__name__}: {e}"
        if unsupported(e, msg):
            _log.write(i=_log.n, status="unsupported", msg=msg[:500])
            return  # a documented outcome: no kernel for this dtype or layout (counted apart)
        finding = known_finding(p, msg)
        if finding is not None:
            _log.write(i=_log.n, status="known", finding=finding, msg=msg[:2000])
            return  # an open bug, recorded in test_fuzz_regressions.OPEN_XFAIL
        _log.write(i=_log.n, status="fail", msg=msg[:4000])
        if not LOG:
            raise AssertionError(f"fuzz case failed: {msg}\nparams = {p!r}") from e
        return
    finally:
        faulthandler.cancel_dump_traceback_later()
    _log.write(i=_log.n, status="ok" if compared else "error-parity")


_settings = settings(max_examples=CASES, deadline=None, database=None, derandomize=False,
                     suppress_health_check=list(HealthCheck), print_blob=False,
                     phases=[Phase.explicit, Phase.generate] if LOG else
                     [Phase.explicit, Phase.generate, Phase.shrink])


@pytest.mark.skipif(not ROWS, reason=f"VKML_FUZZ_FAMILY={FAMILY!r} names no family with registered overloads")
@seed(SEED)
@_settings
@given(fuzz_params())
def test_fuzz(p):
    _one(p)
