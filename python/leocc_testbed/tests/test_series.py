"""Time series in the evaluation store's layout: CSVs while running, Parquet parts after a fold,
and a fold interrupted between writing its part and removing the CSVs finished without
duplicates."""

from __future__ import annotations

import json

import leocc

from leocc_testbed import series


def _row(out, key, rows):
    rel = series.write_run(out, key, rows)
    with open(out / "results.jsonl", "a") as f:
        f.write(json.dumps({"key": key, "timeseries": rel, "throughput_mbps": 1.0}) + "\n")
    return rel


def test_runs_fold_into_one_part_and_read_back(tmp_path):
    a = _row(tmp_path, "testbed|a|1|1|1", [{"t_s": 0.1, "flow": 0, "throughput_mbps": 5.0, "rtt_ms": 30.0}])
    b = _row(tmp_path, "testbed|b|1|1|2", [{"t_s": 0.1, "flow": 0, "throughput_mbps": 7.0}, {"t_s": 0.2, "flow": 0, "throughput_mbps": 8.0}])
    before = leocc.read_timeseries(tmp_path)
    assert series.fold(tmp_path, {a: "testbed|a|1|1|1", b: "testbed|b|1|1|2"}) == 2
    assert sorted(p.name for p in (tmp_path / "ts").iterdir()) == ["part-00000.parquet"]
    after = leocc.read_timeseries(tmp_path)
    assert len(before) == len(after) == 3
    assert sorted(after["throughput_mbps"]) == [5.0, 7.0, 8.0]


def test_an_interrupted_fold_is_finished_without_duplicates(tmp_path):
    a = _row(tmp_path, "k1", [{"t_s": 0.1, "flow": 0, "throughput_mbps": 5.0}])
    series.fold(tmp_path, {a: "k1"})
    # The crash: the part holds k1, yet its CSV is back (written again as before the fold).
    series.write_run(tmp_path, "k1", [{"t_s": 0.1, "flow": 0, "throughput_mbps": 5.0}])
    _row(tmp_path, "k2", [{"t_s": 0.1, "flow": 0, "throughput_mbps": 9.0}])
    # A new orchestrator knows neither CSV: the fold reads results.jsonl and the parts.
    assert series.fold(tmp_path) == 1
    ts = leocc.read_timeseries(tmp_path)
    assert sorted(ts["key"]) == ["k1", "k2"], "k1 once, from its first part"
    assert not list((tmp_path / "ts").glob("*.csv"))
