"""``d2s demo --quick`` runs end to end and every one of its checks passes."""
import re
import subprocess
import sys


def test_demo_quick_passes_every_check():
    r = subprocess.run([sys.executable, "-m", "d2s", "demo", "--quick"], capture_output=True, text=True, timeout=120)
    out = r.stdout
    assert r.returncode == 0, out[-3000:] + r.stderr[-3000:]
    assert "[FAIL]" not in out
    for step in range(1, 7):
        assert f"== {step}. " in out
    m = re.search(r"d2s demo passed: (\d+) checks passed, 0 failed", out)
    assert m and int(m.group(1)) >= 12, out[-2000:]
    # the trace warnings point at the model's own line, not at d2s internals
    assert "demo.py:" in out and "if h.mean() > 0.4" in out


def test_demo_failures_are_reported(monkeypatch, capsys):
    from d2s import demo
    rep = demo._Report()
    rep.check("something that holds", True)
    rep.check("something that does not", False, "detail")
    out = capsys.readouterr().out
    assert "[ok] something that holds" in out and "[FAIL] something that does not  (detail)" in out
    assert not rep.ok and rep.passed == 1 and rep.failed == 1
