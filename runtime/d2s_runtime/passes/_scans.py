"""What the scan passes share (``merge_scans``, ``scan_residuals``, ``scan_matmul_sums``,
``scan_transposes``: the ``scan`` counterparts of the ``while`` passes, whose helpers are in
``_loops.py``).

The gradient of a ``scan`` (``d2s/static/scans.py``) runs the scan again, also emitting each
step's incoming carries as ``ys``, then a reverse scan over those saved values that replays
each step to get what its vector-Jacobian product reads, and adds each step's weight gradient
to a carry. A program training a recurrent layer (``nn.LSTM``: one scan per layer and
direction) so runs each step's forward three times, and its weight gradient as one thin
product per step; the scan passes remove that. Scans holding effects (random draws, prints)
are left alone.
"""
from ..ops import OPS, TensorType
from ..ops.control_flow import ScanLayout
from ._util import is_effect
from ._loops import _canon


def _is_scan(op):
    """Whether ``op`` is a loop of ``scan``'s layout (carries, xs, captures; one body block)."""
    opdef = OPS.get(op.type)
    return opdef is not None and isinstance(opdef.layout, ScanLayout)


def _scans(block):
    """The scans of ``block`` these passes may rewrite (those without effects)."""
    return [op for op in block.ops if _is_scan(op) and not is_effect(op)]


def _counts(op):
    return op.attrs["n_carry"], op.attrs["n_xs"]


def _blocks(program):
    return [program.block, *program.block.sub_blocks()]


def _var_of_number(block, vn):
    """value number -> the first var of ``block`` (its inputs, then its ops' outputs) holding it."""
    out = {}
    for name in list(block.inputs) + [o for op in block.ops for o in op.outputs]:
        if name in vn:
            out.setdefault(vn[name], name)
    return out


def _input_keys(op, defs, tag):
    """Numbering keys of scan ``op``'s body inputs: its carries its own (``tag``), its ``xs``
    and captures the outer values they slice or read."""
    nc, nx = _counts(op)
    return ([(tag, "carry", i) for i in range(nc)]
            + [("xs", _canon(defs, x)) for x in op.inputs[nc:nc + nx]]
            + [("outer", _canon(defs, x)) for x in op.inputs[nc + nx:]])


def _add_ys(block, namer, scan, body_var):
    """The outer var holding ``body_var`` of ``scan``'s body stacked over the steps: an existing
    ``ys`` output, or a new one."""
    nc, _ = _counts(scan)
    body = scan.blocks["body"]
    for j, o in enumerate(body.outputs[nc:]):
        if o == body_var:
            return scan.outputs[nc + j]
    t = body.lookup(body_var).type
    out = namer()
    block.add_var(out, TensorType((_steps_dim(block, scan),) + tuple(t.shape), t.dtype))
    body.outputs.append(body_var)
    scan.outputs.append(out)
    return out


def _steps_dim(block, scan):
    """The scan's number of steps where its types say it (else None: unknown)."""
    nc, nx = _counts(scan)
    for x in scan.inputs[nc:nc + nx]:
        return block.lookup(x).type.shape[0]
    return scan.attrs.get("length")
