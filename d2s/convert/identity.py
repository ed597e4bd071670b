"""``a is b`` in converted code.

After a tensor ``if`` or loop, which tensor object a name holds in eager code may depend on the
data: ``c = x; if x.sum() > 0: c = x * 2`` leaves ``c is x`` true exactly on the runs that skip
the branch. The program holds one object per name whatever the run, so comparing the traced
objects would answer for one path only. The builder links such objects under the flag that
says when they are one (``ProgramBuilder.link_maybe_alias``, the same links that make an
in-place update reach every alias); ``convert_is`` answers from those links: a Python bool
where the answer is known when the program is built, else a bool computed per run."""
from .._state import STATE
from ..static.control_flow import alias_flag
from ..static.weak_index import number_stand_in
from ..tensor import Tensor
from ..user_errors import ConvertError, at_user_line
from .. import ops


def convert_is(a, b, negate=False):
    """``a is b`` (``a is not b`` with ``negate``) as eager code would answer it on this run."""
    builder = STATE.builder
    if a is b or builder is None or not (isinstance(a, Tensor) and isinstance(b, Tensor)):
        return (a is not b) if negate else (a is b)
    flag = alias_flag(builder, a, b, builder.block)
    if flag is None:
        raise at_user_line(
            "`is` between two tensors whose identity depends on the run in a way the program does not "
            "track (a name rebound on some runs only of a tensor loop, in a function the converter did "
            "not expect to observe identity): compare values instead (d2s.equal(a, b)), or keep the "
            "names apart", ConvertError)
    if not isinstance(flag, Tensor):
        return bool(flag) != negate
    return number_stand_in(ops.logical_not(flag) if negate else flag)
