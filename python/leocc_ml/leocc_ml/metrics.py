"""The accuracy metrics of T3P's Table 1 (seed 004): MAPE, RMSE, share within ±5 % and ±10 %."""

from __future__ import annotations

import numpy as np

#: Actual values at or below this are left out of relative metrics (a full outage second
#: would make the percentage error infinite); RMSE keeps them.
MIN_ACTUAL = 1e-6


def table1(pred: np.ndarray, actual: np.ndarray) -> dict:
    """MAPE (%), RMSE (units of the input), within ±5 % and ±10 % (% of predictions)."""
    pred = np.asarray(pred, float)
    actual = np.asarray(actual, float)
    if pred.shape != actual.shape:
        raise ValueError(f"shape mismatch: {pred.shape} vs {actual.shape}")
    ok = actual > MIN_ACTUAL
    rel = np.abs(pred[ok] - actual[ok]) / actual[ok]
    return {
        "mape": float(100 * rel.mean()) if rel.size else float("nan"),
        "rmse": float(np.sqrt(np.mean((pred - actual) ** 2))) if pred.size else float("nan"),
        "within5": float(100 * np.mean(rel <= 0.05)) if rel.size else float("nan"),
        "within10": float(100 * np.mean(rel <= 0.10)) if rel.size else float("nan"),
        "n": int(pred.size),
    }
