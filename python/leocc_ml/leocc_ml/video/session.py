"""The client's side of one streaming session, whatever moves the bytes (kernel TCP in
client.py, the trace's capacity in player.py): RobustMPC's choice before each chunk, and after it
the buffer, stall and log bookkeeping with Pensieve's rules. The two players differ only in how
a chunk's download time comes about.
"""

from __future__ import annotations

from .ladder import Ladder
from .mpc import HORIZON, RobustMpc
from .observer import Observer
from .qoe import summarise

#: Pensieve's buffer threshold: above it the client sleeps before the next request.
BUFFER_MAX_S = 60.0


class Session:
    """MPC, the predictor's observations and the playback buffer of one session."""

    def __init__(self, ladder: Ladder, predictor, buffer_max_s: float = BUFFER_MAX_S):
        if not buffer_max_s >= ladder.chunk_s:
            raise ValueError(f"the buffer target ({buffer_max_s:g} s) must hold at least one chunk ({ladder.chunk_s:g} s)")
        self.ladder, self.predictor = ladder, predictor
        #: The client waits while its buffer holds more than this (a live stream's latency target
        #: bounds it the same way: a segment cannot be fetched before it exists).
        self.buffer_max_s = buffer_max_s
        self.mpc = RobustMpc(ladder)
        #: What the predictor sees: delivered bytes and RTT samples, fed by the player.
        self.obs = Observer()
        self.buf = 0.0
        self.last_q = 0
        self.startup = 0.0
        self.chunk_mbps: list[float] = []
        self.bitrates: list[float] = []
        self.rebufs: list[float] = []
        self.log: list[dict] = []

    def choose(self, k: int, now: float) -> int:
        """The quality of chunk ``k`` at session time ``now`` (the first chunk is the lowest)."""
        return self.plan(k, now, self.buf, self.last_q) if k > 0 else 0

    def plan(self, k: int, now: float, buf: float, last_q: int) -> int:
        """RobustMPC's quality for chunk ``k`` at session time ``now``, with ``buf`` s buffered
        and quality ``last_q`` playing (a player that keeps its own buffer, as dash.js does,
        says what they are)."""
        f = self.predictor.forecast(now, self.obs, self.chunk_mbps, min(HORIZON, self.ladder.n_chunks - k), self.ladder.chunk_s)
        return self.mpc.choose(k, buf, last_q, f)

    def measured(self, mbps: float) -> None:
        """A download's rate, Mbit/s: for the robust discount and the predictors' history."""
        self.mpc.observe(mbps)
        self.chunk_mbps.append(mbps)

    def downloaded(self, k: int, q: int, dl: float, size: float) -> tuple[float, float]:
        """Books chunk ``k`` at quality ``q``, ``size`` bytes in ``dl`` s: returns its rate in
        Mbit/s and how long the client waits before the next request (the buffer above
        ``buffer_max_s``)."""
        chunk_s = self.ladder.chunk_s
        mbps = size * 8 / max(dl, 1e-6) / 1e6
        self.measured(mbps)
        if k == 0:
            self.startup, rebuf = dl, 0.0
            self.buf = chunk_s
        else:
            rebuf = max(dl - self.buf, 0.0)
            self.buf = max(self.buf - dl, 0.0) + chunk_s
        wait = max(self.buf - self.buffer_max_s, 0.0)
        self.buf -= wait
        self.bitrates.append(float(self.ladder.bitrates_mbps[q]))
        self.rebufs.append(rebuf)
        self.log.append({"chunk": k, "quality": q, "download_s": dl, "mbps": mbps, "rebuffer_s": rebuf, "buffer_s": self.buf})
        self.last_q = q
        return mbps, wait

    def summary(self) -> dict:
        """The QoE summary, the predictor's name and the chunk log."""
        top = float(self.ladder.bitrates_mbps[-1])
        return {
            **summarise(self.bitrates, self.rebufs, self.ladder.chunk_s, self.startup, top),
            "predictor": self.predictor.name,
            "chunks_log": self.log,
        }
