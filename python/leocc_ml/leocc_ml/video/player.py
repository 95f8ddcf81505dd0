"""Trace-driven playback: the fast path for many seeds (no TCP, no emulator).

A chunk request takes one RTT, then the chunk's bytes use the trace's capacity from that
moment on (the whole capacity: no congestion control, no slow start). The buffer logic is
Pensieve's simulator's: play while downloading, stall when the buffer runs dry, and wait while
it holds more than the buffer target (Pensieve's 60 s by default; the bookkeeping is session.py's, shared with the
kernel-TCP client).
"""

from __future__ import annotations

import numpy as np

from .. import traces
from .ladder import Ladder
from .session import BUFFER_MAX_S, Session

#: Longest a single chunk may take before the session is declared dead (a trace with no
#: capacity would otherwise loop forever).
MAX_DOWNLOAD_S = 600.0


class Link:
    """Cumulative delivered bytes of a looping capacity series, for download-time lookups."""

    def __init__(self, series: traces.Series):
        self.series = series
        self.bin_s = traces.BIN_MS / 1000.0
        per_bin = series.thr_mbps * 1e6 / 8 * self.bin_s
        self.period_bytes = float(per_bin.sum())
        if self.period_bytes <= 0:
            raise ValueError(f"trace {series.name} has no capacity")
        self.cum = np.concatenate([[0.0], np.cumsum(per_bin)])
        self.n = len(per_bin)

    def bytes_at(self, t: float) -> float:
        loops, rem = divmod(t / self.bin_s, self.n)
        i = int(rem)
        frac = rem - i
        return loops * self.period_bytes + self.cum[i] + frac * (self.cum[i + 1] - self.cum[i])

    def finish(self, t: float, nbytes: float) -> float:
        """Time at which ``nbytes`` sent from ``t`` on have all arrived."""
        target = self.bytes_at(t) + nbytes
        loops, rem = divmod(target, self.period_bytes)
        i = int(np.searchsorted(self.cum, rem, side="right")) - 1
        i = min(max(i, 0), self.n - 1)
        per = self.cum[i + 1] - self.cum[i]
        frac = (rem - self.cum[i]) / per if per > 0 else 0.0
        return (loops * self.n + i + frac) * self.bin_s

    def rtt_s(self, t: float) -> float:
        return float(self.series.rtt_ms[int(t / self.bin_s) % self.n]) / 1000.0


def play(series: traces.Series, ladder: Ladder, predictor, start_s: float = 0.0, buffer_max_s: float = BUFFER_MAX_S) -> dict:
    """One session over ``series`` from trace time ``start_s``, the client holding at most
    ``buffer_max_s`` of video; returns the QoE summary and chunk log."""
    link = Link(series)
    session = Session(ladder, predictor, buffer_max_s)
    t = 0.0  # client time; trace time is start_s + t
    for k in range(ladder.n_chunks):
        q = session.choose(k, t)
        size = float(ladder.sizes[q, k])
        rtt = link.rtt_s(start_s + t)
        t_req = t + rtt
        t_end = link.finish(start_s + t_req, size) - start_s
        if t_end - t > MAX_DOWNLOAD_S:
            raise RuntimeError(f"chunk {k} took over {MAX_DOWNLOAD_S:.0f} s on {series.name}")
        session.obs.add(t_req, t_end, size)
        session.obs.add_rtt(t_req, rtt * 1000)
        _, wait = session.downloaded(k, q, t_end - t, size)
        t = t_end + wait
    return session.summary()
