"""Throughput forecasts for RobustMPC: default (harmonic mean), LEO (our GBDT), oracle (trace).

Each returns one forecast (Mbit/s) per look-ahead chunk.
"""

from __future__ import annotations

import os
import pickle
import sys
import tempfile

import numpy as np

from .. import features, traces
from ..models.baselines import harmonic_mean
from ..models.gbdt import Gbdt
from .observer import Observer

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


def make(name: str, profile: str, trace: str | None, offset_s: float = 0.0, cache: str | None = None):
    """A predictor by name: ``harmonic``, ``leo`` (needs ``profile``) or ``oracle`` (needs ``trace``)."""
    if name == "harmonic":
        return Harmonic()
    if name == "leo":
        return Leo(leo_model(profile, cache, log=lambda m: print(m, file=sys.stderr)))
    if name == "oracle":
        if not trace:
            raise ValueError("the oracle predictor needs --trace")
        return Oracle(traces.load_trace(trace), offset_s)
    raise ValueError(f"unknown predictor {name!r} (harmonic, leo, oracle)")
