"""What a node does for a run: wait for a trigger, run an experiment, watch the terminal.

Both run inside Ray tasks on the node that holds the job's terminal (orchestrator.py asks for
its resources), read the node's description (node.NodeConfig) and return plain dicts.

* An experiment is an argument vector of the node's `leocc` binary, built from the job's checked
  arguments (`argv`); never a shell string. `sim` runs the simulator; `emu` runs kernel TCP with
  the chosen control through an emulated link in network namespaces of its own (`leocc
  emu-run`), so the control is set per experiment in its own namespace (the sysctl is per
  namespace) and nothing privileged stays running.
* A trigger (`wait_trigger`) is the detector's own expression language, evaluated by the
  detector itself: a `leocc probe` of the run's own (its own run directory, not publishing to
  the kernel) probes the terminal's PoP in the terminal's namespace and runs its --exec when the
  expression holds, which here only writes the matched values to a file the task polls.
* Scavenger mode (`TrafficMonitor`): the terminal's interface counters, sampled every
  SAMPLE_S, less the experiment's own traffic (none for `sim` and `emu`, which do not use the
  terminal's interface), averaged over WINDOW_S. Above the node's threshold an overhead
  experiment is not started, or is stopped (SIGTERM to its process group, SIGKILL after 1 s)
  and reported `aborted` with what it had written so far.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from collections import deque
from pathlib import Path

from .jobs import Experiment, Job
from .node import NodeConfig, node_dir
from .proc import die_with_parent, stop_group

# Scavenger mode's sampling period and averaging window: a user's traffic is seen within
# WINDOW_S + SAMPLE_S (the bound is 2 s).
SAMPLE_S = 0.2
WINDOW_S = 1.0
# How often a trigger wait looks for the detector's firing (well under a probe interval).
TRIGGER_POLL_S = 0.005
# Bytes of an experiment's stderr kept in its result.
STDERR_TAIL = 4000


def argv(e: Experiment, cfg: NodeConfig, peer: dict | None = None) -> list[str]:
    """The experiment's command on this node (`peer`: the server side's address and port, for
    the kinds that have one)."""
    a = e.args
    if e.kind == "iperf3":
        cmd = ["iperf3", "-c", peer["addr"], "-p", str(peer["port"]), "-t", f"{a['duration_s']:g}", "-C", a["cc"], "-J"]
        if a["reverse"]:
            cmd.append("-R")
        return _in_netns(cfg, cmd)
    trace = str(Path(cfg.root, a["trace"])) if not os.path.isabs(a["trace"]) else a["trace"]
    common = ["--trace", trace, "--duration", f"{a['duration_s']:g}", "--queue", str(a["queue"]), "--loss", f"{a['loss']:g}", "--seed", str(a["seed"])]
    if e.kind == "sim":
        return [cfg.leocc, "sim", "--cc", a["cc"], *common, "--json"]
    if e.kind == "emu":
        return [cfg.leocc, "emu-run", "--flows", f"{a['cc']}@0-{a['duration_s']:g}", *common]
    raise ValueError(f"unknown experiment kind {e.kind}")


def _in_netns(cfg: NodeConfig, cmd: list[str]) -> list[str]:
    return ["ip", "netns", "exec", cfg.netns, *cmd] if cfg.netns else cmd


def iperf3_record(out: str) -> dict | None:
    """The fields of an eval record that iperf3's JSON report gives (None if it has none)."""
    try:
        r = json.loads(out)
        end = r["end"]
        secs = end["sum_received"]["seconds"] or 1.0
        rec = {
            "throughput_mbps": end["sum_received"]["bits_per_second"] / 1e6,
            "duration_s": secs,
            "retransmits": end["sum_sent"].get("retransmits"),
            "cc": end.get("sender_tcp_congestion") or end.get("receiver_tcp_congestion"),
            "iperf3": {"start": r.get("start", {}).get("test_start"), "end": end},
        }
        sender = end["streams"][0].get("sender", {})
        if "mean_rtt" in sender:  # Linux's smoothed RTT of the sending socket, µs
            rec["rtt_avg_ms"], rec["rtt_max_ms"] = sender["mean_rtt"] / 1e3, sender.get("max_rtt", 0) / 1e3
        return rec
    except (json.JSONDecodeError, KeyError, IndexError, TypeError):
        return None


class IperfServer:
    """The server side of an `iperf3` experiment, on the server node (a Ray actor holding that
    node's `dish:NAME` for the run): `iperf3 -s -1` (one test, then it exits) in the node's
    namespace, listening before `address` returns."""

    LISTEN_TIMEOUT_S = 10.0

    def __init__(self, server: str, port: int):
        self.cfg = NodeConfig.load(server)
        if not self.cfg.serve_addr:
            raise RuntimeError(f"node {server} has no --serve-addr: it is not a server node")
        self.port = port
        self.proc = subprocess.Popen(
            _in_netns(self.cfg, ["iperf3", "-s", "-1", "-p", str(port), "--forceflush"]),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
            preexec_fn=die_with_parent, start_new_session=True,
        )
        deadline = time.monotonic() + self.LISTEN_TIMEOUT_S
        self.lines: list[str] = []
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.lines.append(line.rstrip())
            if "listening" in line.lower():
                return
        stop_group(self.proc)
        raise RuntimeError(f"iperf3 -s on {server} did not start listening: {' / '.join(self.lines[-3:]) or 'no output'}")

    def address(self) -> dict:
        return {"addr": self.cfg.serve_addr, "port": self.port, "node": self.cfg.host, "dish": self.cfg.dish}

    def finish(self, timeout_s: float = 10.0) -> dict:
        """After the client's test: the server's exit (it ends after one test) and its last words."""
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            pass
        if self.proc.poll() is None:
            stop_group(self.proc)
        rest = self.proc.stdout.read() if self.proc.stdout else ""
        return {"exit_code": self.proc.returncode, "output_tail": ("\n".join(self.lines) + rest)[-STDERR_TAIL:]}


class TrafficMonitor:
    """Bytes per second through the terminal's interface over the last WINDOW_S."""

    def __init__(self, cfg: NodeConfig):
        self.cfg = cfg
        self.samples: deque[tuple[float, int]] = deque()
        self.latest: float | None = None

    def _bytes(self) -> int:
        iface, ns = self.cfg.iface, self.cfg.netns
        if ns:
            out = subprocess.run(["ip", "-n", ns, "-s", "-j", "link", "show", "dev", iface], capture_output=True, text=True, check=True).stdout
            st = json.loads(out)[0]["stats64"]
            return int(st["rx"]["bytes"]) + int(st["tx"]["bytes"])
        base = Path("/sys/class/net", iface, "statistics")
        return int((base / "rx_bytes").read_text()) + int((base / "tx_bytes").read_text())

    def sample(self) -> float | None:
        """Take a sample; the rate in Mbit/s over the window, None until it spans WINDOW_S / 2."""
        now = time.monotonic()
        self.samples.append((now, self._bytes()))
        while len(self.samples) > 2 and now - self.samples[1][0] >= WINDOW_S:
            self.samples.popleft()
        (t0, b0), (t1, b1) = self.samples[0], self.samples[-1]
        if t1 - t0 < WINDOW_S / 2:
            return None
        self.latest = (b1 - b0) * 8 / (t1 - t0) / 1e6
        return self.latest


def _scavenging(job: Job, cfg: NodeConfig) -> bool:
    return job.overhead and cfg.scavenger_mbps is not None and cfg.iface is not None


def _user_traffic_now(mon: TrafficMonitor) -> float:
    """Measure for one window and return the rate."""
    rate = None
    while rate is None:
        rate = mon.sample()
        if rate is None:
            time.sleep(SAMPLE_S)
    return rate


def execute(job: Job, cfg: NodeConfig, run_dir: Path, peer: dict | None = None) -> dict:
    """Run the job's experiment; the result dict always has status (done, failed, aborted)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    cmd = argv(job.experiment, cfg, peer)
    result: dict = {"node": cfg.host, "dish": cfg.dish, "argv": cmd, "started": time.time(), "versions": cfg.versions}
    mon = TrafficMonitor(cfg) if _scavenging(job, cfg) else None
    if mon is not None:
        rate = _user_traffic_now(mon)
        if rate > cfg.scavenger_mbps:
            return {**result, "status": "aborted", "ended": time.time(), "abort": {"user_mbps": rate, "threshold_mbps": cfg.scavenger_mbps, "before_start": True}}
    out_path, err_path = run_dir / "stdout", run_dir / "stderr"
    marker = active_marker(cfg.dish)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps({"argv": cmd, "started": result["started"]}))
    try:
        return _run(job, cfg, cmd, result, mon, out_path, err_path)
    finally:
        marker.unlink(missing_ok=True)


def active_marker(dish: str) -> Path:
    """The file that says an experiment runs on the terminal (the node's metrics read it)."""
    return node_dir() / "active" / f"{dish}.json"


def _run(job: Job, cfg: NodeConfig, cmd: list[str], result: dict, mon, out_path: Path, err_path: Path) -> dict:
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, preexec_fn=die_with_parent, start_new_session=True)
        abort = None
        try:
            while p.poll() is None:
                time.sleep(SAMPLE_S)
                if mon is None:
                    continue
                rate = mon.sample()
                if rate is not None and rate > cfg.scavenger_mbps:
                    abort = {"user_mbps": rate, "threshold_mbps": cfg.scavenger_mbps, "detected": time.time()}
                    stop_group(p)
                    abort["stopped"] = time.time()
                    break
        finally:
            if p.poll() is None:
                stop_group(p)
    result["ended"] = time.time()
    result["exit_code"] = p.returncode
    stdout = out_path.read_text(errors="replace")
    result["stderr_tail"] = err_path.read_text(errors="replace")[-STDERR_TAIL:]
    record = iperf3_record(stdout) if job.experiment.kind == "iperf3" else _last_json_line(stdout)
    result["record"] = record
    if abort is not None:
        result.update(status="aborted", abort=abort, partial_stdout=stdout[-STDERR_TAIL:])
    elif p.returncode == 0 and record is not None:
        result["status"] = "done"
    else:
        result["status"] = "failed"
        result["error"] = f"{' '.join(cmd[:2])} ... exited with {p.returncode}" + ("" if record else " and printed no record")
    return result


def _last_json_line(out: str) -> dict | None:
    """The record a `leocc` command prints: its last line that is a JSON object."""
    for line in reversed(out.splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                pass
    return None


def wait_trigger(job: Job, cfg: NodeConfig) -> dict:
    """Wait until the job's trigger expression holds on the terminal's probe stream, or its
    timeout passes: {fired: bool, at, values (LEOCC_* of the firing), waited_s}."""
    if not cfg.pop:
        raise RuntimeError(f"terminal {cfg.dish}: the node has no PoP to probe (leocc testbed node --pop ADDR) for trigger jobs")
    work = Path(tempfile.mkdtemp(prefix="leocc-testbed-trigger-"))
    fired = work / "fired"
    cmd = [cfg.leocc, "probe", "--pop", cfg.pop, "--no-kernel", "--quiet", "--run-dir", str(work / "run"), "--log", str(work / "events.jsonl"),
           "--trigger", job.schedule.when, "--exec", f"env > {shlex.quote(str(fired))}.tmp && mv {shlex.quote(str(fired))}.tmp {shlex.quote(str(fired))}",
           "--trigger-every", "3600"]
    if cfg.netns:
        cmd = ["ip", "netns", "exec", cfg.netns, *cmd]
    start = time.time()
    deadline = time.monotonic() + job.schedule.timeout_s
    with open(work / "stderr", "wb") as err:
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL, preexec_fn=die_with_parent, start_new_session=True)
    try:
        while time.monotonic() < deadline:
            if fired.exists():
                at, at_mono_ms = time.time(), time.monotonic() * 1000
                values = {}
                for line in fired.read_text().splitlines():
                    k, _, v = line.partition("=")
                    if k.startswith("LEOCC_"):
                        values[k] = v
                return {"fired": True, "at": at, "at_mono_ms": at_mono_ms, "values": values, "waited_s": at - start, "events": _events(work / "events.jsonl")}
            if p.poll() is not None:
                why = (work / "stderr").read_text(errors="replace").strip().splitlines()
                raise RuntimeError(f"the trigger's detector exited with {p.returncode}: {why[-1] if why else 'no message'}")
            time.sleep(TRIGGER_POLL_S)
        return {"fired": False, "waited_s": time.time() - start}
    finally:
        if p.poll() is None:
            stop_group(p)
        shutil.rmtree(work, ignore_errors=True)


def _events(path: Path) -> list[dict]:
    """The detector's reconfiguration events so far (the trigger's evidence)."""
    try:
        return [e for e in (json.loads(l) for l in path.read_text().splitlines() if l.strip()) if e.get("type") == "reconfig"]
    except (OSError, json.JSONDecodeError):
        return []
