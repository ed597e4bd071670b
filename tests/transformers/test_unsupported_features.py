"""UnsupportedFeatures: yield/async rejected; control flow holding a try/with return pinned to Python."""
import pytest

from convert_helpers import same_code, transformed
from d2s.transformers import ConversionError
from d2s.transformers.unsupported_features import UnsupportedFeatures


def test_if_inside_try_converts():
    source = """
        def f(x):
            try:
                if x > 0:
                    x = 1
            finally:
                pass
            return x
    """
    same_code(transformed(source, UnsupportedFeatures), source)


def test_ifs_holding_a_return_inside_a_try_handler_or_finally_are_pinned():
    got = transformed("""
        def f(x, c):
            if c:
                if x > 0:
                    x = 1
                try:
                    x = g(x)
                except ValueError:
                    return x
            return x
    """, UnsupportedFeatures)
    same_code(got, """
        def f(x, c):
            if _jst.python_cond(c, 'if', "holding a `return` inside a `try` block's handlers, `else` or `finally`"):
                if x > 0:
                    x = 1
                try:
                    x = g(x)
                except ValueError:
                    return x
            return x
    """)


def test_returns_in_try_bodies_are_not_pinned():
    # the early-return pass lowers them (see test_return_statements_with.py)
    source = """
        def f(x, c):
            if c:
                try:
                    return x
                finally:
                    g()
            return x
    """
    same_code(transformed(source, UnsupportedFeatures), source)


def test_a_with_that_always_returns_outside_loops_is_not_pinned():
    source = """
        def f(x, c):
            if c:
                with g():
                    return x
            return x
    """
    same_code(transformed(source, UnsupportedFeatures), source)


def test_a_return_inside_with_in_a_loop_is_not_pinned():
    source = """
        def f(x, c):
            for i in c:
                with g():
                    return x
            if c:
                with g():
                    return x
            return x
    """
    same_code(transformed(source, UnsupportedFeatures), source)


def test_yield_is_an_error():
    with pytest.raises(ConversionError, match="yield"):
        transformed("""
            def f(x):
                yield x
        """, UnsupportedFeatures)
