"""Lowers early `return` statements into one final return of a result variable.

Code after an ``if`` that may return moves into the branches that fall through (so both
branches of a tensor ``if`` define the result); a ``return`` inside a loop sets a flag and
breaks, and the code after the loop runs under ``if not flag``. A ``return`` in the body of a
``with`` or ``try`` sets the flag too and the rest of the body falls through to the end of the
block, so ``__exit__`` and ``finally`` run once, after it, as they do when Python returns; the
code after the block runs under ``if not flag`` (a ``try``'s ``else`` too, which a return
skips). Returns in a ``try``'s handlers, ``else`` or ``finally`` stay real returns (see
unsupported_features). Runs first: the loop and ``if`` transformers then see plain assignments
and breaks.
"""
import copy

import gast

from . import gast_compat as gc
from .anno import Key, getanno, setanno
from .base import Transformer


def _own_statements(stmts, in_loop=False):
    for s in stmts:
        yield s
        if isinstance(s, (gast.If, gast.While, gast.For)):
            loop = in_loop or not isinstance(s, gast.If)
            yield from _own_statements(s.body, loop)
            yield from _own_statements(s.orelse, loop)
        elif isinstance(s, (gast.With, gast.Try)):
            yield from _own_statements(s.body, in_loop)


def returning_with(s):
    """A ``with`` whose body always returns: its return is lowered like any other outside
    loops (the code after it is dead, so nothing moves into the context), which lets the
    ``if`` holding it be a tensor ``if``."""
    return isinstance(s, gast.With) and always_returns(s.body)


def contains_return(stmts):
    """Whether a ``return`` is nested in these statements' if/while/for or with/try bodies (not
    in defs, nor in a try's handlers, else or finally)."""
    return any(isinstance(s, gast.Return) for s in _own_statements(stmts))


def always_returns(stmts):
    for s in stmts:
        if isinstance(s, (gast.Return, gast.Raise)):
            return True
        if isinstance(s, gast.If) and always_returns(s.body) and always_returns(s.orelse):
            return True
        if isinstance(s, gast.With) and always_returns(s.body):
            return True
    return False


class ReturnStatements(Transformer):
    def transform(self, func):
        nested = any(contains_return(s.body + s.orelse) for s in func.body
                     if isinstance(s, (gast.If, gast.While, gast.For))) or \
            any(contains_return(s.body) for s in func.body if isinstance(s, (gast.With, gast.Try))
                and not returning_with(s))
        if not nested:
            return func
        self.retval = self.new_name("retval")
        self.ctx.retval_names.add(self.retval)
        self.flag = None
        body = list(func.body)
        if not always_returns(body):
            body.append(gast.Return(value=None))
        func.body = self._block(body, False) + [gast.Return(value=gc.name(self.retval))]
        return func

    def _loop_flag(self):
        if self.flag is None:
            self.flag = self.new_name("do_return")
            self.ctx.return_flags.add(self.flag)
        return self.flag

    def _block(self, stmts, in_loop, in_block=False):
        """``stmts`` lowered; ``in_loop``: a return breaks the loop; ``in_block``: they stand in
        a with/try body, where a return sets the flag and falls through to the block's end."""
        out = []
        for i, s in enumerate(stmts):
            rest = stmts[i + 1:]
            if isinstance(s, gast.Return):
                value = s.value if s.value is not None else gc.constant(None)
                if not (isinstance(value, gast.Name) and value.id == self.retval):
                    out.append(gast.copy_location(gc.assign(gc.name(self.retval, gast.Store()), value), s))
                if in_block and not in_loop:
                    out.append(gast.copy_location(gc.assign(gc.name(self._loop_flag(), gast.Store()),
                                                            gc.constant(True)), s))
                if in_loop:
                    out.append(gast.copy_location(gc.assign(gc.name(self._loop_flag(), gast.Store()),
                                                            gc.constant(True)), s))
                    brk = gast.copy_location(gast.Break(), s)
                    setanno(brk, Key.RETURN_BREAK, True)  # (the loop's own variables are dead once it is taken)
                    out.append(brk)
                return out  # what follows a return is dead
            if isinstance(s, gast.If) and contains_return(s.body + s.orelse) and not getanno(s, Key.PYTHON_ONLY):
                if not always_returns(s.body):
                    s.body = s.body + copy.deepcopy(rest)
                if not always_returns(s.orelse):
                    s.orelse = s.orelse + copy.deepcopy(rest)
                s.body = self._block(s.body, in_loop, in_block) or [gast.Pass()]
                s.orelse = self._block(s.orelse, in_loop, in_block)
                out.append(s)
                return out
            if returning_with(s) and not in_loop and not in_block:
                s.body = self._block(s.body, in_loop)
                out.append(s)
                return out  # what follows it is dead
            if isinstance(s, (gast.With, gast.Try)) and contains_return(s.body):
                flag = self._loop_flag()
                if not in_loop and not in_block:
                    out.append(gast.copy_location(gc.assign(gc.name(flag, gast.Store()), gc.constant(False)), s))
                s.body = self._block(s.body, in_loop, True) or [gast.Pass()]
                if getattr(s, "orelse", None):  # a try's else: Python skips it after a return
                    s.orelse = [gast.copy_location(gast.If(test=gast.UnaryOp(op=gast.Not(), operand=gc.name(flag)),
                                                           body=s.orelse, orelse=[]), s.orelse[0])]
                out.append(s)
                if in_loop:
                    continue  # the return broke the loop: the break pass guards what follows
                guard = gast.If(test=gc.name(flag), body=[gast.Return(value=gc.name(self.retval))], orelse=[])
                gast.copy_location(guard, s)
                out.extend(self._block([guard] + list(rest), in_loop, in_block))
                return out
            if isinstance(s, (gast.While, gast.For)) and contains_return(s.body):
                flag = self._loop_flag()
                s.body = self._block(s.body, True) or [gast.Pass()]
                out.append(gast.copy_location(gc.assign(gc.name(flag, gast.Store()), gc.constant(False)), s))
                out.append(s)
                guard = gast.If(test=gc.name(flag), body=[gast.Return(value=gc.name(self.retval))], orelse=[])
                gast.copy_location(guard, s)
                out.extend(self._block([guard] + list(rest), in_loop, in_block))
                return out
            out.append(s)
        return out
