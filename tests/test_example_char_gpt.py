"""``examples/char_gpt.py``, its short version: a character GPT trained on Python's own
source shows its loss falling, and generates the same text eagerly, through the converted
program (one while op) and from the saved program served by ``d2s run``."""
import importlib.util
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "char_gpt.py"


def _example():
    spec = importlib.util.spec_from_file_location("char_gpt_example", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_quick_run_trains_and_generates_the_same_text_three_ways(tmp_path, capsys):
    ex = _example()
    out = ex.main(["--quick", "--out", str(tmp_path)])
    losses = out["losses"]
    assert np.mean(losses[-5:]) < np.mean(losses[:5]) - 0.5  # the loss falls
    assert out["same"] and out["served_same"] and out["loops"] == 1
    text = out["text"]
    assert text.startswith("def ") and len(text) > 20
    printed = capsys.readouterr().out
    assert "training" in printed and "the same text" in printed and "DIFFERENT" not in printed
    assert (tmp_path / "char_gpt_sampler").is_dir() and (tmp_path / "vocab.json").is_file()
    if out["png"] is not None:  # where matplotlib is installed
        assert Path(out["png"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_corpus_ships_with_python():
    ex = _example()
    text = ex.load_text(20_000)
    assert len(text) == 20_000 and "def " in text and "import" in text
    tok = ex.CharTokenizer(text)
    ids = tok.encode(text[:200])
    assert tok.decode(ids) == text[:200]
