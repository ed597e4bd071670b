"""No dead code: vulture (configured in pyproject.toml, with .vulture_whitelist.py) finds nothing
in d2s/ and runtime/, and every whitelisted name says why it is kept."""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WHITELIST = os.path.join(ROOT, ".vulture_whitelist.py")


def test_vulture_finds_no_dead_code():
    r = subprocess.run([sys.executable, "-m", "vulture"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and not r.stdout.strip(), (
        "vulture found unused code: delete it, or add the name to .vulture_whitelist.py with the reason "
        f"it is used:\n{r.stdout}{r.stderr}")


def test_every_whitelisted_name_says_why():
    entries = [ln for ln in open(WHITELIST).read().splitlines() if ln.startswith("_.")]
    assert entries
    for ln in entries:
        assert re.fullmatch(r"_\.\w+  # \S.*", ln), f"{ln!r}: write `_.name  # why it is used`"


def test_a_new_unused_function_is_found(tmp_path):
    """The check can fail: the same configuration reports a function nothing calls."""
    (tmp_path / "mod.py").write_text("def used():\n    return 1\n\n\ndef forgotten_helper():\n    return 2\n\n\nused()\n")
    r = subprocess.run([sys.executable, "-m", "vulture", str(tmp_path / "mod.py"), WHITELIST, "--min-confidence",
                        "60"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert "forgotten_helper" in r.stdout and "'used'" not in r.stdout
