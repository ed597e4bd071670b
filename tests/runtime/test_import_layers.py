"""d2s_runtime's modules import one way: no import cycle (imports inside functions counted
too), the passes and control-flow rules below the executor, and the runtime never imports d2s
or gast."""
import ast
import os

import d2s_runtime

ROOT = os.path.dirname(os.path.dirname(d2s_runtime.__file__))  # the folder holding d2s_runtime


def _modules():
    out = {}
    for d, _, files in os.walk(os.path.dirname(d2s_runtime.__file__)):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(d, f)
                name = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                out[name[:-len(".__init__")] if name.endswith(".__init__") else name] = path
    return out


def _imports(name, path, modules):
    """Every module ``name`` imports (at module level or inside a function), and every
    top-level package it imports from outside."""
    is_pkg = path.endswith("__init__.py")
    own, outside = set(), set()
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = ".".join(base[:len(base) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module
            subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules]
            targets = subs or [base]
        else:
            continue
        for t in targets:
            if t in modules:
                if t != name:
                    own.add(t)
            else:
                outside.add(t.split(".")[0])
    return own, outside


def _graph():
    modules = _modules()
    return {m: _imports(m, p, modules) for m, p in modules.items()}


def _reaches(graph, start):
    seen, todo = set(), [start]
    while todo:
        for t in graph[todo.pop()][0]:
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return seen


def test_no_import_cycles():
    graph = _graph()
    cyclic = sorted(m for m in graph if m in _reaches(graph, m))
    assert not cyclic, f"modules of d2s_runtime in an import cycle: {cyclic}"


def test_layers_below_the_executor_do_not_import_it():
    graph = _graph()
    for m in graph:
        if m.startswith(("d2s_runtime.passes", "d2s_runtime.ops")) or m in (
                "d2s_runtime.codegen", "d2s_runtime.schedule", "d2s_runtime.ir"):
            assert "d2s_runtime.executor" not in _reaches(graph, m), f"{m} imports the executor"


def test_runtime_never_imports_d2s_or_gast():
    for m, (_, outside) in _graph().items():
        assert not outside & {"d2s", "gast"}, f"{m} imports {sorted(outside & {'d2s', 'gast'})}"


def test_the_cycle_check_sees_function_level_imports(tmp_path):
    # the checks above must be able to fail: a function-level import closing a loop is a cycle
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("def f():\n    from .a import g\n")
    modules = {"pkg": str(pkg / "__init__.py"), "pkg.a": str(pkg / "a.py"), "pkg.b": str(pkg / "b.py")}
    graph = {m: _imports(m, p, modules) for m, p in modules.items()}
    assert "pkg.a" in _reaches(graph, "pkg.a")
