"""The video client over real kernel TCP: RobustMPC, one keep-alive connection, wall-clock buffer.

Playback is simulated on the wall clock (nothing is decoded): the buffer drains in real time,
a stall is the time the buffer was empty, and above ``session.BUFFER_MAX_S`` the client sleeps.
"""

from __future__ import annotations

import json
import socket
import time
import urllib.parse

from . import tcp
from .ladder import Ladder
from .observer import Observer
from .session import Session

#: Read size; small enough that the observer sees the delivery rate at 100 ms resolution.
READ_BYTES = 64 * 1024
#: Longest the client waits on a silent connection (an emulated outage lasts < 1 s).
SOCKET_TIMEOUT_S = 60.0
MAX_HEADER_BYTES = 64 * 1024


class HttpError(RuntimeError):
    """A server answer the client cannot use; the message says what and where."""


class Connection:
    """One persistent HTTP/1.1 connection with a chosen congestion control."""

    def __init__(self, url: str, cc: str | None):
        u = urllib.parse.urlsplit(url)
        if u.scheme != "http" or not u.hostname:
            raise ValueError(f"want an http://HOST:PORT URL, got {url!r}")
        self.host, self.port = u.hostname, u.port or 80
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if cc:
            tcp.set_cc(self.sock, cc)
        self.sock.settimeout(SOCKET_TIMEOUT_S)
        self.sock.connect((self.host, self.port))
        self.buf = b""

    def get(self, path: str, on_data=None) -> bytes | int:
        """GET ``path``; returns the body, or only its length when ``on_data(t, nbytes)`` consumes it."""
        self.sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {self.host}\r\n\r\n".encode())
        while b"\r\n\r\n" not in self.buf:
            if len(self.buf) > MAX_HEADER_BYTES:
                raise HttpError(f"{path}: header longer than {MAX_HEADER_BYTES} bytes")
            d = self.sock.recv(READ_BYTES)
            if not d:
                raise HttpError(f"{path}: connection closed before the response header")
            self.buf += d
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        try:
            code = int(lines[0].split()[1])
        except (IndexError, ValueError):
            raise HttpError(f"{path}: malformed status line {lines[0][:60]!r}") from None
        length = None
        for ln in lines[1:]:
            k, _, v = ln.partition(":")
            if k.strip().lower() == "content-length":
                try:
                    length = int(v.strip())
                except ValueError:
                    raise HttpError(f"{path}: bad Content-Length {v.strip()[:20]!r}") from None
        if length is None or length < 0:
            raise HttpError(f"{path}: response without a valid Content-Length")
        body = bytearray()
        got = 0
        first = self.buf[:length]
        self.buf = self.buf[length:]
        if on_data and first:
            on_data(time.monotonic(), len(first))
        else:
            body += first
        got = len(first)
        while got < length:
            d = self.sock.recv(min(READ_BYTES, length - got))
            if not d:
                raise HttpError(f"{path}: connection closed after {got} of {length} bytes")
            got += len(d)
            if on_data:
                on_data(time.monotonic(), len(d))
            else:
                body += d
        if code != 200:
            raise HttpError(f"{path}: HTTP {code}: {bytes(body)[:80]!r}")
        return got if on_data else bytes(body)

    def close(self):
        self.sock.close()


class _Recorder:
    """Feeds each read to the observer as bytes that arrived since the previous read."""

    def __init__(self, obs: Observer, t0: float, start: float):
        self.obs, self.t0, self.last = obs, t0, start

    def __call__(self, t: float, n: int) -> None:
        self.obs.add(self.last - self.t0, t - self.t0, n)
        self.last = t


def play(url: str, predictor, cc: str | None = None, progress=None) -> dict:
    """Stream the whole video from ``url``; returns the QoE summary and the chunk log."""
    conn = Connection(url, cc)
    try:
        try:
            ladder = Ladder.from_json(json.loads(conn.get("/manifest.json")))
        except json.JSONDecodeError as e:
            raise HttpError(f"/manifest.json: not JSON ({e})") from None
        session = Session(ladder, predictor)
        t0 = time.monotonic()
        for k in range(ladder.n_chunks):
            q = session.choose(k, time.monotonic() - t0)
            start = time.monotonic()
            size = conn.get(f"/video/{q}/{k}", _Recorder(session.obs, t0, start))
            end = time.monotonic()
            session.obs.add_rtt(end - t0, tcp.rtt_ms(conn.sock))
            mbps, wait = session.downloaded(k, q, end - start, size)
            if wait > 0:
                time.sleep(wait)
            if progress:
                progress(f"chunk {k + 1}/{ladder.n_chunks} q{q} {mbps:.1f} Mbit/s buffer {session.buf:.1f} s")
        cc_used = tcp.get_cc(conn.sock)
    finally:
        conn.close()
    return {**session.summary(), "client_cc": cc_used}
