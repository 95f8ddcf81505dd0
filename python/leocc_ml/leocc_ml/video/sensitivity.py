"""Where prediction matters: RobustMPC's predictors over a grid of buffer target x ladder position.

The seeds report large gains for better throughput prediction; on our traces with Pensieve's
setting (a 60 s buffer, the ladder's top at 0.85 x the mean capacity) the gains are a few per
cent. Two knobs decide whether a forecast can matter at all: the buffer target (a long buffer
absorbs any misjudged chunk; a live stream's 2-4 s latency absorbs almost none) and where the
ladder sits against the capacity (far below it every predictor picks the top rung; far above it,
the bottom). This module runs the trace-driven player (player.py) over that grid, every
predictor on the same traces, and reports per cell the paired median QoE gain over the harmonic
mean and the tail: the p95 rebuffering ratio and the share of sessions with severe stalls.
"""

from __future__ import annotations

import html
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from .. import traces
from . import player, predictors
from .ladder import SESSION_S, Ladder

#: A session stalls severely when it spends more than this share of its time rebuffering.
SEVERE_REBUFFER = 0.02


def _sessions(job) -> list[dict]:
    """All cells and predictors on one trace (a process-pool task: the trace is read once)."""
    profile, seed, path, buffers, shares, preds, chunk_s, leo = job
    s = traces.load_trace(path)
    mean = float(s.thr_mbps.mean())
    rows = []
    for share in shares:
        lad = Ladder.lasting(share * mean, SESSION_S, chunk_s, seed)
        for buf in buffers:
            for p in ["harmonic"] + [q for q in preds if q != "harmonic"]:
                r = player.play(s, lad, predictors.for_series(p, s, path, leo), buffer_max_s=max(buf, chunk_s))
                r.pop("chunks_log")
                rows.append({**r, "profile": profile, "seed": seed, "top_share": share, "buffer_s": buf, "chunk_s": chunk_s})
    return rows


def run(profiles, seeds, buffers, shares, preds, chunk_s: float, duration_s: int, cache: str, workers: int = 2, log=None) -> list[dict]:
    """Every (profile, seed) trace through every cell of buffers x shares with every predictor
    (harmonic always, as the baseline). Returns one row per session."""
    leo = {}
    if "leo" in preds:
        for prof in profiles:
            leo[prof] = predictors.leo_model(prof, cache, log=log)
    jobs = [(prof, seed, traces.generate(prof, seed, duration_s, cache), list(buffers), list(shares), list(preds), chunk_s, leo.get(prof))
            for prof in profiles for seed in seeds]
    rows: list[dict] = []
    with ProcessPoolExecutor(max_workers=max(1, workers)) as ex:
        for i, got in enumerate(ex.map(_sessions, jobs), 1):
            rows += got
            if log:
                log(f"sensitivity: trace {i}/{len(jobs)} ({jobs[i - 1][0]} seed {jobs[i - 1][1]}) done")
    return rows


def cells(rows: list[dict], pred: str) -> dict:
    """Per (buffer_s, top_share): the paired median QoE gain of ``pred`` over harmonic (%), and
    both predictors' p95 rebuffering ratio and share of severely stalled sessions."""
    by = {}
    for r in rows:
        by.setdefault((r["buffer_s"], r["top_share"], r["profile"], r["seed"]), {})[r["predictor"]] = r
    out: dict = {}
    for (buf, share, _, _), g in by.items():
        if pred in g and "harmonic" in g:
            out.setdefault((buf, share), []).append((g[pred], g["harmonic"]))
    res = {}
    for key, pairs in out.items():
        gain = [100 * (p["qoe"] - h["qoe"]) / abs(h["qoe"]) for p, h in pairs if h["qoe"]]
        rp, rh = [p["rebuffer_ratio"] for p, _ in pairs], [h["rebuffer_ratio"] for _, h in pairs]
        res[key] = {
            "sessions": len(pairs),
            "median_qoe_gain_pct": float(np.median(gain)) if gain else 0.0,
            "p95_rebuffer": float(np.percentile(rp, 95)),
            "p95_rebuffer_harmonic": float(np.percentile(rh, 95)),
            "severe": float(np.mean(np.asarray(rp) > SEVERE_REBUFFER)),
            "severe_harmonic": float(np.mean(np.asarray(rh) > SEVERE_REBUFFER)),
        }
    return res


def markdown(rows: list[dict], pred: str) -> str:
    """One table for ``pred``: a row per buffer target, a column per ladder position; each cell
    the median QoE gain over harmonic, and the p95 rebuffering ratio (pred / harmonic)."""
    c = cells(rows, pred)
    bufs = sorted({k[0] for k in c})
    shares = sorted({k[1] for k in c})
    out = [f"| buffer \\ top of ladder ({pred} vs harmonic) | " + " | ".join(f"{s:g} x mean" for s in shares) + " |",
           "|---|" + "---|" * len(shares)]
    for b in bufs:
        cellv = []
        for s in shares:
            v = c.get((b, s))
            cellv.append("" if v is None else f"{v['median_qoe_gain_pct']:+.1f} %, p95 rebuf {100 * v['p95_rebuffer']:.2f} / {100 * v['p95_rebuffer_harmonic']:.2f} %")
        out.append(f"| {b:g} s | " + " | ".join(cellv) + " |")
    return "\n".join(out)


def heatmap_svg(rows: list[dict], pred: str, subtitle: str) -> str:
    """The median QoE gain of ``pred`` over harmonic per cell as a heatmap (blue gains, orange
    losses), each cell labelled with the gain and the p95 rebuffering ratio."""
    c = cells(rows, pred)
    if not c:
        raise ValueError(f"no sessions of {pred!r} beside harmonic")
    bufs = sorted({k[0] for k in c})
    shares = sorted({k[1] for k in c})
    cw, ch, ml, mt = 130, 56, 110, 78
    w, h = ml + cw * len(shares) + 20, mt + ch * len(bufs) + 60
    span = max(1.0, max(abs(v["median_qoe_gain_pct"]) for v in c.values()))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{w / 2}" y="22" text-anchor="middle" font-size="15">RobustMPC: the {html.escape(pred)} predictor against harmonic</text>',
           f'<text x="{w / 2}" y="40" text-anchor="middle" font-size="11">{html.escape(subtitle)}</text>']
    for j, b in enumerate(bufs):
        y = mt + j * ch
        out.append(f'<text x="{ml - 8}" y="{y + ch / 2 + 4}" text-anchor="end">buffer {b:g} s</text>')
        for i, s in enumerate(shares):
            x = ml + i * cw
            v = c.get((b, s))
            if v is None:
                continue
            g = v["median_qoe_gain_pct"] / span
            col = (0, 114, 178) if g >= 0 else (213, 94, 0)
            a = min(1.0, abs(g))
            fill = "#" + "".join(f"{int(255 - a * (255 - k)):02x}" for k in col)
            out.append(f'<rect x="{x}" y="{y}" width="{cw - 2}" height="{ch - 2}" fill="{fill}" stroke="#999"/>')
            out.append(f'<text x="{x + cw / 2}" y="{y + 22}" text-anchor="middle" font-size="14">{v["median_qoe_gain_pct"]:+.1f} %</text>')
            out.append(f'<text x="{x + cw / 2}" y="{y + 40}" text-anchor="middle" font-size="10">p95 rebuf {100 * v["p95_rebuffer"]:.1f} / {100 * v["p95_rebuffer_harmonic"]:.1f} %</text>')
    for i, s in enumerate(shares):
        out.append(f'<text x="{ml + i * cw + cw / 2}" y="{mt + ch * len(bufs) + 18}" text-anchor="middle">{s:g} x mean</text>')
    out.append(f'<text x="{ml + cw * len(shares) / 2}" y="{mt + ch * len(bufs) + 40}" text-anchor="middle">top rung of the ladder, as a share of the trace\'s mean capacity</text>')
    out.append(f'<text x="{w / 2}" y="{mt - 12}" text-anchor="middle" font-size="11">each cell: median QoE gain (paired by trace); p95 rebuffering ratio, {html.escape(pred)} / harmonic</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
