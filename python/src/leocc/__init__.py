"""leocc from Python: LEO path traces, the packet-level simulator, and `leocc eval` results,
as pandas DataFrames.

    import leocc
    t = leocc.Trace.generate("starlink-down", duration_s=30, seed=1)
    run = leocc.simulate(t, cc="leocc", seed=1)
    run.summary["throughput_mbps"], run.timeseries.head()
    results = leocc.read_results("out/eval")     # one row per run of an eval

Everything runs in the same Rust crates as the `leocc` command (leocc-trace, leocc-sim); the
simulation releases the GIL, so threads run simulations in parallel.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Iterable, Optional, Union

import pandas as pd

from . import _native
from ._native import controls

__all__ = [
    "Trace",
    "SimRun",
    "simulate",
    "controls",
    "list_params",
    "RESULTS_SCHEMA",
    "read_results",
    "read_timeseries",
]

# Where `leocc eval` folds its runs' time series: Parquet parts (ts/part-NNNNN.parquet), each
# listing its runs' keys in its metadata; a run not folded yet still has its own CSV.
TS_DIR = "ts"

PathLike = Union[str, "os.PathLike[str]"]


class Trace:
    """A LEO path trace: capacity, one-way delay and loss per direction, reconfigurations."""

    def __init__(self, native: "_native.Trace"):
        self._t = native

    @classmethod
    def load(cls, path: PathLike) -> "Trace":
        """Our format, a mahimahi capacity file, or a mahimahi/LeoReplayer folder. A malformed
        file raises ValueError naming the file and line."""
        return cls(_native.Trace.load(os.fspath(path)))

    @classmethod
    def generate(cls, profile: str, duration_s: float = 60.0, seed: int = 1) -> "Trace":
        """A synthetic trace with ground truth: starlink-down, starlink-up, oneweb, geo, fiber or
        bottleneck-shift (the profiles of `leocc trace gen`)."""
        return cls(_native.Trace.generate(profile, duration_s, seed))

    def save(self, path: PathLike) -> None:
        """Writes the trace in our format (atomically)."""
        self._t.save(os.fspath(path))

    @property
    def name(self) -> str:
        return self._t.name

    @property
    def duration_s(self) -> float:
        return self._t.duration_s

    @property
    def reconfigurations_s(self) -> list:
        """Ground-truth reconfiguration times, s (empty when unknown)."""
        return self._t.reconfigurations_s

    def stats(self, direction: Optional[str] = None) -> dict:
        """What `leocc trace stat --json` prints: capacity and delay summaries, outages,
        detected reconfigurations and their period."""
        return json.loads(self._t.stats_json(direction))

    def series(self, direction: Optional[str] = None, bin_ms: int = 100) -> pd.DataFrame:
        """Capacity (Mbit/s) and base one-way delay (ms) per bin: columns t_s, capacity_mbps,
        owd_ms."""
        return pd.DataFrame(self._t.series(direction, bin_ms))[["t_s", "capacity_mbps", "owd_ms"]]

    def __repr__(self) -> str:
        return repr(self._t)


@dataclass
class SimRun:
    """One simulator run: `summary` is what `leocc sim --json` prints (without the series),
    `flows` one row per flow, `timeseries` one row per flow per 100 ms."""

    summary: dict
    flows: pd.DataFrame
    timeseries: pd.DataFrame


TS_COLUMNS = ["t_s", "flow", "flow_cc", "throughput_mbps", "rtt_ms", "cwnd", "pacing_mbps", "inflight"]


def simulate(
    trace: Union[Trace, PathLike],
    cc: str = "leocc",
    *,
    flows: Optional[Union[int, str]] = None,
    duration_s: Optional[float] = None,
    seed: int = 1,
    queue: str = "500",
    loss: float = 0.0,
    direction: Optional[str] = None,
    params: Iterable[str] = (),
    timeseries: bool = True,
) -> SimRun:
    """Runs the simulator once, as `leocc sim --trace T --cc CC ...` does.

    flows: a number of flows of `cc`, or a list naming the controls ("cubic@0-60,leocc@20-80").
    queue: packets ("500"), bytes ("750kB") or time at the trace's mean capacity ("150ms").
    params: "CC.NAME=VALUE" settings (see `list_params(cc)`). Bad values raise ValueError.
    """
    t = trace if isinstance(trace, Trace) else Trace.load(trace)
    summary, cols, flow_cc = _native.simulate(
        t._t, cc, None if flows is None else str(flows), duration_s, seed, queue, loss, direction, list(params), timeseries
    )
    summary = json.loads(summary)
    ts = pd.DataFrame(cols)
    ts["flow"] = ts["flow"].astype("int64")
    for c in ("cwnd", "inflight"):
        ts[c] = ts[c].astype("int64")
    ts["flow_cc"] = flow_cc
    return SimRun(summary=summary, flows=pd.DataFrame(summary["flows"]), timeseries=ts[TS_COLUMNS])


def list_params(cc: str) -> pd.DataFrame:
    """The settable parameters of a simulator control (for `simulate(params=...)` and
    `leocc eval --sweep`): name, default, min, max, integer, doc."""
    rows = _native.list_params(cc)
    return pd.DataFrame(rows, columns=["name", "default", "min", "max", "integer", "doc"])


def _results_file(path: PathLike) -> str:
    p = os.fspath(path)
    return os.path.join(p, "results.jsonl") if os.path.isdir(p) else p


RESULTS_SCHEMA = _native.RESULTS_SCHEMA
"""The newest version of results.jsonl's rows this package reads (the rows' `schema` field;
rows written before it have none and read as version 0). The fields are the run record's,
crates/leocc-base/src/record.rs, plus the run's identity (key, scenario, label, ...)."""


def read_results(path: PathLike) -> pd.DataFrame:
    """An eval's results (its folder or its results.jsonl): one row per run, the per-flow
    results in the `flows` column. A torn last line (an eval killed mid-write) is left out, as
    `leocc eval` itself does. A row of a newer schema than RESULTS_SCHEMA raises ValueError."""
    f = _results_file(path)
    rows = []
    with open(f, encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            if i == len(lines) or (i == len(lines) - 1 and lines[-1] == ""):
                break  # the torn last line of an interrupted eval
            raise ValueError(f"{f}:{i}: not a JSON object ({e.msg})") from None
        schema = row.get("schema", 0) if isinstance(row, dict) else 0
        if isinstance(schema, int) and schema > RESULTS_SCHEMA:
            raise ValueError(f"{f}:{i}: written by a newer leocc (row schema {schema}; this package reads up to {RESULTS_SCHEMA})")
        rows.append(row)
    return pd.DataFrame(rows)


def _csv_series(base: str, runs: pd.DataFrame) -> pd.DataFrame:
    frames = []
    if "timeseries" not in runs:
        return pd.DataFrame()
    for key, rel in zip(runs["key"], runs["timeseries"]):
        if not isinstance(rel, str):
            continue  # a run that wrote no time series
        f = os.path.join(base, rel)
        if os.path.exists(f):
            df = pd.read_csv(f)
            df.insert(0, "key", key)
            frames.append(df)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def read_timeseries(path: PathLike, runs: Optional[pd.DataFrame] = None) -> pd.DataFrame:
    """The per-100 ms time series of an eval's runs, one frame with the run's `key` on every
    row. `runs`: a subset of read_results(path) to read (default: all). Reads the Parquet parts
    `leocc eval` folds its runs into (DIR/ts/part-*.parquet, only the selected runs' rows) and
    the CSVs of runs not folded yet (an eval still running, or killed)."""
    import glob

    f = _results_file(path)
    base = os.path.dirname(f)
    runs = read_results(f) if runs is None else runs
    keys = set(runs["key"]) if len(runs) else set()
    frames = []
    folded: set = set()
    # Newest part first: a run made again (`leocc bench fidelity --rerun`) is folded into a new
    # part, and its series there replaces the older one.
    for part in sorted(glob.glob(os.path.join(base, TS_DIR, "part-*.parquet")), reverse=True):
        wanted = sorted(keys - folded)
        df = pd.read_parquet(part, filters=[("key", "in", wanted)]) if wanted else None
        if df is not None and len(df):
            frames.append(df)
            folded |= set(df["key"])
    frames.reverse()
    csv = _csv_series(base, runs[~runs["key"].isin(folded)]) if len(runs) else pd.DataFrame()
    if len(csv):
        frames.append(csv)
    if not frames:
        return pd.DataFrame()
    return pd.concat(frames, ignore_index=True)
