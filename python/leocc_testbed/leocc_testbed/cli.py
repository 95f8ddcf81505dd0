"""`leocc testbed ...` (the leocc binary runs `python -m leocc_testbed` with the same arguments)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

from . import jobs as jobs_mod
from .node import ROLES, NodeConfig, node_versions, run_head, run_node
from .store import Store

HOME_ENV = "LEOCC_TESTBED_HOME"
TOKEN_ENV = "LEOCC_TESTBED_TOKEN_FILE"


def _use_token(args) -> None:
    """Ray's token authentication (Ray 2.52 and later): every process of the cluster, and every
    client, must present the token in the file; set before anything talks to Ray."""
    path = args.token_file or os.environ.get(TOKEN_ENV)
    if not path:
        return
    p = Path(path)
    try:
        ok = bool(p.read_text().strip())
    except OSError as e:
        raise RuntimeError(f"{p}: cannot read the token file ({e.strerror})") from None
    if not ok:
        raise RuntimeError(f"{p}: the token file is empty")
    os.environ["RAY_AUTH_MODE"] = "token"
    os.environ["RAY_AUTH_TOKEN_PATH"] = str(p.resolve())


def _home(args) -> Path:
    return Path(args.home or os.environ.get(HOME_ENV) or Path.home() / ".leocc-testbed")


def _store(args) -> Store:
    return Store(_home(args) / "state.db")


def _fmt_time(t: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) if t else "-"


def cmd_submit(args) -> int:
    st = _store(args)
    for path in args.job:
        job = jobs_mod.load(path)
        due = jobs_mod.first_due(job)
        jid = st.add_job(job, due)
        print(f"job {job.name} (id {jid}): {job.experiment.kind} on {job.dish}, {job.schedule.kind}; first run due {_fmt_time(due)}")
    return 0


def cmd_check(args) -> int:
    for path in args.job:
        job = jobs_mod.load(path)
        print(f"{path}: ok: {job.experiment.kind} {json.dumps(job.experiment.args, sort_keys=True)} on {job.dish}, {job.schedule.kind}")
    return 0


def cmd_cancel(args) -> int:
    if not _store(args).cancel(args.name):
        raise SystemExit(f"leocc testbed cancel: no job named {args.name}")
    print(f"job {args.name} cancelled (a run in progress finishes)")
    return 0


def cmd_status(args) -> int:
    st = _store(args)
    rows = st.jobs()
    if args.json:
        out = []
        for jid, name, state, slots in rows:
            runs = st.runs("job_id = ?", (jid,))
            out.append({"job": name, "state": state, "slots": slots, "runs": [r.__dict__ | {"result": None} for r in runs]})
        print(json.dumps(out, indent=1))
        return 0
    if not rows:
        print("no jobs (leocc testbed submit JOB.toml)")
        return 0
    print(f"{'job':<28} {'state':<10} {'kind':<8} {'dish':<12} {'runs: done/failed/aborted/open':<32} next due")
    for jid, name, state, _ in rows:
        job, _, _ = st.job(jid)
        runs = st.runs("job_id = ?", (jid,))
        count = lambda *s: sum(r.state in s for r in runs)  # noqa: E731
        nxt = min((r.due for r in runs if r.state == "queued"), default=None)
        tally = f"{count('done')}/{count('failed')}/{count('aborted')}/{count('queued', 'watching', 'running')}"
        print(f"{name:<28} {state:<10} {job.schedule.kind:<8} {job.dish:<12} {tally:<32} {_fmt_time(nxt)}")
    return 0


def cmd_results(args) -> int:
    path = _home(args) / "results" / "results.jsonl" if args.out is None else Path(args.out) / "results.jsonl"
    if not path.exists():
        print(f"no results yet ({path})")
        return 0
    rows = [json.loads(l) for l in path.read_text().splitlines() if l.strip()]
    if args.json:
        for r in rows:
            print(json.dumps(r, sort_keys=True))
        return 0
    print(f"{'job':<28} {'run':>5} {'kind':<7} {'status':<9} {'dish':<12} {'node':<14} {'started':<19} {'Mbit/s':>8} {'p95 RTT ms':>10}")
    for r in rows:
        tb = r["testbed"]
        thr = r.get("throughput_mbps")
        p95 = r.get("rtt_p95_ms")
        print(
            f"{tb['job']:<28} {tb['run']:>5} {tb['experiment']['kind']:<7} {tb['status']:<9} {tb['dish']:<12} {str(tb.get('node') or '-'):<14} "
            f"{_fmt_time(tb.get('started')):<19} {'-' if thr is None else f'{thr:.1f}':>8} {'-' if p95 is None else f'{p95:.1f}':>10}"
        )
    return 0


def cmd_serve(args) -> int:
    from .orchestrator import Orchestrator

    home = _home(args)
    out = Path(args.out) if args.out else home / "results"
    st = _store(args)
    orch = Orchestrator(st, args.address, out)
    if args.metrics:
        from .metrics import orchestrator_metrics, serve

        srv = serve(args.metrics, lambda: orchestrator_metrics(st.path))
        print(f"testbed: metrics at http://{srv.server_address[0]}:{srv.server_address[1]}/metrics", file=sys.stderr, flush=True)
    print(f"testbed: serving {home / 'state.db'} on the Ray cluster at {args.address}; results in {out / 'results.jsonl'}", file=sys.stderr, flush=True)
    deadline = time.monotonic() + args.duration if args.duration else None

    def stop() -> bool:
        if deadline is not None and time.monotonic() >= deadline:
            return True
        return args.until_idle and all(state != "active" for _, _, state, _ in st.jobs())

    try:
        orch.serve(stop=stop)
    except KeyboardInterrupt:
        pass
    return 0


def cmd_node(args) -> int:
    leocc = args.leocc or os.environ.get("LEOCC_BIN") or shutil.which("leocc")
    if not leocc:
        raise SystemExit("leocc testbed node: no leocc binary (put it on PATH or pass --leocc)")
    ray_bin = _ray_bin(args)
    if (args.scavenger_mbps is None) != (args.iface is None):
        raise SystemExit("leocc testbed node: --scavenger-mbps and --iface go together (the interface whose user traffic is measured)")
    cfg = NodeConfig(
        dish=jobs_mod.check_name(args.dish, "--dish", "a terminal's name"),
        role=args.role, leocc=os.path.abspath(leocc), root=os.path.abspath(args.root), versions=node_versions(os.path.abspath(leocc)),
        netns=args.netns, pop=args.pop, iface=args.iface, scavenger_mbps=args.scavenger_mbps, serve_addr=args.serve_addr,
    )
    if args.role == "server" and not args.serve_addr:
        raise SystemExit("leocc testbed node: a server node needs --serve-addr (the address clients reach it at)")
    return run_node(cfg, args.address, ray_bin, args.num_cpus, args.node_ip, args.metrics)


def _ray_bin(args) -> str:
    return args.ray or str(Path(sys.executable).with_name("ray"))


def cmd_head(args) -> int:
    return run_head(args.port, _ray_bin(args), args.node_ip, args.temp_dir)


def cmd_bench(args) -> int:
    from .bench import run

    return run(args.jobs, args.terminals, args.spread, args.seed)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="leocc testbed",
        description="A LEOScope-like testbed on a Ray cluster: nodes behind terminals and in the cloud, jobs on one-off, cron and "
        "trigger schedules, one experiment per terminal at a time, scavenger mode. docs/testbed.md",
    )
    p.add_argument("--home", help=f"state (state.db) and results folder [default: ${HOME_ENV} or ~/.leocc-testbed]")
    p.add_argument(
        "--token-file",
        help=f"the cluster's shared secret: Ray token authentication for head, nodes and orchestrator alike (docs/testbed.md) [default: ${TOKEN_ENV}; none]",
    )
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")

    s = sub.add_parser("head", help="start the cluster's head (Ray's GCS; no experiments run on it), until killed")
    s.add_argument("--port", type=int, default=6379, help="the port nodes join at [default: 6379]")
    s.add_argument("--node-ip", help="the address nodes reach the head at [default: Ray's choice]")
    s.add_argument("--temp-dir", help="Ray's session folder [default: Ray's, /tmp/ray]")
    s.add_argument("--ray", help="the ray command [default: the one beside this Python]")
    s.set_defaults(fn=cmd_head)

    s = sub.add_parser("node", help="join the cluster as the node of one terminal (or a server), until killed")
    s.add_argument("--dish", required=True, help="the terminal's name (jobs name it with dish = ...)")
    s.add_argument("--role", required=True, choices=ROLES)
    s.add_argument("--address", required=True, help="the Ray head's HOST:PORT")
    s.add_argument("--netns", help="the network namespace experiments run in (an emulated terminal's client side, or a server's side)")
    s.add_argument("--serve-addr", help="a server node: the address clients' iperf3 reaches it at")
    s.add_argument("--pop", help="the PoP address the detector probes for trigger jobs (e.g. 100.64.0.1)")
    s.add_argument("--iface", help="the terminal's interface, watched by scavenger mode")
    s.add_argument("--scavenger-mbps", type=float, help="user traffic above this (Mbit/s, over 1 s) stops overhead experiments")
    s.add_argument("--root", default=".", help="where relative trace paths of jobs resolve [default: .]")
    s.add_argument("--leocc", help="the leocc binary experiments run [default: $LEOCC_BIN, else leocc on PATH]")
    s.add_argument("--ray", help="the ray command [default: the one beside this Python]")
    s.add_argument("--num-cpus", type=int, help="CPUs the node offers Ray [default: Ray's count]")
    s.add_argument("--node-ip", help="the address other nodes reach this one at [default: Ray's choice]")
    s.add_argument("--metrics", metavar="HOST:PORT", help="serve the terminal's state (experiment running, user traffic) in Prometheus' format")
    s.set_defaults(fn=cmd_node)

    s = sub.add_parser("serve", help="the orchestrator: hand due runs to Ray and record results, until interrupted")
    s.add_argument("--address", required=True, help="the Ray head's HOST:PORT")
    s.add_argument("--out", help="results folder [default: HOME/results]")
    s.add_argument("--duration", type=float, help="stop after this many seconds [default: run until interrupted]")
    s.add_argument("--until-idle", action="store_true", help="stop once no job is active (every submitted schedule has ended)")
    s.add_argument("--metrics", metavar="HOST:PORT", help="serve jobs and runs by state in Prometheus' format")
    s.set_defaults(fn=cmd_serve)

    s = sub.add_parser("submit", help="check and store jobs (TOML files); the orchestrator runs them when due")
    s.add_argument("job", nargs="+")
    s.set_defaults(fn=cmd_submit)

    s = sub.add_parser("check", help="check job files without submitting them")
    s.add_argument("job", nargs="+")
    s.set_defaults(fn=cmd_check)

    s = sub.add_parser("cancel", help="cancel a job (its queued runs go; a running one finishes)")
    s.add_argument("name")
    s.set_defaults(fn=cmd_cancel)

    s = sub.add_parser("status", help="jobs, their runs and what is due next")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_status)

    s = sub.add_parser("bench", help="a randomized schedule on a whole local cluster: overlaps per terminal and scheduling overhead")
    s.add_argument("--jobs", type=int, default=100, help="one-off jobs [default: 100]")
    s.add_argument("--terminals", type=int, default=3, help="terminals, one node each [default: 3]")
    s.add_argument("--spread", type=float, default=30.0, help="due times spread over this many seconds [default: 30]")
    s.add_argument("--seed", type=int, default=1)
    s.set_defaults(fn=cmd_bench)

    s = sub.add_parser("results", help="the finished runs (HOME/results/results.jsonl)")
    s.add_argument("--out", help="a results folder other than HOME/results")
    s.add_argument("--json", action="store_true", help="the rows as JSON lines")
    s.set_defaults(fn=cmd_results)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        _use_token(args)
        return args.fn(args)
    except (jobs_mod.SpecError, ValueError, RuntimeError) as e:
        print(f"leocc testbed {args.cmd}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
