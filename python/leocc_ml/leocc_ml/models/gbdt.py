"""Gradient-boosted trees (scikit-learn's HistGradientBoostingRegressor, the XGBoost of T3P).

One regressor per horizon. The target is the ratio to the last second's value, so one tree
ensemble serves links of different mean capacity; predictions are scaled back.
"""

from __future__ import annotations

import numpy as np
from sklearn.ensemble import HistGradientBoostingRegressor

from ..features import FEATURE_NAMES, HORIZONS_S

#: Boosting rounds and depth: enough for ~10^4 rows, small enough to train in seconds.
MAX_ITER = 300
MAX_LEAF_NODES = 31
LEARNING_RATE = 0.05
#: Floor for the ratio's denominator (an outage second has zero throughput).
FLOOR = 1e-3


class Gbdt:
    """Per-horizon gradient-boosted regressors on ``features.FEATURE_NAMES``."""

    def __init__(self, seed: int = 0):
        self.seed = seed

    def _base(self, ds) -> np.ndarray:
        return np.maximum(ds.X[:, FEATURE_NAMES.index(f"{self.quantity}_s-1")], FLOOR)

    def fit(self, ds, quantity: str) -> "Gbdt":
        self.quantity = quantity
        y = ds.y_thr if quantity == "thr" else ds.y_rtt
        base = self._base(ds)
        self.models = []
        for k in range(len(HORIZONS_S)):
            m = HistGradientBoostingRegressor(
                max_iter=MAX_ITER, max_leaf_nodes=MAX_LEAF_NODES, learning_rate=LEARNING_RATE, random_state=self.seed
            )
            m.fit(ds.X, y[:, k] / base)
            self.models.append(m)
        return self

    def predict(self, ds) -> np.ndarray:
        base = self._base(ds)
        return np.stack([np.maximum(m.predict(ds.X), 0) * base for m in self.models], axis=1)

    def predict_row(self, row: np.ndarray) -> np.ndarray:
        """Predictions for one feature row (the video client's online use)."""
        base = max(float(row[FEATURE_NAMES.index(f"{self.quantity}_s-1")]), FLOOR)
        x = np.asarray(row, float)[None, :]
        return np.asarray([max(float(m.predict(x)[0]), 0.0) * base for m in self.models])
