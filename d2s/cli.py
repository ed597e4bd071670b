"""The ``d2s`` command line (also ``python -m d2s``).

    d2s convert FILE::FUNC                       print the converted source
    d2s graph FILE::FUNC --spec 'float32[?,784]' print the program (or --dot/--svg FILE)
    d2s compare FILE::FUNC [--spec ...]          eager vs trace vs to_static, side by side
    d2s run DIR --input x=x.npy [--out DIR]      run a saved model with the runtime alone
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

_SPEC = re.compile(r"^\s*(\w+)\s*\[([^\]]*)\]\s*$")


def parse_spec(text):
    """'float32[?,784]' -> InputSpec([None, 784], 'float32'); several specs are ';'-separated."""
    from .static.input_spec import InputSpec
    m = _SPEC.match(text)
    if not m:
        raise SystemExit(f"d2s: bad --spec {text!r}: write it as DTYPE[DIM,...], e.g. 'float32[?,784]' "
                         "('?' for a dynamic dim, '[]' for a scalar)")
    dtype, dims = m.group(1), m.group(2).strip()
    try:
        shape = [] if not dims else [None if d.strip() in ("?", "-1", "None") else int(d) for d in dims.split(",")]
        return InputSpec(shape, dtype)
    except (TypeError, ValueError) as e:
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
    finally:
        sys.path.pop(0)
    obj = module
    for part in name.split("."):
        if not hasattr(obj, part):
            raise SystemExit(f"d2s: {path} has no {name!r}")
        obj = getattr(obj, part)
    return obj


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
    from .jit import to_static
    from .jit.export_support import module_static_function
    from .nn.module import Module
    _check_target(obj, command, target)
    if isinstance(obj, Module):
        return module_static_function(obj)
    return obj if hasattr(obj, "get_program") else to_static(obj)


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
    from .transformers import convert_function
    from .nn.module import Module
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


def cmd_compare(args):
    from .trace.compare import run_compare
    print(run_compare(args.target, shapes=_specs(args) or None))


def cmd_run(args):
    import numpy as np

    import d2s_runtime
    model = d2s_runtime.load(args.dir)
    if args.method:
        try:
            model = getattr(model, args.method)
        except AttributeError as e:
            raise SystemExit(f"d2s run: {e}") from None
    positional, named = [], {}
    for item in args.input or []:
        name, path = item.split("=", 1) if "=" in item else (None, item)
        try:
            arr = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise SystemExit(f"d2s: cannot read input {path!r} as a .npy array: {e}") from None
        if name is None:
            positional.append(arr)
        else:
            named[name] = arr
    sig = model.signature
    outputs = model.run(*sig.bind(positional, named))
    for name, out in zip(sig.output_names, outputs):
        out = np.asarray(out)
        if args.out:
            os.makedirs(args.out, exist_ok=True)
            path = os.path.join(args.out, f"{name}.npy")
            np.save(path, out)
            print(f"{name}: {out.dtype}{list(out.shape)} -> {path}")
        else:
            print(f"{name}: {out.dtype}{list(out.shape)}")
            print(np.array2string(out, threshold=200))


def cmd_export_onnx(args):
    try:
        from .onnx import export
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
    inputs, outputs = export(fn, args.output, specs or None)
    print(f"wrote {args.output} (inputs {', '.join(inputs)}; outputs {', '.join(outputs)})")


def cmd_demo(args):
    from .demo import main as demo_main
    return demo_main(quick=args.quick)


def build_parser():
    p = argparse.ArgumentParser(prog="d2s", description="d2s: eager code with real control flow, "
                                "converted to static graphs. See README.md.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

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
    """Errors that are the user's input, not a bug: shown as one line, without a traceback."""
    from d2s_runtime.saved_model import InputError
    from d2s_runtime.serialize import FormatError
    errors = [FormatError, InputError]
    try:
        from .transformers import ConversionError
        errors.append(ConversionError)
    except ImportError:
        pass
    try:
        from .onnx.export import ExportError
        errors.append(ExportError)
    except ImportError:
        pass
    return tuple(errors)


def main(argv=None):
    """Run the command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        rc = args.run(args)
    except _user_errors() as e:
        print(f"d2s {args.command}: error: {e}", file=sys.stderr)
        return 1
    return rc or 0


if __name__ == "__main__":
    sys.exit(main())
