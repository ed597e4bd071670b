"""The to_static example trains an early-stopping RNN converted and eagerly, in agreement."""
import importlib.util
import os

EXAMPLE = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "examples", "to_static_rnn.py")


def test_to_static_rnn_example_matches_eager():
    spec = importlib.util.spec_from_file_location("to_static_rnn_example", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(steps=2, verbose=False)
