"""The dash.js player: real H.264 segments padded to the ladder's sizes, played by dash.js in
headless Chromium over kernel TCP (loopback, and behind the emulator as root)."""

import json
import os
import struct

import pytest

import numpy as np

from leocc_ml.video import advisor, cli, dash, predictors, tcp
from leocc_ml.video.ladder import Ladder

from test_emu import TRACE, _skip_reason


@pytest.fixture(scope="module")
def content():
    return dash.Content.make(6, 1.0)


def test_padding_is_one_free_box_that_makes_up_the_ladders_size(content):
    seg = content.segment(2, 3)
    out = dash.padded(seg, len(seg) + 5000)
    assert len(out) == len(seg) + 5000 and out[: len(seg)] == seg
    assert struct.unpack_from(">I", out, len(seg))[0] == 5000 and out[len(seg) + 4 : len(seg) + 8] == b"free"
    assert dash.padded(seg, len(seg) + 7) == seg, "no room for a box header: sent as encoded"
    assert dash.padded(seg, 10) == seg


def test_a_looped_segment_continues_the_media_timeline(content):
    first, again = content.segment(0, 1), content.segment(0, 1 + content.segments)
    i = first.find(b"tfdt")
    v = first[i + 4]
    fmt = ">Q" if v == 1 else ">I"
    t0 = struct.unpack_from(fmt, first, i + 8)[0]
    t1 = struct.unpack_from(fmt, again, i + 8)[0]
    assert t1 - t0 == dash.CONTENT_S * content.timescale(0)
    assert len(first) == len(again)


def test_the_manifest_names_the_ladders_bitrates_and_our_clock(content):
    lad = Ladder.make(12.0, 10, chunk_s=1.0)
    vod = dash.manifest(content, lad, False, 0.0, 10.0, "http://10.0.0.1:8080")
    assert 'type="static"' in vod and 'mediaPresentationDuration="PT10.000S"' in vod
    assert f'bandwidth="{int(lad.bitrates_mbps[-1] * 1e6)}"' in vod and vod.count("<Representation ") == 6
    live = dash.manifest(content, lad, True, 1_700_000_000.0, 10.0, "http://10.0.0.1:8080")
    assert 'type="dynamic"' in live and 'availabilityStartTime="2023-11-14T22:13:20.000Z"' in live
    assert 'value="http://10.0.0.1:8080/time"' in live, "dash.js must not ask a public time server"


def test_dashjs_plays_on_demand_over_loopback_and_the_network_carries_the_ladders_bytes(content):
    lad = Ladder.make(8.0, 8, seed=3, chunk_s=1.0)
    srv = dash.start("127.0.0.1", 0, content, lad, live=False, cc="cubic" if "cubic" in tcp.available() else None)
    try:
        rep = dash.play(f"http://127.0.0.1:{srv.server_address[1]}", "dynamic", 8.0, live=False)
    finally:
        srv.shutdown()
    assert rep["end"] == "ended" and rep["error"] is None
    frags = sorted(rep["fragments"], key=lambda f: f["index"])
    assert [f["index"] for f in frags] == list(range(8))
    # Every segment crossed the network at the ladder's size, whatever ffmpeg encoded.
    assert all(f["bytes"] == lad.sizes[f["quality"], f["index"]] for f in frags)
    s = dash.summarise(rep, lad)
    assert s["chunks"] == 8 and s["stalls"] == 0
    assert s["frames_decoded"] >= 0.8 * dash.FPS * 8, "Chromium decoded and showed the frames"
    assert frags[-1]["quality"] == lad.n_qualities - 1, "an unloaded loopback carries the top rung"


class Fixed:
    """A predictor that always forecasts ``mbps``: what it says, RobustMPC plays."""

    name = "fixed"

    def __init__(self, mbps):
        self.mbps = mbps

    def forecast(self, now, obs, chunk_mbps, h, chunk_s):
        return np.full(h, self.mbps)


def test_robustmpc_decides_every_segment_dashjs_plays(content):
    lad = Ladder.make(8.0, 8, seed=3, chunk_s=1.0)
    srv = dash.start("127.0.0.1", 0, content, lad, live=False)
    try:
        # Forecasting 3 Mbit/s on an unloaded loopback: MPC keeps to the rungs 3 Mbit/s carries,
        # where dash.js's own rules climb to the top (the test above).
        rep = dash.play(f"http://127.0.0.1:{srv.server_address[1]}", "mpc", 8.0, live=False, ladder=lad, predictor=Fixed(3.0))
    finally:
        srv.shutdown()
    assert rep["end"] == "ended" and rep["predictor"] == "fixed"
    played = {f["index"]: f["quality"] for f in rep["fragments"]}
    decided = {d["next"]: d["quality"] for d in rep["decisions"]}
    assert sorted(played) == list(range(8)) and sorted(decided) == list(range(8)), "one decision per segment"
    assert played == decided, "dash.js plays what RobustMPC decides"
    assert played[0] == 0 and 0 < max(played.values()) < lad.n_qualities - 1


def test_the_advisor_refuses_malformed_decision_requests():
    host = advisor.PlayerHost(("127.0.0.1", 0), "/dev/null", "/dev/null", Ladder.make(8.0, 8, chunk_s=1.0), predictors.Harmonic())
    try:
        with pytest.raises(ValueError, match="malformed"):
            host.decide({"next": "x", "buffer_s": 1, "quality": 0})
        with pytest.raises(ValueError, match="malformed"):
            host.decide({"next": 1, "buffer_s": 1, "quality": 0, "fragments": [{"index": 0}]})
        assert host.decide({"next": 0, "buffer_s": 0, "quality": 0}) == 0, "nothing measured: the lowest rung"
        q = host.decide({"next": 1, "buffer_s": 1.0, "quality": 0,
                         "fragments": [{"index": 0, "bytes": 10e6 / 8, "t0": host.t0 + 0.1, "first": host.t0 + 0.11, "t1": host.t0 + 0.2}]})
        assert q == lad_top(host), "a 100 Mbit/s segment: the top of an 8 Mbit/s ladder"
    finally:
        host.server_close()


def lad_top(host):
    return host.ladder.n_qualities - 1


@pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))
def test_a_live_dashjs_session_behind_the_emulator(tmp_path):
    cc = "cubic" if "cubic" in tcp.available() else "reno"
    out = tmp_path / "live.json"
    rc = cli.main(["emu", "--trace", TRACE, "--cc", cc, "--player", "dashjs", "--live", "--latency", "3", "--segment-s", "1",
                   "--duration", "12", "--json", str(out), "--snapshot", str(tmp_path / "frame.png")])
    assert rc == 0
    r = json.loads(out.read_text())
    assert r["player"] == "dashjs" and r["live"] and r["mode"] == "emu"
    assert r["chunks"] >= 8 and r["frames_decoded"] >= 0.8 * dash.FPS * 12
    assert 2.0 <= r["latency_median_s"] <= 4.5, r["latency_median_s"]
    # The uplink-mirrored trace averages 53 Mbit/s: the top rung is below it, the bitrates played are rungs.
    assert set(f["quality"] for f in r["fragments_log"]) <= set(range(6))
    assert r["wall_s"] < 12 + 40
    assert (tmp_path / "frame.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", "the last frame shown"
