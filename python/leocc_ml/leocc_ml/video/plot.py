"""CDF plots as self-contained SVG (no plotting library: the install stays light)."""

from __future__ import annotations

import html

import numpy as np

#: Colour-blind-safe palette (Okabe-Ito).
COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
W, H = 640, 400
ML, MR, MT, MB = 70, 170, 40, 50


def _key(row: dict, group_by: str) -> str:
    return " ".join(str(row.get(k, "?")) for k in group_by.split("+"))


def cdf_svg(rows: list[dict], metric: str, group_by: str, title: str) -> str:
    """An SVG with one empirical CDF per group of ``rows`` (values of ``metric``)."""
    groups: dict[str, list[float]] = {}
    for r in rows:
        v = r.get(metric)
        if isinstance(v, (int, float)) and np.isfinite(v):
            groups.setdefault(_key(r, group_by), []).append(float(v))
    if not groups:
        raise ValueError(f"no numeric {metric!r} in the inputs")
    allv = np.concatenate([np.asarray(v) for v in groups.values()])
    lo, hi = float(allv.min()), float(allv.max())
    if hi == lo:
        lo, hi = lo - 1, hi + 1
    pw, ph = W - ML - MR, H - MT - MB

    def x(v):
        return ML + (v - lo) / (hi - lo) * pw

    def y(p):
        return MT + (1 - p) * ph

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{ML + pw / 2}" y="22" text-anchor="middle" font-size="14">{html.escape(title)}</text>',
           f'<rect x="{ML}" y="{MT}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>']
    for i in range(6):
        v = lo + (hi - lo) * i / 5
        out.append(f'<line x1="{x(v):.1f}" y1="{MT}" x2="{x(v):.1f}" y2="{MT + ph}" stroke="#ddd"/>')
        out.append(f'<text x="{x(v):.1f}" y="{MT + ph + 16}" text-anchor="middle">{v:.3g}</text>')
        p = i / 5
        out.append(f'<line x1="{ML}" y1="{y(p):.1f}" x2="{ML + pw}" y2="{y(p):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{ML - 6}" y="{y(p) + 4:.1f}" text-anchor="end">{p:.1f}</text>')
    out.append(f'<text x="{ML + pw / 2}" y="{H - 10}" text-anchor="middle">{html.escape(metric)}</text>')
    out.append(f'<text x="16" y="{MT + ph / 2}" text-anchor="middle" transform="rotate(-90 16 {MT + ph / 2})">CDF</text>')
    for i, (name, vals) in enumerate(sorted(groups.items())):
        v = np.sort(vals)
        c = COLOURS[i % len(COLOURS)]
        pts = [f"{x(v[0]):.1f},{y(0):.1f}"]
        for j, val in enumerate(v):
            pts.append(f"{x(val):.1f},{y(j / len(v)):.1f}")
            pts.append(f"{x(val):.1f},{y((j + 1) / len(v)):.1f}")
        out.append(f'<polyline fill="none" stroke="{c}" stroke-width="2" points="{" ".join(pts)}"/>')
        ly = MT + 14 + 18 * i
        out.append(f'<line x1="{ML + pw + 12}" y1="{ly - 4}" x2="{ML + pw + 32}" y2="{ly - 4}" stroke="{c}" stroke-width="2"/>')
        out.append(f'<text x="{ML + pw + 36}" y="{ly}">{html.escape(name)} (n={len(v)}, med {np.median(v):.3g})</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
