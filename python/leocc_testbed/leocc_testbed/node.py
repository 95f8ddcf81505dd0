"""A testbed node: one machine behind one terminal (a client) or in the cloud (a server).

`leocc testbed node --dish NAME --role client --address HEAD` writes the node's description
(NodeConfig) where the tasks Ray runs on it find it, then runs `ray start --block` joined to the
head with the node's custom resources:

* `dish:NAME` = 1 - an experiment holds it while it runs, so two never overlap on a terminal;
* `at:NAME` = 1000 - what a trigger's wait holds: it pins the wait to the node without taking
  the terminal (many waits, one experiment at a time);
* `role:client` or `role:server` = 1.

The node's process owns `ray start` and everything it spawned: killing the node (SIGTERM,
SIGINT, or its death) takes its Ray processes with it, and the head then sees the node dead and
fails its tasks (the orchestrator retries them).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from .proc import die_with_parent

NODE_DIR_ENV = "LEOCC_TESTBED_NODE_DIR"
DEFAULT_NODE_DIR = "/run/leocc-testbed"
ROLES = ("client", "server")
# Capacity of the pinning resource `at:NAME`: more trigger waits than any job list holds.
WAIT_SLOTS = 1000


def node_versions(leocc: str) -> dict:
    """leocc, Ray, Python and the kernel of this machine, taken once when the node joins."""
    import platform

    try:
        out = subprocess.run([leocc, "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
    except OSError as e:
        out = f"unavailable ({e.strerror})"
    try:
        import ray

        ray_version = ray.__version__
    except ImportError:
        ray_version = None
    return {"leocc": out, "ray": ray_version, "python": platform.python_version(), "kernel": platform.release()}


def write_text_atomic(path: Path, text: str) -> None:
    """Writes `path` through a temporary beside it, so a reader never sees it half written."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def node_dir() -> Path:
    """Where node descriptions live: $LEOCC_TESTBED_NODE_DIR, else /run/leocc-testbed."""
    return Path(os.environ.get(NODE_DIR_ENV, DEFAULT_NODE_DIR))


@dataclass(frozen=True)
class NodeConfig:
    """What a node's tasks need to know about it."""

    dish: str
    role: str
    leocc: str  # the leocc binary experiments run
    root: str  # relative trace paths of jobs resolve here
    host: str = socket.gethostname()
    netns: str | None = None  # the terminal's network namespace (an emulated terminal's client side)
    pop: str | None = None  # the PoP address the detector probes (for trigger jobs)
    iface: str | None = None  # the terminal's interface, whose traffic scavenger mode watches
    scavenger_mbps: float | None = None  # user traffic above this stops overhead experiments
    serve_addr: str | None = None  # a server node: the address clients reach its experiments at
    versions: dict | None = None  # the software its results come from (node_versions)

    def save(self, directory: Path | None = None) -> Path:
        d = directory or node_dir()
        d.mkdir(parents=True, exist_ok=True)
        path = d / f"{self.dish}.json"
        write_text_atomic(path, json.dumps(asdict(self), indent=1))
        return path

    @classmethod
    def load(cls, dish: str, directory: Path | None = None) -> "NodeConfig":
        path = (directory or node_dir()) / f"{dish}.json"
        try:
            return cls(**json.loads(path.read_text()))
        except FileNotFoundError:
            raise RuntimeError(f"{path}: no node for terminal {dish} on {socket.gethostname()} (leocc testbed node --dish {dish} writes it)") from None

    def resources(self) -> dict[str, float]:
        return {f"dish:{self.dish}": 1, f"at:{self.dish}": WAIT_SLOTS, f"role:{self.role}": 1}


def run_node(cfg: NodeConfig, address: str, ray_bin: str, num_cpus: int | None, node_ip: str | None, metrics: str | None = None) -> int:
    """Join the cluster and serve until killed; returns ray's exit status. With `metrics`
    (HOST:PORT) the node serves its terminal's state in Prometheus' format."""
    path = cfg.save()
    if metrics:
        _serve_node_metrics(cfg, metrics)
    argv = [ray_bin, "start", "--block", f"--address={address}", "--disable-usage-stats", f"--resources={json.dumps(cfg.resources())}"]
    if num_cpus is not None:
        argv.append(f"--num-cpus={num_cpus}")
    if node_ip:
        argv.append(f"--node-ip-address={node_ip}")
    print(f"testbed node: terminal {cfg.dish} ({cfg.role}) joining {address}; description in {path}", file=sys.stderr, flush=True)
    try:
        return run_ray(argv, {NODE_DIR_ENV: str(path.parent)})
    finally:
        path.unlink(missing_ok=True)


def _serve_node_metrics(cfg: NodeConfig, address: str) -> None:
    import threading
    import time

    from .metrics import node_metrics, serve
    from .runner import SAMPLE_S, TrafficMonitor, active_marker, active_own_traffic

    # The experiment's own traffic is left out here as scavenger mode leaves it out.
    monitor = TrafficMonitor(cfg, lambda: active_own_traffic(cfg.dish)) if cfg.iface else None
    if monitor is not None:

        def sample_forever():
            while True:
                try:
                    monitor.sample()
                except (OSError, subprocess.SubprocessError, ValueError, KeyError):
                    monitor.latest = None  # the interface is gone; say so, keep trying
                time.sleep(SAMPLE_S)

        threading.Thread(target=sample_forever, name="traffic", daemon=True).start()
    srv = serve(address, lambda: node_metrics(cfg, monitor, active_marker(cfg.dish)))
    print(f"testbed node: metrics at http://{srv.server_address[0]}:{srv.server_address[1]}/metrics", file=sys.stderr, flush=True)


def run_head(port: int, ray_bin: str, node_ip: str | None, temp_dir: str | None) -> int:
    """The cluster's head (no CPUs: experiments run on nodes only), until killed."""
    argv = [ray_bin, "start", "--head", "--block", f"--port={port}", "--num-cpus=0", "--include-dashboard=false", "--disable-usage-stats"]
    if node_ip:
        argv.append(f"--node-ip-address={node_ip}")
    if temp_dir:
        argv.append(f"--temp-dir={temp_dir}")
    print(f"testbed head: port {port}; nodes join with --address {node_ip or 'THIS_HOST'}:{port}", file=sys.stderr, flush=True)
    return run_ray(argv, {})


def run_ray(argv: list[str], env: dict[str, str]) -> int:
    """`ray start --block ...` as this process's child, its whole process group stopped when
    this process is told to stop (SIGTERM, SIGINT) or dies."""
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", **env}
    child = subprocess.Popen(argv, env=env, preexec_fn=die_with_parent, start_new_session=True)

    def stop(signum, _frame):
        try:
            os.killpg(child.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        return child.wait()
    finally:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
