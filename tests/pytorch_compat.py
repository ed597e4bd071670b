"""The PyTorch compatibility page (``docs/pytorch_compat.md``), written by probing the code.

For each PyTorch name a model file reaches for -- every name of the two "runs with only its
imports changed" issues, then the rest of ``torch``, ``Tensor``, ``torch.nn.functional`` and
``torch.linalg`` -- the page says whether d2s has it, and how it differs: keywords PyTorch takes
that d2s's signature lacks, and a return structure (named tuple, tuple) other than PyTorch's.
PyTorch's side is data, ``tests/torch_refs/pytorch_signatures.json`` (each name's keywords from
its Python signature or its ATen schemas, and the structure it returns), written where torch is
installed; d2s's side is probed live. So the page cannot drift: ``tests/test_pytorch_compat.py``
fails when it is stale, and

    python -m tests.pytorch_compat                 # rewrite the page from the stored signatures
    python -m tests.pytorch_compat --signatures    # re-read PyTorch's signatures first (needs torch)
"""
import importlib
import inspect
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SIGNATURES = HERE / "torch_refs" / "pytorch_signatures.json"
PAGE = HERE.parent / "docs" / "pytorch_compat.md"

# Keywords no d2s user needs: PyTorch's memory layout, output buffers, named tensors, sparse and
# quantized options (a model file that passes them gets an error naming the keyword).
IGNORED_KEYWORDS = {"out", "layout", "memory_format", "pin_memory", "names", "foreach", "fused", "capturable",
                    "differentiable", "_stacklevel", "self", "input", "tensor", "args", "kwargs"}

# ------------------------------------------------------------------ the names, by section
# Every name the two issues list, in their order (section -> PyTorch names).
SECTIONS = {
    "Creation": "torch.tensor torch.as_tensor torch.from_numpy torch.zeros torch.ones torch.full torch.empty "
                "torch.zeros_like torch.ones_like torch.full_like torch.empty_like torch.arange torch.linspace "
                "torch.eye Tensor.new_zeros Tensor.new_ones Tensor.new_full Tensor.new_empty Tensor.new_tensor",
    "Shape and joining": "torch.reshape Tensor.view Tensor.view_as Tensor.reshape_as torch.flatten torch.unflatten "
                         "torch.squeeze torch.unsqueeze torch.transpose torch.permute torch.t Tensor.T Tensor.mT "
                         "Tensor.contiguous Tensor.expand Tensor.expand_as torch.broadcast_to Tensor.repeat "
                         "torch.repeat_interleave torch.tile torch.flip torch.roll torch.narrow torch.movedim "
                         "torch.cat torch.concat torch.stack torch.hstack torch.vstack torch.split torch.chunk "
                         "torch.unbind Tensor.dim Tensor.numel Tensor.size",
    "Indexing": "torch.gather torch.scatter torch.scatter_add torch.index_select torch.index_add torch.index_copy "
                "torch.masked_fill torch.masked_select torch.take_along_dim torch.nonzero torch.where",
    "Reductions": "torch.sum torch.mean torch.prod torch.max torch.min torch.amax torch.amin torch.argmax "
                  "torch.argmin torch.std torch.var torch.norm torch.linalg.vector_norm torch.linalg.matrix_norm "
                  "torch.all torch.any torch.count_nonzero torch.median torch.mode torch.cumsum torch.cumprod "
                  "torch.logcumsumexp torch.logsumexp",
    "Sorting": "torch.sort torch.argsort torch.topk torch.kthvalue torch.unique",
    "Math": "torch.clamp torch.clip torch.sign torch.exp torch.expm1 torch.log torch.log1p torch.log2 torch.log10 "
            "torch.sqrt torch.rsqrt torch.erf torch.erfinv torch.floor torch.ceil torch.round torch.trunc "
            "torch.remainder torch.fmod torch.lerp torch.addcmul torch.addcdiv torch.isnan torch.isinf "
            "torch.isfinite torch.nan_to_num torch.atan2 torch.hypot torch.abs torch.pow torch.maximum "
            "torch.minimum torch.sigmoid torch.tanh torch.softmax torch.log_softmax",
    "Linear algebra": "torch.matmul torch.mm torch.bmm torch.baddbmm torch.addmm torch.einsum torch.outer torch.dot "
                      "torch.triu torch.tril torch.diag torch.diagonal torch.trace",
    "Random": "torch.manual_seed torch.Generator torch.rand torch.randn torch.randint torch.randperm "
              "torch.multinomial torch.bernoulli torch.normal torch.rand_like torch.randn_like Tensor.normal_ "
              "Tensor.uniform_ Tensor.exponential_",
    "Dtypes": "torch.long torch.int torch.float torch.double torch.half torch.bfloat16 torch.bool Tensor.type "
              "Tensor.type_as Tensor.double Tensor.float Tensor.half Tensor.long Tensor.to "
              "Tensor.is_floating_point torch.is_tensor torch.finfo torch.iinfo",
    "In place": "Tensor.add_ Tensor.sub_ Tensor.mul_ Tensor.div_ Tensor.clamp_ Tensor.clamp_min_ Tensor.fill_ "
                "Tensor.zero_ Tensor.copy_ Tensor.masked_fill_ Tensor.index_copy_ Tensor.scatter_",
    "Devices and modules": "torch.device torch.cuda.is_available Tensor.cuda Tensor.cpu torch.jit.unused "
                           "torch.jit.ignore torch.jit.export torch.jit.is_scripting torch.jit.script",
    "Autograd and grad modes": "torch.no_grad torch.enable_grad torch.inference_mode torch.set_grad_enabled "
                               "torch.is_grad_enabled torch.autograd.grad torch.autograd.Function Tensor.backward "
                               "Tensor.detach Tensor.requires_grad_ Tensor.register_hook Tensor.retain_grad",
    "Checkpoints": "torch.save torch.load",
    "Normalization layers": "torch.nn.BatchNorm1d torch.nn.BatchNorm2d torch.nn.LayerNorm torch.nn.GroupNorm "
                            "torch.nn.InstanceNorm1d torch.nn.InstanceNorm2d torch.nn.RMSNorm "
                            "torch.nn.LocalResponseNorm",
    "Convolution and pooling": "torch.nn.Conv1d torch.nn.Conv2d torch.nn.ConvTranspose1d torch.nn.ConvTranspose2d "
                               "torch.nn.MaxPool1d torch.nn.MaxPool2d torch.nn.AvgPool1d torch.nn.AvgPool2d "
                               "torch.nn.AdaptiveAvgPool1d torch.nn.AdaptiveAvgPool2d torch.nn.AdaptiveMaxPool2d "
                               "torch.nn.Upsample torch.nn.functional.interpolate torch.nn.PixelShuffle "
                               "torch.nn.PixelUnshuffle torch.nn.Unfold torch.nn.functional.unfold "
                               "torch.nn.functional.pad",
    "Recurrent layers": "torch.nn.RNN torch.nn.LSTM torch.nn.GRU torch.nn.LSTMCell torch.nn.RNNCell torch.nn.GRUCell",
    "Attention and Transformer": "torch.nn.functional.scaled_dot_product_attention torch.nn.MultiheadAttention "
                                 "torch.nn.TransformerEncoderLayer torch.nn.TransformerDecoderLayer "
                                 "torch.nn.TransformerEncoder torch.nn.TransformerDecoder torch.nn.Transformer",
    "Activations": "torch.nn.ReLU torch.nn.ReLU6 torch.nn.LeakyReLU torch.nn.PReLU torch.nn.ELU torch.nn.SELU "
                   "torch.nn.CELU torch.nn.SiLU torch.nn.Mish torch.nn.Softplus torch.nn.Softsign torch.nn.Hardtanh "
                   "torch.nn.Hardswish torch.nn.Hardsigmoid torch.nn.GLU torch.nn.LogSoftmax torch.nn.Softmin "
                   "torch.nn.GELU torch.nn.Threshold torch.nn.Sigmoid torch.nn.Tanh torch.nn.Softmax",
    "Other layers": "torch.nn.Identity torch.nn.Linear torch.nn.Bilinear torch.nn.Dropout torch.nn.Dropout1d "
                    "torch.nn.Dropout2d torch.nn.Embedding torch.nn.EmbeddingBag torch.nn.Flatten torch.nn.Unflatten "
                    "torch.nn.Sequential torch.nn.ModuleList torch.nn.ModuleDict torch.nn.ParameterList "
                    "torch.nn.ParameterDict",
    "Module methods": "torch.nn.Module.apply torch.nn.Module.register_buffer torch.nn.Module.named_modules "
                      "torch.nn.Module.named_buffers torch.nn.Module.modules torch.nn.Module.zero_grad "
                      "torch.nn.Module.requires_grad_ torch.nn.Module.to torch.nn.Module.state_dict "
                      "torch.nn.Module.load_state_dict torch.nn.Module.train torch.nn.Module.eval",
    "Losses": "torch.nn.L1Loss torch.nn.MSELoss torch.nn.SmoothL1Loss torch.nn.HuberLoss torch.nn.NLLLoss "
              "torch.nn.BCELoss torch.nn.BCEWithLogitsLoss torch.nn.KLDivLoss torch.nn.CrossEntropyLoss "
              "torch.nn.CosineEmbeddingLoss torch.nn.MarginRankingLoss torch.nn.TripletMarginLoss",
    "Initialization": "torch.nn.init.kaiming_uniform_ torch.nn.init.kaiming_normal_ torch.nn.init.xavier_uniform_ "
                      "torch.nn.init.xavier_normal_ torch.nn.init.trunc_normal_ torch.nn.init.orthogonal_ "
                      "torch.nn.init.constant_ torch.nn.init.zeros_ torch.nn.init.ones_ torch.nn.init.normal_ "
                      "torch.nn.init.uniform_ torch.nn.init.calculate_gain",
    "nn.utils and padding layers": "torch.nn.utils.parameters_to_vector torch.nn.utils.vector_to_parameters "
                                   "torch.nn.utils.clip_grad_norm_ torch.nn.ZeroPad2d torch.nn.ConstantPad1d "
                                   "torch.nn.ConstantPad2d torch.nn.ReflectionPad1d torch.nn.ReflectionPad2d "
                                   "torch.nn.ReplicationPad2d",
    "Distributions": "torch.distributions.Categorical torch.distributions.Normal torch.distributions.Bernoulli "
                     "torch.distributions.Uniform",
    "Optimizers": "torch.optim.SGD torch.optim.Adam torch.optim.AdamW torch.optim.RMSprop torch.optim.Adagrad "
                  "torch.optim.Adadelta torch.optim.Adamax torch.optim.NAdam torch.optim.RAdam",
    "Learning-rate schedules": " ".join(f"torch.optim.lr_scheduler.{n}" for n in (
        "StepLR MultiStepLR ExponentialLR CosineAnnealingLR CosineAnnealingWarmRestarts OneCycleLR LambdaLR "
        "LinearLR ConstantLR SequentialLR ReduceLROnPlateau").split()),
    "Data": "torch.utils.data.DataLoader torch.utils.data.Dataset torch.utils.data.TensorDataset "
            "torch.utils.data.IterableDataset torch.utils.data.random_split torch.utils.data.Subset "
            "torch.utils.data.ConcatDataset",
}

# Sample calls that show a function's return structure ("x" is a 3x4 float tensor).
STRUCTURE_CALLS = {
    "max": "lib.max(x, 1)", "min": "lib.min(x, 1)", "median": "lib.median(x, 1)", "mode": "lib.mode(x, 1)",
    "sort": "lib.sort(x, 1)", "topk": "lib.topk(x, 2)", "kthvalue": "lib.kthvalue(x, 2)",
    "split": "lib.split(x, 2)", "chunk": "lib.chunk(x, 2)", "unbind": "lib.unbind(x)",
    "aminmax": "lib.aminmax(x)", "std_mean": "lib.std_mean(x)", "var_mean": "lib.var_mean(x)",
}


def _d2s_path(name):
    """The d2s object standing for PyTorch name ``name`` (``torch.nn.X`` -> ``d2s.nn.X``,
    ``Tensor.x`` -> ``d2s.Tensor.x``, ``torch.utils.data.X`` -> ``d2s.data.X``)."""
    if name.startswith("Tensor."):
        return "d2s.Tensor." + name[len("Tensor."):]
    if name.startswith("torch.utils.data."):
        return "d2s.data." + name[len("torch.utils.data."):]
    return "d2s." + name[len("torch."):]


def _resolve(path):
    parts = path.split(".")
    obj = None
    for k in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:k]))
        except ImportError:
            continue
        rest = parts[k:]
        break
    for attr in rest:
        try:
            obj = getattr(obj, attr)
        except AttributeError:
            return None
    return obj


def _torch_object(name):
    if name.startswith("Tensor."):
        return _resolve("torch.Tensor." + name[len("Tensor."):])
    return _resolve(name)


# ------------------------------------------------------------------ PyTorch's signatures (needs torch)
_RNN = ["input_size", "hidden_size", "num_layers", "nonlinearity", "bias", "batch_first", "dropout",
        "bidirectional", "proj_size", "device", "dtype"]


def _schema_keywords(torch, op):
    """Argument names (and named returns) of every ATen overload of ``op``."""
    names, returns = [], set()
    for s in torch._C._jit_get_schemas_for_operator(f"aten::{op}"):
        if s.overload_name.endswith("out") or "out" in s.overload_name.split("_"):
            continue
        if s.arguments and "Tensor" not in str(s.arguments[0].type):
            continue  # TorchScript's overloads on Python numbers (exp.int(int a)): not keywords of torch.exp
        for a in s.arguments:
            if a.alias_info is not None and a.alias_info.is_write:
                continue  # an output buffer (max(..., max=, max_values=))
            if a.name not in names:
                names.append(a.name)
        r = [x.name for x in s.returns]
        if len(r) > 1 and all(r):
            returns.add(tuple(r))
        elif len(s.returns) == 1 and str(s.returns[0].type) == "List[Tensor]":
            returns.add(("tuple",))
    return names, sorted(returns)


def read_signatures():
    """PyTorch's keywords and return structures of every name on the page (needs torch)."""
    import torch
    out = {}
    for name in _all_names(torch):
        obj = _torch_object(name)
        entry = {"kind": type(obj).__name__}
        short = name.rsplit(".", 1)[-1]
        params, returns = None, []
        if inspect.isclass(obj):
            params = _RNN if name in ("torch.nn.RNN", "torch.nn.LSTM", "torch.nn.GRU") else None
            try:
                params = params or [p for p in inspect.signature(obj).parameters]
            except (TypeError, ValueError):
                params = []
        else:
            try:
                params = [p for p in inspect.signature(obj).parameters]
            except (TypeError, ValueError):
                pass
            if not params:  # a builtin: its ATen schemas
                params, returns = _schema_keywords(torch, short)
        entry["keywords"] = [p for p in params if p not in IGNORED_KEYWORDS]
        if returns:
            entry["returns"] = [list(r) for r in returns]
        out[name] = entry
    return out


def _all_names(torch):
    """The issues' names, then the other public callables of torch, Tensor, F and linalg."""
    names = [n for sec in SECTIONS.values() for n in sec.split()]
    seen = set(names)
    extra = []
    skip = ("quantize", "fbgemm", "sparse", "mkldnn", "cudnn", "miopen", "nested", "conj", "complex", "q_",
            "is_same_size", "batch_norm_", "native_", "dequantize", "fake_", "_ref", "int_repr", "real", "imag",
            "angle", "polar", "view_as_", "vsplit", "cuda", "xpu", "mps", "to_padded", "storage", "share_memory",
            "pin_memory", "record_stream", "set_", "resize", "untyped", "data_ptr", "is_coalesced", "indices",
            "values", "crow", "col_", "ccol", "row_", "to_dense", "coalesce", "dim_order", "map_", "apply_",
            "module_load", "rename", "refine_names", "align_", "unflatten_dense", "smm", "sspaddmm", "hsmm",
            "saddmm", "addmv_", "lu_", "nuclear", "is_set_to", "is_shared", "is_pinned", "is_inference",
            "is_meta", "is_neg", "is_conj", "resolve", "segment_reduce", "rrelu_with", "embedding_renorm",
            "get_device", "element_size", "ipu", "hpu", "mtia", "fp8", "float8", "sym_", "nbytes", "itemsize",
            "_copy", "parse_", "merge_type", "unify_type", "typename", "thread_safe", "prepare_multiprocessing",
            "unsafe_", "dlpack", "compile", "is_nonzero")
    for mod, prefix in ((torch, "torch."), (torch.Tensor, "Tensor."), (torch.nn.functional, "torch.nn.functional."),
                        (torch.linalg, "torch.linalg.")):
        for n in sorted(dir(mod)):
            full = prefix + n
            if n.startswith("_") or full in seen or any(s in n for s in skip):
                continue
            obj = getattr(mod, n, None)
            if inspect.isclass(obj) or inspect.ismodule(obj) or not callable(obj):
                continue
            if mod is torch and (n.endswith("_") or n[0].isupper()):
                continue  # torch.relu_ & co: internal in-place forms; torch.FloatTensor & co: legacy types
            extra.append(full)
            seen.add(full)
    return names + extra


def write_signatures():
    import torch
    SIGNATURES.parent.mkdir(exist_ok=True)
    doc = {"torch_version": torch.__version__.split("+")[0], "names": read_signatures()}
    SIGNATURES.write_text(json.dumps(doc, indent=0, sort_keys=True) + "\n")


# ------------------------------------------------------------------ probing d2s
def probe(name, entry):
    """``(status, note)`` of PyTorch name ``name`` in d2s: ``present``, ``differs`` (with how) or
    ``missing``."""
    obj = _resolve(_d2s_path(name))
    if obj is None:
        return "missing", ""
    notes = []
    wanted = entry.get("keywords", [])
    have = _d2s_params(obj)
    if have is not None:
        lacking = [k for k in wanted if k not in have]
        if lacking:
            notes.append("no " + ", ".join(f"`{k}=`" for k in lacking))
    short = name.rsplit(".", 1)[-1]
    if short in STRUCTURE_CALLS and entry.get("returns"):
        got = _structure(name, short)
        want = entry["returns"]
        named = [r for r in want if r != ["tuple"]]
        if named and got not in [tuple(r) for r in named]:
            notes.append(f"returns {_show(got)}, PyTorch a named tuple {tuple(named[0])}")
        elif not named and got != ("tuple",):
            notes.append(f"returns {_show(got)}, PyTorch a tuple")
    return ("differs", "; ".join(notes)) if notes else ("present", "")


def _d2s_params(obj):
    """The parameter names d2s's ``obj`` takes, or None where any keyword may be (``**kwargs``)."""
    target = obj.__init__ if inspect.isclass(obj) else obj
    try:
        params = inspect.signature(target).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind == p.VAR_KEYWORD for p in params):
        return None
    return {p.name for p in params}


def _structure(name, short):
    import numpy as np
    import d2s
    x = d2s.tensor(np.arange(12, dtype="float32").reshape(3, 4))
    try:
        out = eval(STRUCTURE_CALLS[short], {"lib": d2s, "x": x})  # noqa: S307 - our own table
    except Exception as e:  # noqa: BLE001 - shown on the page
        return (f"an error ({type(e).__name__})",)
    fields = getattr(type(out), "_fields", None)
    if fields:
        return tuple(fields)
    return ("tuple",) if isinstance(out, tuple) else (type(out).__name__,)


def _show(s):
    return "a tuple" if s == ("tuple",) else f"a named tuple {s}" if len(s) > 1 else s[0]


# ------------------------------------------------------------------ the page
def page():
    """The Markdown text of ``docs/pytorch_compat.md``."""
    doc = json.loads(SIGNATURES.read_text())
    sigs = doc["names"]
    listed = [n for sec in SECTIONS.values() for n in sec.split()]
    sections = [(title, text.split()) for title, text in SECTIONS.items()]
    sections.append(("Other PyTorch functions", [n for n in sigs if n not in set(listed)]))
    rows_total = {"present": 0, "differs": 0, "missing": 0}
    body = []
    for title, names in sections:
        body += [f"## {title}", "", "| PyTorch | d2s | notes |", "|---|---|---|"]
        for n in names:
            status, note = probe(n, sigs.get(n, {}))
            rows_total[status] += 1
            mark = {"present": "yes", "differs": "differs", "missing": "**missing**"}[status]
            body.append(f"| `{n}` | {mark} | {note} |")
        body.append("")
    head = ["# PyTorch compatibility", "",
            "Generated by `python -m tests.pytorch_compat` from the code (d2s probed live) and from PyTorch "
            f"{doc['torch_version']}'s signatures "
            "(`tests/torch_refs/pytorch_signatures.json`); `tests/test_pytorch_compat.py` fails when this page "
            "is stale. **yes**: the name exists and takes every keyword PyTorch's takes (layout, `out=` and "
            "other memory options aside); **differs**: it exists, and the note says how it differs; "
            "**missing**: d2s has no such name yet. Values, dtypes and gradients of the names present are "
            "compared with PyTorch by the test suite (`tests/torch_parity.py`).", "",
            f"Of {sum(rows_total.values())} names: {rows_total['present']} present, {rows_total['differs']} "
            f"differ, {rows_total['missing']} missing. The names model files use most come first, by topic; "
            "the rest of `torch`, `Tensor`, `torch.nn.functional` and `torch.linalg` follows.", ""]
    return "\n".join(head + body)


def main(argv):
    sys.path.append(str(HERE))
    if "--signatures" in argv:
        write_signatures()
    PAGE.write_text(page())
    print(f"wrote {PAGE}")


if __name__ == "__main__":
    main(sys.argv[1:])
