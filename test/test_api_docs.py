"""docs/api.md is generated from the docstrings (scripts/gen_api_docs.py) and must be current."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GEN = os.path.join(ROOT, "scripts", "gen_api_docs.py")


def test_api_md_is_current():
    r = subprocess.run([sys.executable, GEN, "--check"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, (r.stderr + "\n" + r.stdout[-4000:])


def test_the_check_fails_on_a_stale_file(tmp_path, monkeypatch):
    sys.path.insert(0, os.path.dirname(GEN))
    import gen_api_docs
    stale = tmp_path / "api.md"
    stale.write_text(gen_api_docs.render().replace("Whether check mode is on.", "Stale text."))
    monkeypatch.setattr(gen_api_docs, "API_MD", str(stale))
    monkeypatch.setattr(sys, "argv", ["gen_api_docs.py", "--check"])
    try:
        gen_api_docs.main()
    except SystemExit as e:
        assert "out of date" in str(e.code)
    else:
        raise AssertionError("--check passed on a stale docs/api.md")
