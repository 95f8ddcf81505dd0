"""RobustMPC (Yin et al. 2015): pick the quality of the next chunk by maximising QoE over the
next ``HORIZON`` chunks for a throughput forecast, every combination enumerated (6^5).
"""

from __future__ import annotations

import itertools

import numpy as np

from .qoe import REBUF_PENALTY, SMOOTH_PENALTY, pensieve_units

#: Look-ahead in chunks (Pensieve's MPC uses 5).
HORIZON = 5
#: Past prediction errors the robust discount looks at (RobustMPC: the last 5).
ERROR_WINDOW = 5


class RobustMpc:
    """Stateful controller: ``choose`` for a decision, ``observe`` after each download."""

    def __init__(self, ladder, robust: bool = True):
        self.ladder = ladder
        self.robust = robust
        self.errors: list[float] = []
        self.last_forecast: float | None = None
        self._combos = {h: np.asarray(list(itertools.product(range(ladder.n_qualities), repeat=h))) for h in range(1, HORIZON + 1)}

    def observe(self, measured_mbps: float) -> None:
        """Record the throughput a download achieved (for the robust discount)."""
        if self.last_forecast is not None and measured_mbps > 0:
            self.errors.append(abs(self.last_forecast - measured_mbps) / measured_mbps)
            self.errors = self.errors[-ERROR_WINDOW:]

    def choose(self, chunk: int, buffer_s: float, last_q: int, forecast_mbps) -> int:
        """Quality of ``chunk``. ``forecast_mbps`` is one value per look-ahead chunk (a scalar
        is used for all); non-positive forecasts pick the lowest quality."""
        f = np.atleast_1d(np.asarray(forecast_mbps, float))
        h = min(HORIZON, self.ladder.n_chunks - chunk)
        if h <= 0:
            return 0
        f = np.resize(f, h) if len(f) < h else f[:h]
        self.last_forecast = float(f[0])
        if self.robust and self.errors:
            f = f / (1 + max(self.errors))
        if not np.all(np.isfinite(f)) or np.any(f <= 0):
            return 0
        combos = self._combos[h]
        br = pensieve_units(self.ladder.bitrates_mbps, self.ladder.bitrates_mbps[-1])
        sizes = self.ladder.sizes[:, chunk : chunk + h]  # (q, h)
        buf = np.full(len(combos), float(buffer_s))
        rebuf = np.zeros(len(combos))
        smooth = np.zeros(len(combos))
        prev = np.full(len(combos), br[last_q])
        for k in range(h):
            q = combos[:, k]
            dl = sizes[q, k] * 8 / (f[k] * 1e6)
            rebuf += np.maximum(dl - buf, 0)
            buf = np.maximum(buf - dl, 0) + self.ladder.chunk_s
            smooth += np.abs(br[q] - prev)
            prev = br[q]
        score = br[combos].sum(axis=1) - REBUF_PENALTY * rebuf - SMOOTH_PENALTY * smooth
        return int(combos[int(np.argmax(score)), 0])
