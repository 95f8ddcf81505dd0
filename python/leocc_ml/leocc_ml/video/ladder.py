"""The video: 6 qualities about 1.5x apart, 4 s chunks, 3 minutes (T3P §4, Pensieve's video)."""

from __future__ import annotations

import dataclasses

import numpy as np

#: Pensieve's ladder ratios (300..4300 kbit/s are ~1.5x apart); scaled so the top is ``top_mbps``.
RATIOS = (1.0, 1.5, 2.25, 3.375, 5.0625, 7.59375)
CHUNK_S = 4.0
#: 3 minutes of 4 s chunks.
N_CHUNKS = 45
#: Chunk sizes vary around the nominal bitrate as encoded video does (Pensieve's sizes vary
#: by roughly this much); seeded so server, player and tests agree on every byte count.
SIZE_JITTER = 0.1
#: Length of a session of the trace-driven player, s: Pensieve's 3 minutes.
SESSION_S = N_CHUNKS * CHUNK_S
#: Default top rung: a little below the mean capacity of the bundled starlink-down trace
#: (191.7 Mbit/s) so that the choice matters there.
DEFAULT_TOP_MBPS = 160.0


@dataclasses.dataclass
class Ladder:
    """Bitrates (Mbit/s) and the byte size of every chunk at every quality."""

    bitrates_mbps: np.ndarray
    sizes: np.ndarray  #: (qualities, chunks) bytes
    chunk_s: float = CHUNK_S

    @staticmethod
    def make(top_mbps: float = DEFAULT_TOP_MBPS, n_chunks: int = N_CHUNKS, seed: int = 0, chunk_s: float = CHUNK_S) -> "Ladder":
        """The ladder with its top rung at ``top_mbps``, of ``chunk_s`` chunks."""
        if not (top_mbps > 0 and np.isfinite(top_mbps)):
            raise ValueError(f"top bitrate must be a positive number of Mbit/s, got {top_mbps}")
        if n_chunks < 1:
            raise ValueError(f"need at least one chunk, got {n_chunks}")
        br = np.asarray(RATIOS) * top_mbps / RATIOS[-1]
        rng = np.random.default_rng(seed)
        jitter = 1 + rng.uniform(-SIZE_JITTER, SIZE_JITTER, n_chunks)
        if not 0 < chunk_s <= 60:
            raise ValueError(f"chunk length must be in (0, 60] s, got {chunk_s}")
        sizes = np.rint(br[:, None] * 1e6 / 8 * chunk_s * jitter[None, :]).astype(np.int64)
        return Ladder(br, sizes, chunk_s)

    @staticmethod
    def lasting(top_mbps: float, seconds: float, chunk_s: float, seed: int = 0) -> "Ladder":
        """The ladder of a session of ``seconds``: one ``chunk_s`` chunk per chunk played."""
        return Ladder.make(top_mbps, max(1, int(round(seconds / chunk_s))), seed, chunk_s)

    @property
    def n_chunks(self) -> int:
        return self.sizes.shape[1]

    @property
    def n_qualities(self) -> int:
        return len(self.bitrates_mbps)

    def to_json(self) -> dict:
        """The manifest the server publishes."""
        return {"bitrates_mbps": [float(b) for b in self.bitrates_mbps], "chunk_s": self.chunk_s, "sizes": self.sizes.tolist()}

    @staticmethod
    def from_json(d: dict) -> "Ladder":
        """Inverse of ``to_json``; raises ValueError on a malformed manifest."""
        try:
            br = np.asarray(d["bitrates_mbps"], float)
            sizes = np.asarray(d["sizes"], np.int64)
            chunk_s = float(d["chunk_s"])
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"malformed manifest: {e}") from None
        if sizes.ndim != 2 or sizes.shape[0] != len(br) or sizes.shape[1] == 0 or np.any(sizes <= 0):
            raise ValueError("malformed manifest: sizes must be qualities x chunks positive integers")
        return Ladder(br, sizes, chunk_s)
