"""Pensieve's linear QoE (Mao et al. 2017) and the session summary.

Pensieve's QoE_lin is ``bitrate - 4.3 x rebuffer s - |bitrate change|`` with bitrates in Mbit/s
on a ladder whose top is 4.3 Mbit/s: the stall penalty per second equals the top bitrate. Our
ladder is scaled to LEO capacities (its top is ~160 Mbit/s), where a literal 4.3 would make a
stall second cost less than one rung and MPC would happily stall. So bitrates enter the QoE in
*Pensieve units* (rung i of ours counts as rung i of Pensieve's ladder: ``b x 4.3 / top``), which
keeps the formula and its balance exactly; mean bitrate is still reported in real Mbit/s.
"""

from __future__ import annotations

import numpy as np

#: Pensieve's rebuffering penalty for QoE_lin: the top bitrate of its ladder, 4.3 Mbit/s, per second.
REBUF_PENALTY = 4.3
#: Smoothness penalty per Mbit/s of change between consecutive chunks.
SMOOTH_PENALTY = 1.0


#: Top bitrate of Pensieve's ladder, Mbit/s.
PENSIEVE_TOP_MBPS = 4.3


def pensieve_units(bitrates_mbps, top_mbps: float):
    """Bitrates mapped onto Pensieve's ladder (top = 4.3)."""
    return np.asarray(bitrates_mbps, float) * PENSIEVE_TOP_MBPS / top_mbps


def summarise(bitrates_mbps, rebuffer_s, chunk_s: float, startup_s: float = 0.0, top_mbps: float = PENSIEVE_TOP_MBPS) -> dict:
    """QoE = sum(bitrate) - 4.3 x rebuffer s - sum |bitrate change|, also per chunk.

    ``rebuffer_s[k]`` is the stall before chunk k could play (0 for the first: startup is
    reported apart, as Pensieve does not penalise it).
    """
    real = np.asarray(bitrates_mbps, float)
    b = pensieve_units(real, top_mbps)
    r = np.asarray(rebuffer_s, float)
    qoe = b.sum() - REBUF_PENALTY * r.sum() - SMOOTH_PENALTY * np.abs(np.diff(b)).sum()
    play_s = len(b) * chunk_s
    return {
        "qoe": float(qoe),
        "qoe_per_chunk": float(qoe / max(len(b), 1)),
        "mean_bitrate_mbps": float(real.mean()) if len(b) else 0.0,
        "rebuffer_s": float(r.sum()),
        "rebuffer_ratio": float(r.sum() / (play_s + r.sum())) if play_s else 0.0,
        "switches": int(np.count_nonzero(np.diff(real))),
        "startup_s": float(startup_s),
        "chunks": int(len(b)),
    }
