import json
import pathlib
import socket

import numpy as np
import pytest

from leocc_ml import traces
from leocc_ml.video import client, ladder, mpc, player, predictors, qoe, server, tcp
from leocc_ml.video.observer import Observer

REPO = pathlib.Path(__file__).resolve().parents[3]


def small_ladder(chunks=4, top=20.0):
    return ladder.Ladder.make(top, chunks, seed=1)


def test_ladder_is_six_rungs_about_1_5_apart_and_3_minutes():
    lad = ladder.Ladder.make()
    assert lad.n_qualities == 6
    r = lad.bitrates_mbps[1:] / lad.bitrates_mbps[:-1]
    assert np.all((r > 1.45) & (r < 1.55))
    assert lad.n_chunks * lad.chunk_s == 180
    assert ladder.Ladder.from_json(json.loads(json.dumps(lad.to_json()))).sizes.tolist() == lad.sizes.tolist()


def test_manifest_errors_are_reported():
    with pytest.raises(ValueError, match="malformed manifest"):
        ladder.Ladder.from_json({"bitrates_mbps": [1, 2], "sizes": [[1]], "chunk_s": 4})
    with pytest.raises(ValueError, match="malformed manifest"):
        ladder.Ladder.from_json({"sizes": []})


def test_qoe_is_pensieve_linear_on_pensieve_ladder():
    # On Pensieve's own ladder (top 4.3) the formula is used literally.
    s = qoe.summarise([1.0, 4.3, 1.0], [0.0, 2.0, 0.0], 4.0, top_mbps=4.3)
    assert s["qoe"] == pytest.approx(6.3 - 4.3 * 2 - 3.3 - 3.3)
    assert s["switches"] == 2 and s["rebuffer_s"] == 2.0


def test_mpc_follows_the_forecast():
    lad = ladder.Ladder.make(100.0, 45)
    m = mpc.RobustMpc(lad, robust=False)
    low = m.choose(5, 10.0, 0, 5.0)
    high = m.choose(5, 10.0, 0, 500.0)
    assert low == 0 and high == 5
    assert m.choose(5, 10.0, 0, 0.0) == 0


def test_robust_discount_lowers_the_choice():
    lad = ladder.Ladder.make(100.0, 45)
    m = mpc.RobustMpc(lad)
    q0 = m.choose(5, 8.0, 3, 80.0)
    m.observe(20.0)  # forecast 80, got 20: error 300 %
    assert m.choose(5, 8.0, 3, 80.0) < q0


def flat(mbps, seconds=60, rtt=40.0):
    n = seconds * 10
    return traces.Series("flat", np.full(n, float(mbps)), np.full(n, rtt))


def test_trace_player_on_a_flat_link():
    lad = ladder.Ladder.make(10.0, 45)
    r = player.play(flat(100.0), lad, predictors.Harmonic())
    assert r["rebuffer_s"] == 0 and r["mean_bitrate_mbps"] > 9.0
    slow = player.play(flat(1.0), lad, predictors.Harmonic())
    assert slow["mean_bitrate_mbps"] < 2.0


def test_link_download_times_follow_capacity():
    link = player.Link(flat(8.0, 10))
    assert link.finish(0.0, 1e6) == pytest.approx(1.0)
    assert link.finish(9.5, 1e6) == pytest.approx(10.5)  # wraps around the loop


def test_oracle_beats_or_matches_harmonic_on_a_step_link():
    thr = np.concatenate([np.full(150, 50.0), np.full(150, 5.0)])
    s = traces.Series("step", np.tile(thr, 4), np.full(1200, 30.0))
    lad = ladder.Ladder.make(40.0, 45)
    o = player.play(s, lad, predictors.Oracle(s))
    h = player.play(s, lad, predictors.Harmonic())
    assert o["qoe"] >= h["qoe"]


def test_server_and_client_over_loopback_with_chosen_cc():
    cc = "cubic" if "cubic" in tcp.available() else tcp.available()[0]
    lad = small_ladder()
    srv = server.start("127.0.0.1", 0, lad, cc)
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}"
        res = client.play(url, predictors.Harmonic(), cc)
        assert res["chunks"] == 4 and res["client_cc"] == cc
        got = sum(lad.sizes[c["quality"], c["chunk"]] for c in res["chunks_log"])
        assert got > 0 and all(c["mbps"] > 0 for c in res["chunks_log"])
        # The server's sockets really use the control.
        s = socket.create_connection(("127.0.0.1", srv.server_address[1]))
        s.close()
        assert tcp.get_cc(srv.socket) == cc
        conn = client.Connection(url, None)
        with pytest.raises(client.HttpError, match="404"):
            conn.get("/video/9/0")
        with pytest.raises(client.HttpError, match="400"):
            conn.get("/video/x/0")
        conn.close()
    finally:
        srv.shutdown()
        srv.server_close()


def test_unknown_cc_is_a_clear_error():
    with pytest.raises(ValueError, match="not available.*kernel offers"):
        server.start("127.0.0.1", 0, small_ladder(), "no-such-cc")


def test_cdf_svg_and_table():
    import xml.etree.ElementTree as ET

    from leocc_ml.video import plot

    rows = [
        {"predictor": p, "qoe": q, "mean_bitrate_mbps": 1.0, "rebuffer_ratio": 0.0, "switches": 1}
        for p, q in [("harmonic", 10.0), ("harmonic", 12.0), ("leo", 11.0), ("leo", 15.0)]
    ]
    root = ET.fromstring(plot.cdf_svg(rows, "qoe", "predictor", "t"))
    assert len(root.findall("{http://www.w3.org/2000/svg}polyline")) == 2
    md = plot.summary_markdown(rows, "predictor")
    assert "| leo | 2 | 13.0 |" in md and "+18.2 %" in md
    with pytest.raises(ValueError, match="no numeric"):
        plot.cdf_svg(rows, "nope", "predictor", "t")


def steps_link():
    """Capacity one level per 15 s interval, drawn anew at each boundary (LeoCC's model)."""
    thr = np.concatenate([np.full(150, 50.0), np.full(150, 8.0), np.full(150, 30.0), np.full(150, 12.0)])
    return traces.Series("steps", np.tile(thr, 3), np.full(1800, 30.0)), [15.0 * k for k in range(1, 12)]


def test_schedule_forecast_forgets_the_last_interval_and_is_cautious_past_the_next():
    obs = Observer()
    obs.add(1.0, 9.0, 100e6 / 8 * 8)  # 100 Mbit/s in the first interval
    obs.add(11.0, 14.0, 20e6 / 8 * 3)  # 20 Mbit/s in the second
    obs.add(15.5, 17.5, 60e6 / 8 * 2)  # 60 Mbit/s in the third, which began at 15 s
    p = predictors.Schedule([10.0, 15.0, 20.0])
    f = p.forecast(18.0, obs, [100.0, 100.0, 20.0, 60.0], 4, 1.0)
    assert f[0] == pytest.approx(60.0, rel=0.01)  # only this interval's rate, not 100 or 20
    # Chunks 2 s and more ahead fall past the boundary at 20 s: the lower quartile of the
    # levels seen (100 and 20 Mbit/s) bounds them.
    assert f[1] == pytest.approx(60.0, rel=0.01)
    assert f[2] == pytest.approx(40.0, rel=0.01) and f[3] == f[2]


def test_schedule_boundaries_come_from_the_trace_and_loop_with_it():
    b = predictors.boundaries_of(str(REPO / "traces" / "starlink-down-60s.trace"), 130.0, offset_s=10.0)
    assert b[:3] == pytest.approx([1.845, 7.38, 16.845])
    assert 61.845 in [round(x, 3) for x in b]  # the second loop: 71.845 - 10
    assert max(b) <= 130.0


def test_schedule_cuts_the_stalls_of_a_short_buffer_on_a_stepping_link():
    s, bounds = steps_link()
    lad = ladder.Ladder.make(30.0, 90, seed=1, chunk_s=2.0)
    h = player.play(s, lad, predictors.Harmonic(), buffer_max_s=4.0)
    sc = player.play(s, lad, predictors.Schedule(bounds), buffer_max_s=4.0)
    assert h["rebuffer_s"] > 1.0
    assert sc["rebuffer_s"] < 0.5 * h["rebuffer_s"] and sc["qoe"] > h["qoe"]


def test_the_buffer_target_bounds_the_buffer():
    lad = ladder.Ladder.make(10.0, 45, chunk_s=1.0)
    r = player.play(flat(100.0), lad, predictors.Harmonic(), buffer_max_s=3.0)
    assert max(c["buffer_s"] for c in r["chunks_log"]) <= 3.0 + 1e-9
    with pytest.raises(ValueError, match="must hold at least one chunk"):
        player.play(flat(100.0), lad, predictors.Harmonic(), buffer_max_s=0.5)


def test_sensitivity_cells_pair_each_predictor_with_harmonic_on_the_same_trace():
    from leocc_ml.video import sensitivity

    rows = []
    for seed, (hq, oq, hr, orr) in enumerate([(100, 150, 0.0, 0.0), (200, 220, 0.05, 0.0), (100, 90, 0.01, 0.03)]):
        base = {"profile": "p", "seed": seed, "buffer_s": 2.0, "top_share": 1.0}
        rows.append({**base, "predictor": "harmonic", "qoe": hq, "rebuffer_ratio": hr})
        rows.append({**base, "predictor": "oracle", "qoe": oq, "rebuffer_ratio": orr})
    c = sensitivity.cells(rows, "oracle")[(2.0, 1.0)]
    assert c["sessions"] == 3
    assert c["median_qoe_gain_pct"] == pytest.approx(10.0)  # gains +50, +10, -10 %
    assert c["severe_harmonic"] == pytest.approx(1 / 3) and c["severe"] == pytest.approx(1 / 3)
    svg = sensitivity.heatmap_svg(rows, "oracle", "test")
    assert "+10.0 %" in svg and svg.startswith("<svg")
    assert "+10.0 %" in sensitivity.markdown(rows, "oracle")


def test_interval_table_gives_mean_and_the_95_percent_interval_of_repeated_runs():
    from leocc_ml.video import plot

    m, h = plot.mean_interval([10.0, 12.0, 14.0])
    assert m == pytest.approx(12.0) and h == pytest.approx(4.303 * 2.0 / np.sqrt(3))
    assert plot.mean_interval([5.0]) == (5.0, None)
    rows = [{"abr": "mpc", "predictor": p, "qoe": q, "mean_bitrate_mbps": 1.0, "rebuffer_s": 0.0, "switches": 1} for p, q in
            [("oracle", 10.0), ("oracle", 12.0), ("oracle", 14.0)]] + [{"abr": "l2a", "predictor": None, "qoe": 3.0, "mean_bitrate_mbps": 1.0,
                                                                      "rebuffer_s": 0.0, "switches": 1}]
    t = plot.interval_markdown(rows, "abr+predictor")
    assert "| mpc | oracle | 3 | 12.0 ± 5.0 |" in t and "| l2a | - | 1 | 3.0 |" in t
    assert "latency" not in t, "no live sessions: no latency column"
