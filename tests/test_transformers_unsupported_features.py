"""UnsupportedFeatures: yield/async rejected; control flow in try/with pinned to Python."""
import pytest

from convert_helpers import same_code, transformed
from d2s.transformers import ConversionError
from d2s.transformers.unsupported_features import UnsupportedFeatures


def test_if_inside_try_is_pinned():
    got = transformed("""
        def f(x):
            try:
                if x > 0:
                    x = 1
            finally:
                pass
            return x
    """, UnsupportedFeatures)
    same_code(got, """
        def f(x):
            try:
                if _jst.python_cond(x > 0, 'if', 'inside a `try` block'):
                    x = 1
            finally:
                pass
            return x
    """)


def test_yield_is_an_error():
    with pytest.raises(ConversionError, match="yield"):
        transformed("""
            def f(x):
                yield x
        """, UnsupportedFeatures)
