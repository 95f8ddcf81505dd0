"""Features a host really has at a decision instant, and the targets to predict.

T3P (seed 004 §4) used terminal location, satellite positions from Celestrak, dish
orientation from the gRPC telemetry, the last 5 s of performance and the time. A host behind
an emulated or real dish here has only the last three kinds: the last 5 s of delivery rate and
RTT, the clock, and the detector's events (from which the phase inside the reconfiguration slot
follows). ``EXTRA_FEATURES`` is the place for telemetry and satellite positions when a source
exists: each entry maps a name to a function (series, bin index) -> float.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from . import detector
from .traces import BIN_MS, Series

#: History the predictors see (T3P: "the last 5 seconds").
HISTORY_S = 5
#: Steps ahead predicted, in seconds (1 s is the seed's step; MPC looks a few chunks ahead).
HORIZONS_S = (1, 2, 3, 5)
BINS_PER_S = 1000 // BIN_MS
#: Cap for "seconds since the last event" before any was seen (longer than any slot).
SINCE_CAP_S = 30.0

#: Hook for features we do not have (dish telemetry, satellite positions): name -> f(series, i).
EXTRA_FEATURES: dict[str, Callable[[Series, int], float]] = {}

FEATURE_NAMES = (
    [f"thr_s-{k}" for k in range(HISTORY_S, 0, -1)]
    + [f"rtt_s-{k}" for k in range(HISTORY_S, 0, -1)]
    + ["thr_last_bin", "rtt_last_bin", "thr_std_5s", "time_in_minute_s", "since_event_s", "slot_phase", "events_5s"]
)

#: Per-step inputs of the LSTM (one step = 1 s of history).
SEQ_FEATURES = ("thr", "rtt", "slot_phase", "since_event_s", "event")


class Dataset:
    """Feature rows, LSTM sequences and targets at every whole second of one or more series."""

    def __init__(self, X, seq, y_thr, y_rtt, groups):
        self.X = X  #: (n, len(FEATURE_NAMES))
        self.seq = seq  #: (n, HISTORY_S, len(SEQ_FEATURES))
        self.y_thr = y_thr  #: (n, len(HORIZONS_S)) mean Mbit/s in the h-th second ahead
        self.y_rtt = y_rtt  #: (n, len(HORIZONS_S)) mean RTT ms in the h-th second ahead
        self.groups = groups  #: series name per row

    @staticmethod
    def concat(parts: list["Dataset"]) -> "Dataset":
        """One dataset of several."""
        return Dataset(*(np.concatenate([getattr(p, a) for p in parts]) for a in ("X", "seq", "y_thr", "y_rtt", "groups")))

    def __len__(self) -> int:
        return len(self.X)


def per_second(x: np.ndarray) -> np.ndarray:
    """Mean per whole second of a per-bin series (the tail that is not a whole second is dropped)."""
    n = len(x) // BINS_PER_S
    return x[: n * BINS_PER_S].reshape(n, BINS_PER_S).mean(axis=1)


def build(series: Series, start_offset_s: float = 0.0) -> Dataset:
    """Rows at each whole second t with 5 s of history before t and max(HORIZONS_S) after it.

    ``start_offset_s`` is where the series starts on the host clock (seconds past the minute).
    """
    thr_s = per_second(series.thr_mbps)
    rtt_s = per_second(series.rtt_ms)
    events = detector.detect(series.thr_mbps)
    since, period = detector.event_state(events, len(series.thr_mbps))
    ev_s = np.zeros(len(thr_s))
    for e in events:
        if e // BINS_PER_S < len(ev_s):
            ev_s[e // BINS_PER_S] = 1.0
    hmax = max(HORIZONS_S)
    rows, seqs, yt, yr = [], [], [], []
    for t in range(HISTORY_S, len(thr_s) - hmax + 1):
        row, seq = _row(series, thr_s, rtt_s, since, period, ev_s, t, start_offset_s)
        rows.append(row)
        seqs.append(seq)
        yt.append([thr_s[t + h - 1] for h in HORIZONS_S])
        yr.append([rtt_s[t + h - 1] for h in HORIZONS_S])
    n = len(rows)
    return Dataset(
        np.asarray(rows, float).reshape(n, -1),
        np.asarray(seqs, float).reshape(n, HISTORY_S, len(SEQ_FEATURES)),
        np.asarray(yt, float).reshape(n, -1),
        np.asarray(yr, float).reshape(n, -1),
        np.asarray([series.name] * n, dtype=object),
    )


def _row(series, thr_s, rtt_s, since, period, ev_s, t, start_offset_s):
    i = t * BINS_PER_S - 1  # last bin the host has seen at time t
    s = min(since[i], SINCE_CAP_S)
    phase = (s % period[i]) / period[i] if np.isfinite(since[i]) else 0.5
    row = (
        list(thr_s[t - HISTORY_S : t])
        + list(rtt_s[t - HISTORY_S : t])
        + [
            series.thr_mbps[i],
            series.rtt_ms[i],
            float(np.std(series.thr_mbps[i + 1 - HISTORY_S * BINS_PER_S : i + 1])),
            (start_offset_s + t) % 60.0,
            s,
            phase,
            float(ev_s[t - HISTORY_S : t].sum()),
        ]
    )
    row += [f(series, i) for f in EXTRA_FEATURES.values()]
    seq = []
    for k in range(t - HISTORY_S, t):
        j = (k + 1) * BINS_PER_S - 1
        sk = min(since[j], SINCE_CAP_S)
        ph = (sk % period[j]) / period[j] if np.isfinite(since[j]) else 0.5
        seq.append([thr_s[k], rtt_s[k], ph, sk, ev_s[k]])
    return row, seq


def last_row(series: Series, start_offset_s: float = 0.0):
    """Feature row and LSTM sequence at the end of ``series`` (online use), or None if
    it holds less than ``HISTORY_S`` seconds."""
    thr_s = per_second(series.thr_mbps)
    rtt_s = per_second(series.rtt_ms)
    t = len(thr_s)
    if t < HISTORY_S:
        return None
    events = detector.detect(series.thr_mbps)
    since, period = detector.event_state(events, len(series.thr_mbps))
    ev_s = np.zeros(t)
    for e in events:
        if e // BINS_PER_S < t:
            ev_s[e // BINS_PER_S] = 1.0
    row, seq = _row(series, thr_s, rtt_s, since, period, ev_s, t, start_offset_s)
    return np.asarray(row, float), np.asarray(seq, float)
