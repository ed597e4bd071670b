"""The seams between rooms: no consumer asks for a structured op by name (the registry says what
it needs to know), and no module imports another package's private names."""
import ast
import os

import d2s
import d2s_runtime

D2S_DIR = os.path.dirname(d2s.__file__)
RUNTIME_DIR = os.path.dirname(d2s_runtime.__file__)
ROOT = os.path.dirname(D2S_DIR)
STRUCTURED = frozenset({"cond", "while", "scan", "switch"})


def _library_files():
    for base in (D2S_DIR, RUNTIME_DIR):
        for d, _, files in os.walk(base):
            for f in sorted(files):
                if f.endswith(".py"):
                    yield os.path.join(d, f)


# Where the structured ops are defined: the runtime's registration and d2s's family modules
# (builder, replay, gradient, reach and ONNX rules of each op). Only these may name them.
OWNERS = ("d2s_runtime/ops/control_flow.py", "d2s/static/conditionals.py", "d2s/static/while_loops.py",
          "d2s/static/scans.py")


def _owns_structured_ops(path):
    rel = os.path.relpath(path, ROOT).replace(os.sep, "/")
    return rel.replace("runtime/d2s_runtime/", "d2s_runtime/") in OWNERS


def _dedupe(found):
    return list(dict.fromkeys(found))


def _names_structured(node):
    """Whether ``node`` is a string literal naming a structured op, or a literal collection of them."""
    if isinstance(node, ast.Constant):
        return node.value in STRUCTURED
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_names_structured(e) for e in node.elts)
    return False


def _is_op_type(node):
    """``x.type`` or a name ending in ``type`` (``op_type``): where an op's type is read."""
    return (isinstance(node, ast.Attribute) and node.attr == "type") or \
        (isinstance(node, ast.Name) and node.id.endswith("type"))


def structured_name_checks(source):
    """``(line, text)`` of each place ``source`` asks for a structured op by name: an op type
    compared with (or looked up in a collection of) ``"cond"``/``"while"``/``"scan"``/``"switch"``,
    or a table keyed by two or more of them."""
    found = []
    tree = ast.parse(source)
    # (a module's __all__ lists public function names: d2s.cond, d2s.scan)
    exports = {id(n.value) for n in tree.body if isinstance(n, ast.Assign)
               and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)}
    for node in ast.walk(tree):
        if id(node) in exports:
            continue
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_is_op_type(s) for s in sides) and any(_names_structured(s) for s in sides):
                found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.Dict):
            keys = [k for k in node.keys if isinstance(k, ast.Constant) and k.value in STRUCTURED]
            # (a dict of public function names to where they live, d2s's lazy exports, is no table of ops)
            plain = all(isinstance(v, (ast.Constant, ast.Tuple)) for v in node.values)
            if len(keys) >= 2 and not plain:
                found.append((node.lineno, ast.unparse(node)[:80]))
        elif isinstance(node, (ast.Set, ast.Tuple, ast.List)):
            if sum(isinstance(e, ast.Constant) and e.value in STRUCTURED for e in node.elts) >= 2 and \
                    all(line != node.lineno for line, _ in found):
                found.append((node.lineno, ast.unparse(node)[:80]))
    return found


def test_no_library_file_asks_for_a_structured_op_by_name():
    found = []
    for path in _library_files():
        if _owns_structured_ops(path):
            continue
        with open(path, encoding="utf-8") as f:
            found += [f"{os.path.relpath(path, ROOT)}:{line}: {text}" for line, text in structured_name_checks(f.read())]
    assert not found, ("structured ops are looked up in the registry (their layout, rules and lowerings), "
                       "not by name: " + "; ".join(found))


def test_the_name_check_can_fail():
    source = ('if op.type == "cond": pass\n'
              'ok = op.type in ("while", "scan")\n'
              'RULES = {"cond": f, "while": g}\n'
              'LOOPS = frozenset(("while", "scan"))\n'
              'kind = "while" if line.startswith("while") else ""\n'
              'LAZY = {"cond": ("d2s.static", "cond"), "scan": ("d2s.static", "scan")}\n'
              '__all__ = ["cond", "while_loop", "scan"]\n')
    assert [line for line, _ in structured_name_checks(source)] == [1, 2, 3, 4]


# ------------------------------------------------------------------ private names across packages
def _private(part):
    return part.startswith("_") and not part.startswith("__")


def _module_name(path):
    rel = os.path.relpath(path, ROOT)
    if rel.startswith("runtime" + os.sep):
        rel = rel[len("runtime") + 1:]
    rel = rel[:-3].replace(os.sep, ".")
    return rel[:-len(".__init__")] if rel.endswith(".__init__") else rel


def _is_module(name):
    """Whether the dotted ``name`` is a module or package of d2s or d2s_runtime."""
    parts = name.split(".")
    base = os.path.join(ROOT, "runtime") if parts[0] == "d2s_runtime" else ROOT
    path = os.path.join(base, *parts)
    return os.path.isfile(path + ".py") or os.path.isfile(os.path.join(path, "__init__.py"))


def private_imports(module, is_package, source, is_module=_is_module):
    """``(line, imported)`` of each import in ``source`` (module ``module``) of a name private to
    another package: a private module (``pkg._util``) imported from outside ``pkg``, or a
    private name (``mod._helper``) imported from outside ``mod``'s package."""
    package = module if is_package else module.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            parts = module.split(".") if is_package else module.split(".")[:-1]
            parts = parts[:len(parts) - (node.level - 1)]
            src = ".".join(parts + ([node.module] if node.module else []))
        else:
            src = node.module or ""
        if src.split(".")[0] not in ("d2s", "d2s_runtime"):
            continue
        parts = src.split(".")
        private_at = next((k for k, p in enumerate(parts) if _private(p)), None)
        if private_at is not None:
            owner = ".".join(parts[:private_at])
            if not (package == owner or package.startswith(owner + ".")):
                found.append((node.lineno, src))
            continue
        for alias in node.names:
            if not _private(alias.name):
                continue
            if is_module(f"{src}.{alias.name}"):  # (``from d2s import _state``: the package's own module)
                if not (package == src or package.startswith(src + ".")):
                    found.append((node.lineno, f"{src}.{alias.name}"))
                continue
            owner = src.rsplit(".", 1)[0] if "." in src else src
            if package not in (owner, src):
                found.append((node.lineno, f"{src}.{alias.name}"))
    return found


def test_no_module_imports_another_packages_private_names():
    found = []
    for path in _library_files():
        with open(path, encoding="utf-8") as f:
            source = f.read()
        found += [f"{os.path.relpath(path, ROOT)}:{line}: {what}"
                  for line, what in private_imports(_module_name(path), path.endswith("__init__.py"), source)]
    assert len(found) == 0, "imports of another package's private names (give them a public name): " + "; ".join(found)


def test_the_private_import_count_can_fail():
    source = ("from ..static.control_flow import _static_cond, cond\n"
              "from d2s_runtime.passes._util import is_effect\n"
              "from ._util import _as_tensor\n"
              "from .._state import STATE\n"
              "from .. import _state\n"
              "from ..nn import _f_loss\n")
    assert private_imports("d2s.convert.control_flow", False, source) == [
        (1, "d2s.static.control_flow._static_cond"), (2, "d2s_runtime.passes._util"), (6, "d2s.nn._f_loss")]
