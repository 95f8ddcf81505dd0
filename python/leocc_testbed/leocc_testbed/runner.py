"""What a node does for a run: wait for a trigger, run an experiment, watch the terminal.

Both run inside Ray tasks on the node that holds the job's terminal (orchestrator.py asks for
its resources), read the node's description (node.NodeConfig) and return plain dicts.

* An experiment is an argument vector of one of the project's tools, built from the job's
  checked arguments by its kind (experiments.py); never a shell string. `emu` runs kernel TCP
  with the chosen control through an emulated link in namespaces of its own (`leocc emu-run`);
  the kinds with a server (iperf3, quic, leotp, video) set their control per socket, and their
  server side runs on the server node as a `ServerSide` actor. Nothing privileged stays running.
* A trigger (`wait_trigger`) is the detector's own expression language, evaluated by the
  detector itself: a `leocc probe` of the run's own (its own run directory, not publishing to
  the kernel) probes the terminal's PoP in the terminal's namespace and runs its --exec when the
  expression holds, which here only writes the matched values to a file the task polls.
* Scavenger mode (`TrafficMonitor`): the terminal's interface counters, sampled every
  SAMPLE_S, less the experiment's own traffic, averaged over WINDOW_S. `sim` and `emu` do not
  use the terminal's interface; the kinds that do run under `leocc kernel traffic`, which counts
  their sockets' bytes in the kernel (a cgroup of their own with a BPF counter). Above the
  node's threshold an overhead experiment is not started, or is stopped (SIGTERM to its process
  group, SIGKILL after 1 s) and reported `aborted` with what it had written so far.
"""

from __future__ import annotations

import base64
import json
import shlex
import shutil
import subprocess
import tempfile
import time
from collections import deque
from pathlib import Path
from typing import Callable

from .experiments import KINDS
from .jobs import Job
from .node import NodeConfig, node_dir, write_text_atomic
from .proc import die_with_parent, stop_group

# Scavenger mode's sampling period and averaging window: a user's traffic is seen within
# WINDOW_S + SAMPLE_S (the bound is 2 s).
SAMPLE_S = 0.2
WINDOW_S = 1.0
# How often a trigger wait looks for the detector's firing (well under a probe interval).
TRIGGER_POLL_S = 0.005
# Bytes of an experiment's stderr kept in its result.
STDERR_TAIL = 4000
# Where `leocc kernel traffic` writes an experiment's own traffic in its run folder, and how
# often (well under SAMPLE_S, so a sample's own count is at most this stale).
OWN_TRAFFIC = "own-traffic.json"
OWN_EVERY_S = 0.05
# An Ethernet header: what the interface counts per packet beyond the IP packet.
ETHERNET_HEADER = 14


def argv(job: Job, cfg: NodeConfig, run_dir: Path, peer: dict | None = None, own: Path | None = None) -> list[str]:
    """The experiment's command on this node (`peer`: the server side's address, for the kinds
    that have one). A kind that crosses the terminal runs in the terminal's namespace; with
    `own`, in a cgroup that counts its own traffic into that file (`leocc kernel traffic`)."""
    kind = KINDS[job.experiment.kind]
    cmd = kind.client(job.experiment.args, cfg, peer, run_dir)
    if not kind.crosses_terminal:
        return cmd
    cmd = _in_netns(cfg, cmd)
    if own is not None:
        cmd = [cfg.leocc, "kernel", "traffic", "--out", str(own), "--every", f"{OWN_EVERY_S:g}", "--", *cmd]
    return cmd


def _in_netns(cfg: NodeConfig, cmd: list[str]) -> list[str]:
    return ["ip", "netns", "exec", cfg.netns, *cmd] if cfg.netns else cmd


class ServerSide:
    """The server node's side of a run (kinds with a server, experiments.py): a Ray actor that
    holds that node's `dish:NAME` for the run, starts the kind's server command in the node's
    namespace and answers once its socket listens, so the client never races it."""

    READY_TIMEOUT_S = 15.0
    READY_POLL_S = 0.02
    # A server that ends by itself (after one transfer) is given this long after the client.
    END_GRACE_S = 10.0

    def __init__(self, kind: str, server: str, args: dict):
        self.cfg = NodeConfig.load(server)
        if not self.cfg.serve_addr:
            raise RuntimeError(f"node {server} has no --serve-addr: it is not a server node")
        self.kind, self.args = KINDS[kind], args
        self.work = Path(tempfile.mkdtemp(prefix=f"leocc-testbed-{kind}-server-"))
        self.out = open(self.work / "output", "wb")
        self.proc = subprocess.Popen(
            _in_netns(self.cfg, self.kind.server.argv(args, self.cfg, self.work)),
            stdout=self.out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, preexec_fn=die_with_parent, start_new_session=True,
        )
        deadline = time.monotonic() + self.READY_TIMEOUT_S
        while not self._listening():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                why = self._output().strip().splitlines()
                self._stop()
                raise RuntimeError(f"{kind} server on {server} did not start listening on port {args['port']}: {' / '.join(why[-3:]) or 'no output'}")
            time.sleep(self.READY_POLL_S)

    def _listening(self) -> bool:
        flag = "-t" if self.kind.server.proto == "tcp" else "-u"
        out = subprocess.run(_in_netns(self.cfg, ["ss", "-H", "-l", "-n", flag, f"sport = :{self.args['port']}"]), capture_output=True, text=True).stdout
        return bool(out.strip())

    def _output(self) -> str:
        return (self.work / "output").read_text(errors="replace")

    def _stop(self) -> None:
        if self.proc.poll() is None:
            stop_group(self.proc)
        self.out.close()

    def address(self) -> dict:
        peer = {"addr": self.cfg.serve_addr, "port": self.args["port"], "node": self.cfg.host, "dish": self.cfg.dish}
        if self.kind.server.cert:
            peer["cert"] = base64.b64encode((self.work / self.kind.server.cert).read_bytes()).decode()
        return peer

    def finish(self) -> dict:
        """After the client: the server's end (waited for if it ends by itself) and its last words."""
        if self.kind.server.ends_itself:
            try:
                self.proc.wait(timeout=self.END_GRACE_S)
            except subprocess.TimeoutExpired:
                pass
        self._stop()
        res = {"exit_code": self.proc.returncode, "output_tail": self._output()[-STDERR_TAIL:]}
        shutil.rmtree(self.work, ignore_errors=True)
        return res


class TrafficMonitor:
    """The terminal's user traffic: bytes per second through its interface over the last
    WINDOW_S, less what the experiment's own sockets sent and received (`own`: the counts
    `leocc kernel traffic` writes, with the interface's link header added per segment).

    `own_of` names the count file of whichever run is going (None: none, or between runs): when
    it changes the window starts again, since one run's cumulative count must not be subtracted
    from another's bytes."""

    def __init__(self, cfg: NodeConfig, own_of: Callable[[], Path | None] = lambda: None):
        self.cfg = cfg
        self._own_of = own_of
        self.own: Path | None = None
        self.samples: deque[tuple[float, int]] = deque()
        self.latest: float | None = None
        self.header = self._link_header()

    def _link(self) -> dict:
        cmd = ["ip", "-s", "-j", "link", "show", "dev", self.cfg.iface]
        if self.cfg.netns:
            cmd[1:1] = ["-n", self.cfg.netns]
        return json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)[0]

    def _link_header(self) -> int:
        # The cgroup counter sees IP packets; the interface counts its link header too.
        return ETHERNET_HEADER if self._link().get("link_type") == "ether" else 0

    def _own_bytes(self) -> int:
        try:
            c = json.loads(self.own.read_text())
        except (OSError, ValueError, AttributeError):
            return 0  # not started yet (or no own traffic to count)
        return c["tx_bytes"] + c["rx_bytes"] + self.header * (c["tx_packets"] + c["rx_packets"])

    def _bytes(self) -> int:
        st = self._link()["stats64"]
        return int(st["rx"]["bytes"]) + int(st["tx"]["bytes"]) - self._own_bytes()

    def sample(self) -> float | None:
        """Take a sample; the rate in Mbit/s over the window, None until it spans WINDOW_S / 2."""
        now = time.monotonic()
        own = self._own_of()
        if own != self.own:
            self.own = own
            self.samples.clear()
        self.samples.append((now, self._bytes()))
        while len(self.samples) > 2 and now - self.samples[1][0] >= WINDOW_S:
            self.samples.popleft()
        (t0, b0), (t1, b1) = self.samples[0], self.samples[-1]
        if t1 - t0 < WINDOW_S / 2:
            return None
        self.latest = max(0.0, (b1 - b0) * 8 / (t1 - t0) / 1e6)
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
    scavenging = _scavenging(job, cfg)
    # Under scavenger mode a kind that crosses the terminal counts its own traffic here.
    own = run_dir / OWN_TRAFFIC if scavenging and KINDS[job.experiment.kind].crosses_terminal else None
    cmd = argv(job, cfg, run_dir, peer, own)
    result: dict = {"node": cfg.host, "dish": cfg.dish, "argv": cmd, "started": time.time(), "versions": cfg.versions}
    mon = TrafficMonitor(cfg, lambda: own) if scavenging else None
    if mon is not None:
        rate = _user_traffic_now(mon)
        if rate > cfg.scavenger_mbps:
            return {**result, "status": "aborted", "ended": time.time(), "abort": {"user_mbps": rate, "threshold_mbps": cfg.scavenger_mbps, "before_start": True}}
    out_path, err_path = run_dir / "stdout", run_dir / "stderr"
    marker = active_marker(cfg.dish)
    marker.parent.mkdir(parents=True, exist_ok=True)
    # The node's metrics read it while it is written.
    write_text_atomic(marker, json.dumps({"argv": cmd, "started": result["started"], "own_traffic": None if own is None else str(own)}))
    try:
        result = _run(job, cfg, cmd, result, mon, out_path, err_path)
    finally:
        marker.unlink(missing_ok=True)
    if own is not None and own.exists():
        result["own_traffic"] = json.loads(own.read_text())
    return result


def active_marker(dish: str) -> Path:
    """The file that says an experiment runs on the terminal (the node's metrics read it)."""
    return node_dir() / "active" / f"{dish}.json"


def active_own_traffic(dish: str) -> Path | None:
    """The count file of the experiment running on the terminal, if it counts its own traffic."""
    try:
        own = json.loads(active_marker(dish).read_text()).get("own_traffic")
    except (OSError, ValueError):
        return None  # no run, or its marker is being written
    return None if own is None else Path(own)


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
    kind = KINDS[job.experiment.kind]
    record = kind.record(stdout)
    result["record"] = record
    result["series"] = kind.series(stdout, out_path.parent)
    if abort is not None:
        result.update(status="aborted", abort=abort, partial_stdout=stdout[-STDERR_TAIL:])
    elif p.returncode == 0 and record is not None:
        result["status"] = "done"
    else:
        result["status"] = "failed"
        result["error"] = f"{' '.join(cmd[:2])} ... exited with {p.returncode}" + ("" if record else " and printed no record")
    return result


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
