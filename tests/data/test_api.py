"""The public contract of API.md §3 (data): DataLoader batches, shuffling and prefetch."""
import numpy as np

import d2s


class TestData:
    def test_dataloader(self):
        data = [(np.full(2, i, np.float32), i) for i in range(10)]
        batches = list(d2s.data.DataLoader(data, batch_size=4))
        assert len(batches) == 3
        x0, y0 = batches[0]
        assert isinstance(x0, d2s.Tensor) and x0.shape == (4, 2) and y0.tolist() == [0, 1, 2, 3]
        assert batches[-1][0].shape == (2, 2)
        shuffled = list(d2s.data.DataLoader(data, batch_size=5, shuffle=True, prefetch=1))
        assert sorted(v for b in shuffled for v in b[1].tolist()) == list(range(10))
