"""The public contract of API.md §4 (``d2s.jit.trace``): TracerWarning at the user's line, guards."""
import os

import pytest

import d2s

from api_helpers import X, branchy, close


class TestTrace:
    def test_warns_with_user_line_and_guards(self):
        import warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            traced = d2s.jit.trace(branchy, (d2s.tensor(X),))
        tw = [w for w in caught if issubclass(w.category, d2s.jit.TracerWarning)]
        assert tw and os.path.basename(tw[0].filename) == os.path.basename(branchy.__code__.co_filename)
        assert tw[0].lineno == branchy.__code__.co_firstlineno + 1
        assert hasattr(traced.program, "global_block")
        close(traced(d2s.tensor(X * 2)), X * 4)
        with pytest.raises(d2s.jit.TraceGuardError):
            traced(d2s.tensor(-X))

    def test_guards_off_returns_the_baked_path(self):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            traced = d2s.jit.trace(branchy, (d2s.tensor(X),), guards=False)
        close(traced(d2s.tensor(-X)), -X * 2)

    def test_item_warns(self):
        import warnings

        def f(v):
            return v * v.sum().item()
        with pytest.warns(d2s.jit.TracerWarning):
            d2s.jit.trace(f, (d2s.tensor(X),))
