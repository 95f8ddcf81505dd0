"""A whole testbed on one machine, on loopback: the head and nodes as separate processes
(`python -m leocc_testbed head|node`), nodes started one at a time (Ray refuses two joining at
once on one host), token authentication on. The tests and `leocc testbed bench` use it."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from leocc_testbed.proc import die_with_parent

REPO = Path(__file__).resolve().parents[3]
# The leocc binary nodes run: $LEOCC_BIN (set by `leocc testbed`), else the checkout's build.
LEOCC = Path(os.environ.get("LEOCC_BIN") or REPO / "target" / "release" / "leocc")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """The head now; nodes with add_node; everything stopped by stop()."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.nodes: dict[str, subprocess.Popen] = {}
        # The cluster's shared secret: Ray's token authentication, as docs/testbed.md sets it up.
        self.token = tmp / "token"
        self.token.write_text(secrets.token_hex(32))
        self.env = {
            **os.environ,
            "RAY_USAGE_STATS_ENABLED": "0",
            "LEOCC_TESTBED_NODE_DIR": str(tmp / "nodes"),
            "LEOCC_TESTBED_HOME": str(tmp / "home"),
            "LEOCC_TESTBED_TOKEN_FILE": str(self.token),
            "LEOCC_BIN": str(LEOCC),
        }
        os.environ.update(LEOCC_TESTBED_NODE_DIR=self.env["LEOCC_TESTBED_NODE_DIR"], RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(self.token))
        self.head = subprocess.Popen(
            [sys.executable, "-m", "leocc_testbed", "head", f"--port={self.port}", "--node-ip=127.0.0.1", f"--temp-dir={tmp / 'ray'}"],
            env=self.env, stdout=open(tmp / "head.log", "wb"), stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=die_with_parent,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or self.head.poll() is not None:
                    raise RuntimeError(f"the Ray head did not start: {(tmp / 'head.log').read_text()[-2000:]}")
                time.sleep(0.2)
        import ray

        ray.init(address=self.address, logging_level="ERROR", log_to_driver=False, namespace="leocc-testbed")

    def add_node(self, dish: str, *extra: str, role: str = "client") -> None:
        """A node for terminal `dish` (extra: `leocc testbed node` options); returns once it
        is in the cluster."""
        import ray

        log = open(self.tmp / f"node-{dish}.log", "ab")
        self.nodes[dish] = subprocess.Popen(
            [sys.executable, "-m", "leocc_testbed", "node", "--dish", dish, "--role", role, "--address", self.address,
             "--root", str(REPO), "--num-cpus", "1", "--node-ip", "127.0.0.1", *extra],
            env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=die_with_parent,
        )
        deadline = time.monotonic() + 90
        while f"dish:{dish}" not in ray.cluster_resources():
            if time.monotonic() > deadline or self.nodes[dish].poll() is not None:
                raise RuntimeError(f"node {dish} did not join: {(self.tmp / f'node-{dish}.log').read_text()[-2000:]}")
            time.sleep(0.2)

    def kill_node(self, dish: str) -> None:
        """The node goes down mid-job (its Ray processes with it)."""
        import ray

        p = self.nodes.pop(dish)
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=60)
        deadline = time.monotonic() + 60
        while f"dish:{dish}" in ray.cluster_resources() and time.monotonic() < deadline:
            time.sleep(0.2)

    def stop(self) -> None:
        import ray

        ray.shutdown()
        for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH"):
            os.environ.pop(k, None)
        for p in [*self.nodes.values(), self.head]:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in [*self.nodes.values(), self.head]:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)  # its own children die with it (PR_SET_PDEATHSIG)
                p.wait()
