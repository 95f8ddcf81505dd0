"""Throughput forecasts for RobustMPC: default (harmonic mean), LEO (our GBDT), schedule (the
link's reconfiguration times), oracle (trace).

Each returns one forecast (Mbit/s) per look-ahead chunk.
"""

from __future__ import annotations

import bisect
import functools
import json
import os
import pickle
import subprocess
import sys
import tempfile

import numpy as np

from .. import features, traces
from ..models.baselines import harmonic_mean
from ..models.gbdt import Gbdt
from .observer import BIN_S, Observer

#: Generated seeds the LEO model trains on by default; the evaluation's test seeds start at 101.
TRAIN_SEEDS = range(1, 21)
TRAIN_DURATION_S = 300


class Harmonic:
    """MPC's default: harmonic mean of the last 5 chunk throughputs."""

    name = "harmonic"

    def forecast(self, now: float, obs: Observer, chunk_mbps: list[float], h: int, chunk_s: float):
        return np.full(h, harmonic_mean(chunk_mbps, 5))


class Leo:
    """GBDT trained on generated traces of a profile, fed with what the client observed."""

    name = "leo"

    def __init__(self, model: Gbdt):
        self.model = model

    def forecast(self, now: float, obs: Observer, chunk_mbps: list[float], h: int, chunk_s: float):
        recent, offset = _recent(obs.series(now))
        got = features.last_row(recent, offset)
        if got is None or not chunk_mbps:
            return Harmonic().forecast(now, obs, chunk_mbps, h, chunk_s)
        p = self.model.predict_row(got[0])
        hz = list(features.HORIZONS_S)
        # The next chunk downloads within the next few seconds; later ones are further out than
        # the longest horizon, so they get its forecast.
        first = float(np.mean([p[hz.index(k)] for k in (1, 2, 3)]))
        return np.asarray([first] + [float(p[-1])] * (h - 1))


#: History handed to the feature code: 8 slot gaps for the period estimate, plus margin.
RECENT_S = 150


def _recent(s: traces.Series) -> tuple[traces.Series, float]:
    """The last ``RECENT_S`` of ``s`` and where it starts (s), whole seconds kept aligned."""
    n = int(RECENT_S * 1000 / traces.BIN_MS)
    k = len(s.thr_mbps) - n
    if k <= 0:
        return s, 0.0
    k -= k % features.BINS_PER_S
    return traces.Series(s.name, s.thr_mbps[k:], s.rtt_ms[k:]), k * traces.BIN_MS / 1000.0


class Schedule:
    """LeoCC's model applied to the player: capacity is one level per interval between
    reconfigurations, drawn anew at each (section 4.1.2). So the forecast uses only what was
    measured since the last reconfiguration (the delivery rate of the downloads in this
    interval), and a look-ahead chunk that falls past the next reconfiguration gets a cautious
    forecast: no more than a low quantile (``CAUTION_QUANTILE``) of the levels of the intervals
    seen so far, as the next level is a new draw from that distribution. Until an interval has
    ``MIN_BUSY_S`` of downloads, the forecast is the cautious one (or harmonic before any).

    ``boundaries_s`` are the reconfiguration times on the client's clock, ascending; a schedule
    that repeats (a trace that loops, the Starlink grid) lists them far enough ahead.
    """

    name = "schedule"
    #: The quantile of past interval levels a chunk past the next reconfiguration plans for.
    CAUTION_QUANTILE = 0.25
    #: Download time an interval needs before its own rate is trusted (a chunk's worth at a 4 s
    #: chunk is several; half a second spans several round trips on any LEO path).
    MIN_BUSY_S = 0.5

    def __init__(self, boundaries_s):
        self.boundaries = sorted(float(b) for b in boundaries_s)

    def _rate(self, obs: Observer, t0: float, t1: float) -> float | None:
        """Delivery rate (Mbit/s) of the downloads between client times t0 and t1, if busy enough."""
        b0, b1 = max(int(np.ceil(t0 / BIN_S)), 0), min(int(t1 / BIN_S), len(obs.busy))
        if b1 <= b0:
            return None
        busy = float(obs.busy[b0:b1].sum())
        if busy < self.MIN_BUSY_S:
            return None
        return float(obs.bytes[b0:b1].sum()) * 8 / busy / 1e6

    def forecast(self, now: float, obs: Observer, chunk_mbps: list[float], h: int, chunk_s: float):
        i = bisect.bisect_right(self.boundaries, now)
        last = self.boundaries[i - 1] if i > 0 else 0.0
        nxt = self.boundaries[i] if i < len(self.boundaries) else float("inf")
        edges = [0.0] + self.boundaries[:i]
        levels = [r for a, b in zip(edges, edges[1:]) if (r := self._rate(obs, a, b)) is not None]
        fallback = harmonic_mean(chunk_mbps, 5)
        cautious = float(np.quantile(levels, self.CAUTION_QUANTILE)) if len(levels) >= 2 else fallback
        here = self._rate(obs, last, now)
        base = here if here is not None else min(cautious, fallback) if fallback > 0 else cautious
        # Chunk k is fetched about k chunk-lengths from now (a player at its buffer target
        # fetches one per chunk played).
        return np.asarray([base if now + (k + 1) * chunk_s <= nxt else min(base, cautious) for k in range(h)])


def boundaries_of(trace: str, horizon_s: float, offset_s: float = 0.0) -> list[float]:
    """The reconfiguration times of ``trace`` on a client clock that starts at trace time
    ``offset_s``, repeated as the trace loops, up to ``horizon_s`` of client time: the ground
    truth where the trace has it, else the reconfigurations ``leocc trace stat`` finds."""
    times, period = _reconfigurations(trace)
    if not times or period <= 0:
        raise ValueError(f"{trace}: no reconfigurations to schedule by")
    got, loop = [], 0
    while loop * period - offset_s <= horizon_s:
        got += [loop * period + t / 1000.0 - offset_s for t in times]
        loop += 1
    return [t for t in got if 0.0 <= t <= horizon_s]


@functools.lru_cache(maxsize=64)
def _reconfigurations(trace: str) -> tuple[tuple[float, ...], float]:
    """The reconfiguration times (ms) and length (s) of ``trace`` (read once per process:
    a sweep schedules every cell of a trace by them)."""
    out = subprocess.run([traces.leocc_binary(), "trace", "stat", "--json", trace], check=True, capture_output=True, text=True)
    st = json.loads(out.stdout)
    return tuple(st.get("truth_reconfigurations_ms") or st.get("reconfigurations_ms") or []), float(st["duration_s"])


class Oracle:
    """Knows the trace: the mean capacity over each look-ahead chunk's 4 s (trace time = client time + offset)."""

    name = "oracle"

    def __init__(self, series: traces.Series, offset_s: float = 0.0):
        self.series = series
        self.offset_s = offset_s

    def forecast(self, now: float, obs: Observer, chunk_mbps: list[float], h: int, chunk_s: float):
        n = len(self.series.thr_mbps)
        out = []
        for k in range(h):
            b0 = int((now + self.offset_s + k * chunk_s) / (traces.BIN_MS / 1000.0))
            idx = np.arange(b0, b0 + int(chunk_s * 1000 / traces.BIN_MS)) % n
            out.append(float(self.series.thr_mbps[idx].mean()))
        return np.asarray(out)


def leo_model(profile: str, cache: str | None = None, log=None) -> Gbdt:
    """The throughput GBDT for ``profile``, trained once on ``TRAIN_SEEDS`` and cached."""
    cache = cache or os.path.join(tempfile.gettempdir(), "leocc-ml-traces")
    path = os.path.join(cache, f"leo-gbdt-{profile}.pkl")
    if os.path.exists(path):
        with open(path, "rb") as f:
            return pickle.load(f)
    if log:
        log(f"training the LEO predictor for {profile} on seeds {TRAIN_SEEDS.start}-{TRAIN_SEEDS.stop - 1}")
    ds = features.Dataset.concat(
        [features.build(traces.load_trace(traces.generate(profile, s, TRAIN_DURATION_S, cache))) for s in TRAIN_SEEDS]
    )
    m = Gbdt().fit(ds, "thr")
    tmp = path + f".{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        pickle.dump(m, f)
    os.replace(tmp, path)
    return m


#: How far ahead a session's reconfiguration schedule is listed (longer than any session).
SCHEDULE_HORIZON_S = 3600.0


def for_series(name: str, series: traces.Series | None, trace: str | None, leo: Gbdt | None = None, offset_s: float = 0.0):
    """A predictor by name for a session on ``series`` (read from the file ``trace``; needed
    by ``oracle`` and ``schedule``), ``leo`` the trained model, ``offset_s`` the trace time at
    client time 0."""
    if name == "harmonic":
        return Harmonic()
    if name == "leo":
        if leo is None:
            raise ValueError("the leo predictor needs a trained model")
        return Leo(leo)
    if name in ("schedule", "oracle") and not trace:
        raise ValueError(f"the {name} predictor needs --trace")
    if name == "schedule":
        return Schedule(boundaries_of(trace, SCHEDULE_HORIZON_S, offset_s))
    if name == "oracle":
        return Oracle(series if series is not None else traces.load_trace(trace), offset_s)
    raise ValueError(f"unknown predictor {name!r} (harmonic, leo, schedule, oracle)")


def make(name: str, profile: str, trace: str | None, offset_s: float = 0.0, cache: str | None = None):
    """A predictor by name for a session over the network: ``leo`` trains (or loads) the model
    of ``profile``; the others as :func:`for_series`, reading ``trace`` when they need it."""
    leo = leo_model(profile, cache, log=lambda m: print(m, file=sys.stderr)) if name == "leo" else None
    return for_series(name, None, trace, leo, offset_s)
