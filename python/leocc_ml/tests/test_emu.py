"""The video harness behind the real emulator (root, /dev/net/tun and a built leocc needed)."""

import json
import os

import pytest

from leocc_ml import traces
from leocc_ml.video import cli, tcp

HERE = os.path.dirname(os.path.abspath(__file__))
TRACE = os.path.join(HERE, "..", "..", "..", "traces", "starlink-up-60s.trace")


def _skip_reason():
    if os.geteuid() != 0:
        return "needs root (leocc emu makes namespaces)"
    if not os.path.exists("/dev/net/tun"):
        return "no /dev/net/tun"
    try:
        traces.leocc_binary()
    except FileNotFoundError:
        return "leocc not built"
    return None


@pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))
def test_a_short_session_behind_the_emulator(tmp_path):
    cc = "cubic" if "cubic" in tcp.available() else "reno"
    out = tmp_path / "s.json"
    rc = cli.main(["emu", "--trace", TRACE, "--cc", cc, "--predictor", "oracle", "--chunks", "3", "--json", str(out)])
    assert rc == 0
    r = json.loads(out.read_text())
    assert r["mode"] == "emu" and r["chunks"] == 3 and r["client_cc"] == cc
    # Through the emulated uplink-mirrored path (53 Mbit/s mean), a chunk cannot beat the trace's peak.
    assert all(0 < c["mbps"] < 120 for c in r["chunks_log"])
