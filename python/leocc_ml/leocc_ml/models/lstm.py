"""A small LSTM in numpy: forward, backpropagation through time and Adam.

The seed's latency predictor is an LSTM; a framework (torch, tensorflow) would be a
multi-gigabyte install for a model of a few thousand weights, so it is written out here and its
gradient is checked against finite differences in the tests.
"""

from __future__ import annotations

import numpy as np

from ..features import HORIZONS_S, SEQ_FEATURES, SINCE_CAP_S

#: Hidden units: the inputs are 5 steps of 5 values; more units only overfit ~10^4 rows.
HIDDEN = 24
EPOCHS = 40
BATCH = 128
LR = 3e-3
#: Adam's usual constants (Kingma & Ba).
BETA1, BETA2, EPS = 0.9, 0.999, 1e-8
#: Gradient-norm clip: keeps an unlucky batch (an outage second) from blowing up the weights.
CLIP = 5.0
FLOOR = 1e-3


def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


class Lstm:
    """One LSTM layer over a (batch, steps, inputs) tensor and a linear read-out of the last state."""

    def __init__(self, n_in: int, n_out: int, hidden: int = HIDDEN, seed: int = 0):
        rng = np.random.default_rng(seed)
        s = 1.0 / np.sqrt(n_in + hidden)
        self.p = {
            "W": rng.uniform(-s, s, (n_in + hidden, 4 * hidden)),
            "b": np.zeros(4 * hidden),
            "V": rng.uniform(-s, s, (hidden, n_out)),
            "c": np.zeros(n_out),
        }
        self.p["b"][hidden : 2 * hidden] = 1.0  # forget-gate bias 1: remember by default
        self.H = hidden

    def forward(self, X):
        """Outputs (batch, n_out) and the cache for ``backward``."""
        B, T, _ = X.shape
        H = self.H
        h = np.zeros((B, H))
        c = np.zeros((B, H))
        cache = []
        for t in range(T):
            xh = np.concatenate([X[:, t, :], h], axis=1)
            z = xh @ self.p["W"] + self.p["b"]
            i, f, o = _sigmoid(z[:, :H]), _sigmoid(z[:, H : 2 * H]), _sigmoid(z[:, 2 * H : 3 * H])
            g = np.tanh(z[:, 3 * H :])
            c_prev = c
            c = f * c_prev + i * g
            tc = np.tanh(c)
            h = o * tc
            cache.append((xh, i, f, o, g, c_prev, tc))
        return h @ self.p["V"] + self.p["c"], (cache, h)

    def backward(self, dy, state):
        """Gradients of sum(dy * output) with respect to every parameter."""
        cache, h_last = state
        H = self.H
        n_in = self.p["W"].shape[0] - H
        g = {k: np.zeros_like(v) for k, v in self.p.items()}
        g["V"] = h_last.T @ dy
        g["c"] = dy.sum(axis=0)
        dh = dy @ self.p["V"].T
        dc = np.zeros_like(dh)
        for xh, i, f, o, gg, c_prev, tc in reversed(cache):
            do = dh * tc
            dc = dc + dh * o * (1 - tc**2)
            di, df, dg = dc * gg, dc * c_prev, dc * i
            dz = np.concatenate([di * i * (1 - i), df * f * (1 - f), do * o * (1 - o), dg * (1 - gg**2)], axis=1)
            g["W"] += xh.T @ dz
            g["b"] += dz.sum(axis=0)
            dxh = dz @ self.p["W"].T
            dh = dxh[:, n_in:]
            dc = dc * f
        return g

    def loss_grad(self, X, Y):
        """Mean squared error and its gradients."""
        out, st = self.forward(X)
        err = out - Y
        loss = float(np.mean(err**2))
        return loss, self.backward(2 * err / err.size, st)

    def train(self, X, Y, epochs: int = EPOCHS, seed: int = 0, log=None):
        """Adam on shuffled mini-batches; returns the per-epoch training loss."""
        rng = np.random.default_rng(seed)
        m = {k: np.zeros_like(v) for k, v in self.p.items()}
        v = {k: np.zeros_like(v) for k, v in self.p.items()}
        step = 0
        history = []
        for ep in range(epochs):
            order = rng.permutation(len(X))
            total = 0.0
            for s in range(0, len(X), BATCH):
                idx = order[s : s + BATCH]
                loss, g = self.loss_grad(X[idx], Y[idx])
                total += loss * len(idx)
                norm = np.sqrt(sum(float(np.sum(x**2)) for x in g.values()))
                scale = min(1.0, CLIP / (norm + 1e-12))
                step += 1
                for k in self.p:
                    gk = g[k] * scale
                    m[k] = BETA1 * m[k] + (1 - BETA1) * gk
                    v[k] = BETA2 * v[k] + (1 - BETA2) * gk**2
                    mh = m[k] / (1 - BETA1**step)
                    vh = v[k] / (1 - BETA2**step)
                    self.p[k] -= LR * mh / (np.sqrt(vh) + EPS)
            history.append(total / len(X))
            if log:
                log(f"lstm epoch {ep + 1}/{epochs} loss {history[-1]:.4f}")
        return history


class LstmPredictor:
    """The LSTM on ``features.SEQ_FEATURES``, scale-free: inputs and targets relative to the last second."""

    def __init__(self, seed: int = 0, epochs: int = EPOCHS):
        self.seed = seed
        self.epochs = epochs

    def _inputs(self, seq: np.ndarray):
        thr = np.maximum(seq[:, -1, 0], FLOOR)
        rtt = np.maximum(seq[:, -1, 1], FLOOR)
        X = seq.copy()
        X[:, :, 0] = seq[:, :, 0] / thr[:, None] - 1
        X[:, :, 1] = seq[:, :, 1] / rtt[:, None] - 1
        X[:, :, 3] = seq[:, :, 3] / SINCE_CAP_S
        return X, (thr if self.quantity == "thr" else rtt)

    def fit(self, ds, quantity: str) -> "LstmPredictor":
        self.quantity = quantity
        X, ref = self._inputs(ds.seq)
        y = (ds.y_thr if quantity == "thr" else ds.y_rtt) / ref[:, None] - 1
        self.mu, self.sd = y.mean(axis=0), y.std(axis=0) + 1e-9
        self.net = Lstm(len(SEQ_FEATURES), len(HORIZONS_S), seed=self.seed)
        self.net.train(X, (y - self.mu) / self.sd, epochs=self.epochs, seed=self.seed)
        return self

    def predict(self, ds) -> np.ndarray:
        X, ref = self._inputs(ds.seq)
        out, _ = self.net.forward(X)
        return np.maximum((out * self.sd + self.mu + 1) * ref[:, None], 0)
