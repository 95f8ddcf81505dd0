"""CDF plots as self-contained SVG (no plotting library: the install stays light)."""

from __future__ import annotations

import html

import numpy as np

#: Colour-blind-safe palette (Okabe-Ito).
COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
W, H = 780, 400
ML, MR, MT, MB = 70, 250, 40, 50
#: Axis labels of the usual metrics.
LABELS = {
    "qoe": "QoE per 3-min session (Pensieve units; 193.5 = top rung throughout)",
    "mean_bitrate_mbps": "mean bitrate (Mbit/s)",
    "rebuffer_ratio": "rebuffer ratio",
}


def _key(row: dict, group_by: str) -> str:
    return " ".join("?" if k not in row else "-" if row[k] is None else str(row[k]) for k in group_by.split("+"))


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

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">',
        f'<rect width="{W}" height="{H}" fill="white"/>',
        f'<text x="{ML + pw / 2}" y="22" text-anchor="middle" font-size="14">{html.escape(title)}</text>',
        f'<rect x="{ML}" y="{MT}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>',
    ]
    for i in range(6):
        v = lo + (hi - lo) * i / 5
        out.append(f'<line x1="{x(v):.1f}" y1="{MT}" x2="{x(v):.1f}" y2="{MT + ph}" stroke="#ddd"/>')
        out.append(f'<text x="{x(v):.1f}" y="{MT + ph + 16}" text-anchor="middle">{v:.3g}</text>')
        p = i / 5
        out.append(f'<line x1="{ML}" y1="{y(p):.1f}" x2="{ML + pw}" y2="{y(p):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{ML - 6}" y="{y(p) + 4:.1f}" text-anchor="end">{p:.1f}</text>')
    out.append(f'<text x="{ML + pw / 2}" y="{H - 10}" text-anchor="middle">{html.escape(LABELS.get(metric, metric))}</text>')
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


def summary_markdown(rows: list[dict], group_by: str) -> str:
    """Per group: sessions, median and p95 QoE (Pensieve units, per session), median QoE gain
    over the group's ``harmonic`` sibling, mean bitrate, rebuffer ratio and switches."""
    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(_key(r, group_by), []).append(r)
    fields = group_by.split("+")
    out = [
        "| "
        + " | ".join(fields)
        + " | sessions | median QoE | p5 QoE | median vs harmonic | mean bitrate (Mbit/s) | rebuffer ratio | switches (mean) |",
        "|" + "---|" * (len(fields) + 7),
    ]
    for name in sorted(groups):
        g = groups[name]
        q = np.asarray([r["qoe"] for r in g])
        vs = ""
        if "predictor" in fields:
            sib = name.split(" ")
            sib[fields.index("predictor")] = "harmonic"
            base = groups.get(" ".join(sib))
            if base and g is not base:
                bq = float(np.median([r["qoe"] for r in base]))
                vs = f"{100 * (np.median(q) - bq) / abs(bq):+.1f} %" if bq else ""
        out.append(
            "| " + " | ".join(name.split(" ")) + f" | {len(g)} | {np.median(q):.1f} | {np.percentile(q, 5):.1f} | {vs} | "
            f"{np.mean([r['mean_bitrate_mbps'] for r in g]):.1f} | {100 * np.mean([r['rebuffer_ratio'] for r in g]):.2f} % | "
            f"{np.mean([r['switches'] for r in g]):.1f} |"
        )
    return "\n".join(out)


#: Student's t at 97.5 % for 1..9 degrees of freedom (a 95 % interval of a mean of n = 2..10 runs).
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262)
#: Columns of the interval table: field and how it is printed.
INTERVAL_METRICS = (("qoe", "QoE", "%.1f"), ("mean_bitrate_mbps", "mean bitrate (Mbit/s)", "%.1f"), ("rebuffer_s", "stall s", "%.2f"),
                    ("switches", "switches", "%.1f"), ("latency_p95_s", "live latency p95 (s)", "%.2f"))


def mean_interval(xs) -> tuple[float, float | None]:
    """Mean and the half-width of its 95 % interval (Student's t; None for one value)."""
    xs = [float(x) for x in xs]
    m = float(np.mean(xs))
    n = len(xs)
    if n < 2:
        return m, None
    t = _T975[n - 2] if n - 2 < len(_T975) else 1.96
    return m, float(t * np.std(xs, ddof=1) / np.sqrt(n))


def interval_markdown(rows: list[dict], group_by: str) -> str:
    """Per group (repeated runs of one setting): runs, and each metric as mean ± the half-width
    of its 95 % interval, so a reader sees which differences are beyond the run-to-run noise."""
    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(_key(r, group_by), []).append(r)
    fields = group_by.split("+")
    cols = [m for m in INTERVAL_METRICS if any(r.get(m[0]) is not None for r in rows)]
    out = ["| " + " | ".join(fields) + " | runs | " + " | ".join(c[1] for c in cols) + " |", "|" + "---|" * (len(fields) + 1 + len(cols))]
    for name in sorted(groups):
        g = groups[name]
        cells = []
        for key, _, fmt in cols:
            m, h = mean_interval([r.get(key) or 0.0 for r in g])
            cells.append(fmt % m + ("" if h is None else " ± " + fmt % h))
        out.append("| " + " | ".join(name.split(" ")) + f" | {len(g)} | " + " | ".join(cells) + " |")
    return "\n".join(out)
