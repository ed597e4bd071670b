"""convert_call converts a user callee through the converter d2s.transformers hands down to
d2s.convert when it loads (convert sits below transformers and never imports it)."""
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(code, tmp_path):
    # a file of its own: convert_call converts only functions whose source it can read
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(code))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT, "runtime")]))
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)


def test_convert_call_before_the_transformers_load_says_what_to_import(tmp_path):
    r = _run("""
        import d2s.convert

        def helper(x):
            return x

        d2s.convert.convert_call(helper)
    """, tmp_path)
    assert r.returncode != 0
    assert "RuntimeError" in r.stderr and "import d2s.transformers" in r.stderr


def test_convert_call_converts_user_functions_once_the_transformers_load(tmp_path):
    r = _run("""
        import d2s
        import d2s.convert
        import d2s.transformers

        def helper(x):
            if x.sum() > 0:
                return x * 2
            return -x

        converted = d2s.convert.convert_call(helper)
        assert converted is not helper and getattr(converted, "__d2s_converted__", False)
        for v in ([1.0, 2.0], [-1.0, -2.0]):
            assert converted(d2s.tensor(v)).tolist() == helper(d2s.tensor(v)).tolist()
        print("ok")
    """, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"
