"""What the video client itself sees of the path: delivery rate while it downloads, and RTT.

The LEO predictor is fed from this, never from the trace: a host only measures the link while
it has data in flight; between downloads (a full buffer) the last measured rate is held.
"""

from __future__ import annotations

import numpy as np

from ..traces import BIN_MS, Series

BIN_S = BIN_MS / 1000.0


class Observer:
    """Per-bin delivered bytes and busy time, and RTT samples, on the client's clock."""

    def __init__(self):
        self.bytes = np.zeros(0)
        self.busy = np.zeros(0)
        self.rtt: dict[int, list[float]] = {}

    def _grow(self, n: int) -> None:
        if n > len(self.bytes):
            extra = n - len(self.bytes)
            self.bytes = np.concatenate([self.bytes, np.zeros(extra)])
            self.busy = np.concatenate([self.busy, np.zeros(extra)])

    def add(self, t0: float, t1: float, nbytes: float) -> None:
        """``nbytes`` arrived evenly between client times ``t0`` and ``t1`` (seconds)."""
        if not (t1 > t0 >= 0) or nbytes < 0:
            return
        b0, b1 = int(t0 / BIN_S), int(np.ceil(t1 / BIN_S))
        self._grow(b1)
        rate = nbytes / (t1 - t0)
        for b in range(b0, b1):
            lo, hi = max(t0, b * BIN_S), min(t1, (b + 1) * BIN_S)
            if hi > lo:
                self.bytes[b] += rate * (hi - lo)
                self.busy[b] += hi - lo

    def add_rtt(self, t: float, rtt_ms: float) -> None:
        """One RTT sample (ms) at client time ``t``."""
        if t >= 0 and rtt_ms > 0:
            self.rtt.setdefault(int(t / BIN_S), []).append(rtt_ms)

    def series(self, now: float) -> Series:
        """The observed series up to ``now``: Mbit/s and RTT per bin, gaps holding the last value."""
        n = int(now / BIN_S)
        self._grow(n)
        busy = self.busy[:n]
        ok = busy >= 0.2 * BIN_S  # a bin busy under a fifth of its length is timing noise
        rate = np.where(ok, self.bytes[:n] * 8 / np.maximum(busy, 1e-12) / 1e6, 0.0)
        thr = _hold(rate, ok)
        has = np.zeros(n, bool)
        val = np.zeros(n)
        for b, v in self.rtt.items():
            if b < n:
                has[b], val[b] = True, float(np.mean(v))
        rtt = _hold(val, has)
        first = np.flatnonzero(rtt > 0)
        if first.size:
            rtt[: first[0]] = rtt[first[0]]
        return Series("observed", thr, rtt)


def _hold(values: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """``values`` where ``valid``, else the last valid value before (0 before the first)."""
    idx = np.where(valid, np.arange(len(values)), -1)
    np.maximum.accumulate(idx, out=idx)
    return np.where(idx >= 0, values[np.maximum(idx, 0)], 0.0)
