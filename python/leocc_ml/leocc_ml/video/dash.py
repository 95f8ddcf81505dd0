"""A real player: dash.js in headless Chromium, over kernel TCP, on content ffmpeg encodes.

Three parts, each usable alone:

* :class:`Content` encodes a test pattern once (ffmpeg, H.264, one representation per rung of
  the :class:`~.ladder.Ladder`, ``seg_s`` segments, a keyframe at every segment) into a cache
  directory. The frames are real and Chromium decodes them; their encoded size is not what the
  network sees (see below).
* :class:`DashServer` serves that content as DASH over kernel TCP with the congestion control
  under test: ``/manifest.mpd`` (static, on demand, or dynamic, a live stream whose segments
  become available on the wall clock from the server's start), the segments and ``/time`` (the
  clock dash.js synchronises to: it must never ask a public time server).
  Every segment is padded to the ladder's byte size with an ISO BMFF ``free`` box, which
  decoders skip: the network carries the ladder's bitrates (any scale, 1 to 500 Mbit/s) while
  the disk holds a few MB. The content loops, so a session can be longer than the encoding.
* :func:`play` runs one session: Chromium headless opens the player page, dash.js plays with
  the chosen ABR rule, and the page reports dash.js's own metrics (the quality of every
  segment, stalls, live latency, buffer) through the console; the report becomes the same QoE
  summary as the Python player's (:func:`.qoe.summarise`) plus the live latency.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

from . import advisor, proc, qoe
from .ladder import Ladder
from .server import CcServer, Handler

#: dash.js version the setup installs (npm, pinned; ``scripts/setup.sh --all`` reads it here).
DASHJS_VERSION = "4.7.4"
#: ABR rules a session can use: dash.js's own (its ``streaming.abr.ABRStrategy`` values), and
#: RobustMPC as a dash.js custom rule (advisor.py) with any of the Python player's predictors.
ABR_RULES = {"dynamic": "abrDynamic", "bola": "abrBola", "throughput": "abrThroughput", "l2a": "abrL2A", "lolp": "abrLoLP", "mpc": "mpc"}
#: Encoded length of the test pattern, s: the content loops after it.
CONTENT_S = 20
#: The encoded bitrate of rung 0, kbit/s; rung i is this plus 40 x i (small: padding makes up the ladder's sizes).
ENCODE_BASE_KBPS = 120
ENCODE_STEP_KBPS = 40
#: Frame rate and size of the test pattern.
FPS = 25
SIZE = "320x180"
WEB_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "web")
#: Chromium's flags: headless, no sandbox (root in a namespace), and nothing that talks to the
#: internet on its own (component updates, sync, safe browsing, field trials).
CHROMIUM_FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--mute-audio",
    "--autoplay-policy=no-user-gesture-required",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-field-trial-config",
    "--disable-features=Translate,OptimizationHints,MediaRouter,InterestFeedContentSuggestions,AsyncDns,DnsOverHttps",
    "--metrics-recording-only",
    "--safebrowsing-disable-auto-update",
    "--enable-logging=stderr",
    "--v=0",
]
REPORT_MARK = "LEOCC_REPORT "
#: Extra wall time a session may take beyond its length before it is abandoned (Chromium's
#: start, the player's startup, an outage at the end), s.
SESSION_SLACK_S = 45.0


def dashjs_path() -> str:
    """dash.all.min.js as the setup installs it beside the Python environment (or $LEOCC_DASHJS)."""
    p = os.environ.get("LEOCC_DASHJS") or os.path.join(sys.prefix, "dashjs", "node_modules", "dashjs", "dist", "dash.all.min.js")
    if not os.path.exists(p):
        raise FileNotFoundError(f"dash.js not found at {p}: run `scripts/setup.sh --all` (npm install dashjs@{DASHJS_VERSION}) or set LEOCC_DASHJS")
    return p


def chromium_binary() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    raise FileNotFoundError("chromium not found: run `scripts/setup.sh --all`")


class Content:
    """The encoded test pattern: ``n`` representations of ``seg_s`` segments in ``root``."""

    def __init__(self, root: str, n: int, seg_s: float, codecs: list[str], segments: int):
        self.root, self.n, self.seg_s, self.codecs, self.segments = root, n, seg_s, codecs, segments
        self._timescales = [self._read_timescale(rep) for rep in range(n)]

    @staticmethod
    def make(n: int, seg_s: float, cache: str | None = None, log=None) -> "Content":
        """Encodes (once; later calls reuse the cache) ``n`` representations with ffmpeg."""
        if not 1 <= n <= 12:
            raise ValueError(f"want 1 to 12 representations, got {n}")
        if not 0.5 <= seg_s <= 10 or abs(CONTENT_S / seg_s - round(CONTENT_S / seg_s)) > 1e-9:
            raise ValueError(f"segment length must divide {CONTENT_S} s and lie in 0.5..10 s, got {seg_s}")
        ffmpeg = shutil.which("ffmpeg")
        if not ffmpeg:
            raise FileNotFoundError("ffmpeg not found: run `scripts/setup.sh --all`")
        cache = cache or os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "leocc", "dash")
        key = hashlib.sha256(f"v1 {n} {seg_s} {CONTENT_S} {FPS} {SIZE} {ENCODE_BASE_KBPS} {ENCODE_STEP_KBPS}".encode()).hexdigest()[:16]
        root = os.path.join(cache, key)
        mpd = os.path.join(root, "encoded.mpd")
        if not os.path.exists(mpd):
            if log:
                log(f"encoding the test pattern: {n} representations, {seg_s:g} s segments, {CONTENT_S} s (ffmpeg, once)")
            os.makedirs(cache, exist_ok=True)
            # Encoded into a temporary directory and renamed: a cache entry is whole or absent.
            tmp = tempfile.mkdtemp(prefix=f"{key}.", dir=cache)
            gop = max(1, round(FPS * seg_s))
            cmd = [ffmpeg, "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", f"testsrc2=size={SIZE}:rate={FPS}", "-t", str(CONTENT_S)]
            for _ in range(n):
                cmd += ["-map", "0:v"]
            cmd += ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-g", str(gop), "-keyint_min", str(gop), "-sc_threshold", "0"]
            for i in range(n):
                k = ENCODE_BASE_KBPS + ENCODE_STEP_KBPS * i
                cmd += [f"-b:v:{i}", f"{k}k", f"-maxrate:v:{i}", f"{k}k", f"-bufsize:v:{i}", f"{k}k"]
            cmd += ["-f", "dash", "-seg_duration", str(seg_s), "-use_template", "1", "-use_timeline", "0", "-adaptation_sets", "id=0,streams=v",
                    "-init_seg_name", "init-$RepresentationID$.m4s", "-media_seg_name", "seg-$RepresentationID$-$Number$.m4s", os.path.join(tmp, "encoded.mpd")]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                shutil.rmtree(tmp, ignore_errors=True)
                raise RuntimeError(f"ffmpeg failed ({r.returncode}): {r.stderr.strip()[-500:]}")
            try:
                os.rename(tmp, root)
            except OSError:  # another process finished first: use its encoding
                shutil.rmtree(tmp, ignore_errors=True)
        text = open(mpd).read()
        codecs = re.findall(r'codecs="([^"]+)"', text)
        segments = round(CONTENT_S / seg_s)
        if len(codecs) != n or not all(os.path.exists(os.path.join(root, f"seg-{i}-{segments}.m4s")) for i in range(n)):
            raise RuntimeError(f"the encoding in {root} is incomplete: delete it and run again")
        return Content(root, n, seg_s, codecs, segments)

    def segment(self, rep: int, number: int) -> bytes:
        """Segment ``number`` (1-based, any: the content loops) of representation ``rep``, its
        decode time moved on by the loops before it so that the media timeline runs on."""
        loop, k = divmod(number - 1, self.segments)
        with open(os.path.join(self.root, f"seg-{rep}-{k + 1}.m4s"), "rb") as f:
            seg = f.read()
        return shift_decode_time(seg, loop * CONTENT_S * self.timescale(rep)) if loop else seg

    def timescale(self, rep: int) -> int:
        """Representation ``rep``'s track timescale (ticks per second)."""
        return self._timescales[rep]

    def _read_timescale(self, rep: int) -> int:
        """The timescale in the init segment's ``mdhd`` (read once, not per segment served)."""
        init = self.init(rep)
        i = init.find(b"mdhd")
        if i < 0:
            raise RuntimeError(f"{self.root}/init-{rep}.m4s has no mdhd box")
        v = init[i + 4]
        return struct.unpack_from(">I", init, i + 4 + 4 + (16 if v == 1 else 8))[0]

    def init(self, rep: int) -> bytes:
        with open(os.path.join(self.root, f"init-{rep}.m4s"), "rb") as f:
            return f.read()


def shift_decode_time(seg: bytes, ticks: int) -> bytes:
    """``seg`` with its ``tfdt`` (the fragment's base media decode time) moved on by ``ticks``."""
    i = seg.find(b"tfdt")
    if i < 0:
        raise ValueError("a media segment without a tfdt box")
    out = bytearray(seg)
    if seg[i + 4] == 1:
        struct.pack_into(">Q", out, i + 8, struct.unpack_from(">Q", seg, i + 8)[0] + ticks)
    else:
        v = struct.unpack_from(">I", seg, i + 8)[0] + ticks
        if v >= 1 << 32:
            raise ValueError("decode time beyond a 32-bit tfdt: session too long")
        struct.pack_into(">I", out, i + 8, v)
    return bytes(out)


def padded(seg: bytes, size: int) -> bytes:
    """``seg`` followed by a ``free`` box that brings it to ``size`` bytes (decoders skip it).
    A segment already as large (or within a box header of it) is sent as it is."""
    pad = size - len(seg)
    if pad < 8:
        return seg
    return seg + struct.pack(">I", pad) + b"free" + bytes(pad - 8)


def _iso(t: float) -> str:
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def manifest(content: Content, ladder: Ladder, live: bool, start_wall: float, session_s: float, host_url: str) -> str:
    """The MPD: the ladder's bitrates as the representations' bandwidth; ``live`` makes it
    dynamic with segments available from ``start_wall`` on, else static ``session_s`` long."""
    reps = "\n".join(
        f'      <Representation id="{i}" mimeType="video/mp4" codecs="{content.codecs[i]}" bandwidth="{int(ladder.bitrates_mbps[i] * 1e6)}" '
        f'width="{SIZE.split("x")[0]}" height="{SIZE.split("x")[1]}" frameRate="{FPS}"/>'
        for i in range(ladder.n_qualities)
    )
    seg_us = int(round(content.seg_s * 1e6))
    if live:
        head = (f'type="dynamic" availabilityStartTime="{_iso(start_wall)}" publishTime="{_iso(start_wall)}" '
                f'timeShiftBufferDepth="PT30S" minimumUpdatePeriod="PT3600S"')
    else:
        head = f'type="static" mediaPresentationDuration="PT{session_s:.3f}S"'
    return f"""<?xml version="1.0" encoding="utf-8"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" profiles="urn:mpeg:dash:profile:isoff-live:2011" {head}
     maxSegmentDuration="PT{content.seg_s:g}S" minBufferTime="PT{content.seg_s:g}S">
  <Period id="0" start="PT0S">
    <AdaptationSet id="0" contentType="video" segmentAlignment="true" startWithSAP="1">
      <SegmentTemplate timescale="1000000" duration="{seg_us}" startNumber="1"
          initialization="init-$RepresentationID$.m4s" media="seg-$RepresentationID$-$Number$.m4s"/>
{reps}
    </AdaptationSet>
  </Period>
  <UTCTiming schemeIdUri="urn:mpeg:dash:utc:http-iso:2014" value="{host_url}/time"/>
</MPD>
"""


class DashServer(CcServer):
    """DASH over kernel TCP with one congestion control for every connection."""

    def __init__(self, addr, content: Content, ladder: Ladder, live: bool, cc: str | None = None, quiet: bool = True):
        if ladder.n_qualities != content.n:
            raise ValueError(f"the ladder has {ladder.n_qualities} rungs, the content {content.n} representations")
        if abs(ladder.chunk_s - content.seg_s) > 1e-9:
            raise ValueError(f"the ladder's chunks are {ladder.chunk_s} s, the content's segments {content.seg_s} s")
        self.content, self.ladder, self.live, self.cc, self.quiet = content, ladder, live, cc, quiet
        self.start_wall = time.time()
        super().__init__(addr, _DashHandler)

    def segment_size(self, rep: int, number: int) -> int:
        """The ladder's byte size of segment ``number`` (the ladder's chunks loop as the content does)."""
        return int(self.ladder.sizes[rep, (number - 1) % self.ladder.n_chunks])

    def available(self, number: int) -> bool:
        """Whether live segment ``number`` is complete on the server's clock (always, on demand)."""
        return not self.live or time.time() >= self.start_wall + number * self.content.seg_s


_SEG = re.compile(r"^/seg-(\d+)-(\d+)\.m4s$")
_INIT = re.compile(r"^/init-(\d+)\.m4s$")


class _DashHandler(Handler):
    log_prefix = "dash-server"
    extra_headers = (("Access-Control-Allow-Origin", "*"), ("Cache-Control", "no-store"))

    def do_GET(self):
        srv: DashServer = self.server
        path = urllib.parse.urlsplit(self.path).path
        if path == "/manifest.mpd":
            host = f"http://{self.headers.get('Host', 'localhost')}"
            n_seg = srv.ladder.n_chunks
            body = manifest(srv.content, srv.ladder, srv.live, srv.start_wall, n_seg * srv.content.seg_s, host).encode()
            return self._send(200, body, "application/dash+xml")
        if path == "/time":
            return self._send(200, _iso(time.time()).encode(), "text/plain")
        m = _INIT.match(path)
        if m and int(m.group(1)) < srv.content.n:
            return self._send(200, srv.content.init(int(m.group(1))), "video/mp4")
        m = _SEG.match(path)
        if m:
            rep, number = int(m.group(1)), int(m.group(2))
            if rep >= srv.content.n or number < 1 or (not srv.live and number > srv.ladder.n_chunks):
                return self._send(404, f"no segment {number} of representation {rep}\n".encode())
            if not srv.available(number):
                return self._send(404, f"segment {number} is not available yet\n".encode())
            return self._send(200, padded(srv.content.segment(rep, number), srv.segment_size(rep, number)), "video/mp4")
        return self._send(404, b"not found\n")


def start(host: str, port: int, content: Content, ladder: Ladder, live: bool, cc: str | None = None) -> DashServer:
    """A server listening on (host, port) in a background thread (port 0 = any)."""
    srv = DashServer((host, port), content, ladder, live, cc)
    threading.Thread(target=srv.serve_forever, name="dash-server", daemon=True).start()
    return srv


def play(url: str, abr: str, session_s: float, live: bool, latency_s: float = 3.0, log=None, snapshot: bool = False,
         ladder: Ladder | None = None, predictor=None, t0_unix: float | None = None) -> dict:
    """One session of dash.js in headless Chromium against the server at ``url``; the page's
    report (see ``web/player.html``; with ``snapshot`` the last frame shown, as a PNG data URL).
    ``abr="mpc"`` needs the server's ``ladder`` and a ``predictor`` (predictors.py): RobustMPC
    decides every segment (advisor.py), and the report carries its decisions; ``t0_unix`` is
    the predictor's client time 0 (default: now).
    Raises RuntimeError if Chromium reports nothing in time."""
    if abr not in ABR_RULES:
        raise ValueError(f"unknown ABR rule {abr!r} (dash.js's: {', '.join(ABR_RULES)})")
    if not session_s > 0:
        raise ValueError(f"session length must be positive, got {session_s}")
    if abr == "mpc" and (ladder is None or predictor is None):
        raise ValueError("--abr mpc needs the ladder and a predictor")
    host = advisor.start(os.path.join(WEB_DIR, "player.html"), dashjs_path(), ladder, predictor if abr == "mpc" else None, t0_unix)
    q = urllib.parse.urlencode({"mpd": f"{url.rstrip('/')}/manifest.mpd", "abr": ABR_RULES[abr], "live": int(live), "latency": latency_s,
                                "duration": session_s, "snapshot": int(snapshot)})
    profile = tempfile.mkdtemp(prefix="leocc-chromium.")
    # Chromium still looks up its update and account servers; no name may resolve (a query
    # from the client namespace would enter the path under test), only the two hosts we run.
    server = urllib.parse.urlsplit(url).hostname
    resolver = f"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE {server}"
    cmd = [chromium_binary(), *CHROMIUM_FLAGS, resolver, f"--user-data-dir={profile}", f"http://127.0.0.1:{host.server_address[1]}/player.html?{q}"]
    browser = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace", preexec_fn=proc.own_group_dying_with_parent)
    report, tail = None, []
    timer = threading.Timer(session_s + SESSION_SLACK_S, lambda: _kill(browser))
    timer.start()
    try:
        for line in browser.stderr:
            i = line.find(REPORT_MARK)
            if i >= 0:
                blob = re.match(r"[A-Za-z0-9+/=]+", line[i + len(REPORT_MARK):])
                report = json.loads(base64.b64decode(blob.group(0))) if blob else None
                break
            if "CONSOLE" in line and log:
                log(line.strip()[-200:])
            tail = (tail + [line.rstrip()])[-20:]
    finally:
        timer.cancel()
        _kill(browser)
        host.shutdown()
        shutil.rmtree(profile, ignore_errors=True)
    if report is None:
        raise RuntimeError("dash.js reported nothing (Chromium's last lines: " + " | ".join(tail[-5:]) + ")")
    if report.get("error"):
        raise RuntimeError(f"dash.js failed: {report['error']}")
    if abr == "mpc":
        report["decisions"] = host.decisions
        report["predictor"] = predictor.name
    return report


def _kill(browser: subprocess.Popen):
    if browser.poll() is None:
        try:
            os.killpg(browser.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        browser.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def summarise(report: dict, ladder: Ladder) -> dict:
    """The page's report as a session summary: Pensieve's QoE over the segments played (in the
    order of their numbers, at the quality dash.js fetched them), stalls after the first frame,
    and for live sessions the latency dash.js measured."""
    frags = sorted({f["index"]: f for f in report["fragments"]}.values(), key=lambda f: f["index"])
    bitrates = [float(ladder.bitrates_mbps[f["quality"]]) for f in frags]
    stall_s = float(report["stall_s"])
    s = qoe.summarise(bitrates, [stall_s], ladder.chunk_s, report.get("startup_s") or 0.0, float(ladder.bitrates_mbps[-1]))
    lat = [x for x in report.get("latency_s", []) if x and x > 0]
    s.update(
        {
            "player": "dashjs",
            "abr": report["abr"],
            "predictor": report.get("predictor"),
            "live": bool(report["live"]),
            "stalls": int(report["stalls"]),
            "frames_decoded": int(report["frames"]["total"]),
            "frames_dropped": int(report["frames"]["dropped"]),
            "rendered_switches": int(report["switches"]),
            "top_mbps": float(ladder.bitrates_mbps[-1]),
            "latency_median_s": _quantile(lat, 0.5),
            "latency_p95_s": _quantile(lat, 0.95),
            "fragments_log": frags,
        }
    )
    return s


def _quantile(xs, q):
    if not xs:
        return None
    xs = sorted(xs)
    return float(xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))])
