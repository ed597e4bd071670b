"""The ``d2s`` command line (also ``python -m d2s``).

    d2s convert FILE::FUNC                       print the converted source
    d2s graph FILE::FUNC --spec 'float32[?,784]' print the program (or --dot/--svg FILE)
    d2s compare FILE::FUNC [--spec ...]          eager vs trace vs to_static, side by side
    d2s run DIR --input x=x.npy [--out DIR]      run a saved model with the runtime alone
                                                 (--max-loop-iterations N, --max-bytes N bound it)
    d2s --debug COMMAND ...                      show the traceback of an error
    d2s export-onnx FILE::FUNC --spec ... -o M   write an ONNX model
    d2s demo                                     the tour of the whole system
"""
import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys

from .demo import main as demo_main
from .jit import to_static
from .jit.export_support import module_static_function
from .nn.module import Module
from .onnx import export as onnx_export
from .onnx.export import ExportError
from .static.input_spec import spec_from_text
from .trace.compare import InputSizeError, compare_report
from .transformers import ConversionError, SourceUnavailable, convert_function
from .user_errors import ConvertError, NoProgramError
from d2s_runtime.untrusted import read_npy


def parse_spec(text):
    """'float32[?,784]' -> InputSpec([None, 784], 'float32')."""
    try:
        return spec_from_text(text)
    except ValueError as e:
        raise SystemExit(f"d2s: bad --spec {text!r}: {e}") from None


def load_target(target):
    """'path/to/file.py::func' -> the function (or module-level object) it names."""
    if "::" not in target:
        raise SystemExit(f"d2s: expected FILE::FUNC, got {target!r} (e.g. model.py::forward)")
    path, name = target.split("::", 1)
    if not os.path.isfile(path):
        raise SystemExit(f"d2s: no such file: {path}")
    mod_name = "_d2s_cli_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
    spec = importlib.util.spec_from_file_location(mod_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        spec.loader.exec_module(module)
    except SyntaxError as e:
        sys.modules.pop(mod_name, None)
        raise UserFileError(f"{e.filename or path}, line {e.lineno}: syntax error: {e.msg}; fix the file and "
                            "run the command again") from e
    except Exception as e:
        sys.modules.pop(mod_name, None)
        where = _user_frame(e.__traceback__, [path]) or path
        raise UserFileError(f"{where}: importing the file failed: {type(e).__name__}: {e}; running it with "
                            f"`python {path}` shows the same error") from e
    finally:
        sys.path.pop(0)
    obj = module
    for part in name.split("."):
        if not hasattr(obj, part):
            raise SystemExit(f"d2s: {path} has no {name!r}")
        obj = getattr(obj, part)
    return obj


class UserFileError(Exception):
    """The user's file could not be imported (syntax error, failing import...)."""


def _user_frame(tb, paths):
    """``'FILE, line N'`` of the innermost traceback frame in one of ``paths``, or None."""
    wanted = {os.path.abspath(p) for p in paths}
    found = None
    while tb is not None:
        if os.path.abspath(tb.tb_frame.f_code.co_filename) in wanted:
            found = f"{tb.tb_frame.f_code.co_filename}, line {tb.tb_lineno}"
        tb = tb.tb_next
    return found


def _writable_file(path, flag):
    """Fail with one clear line unless ``path`` can be written as a file."""
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise SystemExit(f"d2s: cannot write {flag} {path}: the directory {os.path.dirname(path) or '.'} does not "
                         "exist; create it first")
    if os.path.isdir(path):
        raise SystemExit(f"d2s: cannot write {flag} {path}: it is a directory; name a file")


def _n_params(fn):
    import inspect
    try:
        return sum(1 for p in inspect.signature(fn).parameters.values()
                   if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
    except (TypeError, ValueError):
        return 0


def _specs(args):
    return [parse_spec(s) for s in (args.spec or [])]


def _check_target(obj, command, target):
    """A class or a non-callable names nothing to convert: say what to name instead."""
    if isinstance(obj, type):
        raise SystemExit(f"d2s {command}: {target} is a class; name a function, or a module instance "
                         f"defined in the file (e.g. `model = {obj.__name__}()` and FILE::model)")
    if not callable(obj):
        raise SystemExit(f"d2s {command}: {target} is a {type(obj).__name__}, not a function or module")


def _static_function(obj, command, target):
    """The StaticFunction to build programs from: the object itself, a module's ``forward``
    (converted for this command, the module unchanged), or a function converted now."""
    _check_target(obj, command, target)
    if isinstance(obj, Module):
        return module_static_function(obj)
    sf = obj if hasattr(obj, "get_program") else to_static(obj)
    try:
        convert_function(_signature_fn(sf))
    except SourceUnavailable as e:
        raise NoProgramError(f"{target} cannot be converted: {e} (define it with `def` in the file)") from None
    return sf


def _check_spec_count(fn, specs, command, target):
    """Fail early, naming the function's parameters, when --spec count and signature disagree."""
    import inspect
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    if not len(required) <= len(specs) <= len(positional):
        names = ", ".join(p.name for p in positional) or "none"
        raise SystemExit(f"d2s {command}: {target} takes {len(required)} input(s) ({names}) but "
                         f"{len(specs)} --spec were given; pass one --spec per input, e.g. --spec 'float32[?,784]'")


def cmd_convert(args):
    fn = load_target(args.target)
    _check_target(fn, "convert", args.target)
    if isinstance(fn, Module):
        fn = type(fn).forward
    fn = getattr(fn, "eager", fn)
    print(convert_function(fn).code)


def cmd_graph(args):
    fn = load_target(args.target)
    sf = _static_function(fn, "graph", args.target)
    specs = _specs(args)
    if not specs and sf.input_spec is None and _n_params(_signature_fn(sf)):
        raise SystemExit(f"d2s graph: {args.target} takes arguments; describe each with --spec, e.g. "
                         "--spec 'float32[?,784]' ('?' marks a dynamic dim)")
    if specs:
        _check_spec_count(_signature_fn(sf), specs, "graph", args.target)
    for flag, path in (("--dot", args.dot), ("--svg", args.svg)):
        if path:
            _writable_file(path, flag)
    program = sf.get_program(*specs)
    if args.dot or args.svg:
        dot = program.to_dot()
        if args.dot:
            with open(args.dot, "w") as f:
                f.write(dot)
            print(f"wrote {args.dot}")
        if args.svg:
            exe = shutil.which("dot")
            if exe is None:
                raise SystemExit("d2s: --svg needs Graphviz's `dot` program, which is not installed "
                                 "(apt-get install graphviz); --dot FILE writes the source without it")
            subprocess.run([exe, "-Tsvg", "-o", args.svg], input=dot.encode(), check=True)
            print(f"wrote {args.svg}")
    else:
        print(program)


def _signature_fn(sf):
    """The callable whose signature the user sees (``eager`` is bound to its instance)."""
    return sf.eager


def run_compare(target, shapes=None):
    """``d2s compare FILE::FUNC``: load FUNC from FILE and return the printed tables
    (:func:`d2s.trace.compare.compare_report`; ``shapes`` as :func:`d2s.trace.compare` takes)."""
    return compare_report(load_target(target), shapes=shapes)


def cmd_compare(args):
    print(run_compare(args.target, shapes=_specs(args) or None))


def cmd_run(args):
    import numpy as np

    import d2s_runtime
    if args.out and os.path.exists(args.out) and not os.path.isdir(args.out):
        raise SystemExit(f"d2s run: --out {args.out} is an existing file; --out names a directory for the "
                         "outputs (created if missing)")
    model = d2s_runtime.load(args.dir, max_bytes=args.max_bytes, max_loop_iterations=args.max_loop_iterations)
    if args.method:
        try:
            model = getattr(model, args.method)
        except AttributeError as e:
            raise SystemExit(f"d2s run: {e}") from None
    positional, named = [], {}
    for item in args.input or []:
        name, path = item.split("=", 1) if "=" in item else (None, item)
        try:
            arr = read_npy(path, args.max_bytes)
        except OSError as e:
            raise SystemExit(f"d2s run: cannot read input {path!r}: {e.strerror or e}") from None
        if name is None:
            positional.append(arr)
        else:
            named[name] = arr
    sig = model.signature
    outputs = model.run(*sig.bind(positional, named))
    files = output_file_names(sig.output_names)
    for name, file, out in zip(sig.output_names, files, outputs):
        out = np.asarray(out)
        if args.out:
            os.makedirs(args.out, exist_ok=True)
            path = os.path.join(args.out, file)
            _save_inside(args.out, path, out)
            print(f"{name}: {out.dtype}{list(out.shape)} -> {path}")
        else:
            print(f"{name}: {out.dtype}{list(out.shape)}")
            print(np.array2string(out, threshold=200))


def output_file_names(names):
    """A safe, distinct ``.npy`` file name for each output name (names come from the saved
    model, which may be hostile: no separators, no leading dots, nothing but
    ``[A-Za-z0-9_.-]``; an output whose name leaves nothing is ``output_<k>``)."""
    files, used = [], set()
    for k, name in enumerate(names):
        base = re.sub(r"[^A-Za-z0-9_.-]", "_", str(name))[:100].lstrip(".") or f"output_{k}"
        if base.lower() in used:
            base = f"{base}_{k}"
        while base.lower() in used:
            base += "_"
        used.add(base.lower())
        files.append(base + ".npy")
    return files


def _save_inside(outdir, path, array):
    """``np.save`` to ``path`` only if it stays in ``outdir`` and is not a symlink (a hostile
    model or a planted link must not make the command write elsewhere)."""
    import numpy as np
    real_out = os.path.realpath(outdir)
    if os.path.dirname(os.path.realpath(path)) != real_out or os.path.islink(path):
        raise SystemExit(f"d2s run: refusing to write {path}: it would land outside {outdir} (a symlink?)")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    with os.fdopen(os.open(path, flags, 0o644), "wb") as f:
        np.save(f, array)


def cmd_export_onnx(args):
    try:
        import onnx  # noqa: F401
    except ImportError:
        raise SystemExit("d2s export-onnx: needs the onnx package: pip install 'd2s[onnx]'") from None
    fn = load_target(args.target)
    _check_target(fn, "export-onnx", args.target)
    specs = _specs(args)
    sf = _static_function(fn, "export-onnx", args.target)
    if not specs and sf.input_spec is None and _n_params(_signature_fn(sf)):
        raise SystemExit(f"d2s export-onnx: {args.target} takes arguments; describe each with --spec, e.g. "
                         "--spec 'float32[?,784]' ('?' marks a dynamic dim)")
    if specs:
        _check_spec_count(_signature_fn(sf), specs, "export-onnx", args.target)
    _writable_file(args.output, "-o")
    inputs, outputs = onnx_export(fn, args.output, specs or None)
    print(f"wrote {args.output} (inputs {', '.join(inputs)}; outputs {', '.join(outputs)})")


def cmd_demo(args):
    return demo_main(quick=args.quick)


def _count(text):
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return n


def _default_max_bytes():
    from d2s_runtime.untrusted import DEFAULT_MAX_BYTES
    return DEFAULT_MAX_BYTES


# The documentation pages a command-line user needs, by name: a wheel has no README, and the
# site (docs/ in the source tree, `mkdocs serve` to browse it) keeps these names.
DOCS_EPILOG = """\
documentation (docs/ in the source tree; pip install 'd2s[docs]' && mkdocs serve):
  getting started            docs/getting_started.md
  the command line           docs/deployment/cli.md
  to_static semantics        docs/to_static/index.md (control flow, lists and dicts, limits, ...)
  trace or convert? compare  docs/trace_or_convert.md
  deployment, d2s run        docs/deployment/index.md, docs/deployment/untrusted.md
  ONNX export                docs/deployment/onnx.md
  PyTorch compatibility      docs/pytorch_compat.md
  API reference              docs/api/ (every public name, from the docstrings)"""


def build_parser():
    p = argparse.ArgumentParser(
        prog="d2s", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="d2s: eager code with real control flow, converted to static graphs.",
        epilog=DOCS_EPILOG)
    p.add_argument("--debug", action="store_true", help="show the full traceback of an error")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_parser = sub.add_parser

    def add_parser(*a, **k):  # --debug is also accepted after the command
        c = _add_parser(*a, **k)
        c.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="show the full traceback of an error")
        return c
    sub.add_parser = add_parser

    c = sub.add_parser("convert", help="print the converted source of FILE::FUNC")
    c.add_argument("target", help="FILE.py::FUNC")
    c.set_defaults(run=cmd_convert)

    c = sub.add_parser("graph", help="print the program of FILE::FUNC (or write .dot/.svg)")
    c.add_argument("target", help="FILE.py::FUNC")
    c.add_argument("--spec", action="append", help="input spec, e.g. 'float32[?,784]' (repeat per input)")
    c.add_argument("--dot", metavar="FILE", help="write Graphviz DOT source to FILE")
    c.add_argument("--svg", metavar="FILE", help="render an SVG to FILE (needs Graphviz's dot)")
    c.set_defaults(run=cmd_graph)

    c = sub.add_parser("compare", help="run FILE::FUNC through eager, trace and to_static side by side")
    c.add_argument("target", help="FILE.py::FUNC")
    c.add_argument("--spec", action="append", help="input shapes to generate inputs from (repeat per input)")
    c.set_defaults(run=cmd_compare)

    c = sub.add_parser("run", help="run a saved model directory with the runtime alone")
    c.add_argument("dir", help="directory written by d2s.jit.save")
    c.add_argument("--input", action="append", metavar="[NAME=]FILE.npy",
                   help="an input, by name or in order (repeat per input)")
    c.add_argument("--out", metavar="DIR", help="write outputs as .npy files to DIR instead of printing")
    c.add_argument("--method", metavar="NAME", help="run another saved method of the model (default: forward)")
    c.add_argument("--max-loop-iterations", type=_count, metavar="N", default=None,
                   help="stop with an error naming the op when a while loop runs more than N iterations")
    c.add_argument("--max-bytes", type=_count, metavar="N", default=_default_max_bytes(),
                   help="refuse a model whose arrays, or an input whose array, declare more than N bytes "
                        "(default: 4 GiB)")
    c.set_defaults(run=cmd_run)

    c = sub.add_parser("export-onnx", help="export FILE::FUNC as an ONNX model")
    c.add_argument("target", help="FILE.py::FUNC")
    c.add_argument("--spec", action="append", help="input spec, e.g. 'float32[?,784]' (repeat per input)")
    c.add_argument("-o", "--output", required=True, help="the .onnx file to write")
    c.set_defaults(run=cmd_export_onnx)

    c = sub.add_parser("demo", help="the tour of the whole system on built-in data (under a minute)")
    c.add_argument("--quick", action="store_true", help="fewer training steps")
    c.set_defaults(run=cmd_demo)
    return p


def _user_errors():
    """Errors that are the user's input, not a bug: shown as one message, without a traceback."""
    from d2s_runtime import ExecutionError, GuardError, ProgramAssertionError, ShapeError
    from d2s_runtime.saved_model import InputError
    from d2s_runtime.serialize import FormatError
    errors = [FormatError, InputError, ShapeError, ExecutionError, GuardError, ProgramAssertionError, UserFileError,
              ConvertError, NoProgramError, InputSizeError]
    return tuple(errors) + (ConversionError, ExportError)


def _user_message(e, args):
    """The one-line message for an error that is the user's mistake, or None for a bug."""
    target = getattr(args, "target", None)
    user_file = target.split("::", 1)[0] if target and "::" in target else None
    where = _user_frame(e.__traceback__, [user_file]) if user_file else None
    if isinstance(e, _user_errors()):
        msg = str(e)
        return f"{where}: {msg}" if where and os.path.basename(user_file) not in msg else msg
    if isinstance(e, OSError) and e.filename is not None:
        return f"cannot access {e.filename}: {e.strerror or e}"
    if where:  # an error raised in the user's own code
        return f"{where}: {type(e).__name__}: {e}"
    return None


def main(argv=None):
    """Run the command line; returns the exit status.

    A mistake of the user (a bad file, model or input, an error in their code) prints one
    message and returns 1; ``--debug`` re-raises it with the full traceback instead. Ctrl-C
    prints one line and returns 130; a closed output pipe ends the command quietly (1).
    """
    args = build_parser().parse_args(argv)
    try:
        rc = args.run(args)
        sys.stdout.flush()  # (a closed pipe shows here, not at exit)
    except BrokenPipeError:
        # the reader of our output went away (`d2s graph ... | head`): stop quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        if getattr(args, "debug", False):
            raise
        print(f"d2s {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as e:
        if getattr(args, "debug", False):
            raise
        msg = _user_message(e, args)
        if msg is None:
            raise
        print(f"d2s {args.command}: error: {msg}\n(add --debug to see the traceback)", file=sys.stderr)
        return 1
    return rc or 0


if __name__ == "__main__":
    sys.exit(main())
