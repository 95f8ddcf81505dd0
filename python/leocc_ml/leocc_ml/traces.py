"""Per-bin capacity and RTT series from leocc traces.

Traces are read through their mahimahi form (``leocc trace export --format mahimahi``): one
format that generated and real traces share, so the Rust reader stays the one authority on
``# leocc-trace v1`` and this module never re-implements it.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import tempfile

import numpy as np

#: Bytes carried by one mahimahi delivery opportunity.
OPPORTUNITY_BYTES = 1500
#: Interval of one LeoReplayer delay line, in ms.
DELAY_INTERVAL_MS = 10
#: Series resolution: fine enough for the 15 s slot structure, coarse enough to be cheap.
BIN_MS = 100


class TraceError(ValueError):
    """A trace file that cannot be read; the message names file, line and problem."""


@dataclasses.dataclass
class Series:
    """A link as a host would see it, binned at ``BIN_MS``.

    ``thr_mbps[i]`` is the capacity in bin i (Mbit/s), ``rtt_ms[i]`` the round-trip base delay
    (twice the one-way delay, as the LeoReplayer applies it in both directions).
    """

    name: str
    thr_mbps: np.ndarray
    rtt_ms: np.ndarray

    @property
    def seconds(self) -> float:
        """Length of the series in seconds."""
        return len(self.thr_mbps) * BIN_MS / 1000.0


def _read_numbers(path: str, parse) -> np.ndarray:
    """The numbers of a one-number-per-line file. Whole-file parsing first (a 300 s trace's
    capacity file has millions of lines); any problem is then located line by line, so the
    error names the line."""
    dtype = np.int64 if parse is int else np.float64
    with open(path, "rb") as f:
        data = f.read()
    try:
        v = np.array(data.split(), dtype=dtype)
        if v.size and np.all(np.isfinite(v)) and not np.any(v < 0):
            return v
    except (ValueError, OverflowError):
        pass
    return np.asarray(_read_numbers_slowly(path, parse), dtype=dtype)


def _read_numbers_slowly(path: str, parse) -> list:
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            s = line.strip()
            if not s:
                continue
            try:
                v = parse(s)
            except ValueError:
                raise TraceError(f"{path}:{lineno}: not a number: {s[:40]!r}") from None
            if not np.isfinite(v) or v < 0:
                raise TraceError(f"{path}:{lineno}: negative or non-finite value {s[:40]!r}")
            out.append(v)
    if not out:
        raise TraceError(f"{path}: empty")
    return out


def read_mahimahi_bw(path: str) -> np.ndarray:
    """Capacity per ``BIN_MS`` bin (Mbit/s) of one loop of a mahimahi capacity file."""
    ts = _read_numbers(path, int)
    if np.any(np.diff(ts) < 0):
        bad = int(np.argmax(np.diff(ts) < 0)) + 2
        raise TraceError(f"{path}:{bad}: timestamps decrease")
    period = int(ts[-1])
    if period <= 0:
        raise TraceError(f"{path}: period (last value) must be > 0 ms")
    nbins = max(1, period // BIN_MS)
    counts = np.bincount(np.minimum(ts // BIN_MS, nbins - 1), minlength=nbins)[:nbins]
    return counts * OPPORTUNITY_BYTES * 8 / (BIN_MS / 1000.0) / 1e6


def read_delay(path: str) -> np.ndarray:
    """One-way delay (ms) per 10 ms interval of a LeoReplayer delay file."""
    return _read_numbers(path, float)


def _pick(d: str, names: list[str], key: str) -> str:
    for n in names:
        p = os.path.join(d, n)
        if os.path.isfile(p):
            return p
    cands = [f for f in sorted(os.listdir(d)) if key in f and f.endswith(".txt")]
    if len(cands) == 1:
        return os.path.join(d, cands[0])
    raise TraceError(f"{d}: no unique {key} file (looked for {', '.join(names)})")


def load_mahimahi_dir(d: str, direction: str = "down", name: str | None = None) -> Series:
    """Series of a mahimahi/LeoReplayer directory (``bw*.txt`` + ``delay*.txt``)."""
    bw = read_mahimahi_bw(_pick(d, ["bw.txt", f"bw_{direction}.txt"], "bw"))
    delay = read_delay(_pick(d, ["delay.txt", f"delay_{direction}.txt"], "delay"))
    per_bin = BIN_MS // DELAY_INTERVAL_MS
    nd = len(delay) // per_bin
    if nd == 0:
        raise TraceError(f"{d}: delay file shorter than one {BIN_MS} ms bin")
    rtt = 2.0 * delay[: nd * per_bin].reshape(nd, per_bin).mean(axis=1)
    n = len(bw)
    # Capacity and delay loop independently (as in the emulator); tile the shorter.
    rtt = np.resize(rtt, n)
    return Series(name or os.path.basename(os.path.normpath(d)), bw, rtt)


def leocc_binary() -> str:
    """Path of the ``leocc`` binary: $LEOCC_BIN, the repo's release build, or PATH."""
    env = os.environ.get("LEOCC_BIN")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.abspath(os.path.join(here, "..", "..", ".."))
    for cand in (
        os.path.join(os.environ.get("CARGO_TARGET_DIR", ""), "release", "leocc"),
        os.path.join(repo, "target", "release", "leocc"),
    ):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    found = shutil.which("leocc")
    if not found:
        raise FileNotFoundError("leocc binary not found: build it (cargo build --release -p leocc) or set LEOCC_BIN")
    return found


def export_trace(trace: str, out_dir: str) -> str:
    """Export a leocc trace file to mahimahi form in ``out_dir``; returns ``out_dir``."""
    subprocess.run(
        [leocc_binary(), "trace", "export", trace, "--format", "mahimahi", "-o", out_dir, "--force"],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    return out_dir


def load_trace(trace: str) -> Series:
    """Series of a leocc trace file (our format) or a mahimahi directory."""
    if os.path.isdir(trace):
        return load_mahimahi_dir(trace)
    with tempfile.TemporaryDirectory(prefix="leocc-ml-") as tmp:
        out = os.path.join(tmp, "mm")
        export_trace(trace, out)
        direction = (
            "up" if os.path.exists(os.path.join(out, "bw_up.txt")) and not os.path.exists(os.path.join(out, "bw_down.txt")) else "down"
        )
        return load_mahimahi_dir(out, direction, name=os.path.splitext(os.path.basename(trace))[0])


def generate(profile: str, seed: int, duration_s: int, cache_dir: str) -> str:
    """Generate (or reuse from ``cache_dir``) ``leocc trace gen`` output; returns its path."""
    os.makedirs(cache_dir, exist_ok=True)
    path = os.path.join(cache_dir, f"{profile}-{duration_s}s-seed{seed}.trace")
    if not os.path.exists(path):
        tmp = path + ".tmp"
        subprocess.run(
            [leocc_binary(), "trace", "gen", "--profile", profile, "--duration", str(duration_s), "--seed", str(seed), "-o", tmp],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        os.replace(tmp, path)
    return path
