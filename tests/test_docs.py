"""Docs that cannot lie: every Python block of README.md and docs/ runs, the site builds with
``mkdocs build --strict``, and every public name has a docstring and a place in the API reference.

Code blocks. The Python blocks of one page run in order, in one namespace, in a fresh process
whose working directory is an empty temporary folder (so one block may use what an earlier
one defined, and pages never see each other's state). Each block is compiled under the page's
own path and line numbers: a traceback names ``docs/x.md`` and the line, and
``inspect.getsource`` (which ``to_static`` reads) finds the code in the page itself. A marker
in an HTML comment on the line before a block changes how it runs:

* ``<!-- docs-test: gpu -->``: needs a GPU (cupy and CUDA); without one the block is skipped,
  and the page's ``[gpu]`` test reports the skip. The only skip there is.
* ``<!-- docs-test: mpi -->``: runs alone under ``mpiexec -n 2`` (data-parallel training).
* ``<!-- docs-test: file NAME -->``: also written to ``NAME`` in the working folder, before
  any block of the page runs (a model file that a ``d2s`` command of the page reads).
* ``<!-- docs-test: shell -->`` on a ``bash`` block: run it with bash after the page's Python
  blocks, ``d2s`` and ``python`` being this checkout's. Other bash blocks are shown, not run
  (installs).
* ``<!-- docs-test: output -->`` on a ``text`` block: what the Python block just before it
  prints must contain it (``...`` stands for any text, line ends and runs of spaces are not
  compared), so the output a page shows is the output the code gives.
"""
import importlib
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

FENCE = re.compile(r"^```([A-Za-z0-9_+-]*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
MARKER = re.compile(r"<!--\s*docs-test:\s*([a-z]+)(?:\s+([^\s>]+))?\s*-->\s*$")
MARKERS = {"gpu", "mpi", "file", "shell", "output"}


def pages():
    """README.md and every page under docs/ (relative paths, sorted)."""
    found = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
    return [p.relative_to(ROOT).as_posix() for p in found]


def blocks(page):
    """The fenced blocks of ``page``: dicts of ``lang``, ``line`` (of the first code line),
    ``code``, ``marker`` and ``arg`` (from a docs-test comment on the line before the fence)."""
    text = (ROOT / page).read_text()
    out = []
    for m in FENCE.finditer(text):
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mk = MARKER.search(before)
        out.append({"lang": m.group(1), "line": text.count("\n", 0, m.start()) + 2, "code": m.group(2),
                    "marker": mk.group(1) if mk else None, "arg": mk.group(2) if mk else None})
    return out


def python_blocks(page):
    return [b for b in blocks(page) if b["lang"] in ("python", "py")]


def _gpu_missing():
    try:
        import cupy
        return None if cupy.cuda.runtime.getDeviceCount() > 0 else "no CUDA GPU"
    except Exception as e:  # cupy missing, or no driver
        return f"needs cupy and a CUDA GPU ({type(e).__name__})"


# Runs in the page's process: exec each block under its page's path (and lines), in a module
# registered as the page, so functions and classes find their source in the page.
DRIVER = r"""
import contextlib, io, json, sys, traceback, types
spec = json.load(open(sys.argv[1]))
mod = types.ModuleType("docs_page")
mod.__file__ = spec["path"]
sys.modules["docs_page"] = mod
printed = {}
for b in spec["blocks"]:
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile("\n" * (b["line"] - 1) + b["code"], spec["path"], "exec"), mod.__dict__)
    except BaseException:
        print(out.getvalue())
        traceback.print_exc()
        print(f"DOCS BLOCK FAILED: {spec['page']}:{b['line']}", file=sys.stderr)
        sys.exit(1)
    printed[b["line"]] = out.getvalue()
json.dump(printed, open(sys.argv[2], "w"))
"""


def output_matches(expected, printed):
    """Whether ``printed`` contains ``expected`` (``...`` matching any text; spaces at line
    ends and runs of spaces not compared)."""
    def norm(s):
        return "\n".join(re.sub(r"[ \t]+", " ", line).strip() for line in s.strip().splitlines())
    pattern = ".*?".join(re.escape(part) for part in norm(expected).split("..."))
    return re.search(pattern, norm(printed), re.S) is not None


def _env(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "runtime"), env.get("PYTHONPATH", "")])
    env["D2S_CACHE_DIR"] = str(tmp_path / ".cache")  # a native compile a page asks for stays in the test
    shim = tmp_path / ".bin"
    shim.mkdir(exist_ok=True)
    for name, command in (("d2s", f"{sys.executable} -m d2s"), ("python", sys.executable)):
        (shim / name).write_text(f"#!/bin/sh\nexec {command} \"$@\"\n")
        (shim / name).chmod(0o755)
    env["PATH"] = f"{shim}{os.pathsep}{env['PATH']}"
    return env


def run_page(page, tmp_path, with_gpu):
    """Run ``page``'s blocks (its GPU blocks only if ``with_gpu``) in ``tmp_path``."""
    bs = blocks(page)
    env = _env(tmp_path)
    for b in bs:
        if b["marker"] == "file":
            (tmp_path / b["arg"]).write_text(b["code"])
    runnable = [b for b in bs if b["lang"] in ("python", "py") and b["marker"] in (None, "file")
                or (b["marker"] == "gpu" and with_gpu)]
    spec = tmp_path / ".blocks.json"
    spec.write_text(json.dumps({"page": page, "path": str(ROOT / page), "blocks": runnable}))
    printed = tmp_path / ".printed.json"
    proc = subprocess.run([sys.executable, "-c", DRIVER, str(spec), str(printed)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (proc.stdout[-3000:] + proc.stderr[-6000:])
    printed = {int(k): v for k, v in json.loads(printed.read_text()).items()}
    last = None
    for b in bs:
        if b["marker"] == "output":
            assert last is not None, f"{page}:{b['line']}: an output block after no Python block"
            if last["marker"] in ("gpu", "mpi") and last["line"] not in printed:
                continue  # shown for a block that runs elsewhere (or not on this machine)
            last = last["line"]
            assert output_matches(b["code"], printed[last]), (
                f"{page}:{b['line']}: the block at line {last} printed\n{printed[last]}\nnot\n{b['code']}")
        elif b["lang"] in ("python", "py"):
            last = b
    for b in (b for b in bs if b["marker"] == "mpi"):
        script = tmp_path / f"mpi_block_{b['line']}.py"
        script.write_text("\n" * (b["line"] - 1) + b["code"])
        mpiexec = Path(sys.executable).parent / "mpiexec"
        mpiexec = str(mpiexec) if mpiexec.exists() else shutil.which("mpiexec")
        assert mpiexec, "mpiexec is missing: pip install -e '.[distributed]'"
        proc = subprocess.run([mpiexec, "-n", "2", sys.executable, str(script)], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, f"{page}:{b['line']} under mpiexec:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}"
    for b in (b for b in bs if b["marker"] == "shell"):
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", b["code"]], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, f"{page}:{b['line']}:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}"
    return proc


PAGES_WITH_CODE = [p for p in pages() if any(b["lang"] in ("python", "py") or b["marker"] == "shell"
                                             for b in blocks(p))]
GPU_PAGES = [p for p in pages() if any(b["marker"] == "gpu" for b in blocks(p))]


@pytest.mark.parametrize("page", PAGES_WITH_CODE)
def test_page_code_runs(page, tmp_path):
    run_page(page, tmp_path, with_gpu=False)


@pytest.mark.parametrize("page", GPU_PAGES)
def test_page_gpu_code_runs(page, tmp_path):
    reason = _gpu_missing()
    if reason:
        pytest.skip(f"{page}'s GPU blocks: {reason}")
    run_page(page, tmp_path, with_gpu=True)


def test_every_block_runs_or_needs_hardware():
    # the only way a block is left out is a marker, and the only markers that leave a block out
    # name hardware (gpu) or run it another way (mpi, shell); a typo in a marker fails here
    counts = {"run": 0, "gpu": 0, "mpi": 0, "shell": 0}
    for page in pages():
        for b in blocks(page):
            assert b["marker"] in MARKERS | {None}, f"{page}:{b['line']}: unknown docs-test marker {b['marker']!r}"
            if b["marker"] == "shell":
                assert b["lang"] in ("bash", "sh", "console"), f"{page}:{b['line']}: shell marker on a {b['lang']} block"
                counts["shell"] += 1
            elif b["lang"] in ("python", "py"):
                counts["run" if b["marker"] in (None, "file") else b["marker"]] += 1
            elif b["marker"] == "output":
                assert b["lang"] == "text", f"{page}:{b['line']}: the output marker goes on a text block"
                counts["output"] = counts.get("output", 0) + 1
            else:
                assert b["marker"] is None, f"{page}:{b['line']}: a {b['marker']} marker on a {b['lang']!r} block"
    assert counts["run"] >= 40, counts  # the parser finds the blocks (README's tour and the guides)
    assert counts["gpu"] <= 5, counts


def test_the_block_parser_reads_markers_and_lines(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / "p.md").write_text("# t\n\n```python\nx = 1\n```\n\n<!-- docs-test: gpu -->\n```python\n"
                                   "y = 2\n```\n\n```text\nout\n```\n")
    got = [(b["lang"], b["line"], b["code"], b["marker"]) for b in blocks("p.md")]
    assert got == [("python", 4, "x = 1\n", None), ("python", 9, "y = 2\n", "gpu"), ("text", 13, "out\n", None)]


def test_output_blocks_match_what_the_code_prints():
    assert output_matches("tensor([1., ...])\nok", "noise\ntensor([1.,   2.])  \nok\n")
    assert not output_matches("tensor([1., 3.])", "tensor([1., 2.])")


def test_a_failing_block_fails_its_page(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / "p.md").write_text("```python\ndef f():\n    return 1\n```\n\n```python\nassert f() == 2\n```\n")
    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(AssertionError, match=r"DOCS BLOCK FAILED: p.md:7"):
        run_page("p.md", work, with_gpu=False)


# ---------------------------------------------------------------------------- API reference
API_MODULES = ["d2s", "d2s.nn", "d2s.nn.functional", "d2s.optim", "d2s.jit", "d2s.func", "d2s.lax", "d2s_runtime"]


def public_names(modname):
    """``__all__``, or for a module without one its names without a leading underscore that it
    defines itself or takes from a private module of its package (``d2s.nn.functional``'s from
    ``d2s.nn._f_loss``); what it imports from public modules (``Tensor``) is theirs."""
    mod = importlib.import_module(modname)
    if hasattr(mod, "__all__"):
        return list(mod.__all__)
    package = modname.rpartition(".")[0]

    def own(v):
        where = getattr(v, "__module__", None) or ""
        return where == modname or where.startswith(package + "._")
    return [n for n, v in vars(mod).items() if not n.startswith("_") and not inspect.ismodule(v) and own(v)]


def _has_docstring(mod, name, obj):
    """A module, class or function needs its own docstring; an instance (a dtype, a generator)
    its d2s class's; plain data (a dict or tuple such as ``d2s_runtime.OPS``) a mention in its
    module's docstring."""
    if inspect.ismodule(obj) or inspect.isclass(obj) or inspect.isroutine(obj):
        return bool((obj.__doc__ or "").strip())
    cls = type(obj)
    if cls.__module__.split(".")[0] in ("d2s", "d2s_runtime"):
        return bool((cls.__doc__ or "").strip())
    return f"``{name}``" in (mod.__doc__ or "")


def test_every_public_name_has_a_docstring():
    missing = []
    for modname in API_MODULES:
        mod = importlib.import_module(modname)
        missing += [f"{modname}.{n}" for n in public_names(modname) if not _has_docstring(mod, n, getattr(mod, n))]
    assert missing == [], f"add a docstring (Args/Returns) to: {missing}"


def test_the_docstring_rule_can_fail():
    import types
    mod = types.ModuleType("m", "holds ``TABLE``")
    assert not _has_docstring(mod, "f", lambda: None)
    assert _has_docstring(mod, "TABLE", {}) and not _has_docstring(mod, "OTHER", {})


def _anchors(site):
    ids = set()
    for html in site.rglob("*.html"):
        ids.update(re.findall(r'\bid="([^"]+)"', html.read_text(errors="replace")))
    return ids


def _unplaced(ids):
    """Public names with no heading in the built site, under the name users write
    (``d2s.nn.Linear``) or, where a package's submodule has the same name as a function
    (``d2s.tensor``), where the object is defined (``d2s.tensor.tensor``)."""
    missing = []
    for modname in API_MODULES:
        mod = importlib.import_module(modname)
        for n in public_names(modname):
            obj = getattr(mod, n)
            where = {f"{modname}.{n}", getattr(obj, "__name__", None) if inspect.ismodule(obj) else
                     f"{getattr(obj, '__module__', None)}.{getattr(obj, '__qualname__', None)}"}
            if not where & ids:
                missing.append(f"{modname}.{n}")
    return missing


def test_site_builds_strictly_and_shows_every_public_name(tmp_path):
    # one test: the build is the slow part (~15 s of CPU), and pytest-xdist would build it once
    # per worker for two tests
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "runtime"), env.get("PYTHONPATH", "")])
    site = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f", str(ROOT / "mkdocs.yml"),
                           "-d", str(site)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    ids = _anchors(site)
    assert "d2s.jit.to_static" in ids and "d2s.nn.Linear" in ids, sorted(ids)[:50]
    missing = _unplaced(ids)
    assert missing == [], (f"public names with no API page: {missing} (is the module on a page of docs/api/ "
                           "with a `::: module` directive?)")


def test_the_page_rule_can_fail():
    ids = {"d2s.nn.Linear"}
    assert "d2s.nn.Linear" not in _unplaced(ids) and "d2s.nn.Module" in _unplaced(ids)


# ---------------------------------------------------------------------------- links and --help
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _broken_links(path):
    """Relative links of a markdown file (README.md; mkdocs checks docs/ itself) whose target
    file does not exist."""
    text = FENCE.sub("", path.read_text())
    out = []
    for target in LINK.findall(text):
        file = target.split("#", 1)[0]
        if file and "://" not in target and not (path.parent / file).exists():
            out.append(target)
    return out


def test_readme_links_resolve():
    assert _broken_links(ROOT / "README.md") == []


def test_a_broken_link_is_found(tmp_path):
    (tmp_path / "a.md").write_text("[ok](a.md) [web](https://x.org/y) [bad](docs/nope.md#x)\n")
    assert _broken_links(tmp_path / "a.md") == ["docs/nope.md#x"]


def test_cli_help_names_pages_that_exist():
    from d2s.cli import DOCS_EPILOG, build_parser
    assert DOCS_EPILOG in build_parser().format_help()
    named = re.findall(r"docs/[\w/.]+", DOCS_EPILOG)
    assert len(named) >= 8
    assert [p for p in named if not (ROOT / p.rstrip(".")).exists()] == []
