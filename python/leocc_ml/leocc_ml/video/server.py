"""A DASH-style HTTP server: ``/manifest.json`` and ``/video/Q/K`` (chunk K at quality Q).

Chunks are synthetic bytes of the ladder's sizes (the content does not matter to the network,
only the byte counts do). Every connection uses the congestion control given at start: the
server is the sender, so this is the control under test.
"""

from __future__ import annotations

import http.server
import json
import sys
import threading

from . import tcp
from .ladder import Ladder

#: Write granularity: large enough to keep the socket buffer full, small enough to stay cheap.
WRITE_BYTES = 256 * 1024
_ZEROS = bytes(WRITE_BYTES)


class CcServer(http.server.ThreadingHTTPServer):
    """A threaded HTTP/1.1 server whose every connection uses the congestion control ``self.cc``
    (set before the base class binds): the server is the sender, so this is the control under test."""

    daemon_threads = True
    allow_reuse_address = True
    cc: str | None = None

    def server_bind(self):
        if self.cc:
            tcp.set_cc(self.socket, self.cc)  # fail before listening if the kernel lacks it
        super().server_bind()

    def get_request(self):
        conn, addr = super().get_request()
        if self.cc:
            tcp.set_cc(conn, self.cc)
        return conn, addr


class VideoServer(CcServer):
    """The server of one ladder's synthetic chunks."""

    def __init__(self, addr, ladder: Ladder, cc: str | None = None, quiet: bool = True):
        self.ladder = ladder
        self.cc = cc
        self.quiet = quiet
        self.manifest = json.dumps(ladder.to_json()).encode()
        super().__init__(addr, _Handler)


class Handler(http.server.BaseHTTPRequestHandler):
    """HTTP/1.1 with whole-body answers; requests logged to stderr unless the server is quiet."""

    protocol_version = "HTTP/1.1"
    log_prefix = "video-server"
    #: Headers every answer carries besides type and length.
    extra_headers: tuple = ()

    def log_message(self, fmt, *args):
        if not self.server.quiet:
            sys.stderr.write(f"{self.log_prefix}: " + fmt % args + "\n")

    def _send(self, code: int, body: bytes, ctype: str = "text/plain"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for name, value in self.extra_headers:
            self.send_header(name, value)
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass


class _Handler(Handler):

    def do_GET(self):
        lad = self.server.ladder
        if self.path == "/manifest.json":
            return self._send(200, self.server.manifest, "application/json")
        parts = self.path.strip("/").split("/")
        if len(parts) == 3 and parts[0] == "video":
            try:
                q, k = int(parts[1]), int(parts[2])
            except ValueError:
                return self._send(400, b"quality and chunk must be integers\n")
            if not (0 <= q < lad.n_qualities and 0 <= k < lad.n_chunks):
                return self._send(404, f"no chunk {k} at quality {q}\n".encode())
            size = int(lad.sizes[q, k])
            self.send_response(200)
            self.send_header("Content-Type", "video/mp4")
            self.send_header("Content-Length", str(size))
            self.end_headers()
            left = size
            try:
                while left > 0:
                    n = min(left, WRITE_BYTES)
                    self.wfile.write(_ZEROS[:n])
                    left -= n
            except (BrokenPipeError, ConnectionResetError):
                pass
            return None
        return self._send(404, b"not found\n")


def start(host: str, port: int, ladder: Ladder, cc: str | None = None, quiet: bool = True) -> VideoServer:
    """A server listening on (host, port) and serving in a background thread (port 0 = any)."""
    srv = VideoServer((host, port), ladder, cc, quiet)
    threading.Thread(target=srv.serve_forever, name="video-server", daemon=True).start()
    return srv
