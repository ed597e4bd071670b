"""The forward numerics check behind ``to_static(..., check_numerics=True)``: when an output
holds NaN/inf, the program is replayed op by op to name the op (and the user's line) that
first produced it from finite inputs."""
from .._state import STATE
from ..autograd.anomaly import NumericsError, nonfinite, describe_site
from ..autograd.grad_mode import no_grad
from ..static.replay import replay_block
from ..tensor import Tensor


class _ForwardCheck:
    """The replay hook of ``check_numerics``: the first op whose finite inputs give a NaN/inf
    output raises, naming the op and the user's line that built it."""

    def __init__(self, locations, program_name):
        self.locations, self.program_name = locations, program_name
        self.check_nan = False
        self.site = None

    def before_op(self, op):
        pass

    def after_op(self, op, outs, args=()):
        for o in outs:
            kind = nonfinite(o)
            if kind is None:
                continue
            if any(nonfinite(a) for a in args if isinstance(a, Tensor)):
                return  # not this op: it was given NaN/inf already
            site = self.locations.get(op.outputs[0]) if op.outputs else None
            raise NumericsError(
                f"check_numerics: op {op.type!r} (output {op.outputs[0]}) of program {self.program_name!r} "
                f"produced {kind} from finite inputs, at {describe_site(site)}")


def check_forward(entry, leaves, outputs):
    """``to_static(..., check_numerics=True)``: when an output of this call holds NaN/inf,
    replay the program op by op to name the op and line that first produced it."""
    if not any(nonfinite(t) for t in outputs if isinstance(t, Tensor)):
        return
    program = entry.raw_program
    bad_inputs = [n for n, t in zip(program.inputs, leaves) if nonfinite(t)]
    if bad_inputs:
        raise NumericsError(f"check_numerics: the program {program.name!r} was given NaN/inf in its "
                            f"input(s) {', '.join(bad_inputs)}")
    hook = _ForwardCheck(getattr(program, "op_locations", {}), program.name)
    env = {n: Tensor._make(t.array) for n, t in zip(program.inputs, leaves)}
    for name, p in entry.params:
        env[name] = Tensor._make(p.array)
    for name, arr in program.constants.items():
        env[name] = Tensor._make(arr)
    prev = STATE.anomaly
    STATE.anomaly = hook
    try:
        with no_grad():
            replay_block(program.block, [env[n] for n in program.block.inputs])
    finally:
        STATE.anomaly = prev
    raise NumericsError(f"check_numerics: an output of program {program.name!r} holds NaN/inf, but no "
                        "single op produced it from finite inputs when replayed")
