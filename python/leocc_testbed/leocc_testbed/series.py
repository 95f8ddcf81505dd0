"""Testbed runs' time series in the evaluation store's layout, so `leocc.read_timeseries(OUT)`
reads them as it reads an eval's.

While the orchestrator runs, each finished run's rows (experiments.py: t_s, flow,
throughput_mbps, rtt_ms and whatever else its tool reports) go to a CSV of their own,
OUT/ts/ID.csv, named by the run's row in results.jsonl (`timeseries`). When the orchestrator has
nothing to do (or stops), `fold` turns the CSVs into one Parquet part, OUT/ts/part-NNNNN.parquet:
the rows of whole runs with a `key` column first and the part's run keys in its metadata
(`leocc.runs`), as `leocc eval` writes its parts. A part is written to a temporary name and
renamed before the CSVs it holds are removed, so a crash between the two leaves a CSV whose key a
part already holds: readers take the part (leocc.read_timeseries), and the next fold removes it.
"""

from __future__ import annotations

import csv
import json
import os
import re
from pathlib import Path

TS_DIR = "ts"
# The part metadata entry listing its run keys, one per line (crates/leocc-eval/src/tsstore.rs).
RUNS_KEY = "leocc.runs"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def write_run(out: Path, key: str, rows: list[dict]) -> str | None:
    """Write one run's rows; returns the path relative to OUT for its results row (None: no rows)."""
    if not rows:
        return None
    columns = list(dict.fromkeys(k for r in rows for k in r))
    d = out / TS_DIR
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{_UNSAFE.sub('_', key)}.csv"
    tmp = path.with_suffix(".csv.tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns)
        w.writeheader()
        w.writerows(rows)
    tmp.replace(path)
    return f"{TS_DIR}/{path.name}"


def _keys_by_file(out: Path) -> dict[str, str]:
    """results.jsonl's run keys by their time series file."""
    keys = {}
    try:
        lines = (out / "results.jsonl").read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return keys
    for line in lines:
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue  # a torn last line
        if row.get("timeseries"):
            keys[row["timeseries"]] = row["key"]
    return keys


def _folded(d: Path) -> set[str]:
    import pyarrow.parquet as pq

    keys: set[str] = set()
    for part in d.glob("part-*.parquet"):
        meta = pq.read_schema(part).metadata or {}
        keys.update(meta.get(RUNS_KEY.encode(), b"").decode().split("\n"))
    return keys


def fold(out: Path, written: dict[str, str] | None = None) -> int:
    """Fold OUT/ts/*.csv into a new Parquet part; returns the number of runs folded.
    `written`: the run keys of the CSVs this process wrote (write_run's path -> key). Only CSVs
    not in it (left by an orchestrator that stopped before folding them) make this read
    results.jsonl for their keys and the parts' metadata for whether one already holds them."""
    d = out / TS_DIR
    csvs = sorted(d.glob("*.csv")) if d.is_dir() else []
    if not csvs:
        return 0
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    keys, folded = dict(written or {}), set()
    if any(f"{TS_DIR}/{f.name}" not in keys for f in csvs):
        keys, folded = {**_keys_by_file(out), **keys}, _folded(d)
    frames, runs, done = [], [], []
    for f in csvs:
        key = keys.get(f"{TS_DIR}/{f.name}")
        if key is None:
            continue  # its results row is not written yet
        done.append(f)
        if key in folded:
            continue  # an earlier fold wrote its part and stopped before removing it
        df = pd.read_csv(f)
        df.insert(0, "key", key)
        frames.append(df)
        runs.append(key)
    if frames:
        table = pa.Table.from_pandas(pd.concat(frames, ignore_index=True), preserve_index=False)
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), RUNS_KEY: "\n".join(runs)})
        n = 1 + max((int(p.stem.split("-")[1]) for p in d.glob("part-*.parquet")), default=-1)
        part = d / f"part-{n:05d}.parquet"
        tmp = d / f".part-{n:05d}.parquet.tmp"
        pq.write_table(table, tmp, compression="snappy")
        os.replace(tmp, part)
    for f in done:
        f.unlink()
    return len(runs)
