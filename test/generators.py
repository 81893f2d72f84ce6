"""The case generator of every op row, gathered from test/families/<family>.py (one per family:
GENERATORS maps the family's aten-side functions, the rows' ATEN column, to generators). A row
whose family has no module here, or whose ATEN function no generator, fails test_ops loudly.
FUZZ maps aten functions to fuzz case builders (test/fuzz_cases.py); a family may leave it out,
and its rows are then fuzzed from their generators' cases. FUZZ_DENSE names, per overload, the
arguments whose strides torch CPU's kernel ignores (the fuzzer's reference gets them contiguous)."""
import importlib
import os

GENERATORS = {}
FUZZ = {}
FUZZ_DENSE = {}  # overload -> positions of the arguments torch CPU reads as dense (fuzz_cases._dense_ref)
for _f in sorted(os.listdir(os.path.join(os.path.dirname(__file__), "families"))):
    if _f.endswith(".py") and not _f.startswith("_"):
        _m = importlib.import_module(f"families.{_f[:-3]}")
        GENERATORS.update(_m.GENERATORS)
        FUZZ.update(getattr(_m, "FUZZ", {}))
        FUZZ_DENSE.update(getattr(_m, "FUZZ_DENSE", {}))
