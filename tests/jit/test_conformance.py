"""The conformance corpus (tests/conformance/): every function run eagerly and through
``d2s.jit.to_static`` on each of its inputs must give the same values, dtypes, Python types,
argument mutations and exception types (``conformance/harness.py`` says exactly what is compared).

Cases that fail on today's converter are listed, with their reason, in
``conformance/known_failing.py`` and run as strict xfails, so the list shrinks as fixes land.
"""
import pytest

from conformance import all_cases
from conformance.harness import run_case
from conformance.known_failing import KNOWN_FAILING, REFUSED

CASES = all_cases()


def _params():
    out = []
    for cid in sorted(CASES):
        marks = [pytest.mark.xfail(strict=True, reason=KNOWN_FAILING[cid])] if cid in KNOWN_FAILING else []
        out.append(pytest.param(cid, marks=marks, id=cid))
    return out


def test_corpus_is_large_enough():
    assert len(CASES) >= 150, len(CASES)


def test_tables_name_real_cases():
    assert not set(KNOWN_FAILING) - set(CASES), set(KNOWN_FAILING) - set(CASES)
    assert not set(REFUSED) - set(CASES), set(REFUSED) - set(CASES)


@pytest.mark.parametrize("cid", _params())
def test_conformance(cid):
    run_case(CASES[cid], refused=REFUSED.get(cid))
