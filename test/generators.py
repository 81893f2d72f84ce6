"""The case generator of every op row, gathered from test/families/<family>.py (one per family:
GENERATORS maps the family's aten-side functions, the rows' ATEN column, to generators). A row
whose family has no module here, or whose ATEN function no generator, fails test_ops loudly."""
import importlib
import os

GENERATORS = {}
for _f in sorted(os.listdir(os.path.join(os.path.dirname(__file__), "families"))):
    if _f.endswith(".py") and not _f.startswith("_"):
        GENERATORS.update(importlib.import_module(f"families.{_f[:-3]}").GENERATORS)
