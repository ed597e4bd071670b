"""ReturnStatements: code after an if that may return moves into the branches that fall through."""
from convert_helpers import same_code, transformed
from d2s.transformers.return_statements import ReturnStatements


def test_early_return_moves_the_rest_into_the_else_branch():
    got = transformed("""
        def f(x):
            if x > 0:
                return x
            y = x * 2
            return y
    """, ReturnStatements)
    same_code(got, """
        def f(x):
            if x > 0:
                retval = x
            else:
                y = x * 2
                retval = y
            return retval
    """)


def test_return_in_loop_sets_a_flag_and_breaks():
    got = transformed("""
        def f(x):
            while x < 10:
                if x == 3:
                    return x
                x = x + 1
            return -1
    """, ReturnStatements)
    same_code(got, """
        def f(x):
            do_return = False
            while x < 10:
                if x == 3:
                    retval = x
                    do_return = True
                    break
                else:
                    x = x + 1
            if do_return:
                pass
            else:
                retval = -1
            return retval
    """)
