"""d2s's layers import one way: no import cycle inside d2s/ (imports inside functions count too)
except Tensor and the autograd engine, and few imports of d2s's own modules hidden in
functions, each with a comment saying why.

The layers, low to high (a module imports only from its own layer or below):
d2s_runtime < _state, dtypes < tensor, autograd core < dispatch, static.builder < ops <
static (control_flow, backward, tensor_array, weak_index, ...) < nn, optim, data, func,
autograd.functional < convert (the helpers converted code calls) < transformers (the AST
passes; they hand the call-time conversion down to convert) < jit < trace, onnx, distributed
< cli, demo.

The analyzer here reads the sources with ``ast`` (nothing is imported), so it sees what a
reader sees: module-level imports, imports under a top-level ``if``/``try`` (counted as module
level), and imports inside functions or classes (counted as function level).
"""
import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Tensor and the autograd engine may know each other (``Tensor.backward`` runs the engine, the
# engine makes tensors, a node holds a tensor's gradient function); no other module may be in a
# cycle, and this set must not grow past four modules.
ALLOWED_CYCLE = frozenset({"d2s.tensor", "d2s.dispatch", "d2s.autograd.node", "d2s.autograd.engine"})
MAX_FUNCTION_LEVEL = 30


# ------------------------------------------------------------------ the analyzer
def modules(root, pkg):
    """``{dotted module name: path}`` for every ``.py`` file under ``root/pkg``."""
    out = {}
    for d, _, files in os.walk(os.path.join(root, pkg)):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(d, f)
                name = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
                out[name[:-len(".__init__")] if name.endswith(".__init__") else name] = path
    return out


def _resolve(module, is_package, level, name):
    """The absolute module a ``from <level dots><name> import ...`` in ``module`` names."""
    if level == 0:
        return name
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _module_level_nodes(tree):
    """Import nodes that run when the module loads: top level, or under a top-level if/try."""
    out = set()
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            out.add(id(stmt))
        elif isinstance(stmt, (ast.If, ast.Try)):
            out.update(id(n) for n in ast.walk(stmt) if isinstance(n, (ast.Import, ast.ImportFrom)))
    return out


def imports(root, pkg):
    """Every import of one of the package's own modules:
    ``[(module, target, lineno, function_level, has_comment)]``."""
    mods = modules(root, pkg)
    out = []
    for mod, path in sorted(mods.items()):
        with open(path, encoding="utf-8") as f:
            source = f.read()
        lines = source.splitlines()
        tree = ast.parse(source, path)
        top = _module_level_nodes(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(mod, path.endswith("__init__.py"), node.level, node.module or "")
                subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in mods]
                targets = subs or [base]  # `from . import sub` depends on sub, not on the package
            else:
                continue
            for target in targets:
                if target in mods and target != mod:
                    out.append((mod, target, node.lineno, id(node) not in top, _commented(lines, node)))
    return out


def _commented(lines, node):
    """A comment on the import's own lines or on the line above (an import statement holds no
    strings, so a ``#`` in it starts a comment)."""
    own = lines[node.lineno - 1:node.end_lineno]
    above = lines[node.lineno - 2].strip() if node.lineno >= 2 else ""
    return any("#" in line for line in own) or above.startswith("#")


def cycles(edges):
    """The strongly connected components (more than one module) of ``{module: {targets}}``,
    each as a sorted list (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = 0
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def import_graph(found):
    edges = {}
    for mod, target, *_ in found:
        edges.setdefault(mod, set()).add(target)
        edges.setdefault(target, set())
    return edges


def load_graph(found, mods):
    """What loading each module runs: its module-level imports, and for each imported
    submodule the ``__init__`` of every package above it (importing d2s.static.tensor_array
    first runs d2s/static/__init__.py, which imports the whole static package). A cycle here
    fails at import time, in one import order only."""
    edges = import_graph([f for f in found if not f[3]])
    for mod, target, *_ in [f for f in found if not f[3]]:
        parent = target.rpartition(".")[0]
        while parent in mods and not mod.startswith(parent + "."):
            edges[mod].add(parent)
            edges.setdefault(parent, set())
            parent = parent.rpartition(".")[0]
    return edges


# ------------------------------------------------------------------ the analyzer on a toy package
def _write(root, files):
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


def test_analyzer_finds_cycles_through_function_level_and_relative_imports(tmp_path):
    _write(str(tmp_path), {
        "pkg/__init__.py": "",
        "pkg/a.py": "from . import b\n",
        "pkg/b.py": "def f():\n    from .sub.c import g\n    return g\n",
        "pkg/sub/__init__.py": "",
        "pkg/sub/c.py": "import pkg.a\ndef g():\n    # layers: d sits above c\n    from ..d import h\n",
        "pkg/d.py": "try:\n    from .a import b\nexcept ImportError:\n    pass\n",
    })
    found = imports(str(tmp_path), "pkg")
    assert sorted((m, t, fl) for m, t, _, fl, _ in found) == [
        ("pkg.a", "pkg.b", False), ("pkg.b", "pkg.sub.c", True), ("pkg.d", "pkg.a", False),
        ("pkg.sub.c", "pkg.a", False), ("pkg.sub.c", "pkg.d", True)]
    assert {(m, c) for m, _, _, fl, c in found if fl} == {("pkg.b", False), ("pkg.sub.c", True)}
    assert cycles(import_graph(found)) == [["pkg.a", "pkg.b", "pkg.d", "pkg.sub.c"]]
    # the same package with the function-level import gone has no cycle
    acyclic = [f for f in found if f[:2] != ("pkg.b", "pkg.sub.c")]
    assert cycles(import_graph(acyclic)) == []


def test_analyzer_finds_load_cycles_through_package_inits(tmp_path):
    _write(str(tmp_path), {
        "pkg/__init__.py": "",
        "pkg/low/__init__.py": "from . import base, extra\n",
        "pkg/low/base.py": "",
        "pkg/low/extra.py": "from ..high import helper\n",
        "pkg/high.py": "from .low.base import thing\n",
    })
    found = imports(str(tmp_path), "pkg")
    mods = modules(str(tmp_path), "pkg")
    assert cycles(import_graph(found)) == []  # no module imports another that imports it back...
    # ...but loading pkg.high first runs pkg/low/__init__.py, which loads pkg.low.extra -> pkg.high
    assert cycles(load_graph(found, mods)) == [["pkg.high", "pkg.low", "pkg.low.extra"]]


# ------------------------------------------------------------------ d2s itself
def test_no_import_cycle_in_d2s_but_tensor_and_autograd_engine():
    found = imports(ROOT, "d2s")
    bad = [c for c in cycles(import_graph(found)) if not set(c) <= ALLOWED_CYCLE]
    assert not bad, "import cycles inside d2s/ (counting imports inside functions):\n" + \
        "\n".join("  " + " ".join(c) for c in bad)


def test_few_function_level_imports_of_d2s_modules_each_with_a_reason():
    # one import statement counts once, however many modules it names
    hidden = sorted({(m, line): (m, t, line, c) for m, t, line, fl, c in imports(ROOT, "d2s") if fl}.values(),
                    key=lambda h: (h[0], h[2]))
    where = modules(ROOT, "d2s")
    uncommented = [f"{os.path.relpath(where[m], ROOT)}:{line} imports {t}" for m, t, line, c in hidden if not c]
    assert not uncommented, "function-level imports of d2s's own modules without a comment saying why " \
        "(on the line or the line above):\n  " + "\n  ".join(uncommented)
    assert len(hidden) <= MAX_FUNCTION_LEVEL, \
        f"{len(hidden)} function-level imports of d2s's own modules (at most {MAX_FUNCTION_LEVEL}):\n  " + \
        "\n  ".join(f"{m}:{line} -> {t}" for m, t, line, _ in hidden)


# At load time, importing d2s.autograd.engine runs d2s/autograd/__init__.py first: the package
# init of an allowed module joins the allowed cycle (it re-exports the core and loads nothing
# else eagerly; Function, gradcheck and functional load on first use).
ALLOWED_AT_LOAD = ALLOWED_CYCLE | {m.rsplit(".", 1)[0] for m in ALLOWED_CYCLE if m.count(".") > 1}


def test_module_level_imports_have_no_cycle_through_package_inits():
    bad = [c for c in cycles(load_graph(imports(ROOT, "d2s"), modules(ROOT, "d2s"))) if not set(c) <= ALLOWED_AT_LOAD]
    assert not bad, "import cycles at module load (package __init__ files included):\n" + \
        "\n".join("  " + " ".join(c) for c in bad)


def test_allowed_cycle_stays_small():
    assert len(ALLOWED_CYCLE) <= 4
    assert all(m in modules(ROOT, "d2s") for m in ALLOWED_CYCLE)
