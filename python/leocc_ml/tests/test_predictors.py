import numpy as np
import pytest

from leocc_ml import detector, evaluate, features, metrics, traces
from leocc_ml.models import Gbdt, HarmonicMean, LastValue, LstmPredictor


def synthetic(seed, seconds=240):
    """A link with a 15 s slot: capacity level and RTT change at each reconfiguration, outage of 100 ms."""
    rng = np.random.default_rng(seed)
    n = seconds * 10
    thr = np.empty(n)
    rtt = np.empty(n)
    for start in range(0, n, 150):
        thr[start : start + 150] = rng.uniform(60, 200)
        rtt[start : start + 150] = rng.uniform(40, 70)
        thr[start] = 1.0
    thr *= rng.uniform(0.95, 1.05, n)
    return traces.Series(f"syn{seed}", thr, rtt)


def test_table1_metrics():
    m = metrics.table1(np.array([100.0, 104.0, 120.0, 0.0]), np.array([100.0, 100.0, 100.0, 0.0]))
    assert m["mape"] == pytest.approx((0 + 4 + 20) / 3)
    assert m["within5"] == pytest.approx(200 / 3)
    assert m["within10"] == pytest.approx(200 / 3)
    assert m["rmse"] == pytest.approx(np.sqrt((0 + 16 + 400 + 0) / 4))
    with pytest.raises(ValueError):
        metrics.table1(np.zeros(2), np.zeros(3))


def test_detector_finds_slot_boundaries():
    s = synthetic(1)
    ev = detector.detect(s.thr_mbps)
    assert len(ev) >= 14 and np.all(ev % 150 == 0)
    since, period = detector.event_state(ev, len(s.thr_mbps))
    assert period[-1] == pytest.approx(15.0)


def test_features_are_causal_and_shaped():
    s = synthetic(2)
    ds = features.build(s)
    assert ds.X.shape[1] == len(features.FEATURE_NAMES)
    assert ds.seq.shape[1:] == (features.HISTORY_S, len(features.SEQ_FEATURES))
    # The row at t must not change when the future changes.
    s2 = traces.Series("x", s.thr_mbps.copy(), s.rtt_ms.copy())
    s2.thr_mbps[1000:] *= 3
    ds2 = features.build(s2)
    t_row = 1000 // 10 - features.HISTORY_S  # rows start at t = HISTORY_S
    assert np.allclose(ds.X[:t_row], ds2.X[:t_row])
    row, seq = features.last_row(traces.Series("c", s.thr_mbps[:500], s.rtt_ms[:500]))
    assert np.allclose(row, ds.X[50 - features.HISTORY_S])


def test_learned_models_beat_last_value_when_the_slot_structure_is_learnable():
    train = features.Dataset.concat([features.build(synthetic(s)) for s in range(1, 7)])
    test = features.build(synthetic(99))
    last = metrics.table1(LastValue().fit(train, "thr").predict(test)[:, 0], test.y_thr[:, 0])
    hm = metrics.table1(HarmonicMean().fit(train, "thr").predict(test)[:, 0], test.y_thr[:, 0])
    g = metrics.table1(Gbdt().fit(train, "thr").predict(test)[:, 0], test.y_thr[:, 0])
    lstm = metrics.table1(LstmPredictor(epochs=15).fit(train, "thr").predict(test)[:, 0], test.y_thr[:, 0])
    assert last["mape"] < hm["mape"]
    assert g["mape"] < last["mape"]
    assert lstm["mape"] < hm["mape"]


def test_seed_lists():
    assert evaluate.parse_seeds("1-3,7") == [1, 2, 3, 7]
    import argparse

    with pytest.raises(argparse.ArgumentTypeError, match="bad seed"):
        evaluate.parse_seeds("3-1")


def test_trace_errors_name_file_and_line(tmp_path):
    p = tmp_path / "bw.txt"
    p.write_text("1\n2\nx\n")
    with pytest.raises(traces.TraceError, match=r"bw.txt:3: not a number"):
        traces.read_mahimahi_bw(str(p))
    p.write_text("5\n3\n")
    with pytest.raises(traces.TraceError, match="bw.txt:2: timestamps decrease"):
        traces.read_mahimahi_bw(str(p))


def test_generated_trace_roundtrip_through_leocc():
    try:
        traces.leocc_binary()
    except FileNotFoundError:
        pytest.skip("leocc binary not built")
    import os

    here = os.path.dirname(os.path.abspath(__file__))
    s = traces.load_trace(os.path.join(here, "..", "..", "..", "traces", "starlink-down-60s.trace"))
    assert len(s.thr_mbps) == 600
    # leocc trace stat: mean 191.7 Mbit/s, one-way delay mean 13.9 ms.
    assert s.thr_mbps.mean() == pytest.approx(191.7, abs=0.1)
    assert s.rtt_ms.mean() == pytest.approx(2 * 13.9, abs=0.2)
