import numpy as np

from leocc_ml.models.lstm import Lstm


def test_gradient_matches_finite_differences():
    rng = np.random.default_rng(1)
    net = Lstm(3, 2, hidden=4, seed=2)
    X = rng.normal(size=(5, 4, 3))
    Y = rng.normal(size=(5, 2))
    _, g = net.loss_grad(X, Y)
    eps = 1e-6
    for k, p in net.p.items():
        for idx in [tuple(rng.integers(0, s) for s in p.shape) for _ in range(6)]:
            old = p[idx]
            p[idx] = old + eps
            lp, _ = net.loss_grad(X, Y)
            p[idx] = old - eps
            lm, _ = net.loss_grad(X, Y)
            p[idx] = old
            num = (lp - lm) / (2 * eps)
            assert abs(num - g[k][idx]) <= 1e-6 + 1e-4 * abs(num), (k, idx, num, g[k][idx])


def test_learns_a_sequence_rule():
    # Output = last input step's first value + the sum of the second column: needs memory.
    rng = np.random.default_rng(3)
    X = rng.normal(size=(600, 5, 2))
    Y = (X[:, -1, 0] + 0.5 * X[:, :, 1].sum(axis=1))[:, None]
    net = Lstm(2, 1, hidden=12, seed=0)
    hist = net.train(X, Y, epochs=60)
    assert hist[-1] < 0.1 * hist[0]
