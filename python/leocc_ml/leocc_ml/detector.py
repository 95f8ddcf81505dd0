"""Host-side reconfiguration events from what a host sees (delivery rate and RTT).

This is a light stand-in for the events ``leocc probe`` publishes: a reconfiguration shows up
as a short outage (the delivery rate collapses for ~100 ms) followed by an RTT level change.
It is causal: an event at bin i uses bins up to i only.
"""

from __future__ import annotations

import numpy as np

from .traces import BIN_MS

#: Trailing window for the "normal" delivery rate: 1 s covers several fades but no slot.
BASELINE_BINS = 1000 // BIN_MS
#: A bin below this share of the trailing median is an outage (reconfiguration outages take
#: the rate to near zero for 50-130 ms, so a 100 ms bin falls well below half).
OUTAGE_SHARE = 0.5
#: Events closer than this are one reconfiguration (an outage may span two bins).
MERGE_S = 2.0
#: Slot length assumed until two events have been seen (Starlink's 15 s schedule).
DEFAULT_PERIOD_S = 15.0


def detect(thr_mbps: np.ndarray) -> np.ndarray:
    """Indices of bins where an event is detected."""
    events: list[int] = []
    merge = int(MERGE_S * 1000 / BIN_MS)
    x = np.asarray(thr_mbps, float)
    if len(x) <= BASELINE_BINS:
        return np.zeros(0, dtype=np.int64)
    # base[j] is the median of the BASELINE_BINS bins before bin j + BASELINE_BINS.
    base = np.median(np.lib.stride_tricks.sliding_window_view(x[:-1], BASELINE_BINS), axis=1)
    cand = np.flatnonzero((base > 0) & (x[BASELINE_BINS:] < OUTAGE_SHARE * base)) + BASELINE_BINS
    for i in cand:
        if not events or i - events[-1] > merge:
            events.append(int(i))
    return np.asarray(events, dtype=np.int64)


def event_state(events: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per bin: seconds since the last event (inf before any) and the estimated slot period.

    The period is the median gap between events seen so far, which is what a host can
    learn without knowing the constellation's schedule.
    """
    since = np.full(n, np.inf)
    period = np.full(n, DEFAULT_PERIOD_S)
    last = None
    gaps: list[float] = []
    ev = set(int(e) for e in events)
    for i in range(n):
        if i in ev:
            if last is not None:
                gaps.append((i - last) * BIN_MS / 1000.0)
            last = i
        if last is not None:
            since[i] = (i - last) * BIN_MS / 1000.0
        if gaps:
            period[i] = float(np.median(gaps[-8:]))
    return since, period
