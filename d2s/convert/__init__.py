"""Runtime helpers that converted code calls, all reachable as ``_jst.<name>``.

Each dispatches on the value it gets: Python values (and concrete tensors) keep plain Python
semantics; symbolic tensors build ``cond``/``while`` ops through ``d2s.static.control_flow``.
"""
from ..inplace import call_inplace
from .builtins import (checked, convert_abs, convert_assert, convert_bool, convert_float, convert_int,
                       convert_isinstance, convert_len)
from .call import convert_call, is_library
from .control_flow import convert_ifelse, convert_ifexp, python_cond
from .dict_keys import checked_compare, checked_unpack, convert_in, plain_iterable
from .identity import convert_is
from ..user_errors import ConvertError
from .logical import and_, not_, or_
from .iterables import (TensorEnumerate, TensorIterable, TensorRange, TensorRows, TensorZip, convert_enumerate,
                        convert_range, convert_zip, python_iter)
from .loops import convert_for, convert_while_loop
from .printing import convert_print, formatted_text
from .subscripts import convert_getitem, convert_setitem
from .undefined import Undefined, is_none, is_undefined, ld, ld_attr, st_attr

__all__ = [
    "convert_call", "convert_ifelse", "convert_ifexp", "convert_while_loop", "convert_for", "convert_range",
    "convert_enumerate", "convert_zip", "and_", "or_", "not_", "convert_len", "convert_print", "convert_int",
    "convert_float", "convert_bool", "convert_assert", "convert_isinstance", "convert_abs", "python_cond",
    "python_iter", "Undefined", "checked", "is_none", "is_undefined", "ld", "ld_attr", "st_attr", "ConvertError", "is_library",
    "TensorIterable", "TensorRange", "TensorRows", "TensorEnumerate", "TensorZip", "convert_getitem", "convert_setitem", "call_inplace",
    "convert_in", "convert_is", "plain_iterable", "checked_unpack", "checked_compare", "formatted_text",
]
