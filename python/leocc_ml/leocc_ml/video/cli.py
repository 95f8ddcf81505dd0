"""``leocc-video``: serve, play (real TCP), emu (one session behind ``leocc emu``), sim (trace-driven batch), plot.

    leocc-video serve --port 8080 --cc bbr --top-mbps 160
    leocc-video play --url http://HOST:8080 --predictor leo --profile starlink-down --cc bbr --json out.json
    leocc-video emu --trace traces/starlink-down-60s.trace --cc bbr --predictor harmonic --json out.json
    leocc-video emu --trace traces/starlink-down-60s.trace --cc leocc --player dashjs --abr l2a --live --json out.json
    leocc-video sim --profiles starlink-down --seeds 101-120 --json sim.json
    leocc-video sensitivity --profiles starlink-down,oneweb --seeds 101-110 -o sens/
    leocc-video plot sim.json emu*.json -o qoe-cdf.svg
    leocc-video table sim.json --group-by profile+predictor

Progress goes to stderr; results (JSON) to --json or stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import time

from .. import traces
from ..evaluate import parse_seeds
from . import player, plot, predictors, proc, server
from .ladder import DEFAULT_TOP_MBPS, N_CHUNKS, RATIOS, SESSION_S, Ladder

PREDICTORS = ("harmonic", "leo", "schedule", "oracle")
#: The ladder's top as a share of the trace's mean capacity in `sim` and `emu`: close enough to
#: the capacity that the rung choice matters, low enough that the mean link can carry it.
TOP_SHARE = 0.85
DEFAULT_PORT = 8080


def _write_json(path: str | None, obj) -> None:
    text = json.dumps(obj, indent=1)
    if not path:
        print(text)
        return
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write(text + "\n")
    os.replace(tmp, path)


def _log(msg: str) -> None:
    print(f"leocc-video: {msg}", file=sys.stderr, flush=True)


def _profile_of(trace: str) -> str:
    base = os.path.basename(trace)
    for p in ("starlink-down", "starlink-up", "oneweb"):
        if base.startswith(p):
            return p
    return "starlink-down"


def cmd_serve(a) -> int:
    if a.player == "dashjs":
        return _serve_dash(a)
    srv = server.VideoServer((a.host, a.port), Ladder.make(a.top_mbps, a.chunks, a.seed), a.cc, quiet=not a.verbose)
    _log(f"serving {a.chunks} chunks, top {a.top_mbps:g} Mbit/s, cc {a.cc or 'default'} on {a.host}:{srv.server_address[1]}")
    return _serve_until_stopped(srv)


def _serve_until_stopped(srv) -> int:
    """Serves until SIGTERM (the emulator's teardown) or ^C."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


def _dash_ladder(top_mbps: float, seconds: float, segment_s: float, seed: int = 0) -> Ladder:
    """The ladder of a dash.js session: Pensieve's six rungs under ``top_mbps``, one chunk per
    segment of the session (the server and the summary must agree on it, so both make it here)."""
    return Ladder.lasting(top_mbps, seconds, segment_s, seed)


def _serve_dash(a) -> int:
    from . import dash

    lad = _dash_ladder(a.top_mbps, a.duration, a.segment_s, a.seed)
    content = dash.Content.make(lad.n_qualities, a.segment_s, log=_log)
    srv = dash.DashServer((a.host, a.port), content, lad, a.live, a.cc, quiet=not a.verbose)
    kind = "live" if a.live else f"on demand, {lad.n_chunks} segments"
    _log(f"serving DASH ({kind}), {a.segment_s:g} s segments, top {a.top_mbps:g} Mbit/s, cc {a.cc or 'default'} on {a.host}:{srv.server_address[1]}")
    return _serve_until_stopped(srv)


def _play_dash(a) -> int:
    from . import dash

    lad = _dash_ladder(a.top_mbps, a.duration, a.segment_s)
    pred, t0 = None, None
    if a.abr == "mpc":
        from .advisor import trace_offset_s

        profile = a.profile or _profile_of(a.trace or "")
        if a.predictor == "leo":
            predictors.leo_model(profile, log=_log)  # trained (or loaded) before the clock starts
        t0 = time.time()
        pred = predictors.make(a.predictor, profile, a.trace, a.oracle_offset + trace_offset_s(t0))
    rep = dash.play(a.url, a.abr, a.duration, a.live, a.latency, log=_log if a.verbose else None, snapshot=bool(a.snapshot),
                    ladder=lad, predictor=pred, t0_unix=t0)
    if a.snapshot:
        _write_snapshot(a.snapshot, rep.get("snapshot"))
    res = dash.summarise(rep, lad)
    res.update({"trace": a.trace, "cc": a.cc, "mode": "tcp", "segment_s": a.segment_s, "latency_target_s": a.latency if a.live else None})
    _write_json(a.json, res)
    return 0


def _write_snapshot(path: str, data_url: str | None) -> None:
    if not data_url or not data_url.startswith("data:image/png;base64,"):
        raise RuntimeError("dash.js showed no frame to snapshot")
    import base64

    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(base64.b64decode(data_url.split(",", 1)[1]))
    os.replace(tmp, path)


def cmd_play(a) -> int:
    if a.player == "dashjs":
        return _play_dash(a)
    from . import client

    pred = predictors.make(a.predictor, a.profile or _profile_of(a.trace or ""), a.trace, a.oracle_offset)
    res = client.play(a.url, pred, a.cc, progress=_log if a.verbose else None)
    res.update({"trace": a.trace, "cc": a.cc, "mode": "tcp"})
    _write_json(a.json, res)
    return 0


def cmd_emu(a) -> int:
    series = traces.load_trace(a.trace)
    top = a.top_mbps or round(TOP_SHARE * float(series.thr_mbps.mean()), 1)
    py = sys.executable
    out = os.path.abspath(a.json)
    profile = a.profile or _profile_of(a.trace)
    # Train (or load) the LEO model before the emulator starts, so training time is not playback time.
    if a.predictor == "leo" and (a.player == "python" or a.abr == "mpc"):
        predictors.leo_model(profile, log=_log)
    if a.player == "dashjs":
        from . import dash

        dash.Content.make(len(RATIOS), a.segment_s, log=_log)  # encode before the clock starts
    serve = f"{shlex.quote(py)} -m leocc_ml.video.cli serve --port {DEFAULT_PORT} --cc {shlex.quote(a.cc)} --top-mbps {top}"
    play = [py, "-m", "leocc_ml.video.cli", "play", "--url", f"http://100.100.0.2:{DEFAULT_PORT}", "--cc", a.cc, "--trace", os.path.abspath(a.trace), "--json", out]
    if a.player == "dashjs":
        # A live server has no end; on demand it holds the session's segments.
        serve += f" --player dashjs --segment-s {a.segment_s} --duration {a.duration}" + (" --live" if a.live else "")
        play += ["--player", "dashjs", "--abr", a.abr, "--top-mbps", str(top), "--segment-s", str(a.segment_s), "--duration", str(a.duration), "--latency", str(a.latency)]
        play += ["--predictor", a.predictor, "--profile", profile] if a.abr == "mpc" else []
        play += ["--live"] if a.live else []
        play += ["--snapshot", os.path.abspath(a.snapshot)] if a.snapshot else []
    else:
        serve += f" --chunks {a.chunks}"
        play += ["--predictor", a.predictor, "--profile", profile]
    if a.verbose:
        play.append("--verbose")
    cmd = [traces.leocc_binary(), "emu", "--trace", a.trace, "--server-cmd", serve, "--"] + play
    what = f"dash.js abr={a.abr}{' predictor=' + a.predictor if a.abr == 'mpc' else ''} {'live' if a.live else 'on demand'}" if a.player == "dashjs" else f"predictor={a.predictor}"
    _log(f"emu {os.path.basename(a.trace)} cc={a.cc} {what} top={top} Mbit/s")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    t0 = time.time()
    rc = subprocess.run(cmd, env=env, preexec_fn=proc.die_with_parent).returncode
    if rc != 0:
        _log(f"leocc emu exited with {rc}")
        return rc
    with open(out) as f:
        res = json.load(f)
    res.update({"mode": "emu", "top_mbps": top, "wall_s": time.time() - t0})
    _write_json(out, res)
    return 0


def _sim_sessions(s, path: str, profile: str, seed: int, preds: list[str], leo, a, extra: dict) -> list[dict]:
    """One trace-driven session per predictor on series ``s`` (read from ``path``)."""
    top = a.top_mbps or a.top_share * float(s.thr_mbps.mean())
    lad = Ladder.lasting(top, SESSION_S, a.chunk_s, seed)
    rows = []
    for p in preds:
        r = player.play(s, lad, predictors.for_series(p, s, path, leo), buffer_max_s=a.buffer_s)
        r.pop("chunks_log")
        rows.append({**r, "profile": profile, "seed": seed, "top_mbps": top, "top_share": top / float(s.thr_mbps.mean()),
                     "buffer_s": a.buffer_s, "chunk_s": a.chunk_s, "mode": "trace", **extra})
    return rows


def cmd_sim(a) -> int:
    rows = []
    preds = [p.strip() for p in a.predictors.split(",") if p.strip()]
    for p in preds:
        if p not in PREDICTORS:
            raise ValueError(f"unknown predictor {p!r} (known: {', '.join(PREDICTORS)})")
    if a.traces:
        # Given traces (e.g. the bundled ones, from `leocc eval --scenario video --engine sim`).
        for path in a.traces:
            profile = a.profile or _profile_of(path)
            leo = predictors.leo_model(profile, log=_log) if "leo" in preds else None
            rows += _sim_sessions(traces.load_trace(path), path, profile, 0, preds, leo, a, {"trace": path})
            _log(f"{path}: " + " ".join(f"{r['predictor']}={r['qoe']:.1f}" for r in rows[-len(preds) :]))
            if a.json:
                _write_json(a.json, rows)
    else:
        for profile in [p.strip() for p in a.profiles.split(",") if p.strip()]:
            leo = predictors.leo_model(profile, log=_log) if "leo" in preds else None
            for seed in a.seeds:
                path = traces.generate(profile, seed, a.duration, a.cache)
                rows += _sim_sessions(traces.load_trace(path), path, profile, seed, preds, leo, a, {})
                _log(f"{profile} seed {seed}: " + " ".join(f"{r['predictor']}={r['qoe']:.1f}" for r in rows[-len(preds) :]))
                if a.json:  # rewritten after every seed: an interrupted batch keeps what it finished
                    _write_json(a.json, rows)
    if not a.json:
        _write_json(None, rows)
    return 0


def _floats(text: str) -> list[float]:
    try:
        v = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of numbers: {text!r}") from None
    if not v or any(not (x > 0) for x in v):
        raise argparse.ArgumentTypeError(f"need positive numbers, got {text!r}")
    return v


def cmd_sensitivity(a) -> int:
    from . import sensitivity

    preds = [p.strip() for p in a.predictors.split(",") if p.strip()]
    for p in preds:
        if p not in PREDICTORS:
            raise ValueError(f"unknown predictor {p!r} (known: {', '.join(PREDICTORS)})")
    profiles = [p.strip() for p in a.profiles.split(",") if p.strip()]
    n = len(profiles) * len(a.seeds) * len(a.buffers) * len(a.top_shares) * len(set(preds) | {"harmonic"})
    _log(f"sensitivity: {len(profiles)} profiles x {len(a.seeds)} seeds x {len(a.buffers)} buffers x {len(a.top_shares)} ladder positions: {n} sessions")
    rows = sensitivity.run(profiles, a.seeds, a.buffers, a.top_shares, preds, a.chunk_s, a.duration, a.cache, a.workers, log=_log)
    os.makedirs(a.output, exist_ok=True)
    _write_json(os.path.join(a.output, "sessions.json"), rows)
    for p in preds:
        if p == "harmonic":
            continue
        svg = sensitivity.heatmap_svg(rows, p, f"{', '.join(profiles)}: {len(a.seeds)} generated traces each, {a.chunk_s:g} s chunks, {SESSION_S:g} s sessions")
        path = os.path.join(a.output, f"gain-{p}.svg")
        with open(path + ".tmp", "w") as f:
            f.write(svg)
        os.replace(path + ".tmp", path)
        print(sensitivity.markdown(rows, p) + "\n")
    _log(f"sensitivity: sessions and heatmaps in {a.output}")
    return 0


def cmd_plot(a) -> int:
    rows = []
    for path in a.inputs:
        with open(path) as f:
            d = json.load(f)
        rows.extend(d if isinstance(d, list) else [d])
    svg = plot.cdf_svg(rows, a.metric, a.group_by, a.title or f"CDF of {a.metric}")
    tmp = f"{a.output}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write(svg)
    os.replace(tmp, a.output)
    return 0


def cmd_table(a) -> int:
    rows = []
    for path in a.inputs:
        with open(path) as f:
            d = json.load(f)
        rows.extend(d if isinstance(d, list) else [d])
    print(plot.interval_markdown(rows, a.group_by) if a.intervals else plot.summary_markdown(rows, a.group_by))
    return 0


def _dash_args(p, play: bool = False) -> None:
    p.add_argument("--player", choices=("python", "dashjs"), default="python",
                   help="python: RobustMPC, nothing decoded (fast); dashjs: dash.js in headless Chromium on real H.264 segments [default: python]")
    p.add_argument("--live", action="store_true", help="dashjs: a live stream (dynamic MPD on the wall clock) instead of on demand")
    p.add_argument("--segment-s", type=float, default=2.0, help="dashjs: segment length, s (divides 20) [default: 2]")
    p.add_argument("--duration", type=float, default=60.0, help="dashjs: session length after the first frame, s [default: 60]")
    if play:
        from .dash import ABR_RULES

        p.add_argument("--abr", choices=sorted(ABR_RULES), default="dynamic",
                       help="dashjs: dash.js's ABR rule, or mpc: RobustMPC with --predictor as a dash.js rule [default: dynamic]")
        p.add_argument("--latency", type=float, default=3.0, help="dashjs --live: target live latency, s [default: 3]")
        p.add_argument("--snapshot", metavar="PNG", help="dashjs: write the last frame the player showed here")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="leocc-video", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve", help="HTTP video server (DASH-style ladder) over kernel TCP")
    s.add_argument("--host", default="0.0.0.0")
    s.add_argument("--port", type=int, default=DEFAULT_PORT)
    s.add_argument("--cc", help="TCP congestion control of the server's sockets (leocc, bbr, cubic, ...)")
    s.add_argument("--top-mbps", type=float, default=DEFAULT_TOP_MBPS, help=f"top rung in Mbit/s [default: {DEFAULT_TOP_MBPS:g}]")
    s.add_argument("--chunks", type=int, default=N_CHUNKS, help=f"4 s chunks [default: {N_CHUNKS} = 3 min]")
    s.add_argument("--seed", type=int, default=0, help="chunk-size jitter seed")
    s.add_argument("--verbose", action="store_true", help="log every request")
    _dash_args(s)
    p = sub.add_parser("play", help="stream once with RobustMPC and print the QoE")
    p.add_argument("--url", required=True, help="http://HOST:PORT of a `leocc-video serve`")
    p.add_argument("--predictor", choices=PREDICTORS, default="harmonic")
    p.add_argument("--profile", help="profile whose LEO model to use [default: from --trace name, else starlink-down]")
    p.add_argument("--trace", help="trace the path replays (needed by the oracle)")
    p.add_argument("--oracle-offset", type=float, default=0.0, help="trace time at client start, s")
    p.add_argument("--cc", help="TCP congestion control of the client socket")
    p.add_argument("--json", help="write the result here (atomically) instead of stdout")
    p.add_argument("--verbose", action="store_true", help="progress per chunk on stderr")
    p.add_argument("--top-mbps", type=float, default=DEFAULT_TOP_MBPS, help="the server's top rung (dashjs: to name the bitrates played)")
    _dash_args(p, play=True)
    e = sub.add_parser("emu", help="one session behind `leocc emu` (needs root); wrap in flock for reported runs")
    e.add_argument("--trace", required=True)
    e.add_argument("--cc", required=True, help="server congestion control: leocc, bbr, cubic")
    e.add_argument("--predictor", choices=PREDICTORS, default="harmonic")
    e.add_argument("--profile", help="LEO model profile [default: from the trace name]")
    e.add_argument("--top-mbps", type=float, help=f"top rung [default: {TOP_SHARE} x the trace's mean capacity]")
    e.add_argument("--chunks", type=int, default=N_CHUNKS, help=f"4 s chunks [default: {N_CHUNKS} = 3 min]")
    e.add_argument("--json", required=True)
    e.add_argument("--verbose", action="store_true")
    _dash_args(e, play=True)
    m = sub.add_parser("sim", help="trace-driven sessions over generated traces (fast, no TCP)")
    m.add_argument("--profiles", default="starlink-down,starlink-up,oneweb")
    m.add_argument("--seeds", type=parse_seeds, default=parse_seeds("101-120"), help="test trace seeds [default: 101-120]")
    m.add_argument("--predictors", default=",".join(PREDICTORS))
    m.add_argument("--traces", nargs="+", help="play these trace files instead of generated seeds")
    m.add_argument("--profile", help="LEO model profile for --traces [default: from each trace name]")
    m.add_argument("--duration", type=int, default=300, help="trace length, s [default: 300]")
    m.add_argument("--top-mbps", type=float, help="top rung, Mbit/s [default: --top-share x each trace's mean capacity]")
    m.add_argument("--top-share", type=float, default=TOP_SHARE, help=f"top rung as a share of each trace's mean capacity [default: {TOP_SHARE}]")
    m.add_argument("--buffer-s", type=float, default=60.0, help="the client's buffer target, s: Pensieve's 60, or a live stream's latency [default: 60]")
    m.add_argument("--chunk-s", type=float, default=4.0, help="chunk length, s (sessions last 180 s) [default: 4]")
    m.add_argument("--cache", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "leocc-ml-traces"))
    m.add_argument("--json", help="write all sessions here")
    v = sub.add_parser("sensitivity", help="where prediction matters: predictors over buffer target x ladder position (trace-driven)")
    v.add_argument("--profiles", default="starlink-down,oneweb")
    v.add_argument("--seeds", type=parse_seeds, default=parse_seeds("101-110"), help="test trace seeds [default: 101-110]")
    v.add_argument("--predictors", default="schedule,oracle", help="compared with harmonic, which always runs [default: schedule,oracle]")
    v.add_argument("--buffers", type=_floats, default=_floats("2,4,8,60"), help="buffer targets, s [default: 2,4,8,60]")
    v.add_argument("--top-shares", type=_floats, default=_floats("0.5,0.85,1.2,2"), help="the ladder's top as a share of the mean capacity [default: 0.5,0.85,1.2,2]")
    v.add_argument("--chunk-s", type=float, default=2.0, help="chunk length, s [default: 2]")
    v.add_argument("--duration", type=int, default=300, help="trace length, s [default: 300]")
    v.add_argument("--workers", type=int, default=2, help="processes [default: 2]")
    v.add_argument("--cache", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "leocc-ml-traces"))
    v.add_argument("-o", "--output", required=True, help="directory for sessions.json and one gain-PREDICTOR.svg per predictor")
    g = sub.add_parser("plot", help="CDF (SVG) of a metric over sessions from sim/play/emu JSON files")
    g.add_argument("inputs", nargs="+")
    g.add_argument("-o", "--output", required=True)
    g.add_argument("--metric", default="qoe")
    g.add_argument("--group-by", default="predictor", help="field naming the curves, or a+b [default: predictor]")
    g.add_argument("--title")
    t = sub.add_parser("table", help="markdown table of medians per group (QoE, bitrate, rebuffering, switches)")
    t.add_argument("inputs", nargs="+")
    t.add_argument("--group-by", default="profile+predictor", help="fields naming the rows [default: profile+predictor]")
    t.add_argument("--intervals", action="store_true", help="repeated runs: each metric as mean ± its 95 %% interval (Student's t)")
    a = ap.parse_args(argv)
    try:
        return {"serve": cmd_serve, "play": cmd_play, "emu": cmd_emu, "sim": cmd_sim, "sensitivity": cmd_sensitivity, "plot": cmd_plot, "table": cmd_table}[a.cmd](a)
    except (ValueError, OSError, RuntimeError) as err:
        print(f"leocc-video {a.cmd}: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
