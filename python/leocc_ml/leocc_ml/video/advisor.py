"""The local side of a dash.js session: the page, dash.js, and RobustMPC as a dash.js rule.

Chromium opens the player page from this server (on the client's loopback), not from the video
server across the path under test: the page and dash.js are the player, not the video, and must
not cost the path a megabyte at every start. The media come from the video server (it answers
with ``Access-Control-Allow-Origin: *``).

With ``--abr mpc`` the page registers a dash.js custom rule that, before each segment, posts
what dash.js saw since the last decision (every segment's bytes and times, the buffer level, the
quality playing) to ``/abr`` and plays the quality this server answers. The answer is RobustMPC's
(mpc.py) with the predictor given (predictors.py): the same controller and predictors as the
Python player's, so the two players differ only in who moves and decodes the bytes.
"""

from __future__ import annotations

import http.server
import json
import os
import threading
import time
import urllib.parse

from .server import Handler
from .session import Session

#: Largest /abr request body accepted (a decision carries a few segments' records).
MAX_BODY = 1 << 20


class PlayerHost(http.server.ThreadingHTTPServer):
    """Serves ``web/player.html`` and dash.js on (host, port); with a ``predictor``, also
    RobustMPC's decisions for ``ladder`` at ``/abr``. Client time 0 is ``t0_unix`` (default:
    this server's start)."""

    daemon_threads = True

    def __init__(self, addr, page: str, dashjs: str, ladder=None, predictor=None, t0_unix: float | None = None):
        self.page, self.dashjs, self.ladder, self.predictor = page, dashjs, ladder, predictor
        self.quiet = True
        self.t0 = time.time() if t0_unix is None else t0_unix
        #: RobustMPC and what its predictor saw; dash.js keeps the buffer.
        self.session = Session(ladder, predictor) if ladder is not None and predictor is not None else None
        self.seen: set[int] = set()
        self.decisions: list[dict] = []
        self.lock = threading.Lock()
        super().__init__(addr, _HostHandler)

    def decide(self, req: dict) -> int:
        """The quality of segment ``req["next"]`` given the segments dash.js finished since the
        last decision (``req["fragments"]``: index, bytes, unix times t0, first byte, t1), its
        buffer (s) and the quality it plays. Raises ValueError on a malformed request."""
        if self.session is None:
            raise ValueError("this session has no RobustMPC (--abr mpc)")
        s = self.session
        try:
            nxt, buf, last_q = int(req["next"]), float(req["buffer_s"]), int(req["quality"])
            frags = [(int(f["index"]), float(f["bytes"]), float(f["t0"]), float(f.get("first") or f["t0"]), float(f["t1"])) for f in req.get("fragments", [])]
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"malformed decision request: {e!r}") from None
        with self.lock:
            for index, nbytes, t0, first, t1 in frags:
                if index in self.seen or not t1 > t0:
                    continue
                self.seen.add(index)
                # The download's payload arrives from its first byte on; the wait before it is
                # a round trip (the request's), which is what the observer's RTT is.
                s.obs.add(max(first, t0) - self.t0, t1 - self.t0, nbytes)
                s.obs.add_rtt(t0 - self.t0, (first - t0) * 1000.0)
                s.measured(nbytes * 8 / (t1 - t0) / 1e6)
            if not s.chunk_mbps:
                q = 0  # nothing measured yet: the lowest rung, as the Python player starts
            else:
                last_q = max(0, min(last_q, self.ladder.n_qualities - 1))
                q = s.plan(nxt % self.ladder.n_chunks, time.time() - self.t0, buf, last_q)
            self.decisions.append({"next": nxt, "buffer_s": buf, "quality": q})
            return q


class _HostHandler(Handler):
    log_prefix = "player-host"
    extra_headers = (("Cache-Control", "no-store"),)

    def do_GET(self):
        path = urllib.parse.urlsplit(self.path).path
        srv: PlayerHost = self.server
        if path in ("/", "/player.html"):
            with open(srv.page, "rb") as f:
                return self._send(200, f.read(), "text/html")
        if path == "/dash.all.min.js":
            with open(srv.dashjs, "rb") as f:
                return self._send(200, f.read(), "application/javascript")
        return self._send(404, b"not found\n")

    def do_POST(self):
        srv: PlayerHost = self.server
        if urllib.parse.urlsplit(self.path).path != "/abr":
            return self._send(404, b"not found\n")
        try:
            n = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            n = -1
        if not 0 <= n <= MAX_BODY:
            return self._send(400, b"bad Content-Length\n")
        try:
            q = srv.decide(json.loads(self.rfile.read(n) or b"{}"))
        except (ValueError, json.JSONDecodeError) as e:
            return self._send(400, f"{e}\n".encode())
        return self._send(200, json.dumps({"quality": q}).encode(), "application/json")


def start(page: str, dashjs: str, ladder=None, predictor=None, t0_unix: float | None = None) -> PlayerHost:
    """A host on 127.0.0.1 (any port) serving in a background thread."""
    srv = PlayerHost(("127.0.0.1", 0), page, dashjs, ladder, predictor, t0_unix)
    threading.Thread(target=srv.serve_forever, name="player-host", daemon=True).start()
    return srv


def trace_offset_s(t0_unix: float) -> float:
    """The trace time at client time 0 when running inside `leocc emu` (which exports its
    trace clock's origin as LEOCC_TRACE_T0_US); 0 elsewhere."""
    v = os.environ.get("LEOCC_TRACE_T0_US")
    try:
        return max(0.0, t0_unix - int(v) / 1e6) if v else 0.0
    except ValueError:
        return 0.0
