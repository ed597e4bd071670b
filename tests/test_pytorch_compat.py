"""docs/pytorch_compat.md is what ``python -m tests.pytorch_compat`` writes from the code today (so it
cannot drift), and its probe tells present, different and missing names apart."""
import json

import pytest

import pytorch_compat


def test_the_page_is_current():
    assert pytorch_compat.PAGE.read_text() == pytorch_compat.page(), \
        "docs/pytorch_compat.md is stale: run `python -m tests.pytorch_compat` and commit it"


def test_every_name_of_the_issues_is_on_the_page():
    names = json.loads(pytorch_compat.SIGNATURES.read_text())["names"]
    listed = [n for sec in pytorch_compat.SECTIONS.values() for n in sec.split()]
    assert set(listed) <= set(names) and len(listed) == len(set(listed))


def test_the_probe_tells_the_cases_apart(monkeypatch):
    import d2s
    assert pytorch_compat.probe("torch.exp", {"keywords": []}) == ("present", "")
    assert pytorch_compat.probe("torch.no_such_function_anywhere", {"keywords": []}) == ("missing", "")
    status, note = pytorch_compat.probe("torch.exp", {"keywords": ["a_keyword_d2s_lacks"]})
    assert status == "differs" and "`a_keyword_d2s_lacks=`" in note
    # a function returning another structure than PyTorch's named tuple
    monkeypatch.setattr(d2s, "sort", lambda x, dim=-1, descending=False, stable=False: [x, x], raising=False)
    status, note = pytorch_compat.probe("torch.sort", {"keywords": [], "returns": [["values", "indices"]]})
    assert status == "differs" and "named tuple ('values', 'indices')" in note


def test_against_live_pytorch():
    """The stored signatures are PyTorch's (re-read live where torch is installed)."""
    pytest.importorskip("torch")
    stored = json.loads(pytorch_compat.SIGNATURES.read_text())["names"]
    live = pytorch_compat.read_signatures()
    assert set(live) == set(stored)
    assert all(live[n]["keywords"] == stored[n]["keywords"] for n in live)
