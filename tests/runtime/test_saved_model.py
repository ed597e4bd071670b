"""The saved model's meta on load: a model saved in training mode says so (its dropout stays
active), naming the fix; one saved after ``eval()`` loads silently."""
import warnings

import numpy as np
import pytest

import d2s
import d2s_runtime
from d2s import nn
from d2s_runtime.saved_model import TrainingModeWarning


def _save(tmp_path, train):
    d2s.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 4), nn.Dropout(0.5), nn.Linear(4, 2))
    m.train(train)
    path = str(tmp_path / ("train" if train else "eval"))
    d2s.jit.save(m, path, input_spec=[d2s.jit.InputSpec([None, 3], "float32")])
    return m, path


@pytest.mark.parametrize("loader", [d2s_runtime.load, d2s.jit.load])
def test_a_model_saved_in_training_mode_warns_on_load(tmp_path, loader):
    _, path = _save(tmp_path, True)
    with pytest.warns(TrainingModeWarning, match=r"saved in training mode: its dropout stays active.*"
                                                  r"Call model.eval\(\) before d2s.jit.save"):
        model = loader(path)
    x = np.ones((2, 3), dtype=np.float32)
    a, b = (np.asarray(model(x) if loader is d2s_runtime.load else model(x).numpy()) for _ in range(2))
    assert not np.allclose(a, b)  # the masks are drawn anew: what the warning says


@pytest.mark.parametrize("loader", [d2s_runtime.load, d2s.jit.load])
def test_a_model_saved_after_eval_loads_silently_and_matches(tmp_path, loader):
    m, path = _save(tmp_path, False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = loader(path)
    x = np.ones((2, 3), dtype=np.float32)
    got = model(x) if loader is d2s_runtime.load else model(x).numpy()
    np.testing.assert_allclose(np.asarray(got), m(d2s.tensor(x)).numpy(), rtol=1e-6)
