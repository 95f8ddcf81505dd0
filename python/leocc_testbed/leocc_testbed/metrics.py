"""The testbed's state in Prometheus' text format: the orchestrator's jobs and runs
(`leocc testbed serve --metrics ADDR`) and a node's terminal (`leocc testbed node --metrics
ADDR`). Served by a thread of the process, from a function called at each scrape."""

from __future__ import annotations

import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Iterable

# One metric: name, type, help, and its samples as (labels, value).
Metric = tuple[str, str, str, Iterable[tuple[dict[str, str], float]]]


def _value(v: float) -> str:
    return "NaN" if isinstance(v, float) and math.isnan(v) else repr(float(v))


def _labels(labels: dict[str, str]) -> str:
    if not labels:
        return ""
    esc = lambda s: str(s).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')  # noqa: E731
    return "{" + ",".join(f'{k}="{esc(v)}"' for k, v in sorted(labels.items())) + "}"


def render(metrics: Iterable[Metric]) -> str:
    """The exposition (text format 0.0.4)."""
    out = []
    for name, kind, help_text, samples in metrics:
        out.append(f"# HELP {name} {help_text}\n# TYPE {name} {kind}")
        out.extend(f"{name}{_labels(l)} {_value(v)}" for l, v in samples)
    return "\n".join(out) + "\n"


def serve(address: str, collect: Callable[[], Iterable[Metric]]) -> ThreadingHTTPServer:
    """Serve GET /metrics at HOST:PORT in a daemon thread; returns the server (its
    server_address has the port chosen for port 0)."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"--metrics {address}: expected HOST:PORT, e.g. 127.0.0.1:9465")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            if self.path != "/metrics":
                self.send_error(404, "only /metrics is served here")
                return
            try:
                body = render(collect()).encode()
            except Exception as e:  # a scrape must not take the process down
                self.send_error(500, f"collecting the metrics failed: {e}")
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_):
            pass

    try:
        srv = ThreadingHTTPServer((host.strip("[]"), int(port)), Handler)
    except OSError as e:
        raise ValueError(f"--metrics {address}: cannot listen ({e.strerror})") from None
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, name="metrics", daemon=True).start()
    return srv


def orchestrator_metrics(db_path) -> list[Metric]:
    """Jobs and runs by state, open runs per terminal, and how overdue the oldest due run is."""
    import time

    from .store import Store

    st = Store(db_path)  # a connection of the scraping thread's own (SQLite's rule)
    try:
        sm = st.summary()
    finally:
        st.close()
    oldest, now = sm["oldest_due"], time.time()
    return [
        ("leocc_testbed_jobs", "gauge", "Jobs by state.", [({"state": s}, n) for s, n in sm["jobs"].items()]),
        ("leocc_testbed_runs", "gauge", "Runs by state (every attempt of every slot).", [({"state": s}, n) for s, n in sm["runs"].items()]),
        ("leocc_testbed_open_runs", "gauge", "Runs queued, waiting for a trigger or running, per terminal.", [({"dish": d, "state": s}, n) for (d, s), n in sorted(sm["open"].items())]),
        ("leocc_testbed_oldest_due_seconds", "gauge", "How long the oldest due run has waited (0: none waits).", [({}, max(0.0, now - oldest) if oldest is not None and oldest <= now else 0.0)]),
    ]


def node_metrics(cfg, monitor, active_path) -> list[Metric]:
    """A node's terminal: who it is, whether an experiment runs on it, its owner's traffic."""
    rate = monitor.latest if monitor is not None else float("nan")
    return [
        ("leocc_testbed_node_info", "gauge", "The node's terminal and role (value 1).", [({"dish": cfg.dish, "role": cfg.role, "host": cfg.host}, 1)]),
        ("leocc_testbed_experiment_running", "gauge", "1 while an experiment runs on the terminal.", [({"dish": cfg.dish}, 1 if active_path.exists() else 0)]),
        ("leocc_testbed_user_traffic_mbps", "gauge", "Traffic through the terminal's interface over the last second, less a running experiment's own, Mbit/s (NaN: not watched).", [({"dish": cfg.dish}, float("nan") if rate is None else rate)]),
        ("leocc_testbed_scavenger_threshold_mbps", "gauge", "User traffic above which overhead experiments stop, Mbit/s (NaN: scavenger mode off).", [({"dish": cfg.dish}, float("nan") if cfg.scavenger_mbps is None else cfg.scavenger_mbps)]),
    ]
