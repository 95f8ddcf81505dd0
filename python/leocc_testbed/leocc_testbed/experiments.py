"""Experiment kinds: what a job may run, with which checked arguments, and what it reports.

An experiment is never a shell string. Each kind has a fixed table of typed arguments (checked
when the job is submitted, jobs.py), builds the argument vector of one of the project's own
tools on the terminal's node (`client`), and, for kinds measured against a server node, the
command that node runs for the run (`server`). What the tool prints becomes the run's record
(`record`: the fields of an eval row) and its time series (`series`: rows of t_s, flow,
throughput_mbps, rtt_ms, as `leocc eval` stores them).

| kind | on the terminal's node | on the server node |
|---|---|---|
| sim | `leocc sim --json` (the simulator) | - |
| emu | `leocc emu-run` (kernel TCP through an emulated link, namespaces of its own) | - |
| iperf3 | `iperf3 -c -C CC -J` | `iperf3 -s -1` |
| quic | `leocc quic get -J` | `leocc quic serve --once` |
| leotp | `leocc leotp get` (consumer) | `leocc leotp serve` (producer) |
| video | `leocc-video play` (RobustMPC over kernel TCP) | `leocc-video serve` |

The kinds with a server send through the terminal's interface; scavenger mode counts their own
traffic (`leocc kernel traffic`) and leaves it out of the user's.
"""

from __future__ import annotations

import base64
import csv
import json
import re
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .check import check_name, flag, num, text, whole

# A control's name as `leocc sim --list-cc` and the kernel spell them.
_CC = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
# A queue limit as `leocc sim --queue` takes it: packets, bytes or time.
_QUEUE = re.compile(r"^[0-9]+(\.[0-9]+)?(ms|s|kB|KiB|MB|MiB|B)?$")
# QUIC's controls (`leocc quic serve --cc`).
_QUIC_CC = re.compile(r"^(leocc|cubic|newreno|bbr)$")
# Reporting interval of the tools that report intervals: the eval store's 100 ms rows.
INTERVAL_S = 0.1
# A video chunk's length (leocc_ml.video.ladder): a session lasts chunks x this.
VIDEO_CHUNK_S = 4.0
# Time a server that does not end by itself is given beyond the client's duration.
SERVER_SLACK_S = 60.0

# An argument's checker and its default (REQUIRED: the job must give it).
REQUIRED = object()
Arg = tuple[Callable, object]


def _cc(pattern: re.Pattern = _CC, what: str = "a control's name") -> Callable:
    return lambda v, k: text(v, k, pattern, what)


def _duration(default: float) -> Arg:
    return (lambda v, k: num(v, k, 1, 3600), default)


def _port(default: int) -> Arg:
    return (lambda v, k: whole(v, k, 1024, 65535), default)


_SERVER: Arg = (lambda v, k: check_name(v, k, "a server node's name"), REQUIRED)
# The server sends (the downlink, toward the satellite user) unless `reverse = false`.
_REVERSE: Arg = (flag, True)

# A trace, a control and the link's settings: what `leocc sim` and `leocc emu-run` share.
_LINK_RUN_ARGS: dict[str, Arg] = {
    "trace": (lambda v, k: text(v, k), REQUIRED),
    "cc": (_cc(), REQUIRED),
    "duration_s": _duration(30.0),
    "queue": (lambda v, k: text(str(v), k, _QUEUE, "a queue limit (500, 150ms, 750kB)"), "150ms"),
    "loss": (lambda v, k: num(v, k, 0, 0.5), 0.0),
    "seed": (lambda v, k: whole(v, k, 0, 2**32 - 1), 1),
}


@dataclass(frozen=True)
class Server:
    """The server node's side of a kind: its command, and how to know it is ready."""

    argv: Callable  # (args, server node config, workdir) -> the command, run in the node's namespace
    proto: str  # "tcp" or "udp": the socket `ss` shows listening on the port when it is ready
    ends_itself: bool  # it exits after one transfer (else it is stopped after the client)
    cert: str | None = None  # a file in workdir the client needs (QUIC's certificate)


@dataclass(frozen=True)
class Kind:
    """One experiment kind."""

    args: dict[str, Arg]
    client: Callable  # (args, node config, peer dict or None, run dir) -> argv
    record: Callable[[str], dict | None]  # stdout -> the record (None: it printed none)
    series: Callable[[str, Path], list[dict]]  # (stdout, run dir) -> time-series rows
    server: Server | None = None

    @property
    def crosses_terminal(self) -> bool:
        """Its traffic goes through the terminal's interface (scavenger mode counts it as own)."""
        return self.server is not None


def _trace(cfg, a: dict) -> str:
    return a["trace"] if Path(a["trace"]).is_absolute() else str(Path(cfg.root, a["trace"]))


def _link_common(cfg, a: dict, run_dir: Path) -> list[str]:
    return ["--trace", _trace(cfg, a), "--duration", f"{a['duration_s']:g}", "--queue", str(a["queue"]), "--loss", f"{a['loss']:g}",
            "--seed", str(a["seed"]), "--timeseries", str(run_dir / "series.csv")]


def _python_tool(module: str) -> list[str]:
    # The node's own Python (Ray runs its tasks in it): the video tool is installed there.
    return [sys.executable, "-m", module]


# -- records ------------------------------------------------------------------------------

def last_json_line(out: str) -> dict | None:
    """The record a `leocc` command prints: its last line that is a JSON object."""
    for line in reversed(out.splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                pass
    return None


def _json(out: str) -> dict | None:
    try:
        d = json.loads(out)
    except json.JSONDecodeError:
        return None
    return d if isinstance(d, dict) else None


def iperf3_like_record(out: str) -> dict | None:
    """The fields of an eval record in an iperf3-style JSON report (iperf3, `leocc quic get`,
    `leocc leotp get`): throughput at the receiver, retransmissions, the sender's RTT."""
    r = _json(out)
    try:
        end = r["end"]
        rcv = end["sum_received"]
        rec = {"throughput_mbps": rcv["bits_per_second"] / 1e6, "duration_s": rcv["seconds"]}
    except (KeyError, TypeError):
        return None
    sent = end.get("sum_sent") or {}
    if "retransmits" in sent or "retransmits" in end:
        rec["retransmits"] = sent.get("retransmits", end.get("retransmits"))
    cc = end.get("sender_tcp_congestion") or end.get("receiver_tcp_congestion")
    if cc:
        rec["cc"] = cc
    sender = ((end.get("streams") or [{}])[0] or {}).get("sender", {})
    if "mean_rtt" in sender:  # iperf3: Linux's smoothed RTT of the sending socket, µs
        rec["rtt_avg_ms"], rec["rtt_max_ms"] = sender["mean_rtt"] / 1e3, sender.get("max_rtt", 0) / 1e3
    elif end.get("rtt_samples_us"):  # QUIC: the sender's RTT samples
        rec["rtt_avg_ms"] = statistics.fmean(end["rtt_samples_us"]) / 1e3
    if "one_way_delay_ms" in end:  # LEOTP
        rec["owd_mean_ms"], rec["owd_p95_ms"] = end["one_way_delay_ms"].get("mean"), end["one_way_delay_ms"].get("p95")
    rec["report"] = {"start": r.get("start"), "end": end}
    return rec


def iperf3_like_series(out: str, _run_dir: Path) -> list[dict]:
    """One row per reported interval: its end time, throughput and (when reported) RTT."""
    r = _json(out)
    rows = []
    for iv in (r or {}).get("intervals", []):
        s = iv.get("sum") or ((iv.get("streams") or [None])[0])
        if not s:
            continue
        stream = (iv.get("streams") or [{}])[0]
        rtt_us = stream.get("rtt")
        rows.append({"t_s": s["end"], "flow": 0, "throughput_mbps": s["bits_per_second"] / 1e6, "rtt_ms": rtt_us / 1e3 if rtt_us else None})
    return rows


def csv_series(_out: str, run_dir: Path) -> list[dict]:
    """The time series a `leocc` command wrote (--timeseries RUN/series.csv)."""
    f = run_dir / "series.csv"
    if not f.exists():
        return []
    with open(f, newline="") as fh:
        return [{k: _number(v) for k, v in row.items()} for row in csv.DictReader(fh)]


def _number(v: str):
    try:
        return int(v)
    except ValueError:
        try:
            return float(v)
        except ValueError:
            return v if v != "" else None


def video_record(out: str) -> dict | None:
    """`leocc-video play`'s session summary (QoE, bitrate, rebuffering, switches) as the record."""
    r = _json(out)
    if r is None or "qoe" not in r:
        return None
    return r


def no_series(_out: str, _run_dir: Path) -> list[dict]:
    return []


# -- the kinds -----------------------------------------------------------------------------

def _iperf3_client(a, cfg, peer, run_dir):
    cmd = ["iperf3", "-c", peer["addr"], "-p", str(peer["port"]), "-t", f"{a['duration_s']:g}", "-C", a["cc"], "-J", "-i", f"{INTERVAL_S:g}"]
    if a["bitrate_mbps"]:
        cmd += ["-b", f"{a['bitrate_mbps']:g}M"]
    return cmd + (["-R"] if a["reverse"] else [])


def _quic_client(a, cfg, peer, run_dir):
    cert = run_dir / "server-cert.der"
    cert.write_bytes(base64.b64decode(peer["cert"]))
    cmd = [cfg.leocc, "quic", "get", "--cert", str(cert), f"{peer['addr']}:{peer['port']}", "-t", f"{a['duration_s']:g}", "-J", "-i", f"{INTERVAL_S:g}"]
    # `leocc quic get` without -R downloads (the server sends with its --cc), the opposite of iperf3.
    return cmd if a["reverse"] else cmd + ["-R", "--cc", a["cc"]]


def _quic_server(a, cfg, work: Path):
    return [cfg.leocc, "quic", "serve", "--listen", f"0.0.0.0:{a['port']}", "--cc", a["cc"], "--once", "--cert", str(work / "cert.der"),
            "--max-duration", f"{a['duration_s'] + 5:g}"]


KINDS: dict[str, Kind] = {
    "sim": Kind(_LINK_RUN_ARGS, lambda a, cfg, peer, run: [cfg.leocc, "sim", "--cc", a["cc"], *_link_common(cfg, a, run), "--json"],
                last_json_line, csv_series),
    "emu": Kind(_LINK_RUN_ARGS, lambda a, cfg, peer, run: [cfg.leocc, "emu-run", "--flows", f"{a['cc']}@0-{a['duration_s']:g}", *_link_common(cfg, a, run)],
                last_json_line, csv_series),
    # Kernel TCP with the job's control on the sending side, between this terminal's node and a
    # server node (the name its node joined with). The server holds its own resource for the
    # run, so two jobs never share a server either.
    "iperf3": Kind(
        {"server": _SERVER, "cc": (_cc(), REQUIRED), "duration_s": _duration(10.0), "reverse": _REVERSE, "port": _port(5201),
         # iperf3 -b: the sender's application rate (0: as fast as the control allows).
         "bitrate_mbps": (lambda v, k: num(v, k, 0, 1e6), 0.0)},
        _iperf3_client, iperf3_like_record, iperf3_like_series,
        Server(lambda a, cfg, work: ["iperf3", "-s", "-1", "-p", str(a["port"])], "tcp", ends_itself=True),
    ),
    # QUIC (quinn) with LeoCC or one of quinn's controls on the sending side.
    "quic": Kind(
        {"server": _SERVER, "cc": (_cc(_QUIC_CC, "one of leocc, cubic, newreno, bbr"), REQUIRED), "duration_s": _duration(10.0), "reverse": _REVERSE,
         "port": _port(4433)},
        _quic_client, iperf3_like_record, iperf3_like_series,
        Server(_quic_server, "udp", ends_itself=True, cert="cert.der"),
    ),
    # LEOTP (seed 003): the producer on the server node, the consumer on the terminal's.
    "leotp": Kind(
        {"server": _SERVER, "duration_s": _duration(10.0), "port": _port(5301)},
        lambda a, cfg, peer, run: [cfg.leocc, "leotp", "get", f"{peer['addr']}:{peer['port']}", "bulk", "-t", f"{a['duration_s']:g}", "-i", f"{INTERVAL_S:g}"],
        iperf3_like_record, iperf3_like_series,
        Server(lambda a, cfg, work: [cfg.leocc, "leotp", "serve", "--listen", f"0.0.0.0:{a['port']}", "--duration", f"{a['duration_s'] + SERVER_SLACK_S:g}"],
               "udp", ends_itself=False),
    ),
    # Adaptive video (RobustMPC) over kernel TCP with the job's control on both sockets.
    "video": Kind(
        {"server": _SERVER, "cc": (_cc(), REQUIRED), "predictor": (lambda v, k: text(v, k, re.compile(r"^(harmonic|leo)$"), "harmonic or leo"), "harmonic"),
         "chunks": (lambda v, k: whole(v, k, 2, 900), 15), "top_mbps": (lambda v, k: num(v, k, 0.1, 10000), 160.0), "port": _port(8080)},
        lambda a, cfg, peer, run: [*_python_tool("leocc_ml.video.cli"), "play", "--url", f"http://{peer['addr']}:{peer['port']}", "--predictor", a["predictor"], "--cc", a["cc"]],
        video_record, no_series,
        Server(lambda a, cfg, work: [*_python_tool("leocc_ml.video.cli"), "serve", "--host", "0.0.0.0", "--port", str(a["port"]), "--cc", a["cc"],
                                "--top-mbps", f"{a['top_mbps']:g}", "--chunks", str(a["chunks"])], "tcp", ends_itself=False),
    ),
}
