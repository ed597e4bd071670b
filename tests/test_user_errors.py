"""d2s.user_errors: the one module that finds the user's line for errors raised while a program
is built or a function converted; it sits below tensor.py (imports nothing of d2s)."""
import ast
import importlib.util
import pytest

import d2s
import d2s.convert
import d2s.static
import d2s.transformers
from d2s import user_errors

TWICE = '''import d2s


def f(x):
    if x.sum() > 0:
        x = x * 2
    return x.numpy()
'''


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_imports_nothing_of_d2s():
    tree = ast.parse(open(user_errors.__file__).read())
    imported = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    imported += [("." * n.level) + (n.module or "") for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert imported and not [m for m in imported if m.startswith(".") or m.split(".")[0] in ("d2s", "d2s_runtime")]


def test_packages_export_the_same_classes():
    assert d2s.static.SymbolicValueError is user_errors.SymbolicValueError
    assert d2s.convert.ConvertError is user_errors.ConvertError
    assert d2s.transformers.ConversionError is user_errors.ConversionError
    assert d2s.transformers.SourceUnavailable is user_errors.SourceUnavailable


@pytest.mark.parametrize("old", ["d2s.convert.errors", "d2s.static.errors", "d2s.transformers.errors", "d2s.jit.linemap"])
def test_the_four_old_modules_are_gone(old):
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(old)


def test_same_function_in_two_files_reports_its_own_file(tmp_path):
    """Code objects compare equal across files; the converted code of the second file must
    still run under its own file name, so its error names that file and line."""
    paths = []
    for name in ("first", "second"):
        p = tmp_path / name / "model.py"
        p.parent.mkdir()
        p.write_text(TWICE)
        paths.append(str(p))
    for k, path in enumerate(paths):
        f = _load(path, f"_d2s_user_errors_model_{k}").f
        with pytest.raises(user_errors.SymbolicValueError) as e:
            d2s.jit.to_static(f)(d2s.tensor([1.0, 2.0]))
        assert f'File "{path}", line 7\n    return x.numpy()\n    ^^^^^^^^^^^^^^^^' in str(e.value)
        assert paths[1 - k] not in str(e.value)


def test_at_user_line_marks_the_callers_line():
    err = user_errors.at_user_line("bad thing")  # this file is user code to d2s
    assert isinstance(err, user_errors.ConvertError)
    line = "err = user_errors.at_user_line(\"bad thing\")  # this file is user code to d2s"
    assert str(err).startswith(f'bad thing\n  File "{__file__}", line ')
    assert str(err).endswith(f"\n    {line}\n    {'^' * len(line)}")


def test_user_frame_is_the_innermost_frame_outside_d2s():
    here = user_errors.user_frame()
    assert here[0] == __file__ and here[2] == "here = user_errors.user_frame()"

    def numpy_of(x):
        return x.numpy()  # raises inside d2s/tensor.py; the error names this line

    with pytest.raises(user_errors.SymbolicValueError) as e:
        d2s.static.build_program(numpy_of, d2s.jit.InputSpec([2]))
    line = numpy_of.__code__.co_firstlineno + 1
    assert f'File "{__file__}", line {line}\n    return x.numpy()  # raises' in str(e.value)
