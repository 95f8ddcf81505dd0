"""The predictors RobustMPC ships with: the last value and the harmonic mean of the last 5."""

from __future__ import annotations

import numpy as np

from ..features import FEATURE_NAMES, HISTORY_S, HORIZONS_S


def _hist(ds, quantity: str) -> np.ndarray:
    start = FEATURE_NAMES.index(f"{quantity}_s-{HISTORY_S}")
    return ds.X[:, start : start + HISTORY_S]


class LastValue:
    """The last 1 s mean, for every horizon."""

    def fit(self, ds, quantity: str) -> "LastValue":
        self.quantity = quantity
        return self

    def predict(self, ds) -> np.ndarray:
        return np.repeat(_hist(ds, self.quantity)[:, -1:], len(HORIZONS_S), axis=1)


class HarmonicMean:
    """Harmonic mean of the last 5 one-second means (MPC's default), for every horizon."""

    #: Floor that keeps a zero-throughput second from making the mean zero forever.
    FLOOR = 1e-3

    def fit(self, ds, quantity: str) -> "HarmonicMean":
        self.quantity = quantity
        return self

    def predict(self, ds) -> np.ndarray:
        h = np.maximum(_hist(ds, self.quantity), self.FLOOR)
        hm = h.shape[1] / np.sum(1.0 / h, axis=1)
        return np.repeat(hm[:, None], len(HORIZONS_S), axis=1)


def harmonic_mean(values, n: int = 5) -> float:
    """Harmonic mean of the last ``n`` positive values (0 when there are none)."""
    v = [x for x in list(values)[-n:] if x > 0]
    return len(v) / sum(1.0 / x for x in v) if v else 0.0
