"""Train on generated traces of some seeds, test on other seeds: T3P's Table 1 for each model.

    python -m leocc_ml.evaluate --profiles starlink-down,starlink-up,oneweb \
        --train-seeds 1-20 --test-seeds 101-120 --duration 300 --json out.json

Progress goes to stderr; the table (markdown) to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time


from . import features, metrics, models, traces

DEFAULT_PROFILES = "starlink-down,starlink-up,oneweb"


def parse_seeds(spec: str) -> list[int]:
    """``1-20`` or ``1,2,5`` or a mix, as a sorted list; errors name the bad part."""
    out: set[int] = set()
    for part in spec.split(","):
        part = part.strip()
        try:
            if "-" in part:
                a, b = part.split("-", 1)
                lo, hi = int(a), int(b)
                if hi < lo:
                    raise ValueError
                out.update(range(lo, hi + 1))
            elif part:
                out.add(int(part))
        except ValueError:
            raise argparse.ArgumentTypeError(f"bad seed list part {part!r} (want N, N-M or N,M)") from None
    if not out:
        raise argparse.ArgumentTypeError("empty seed list")
    return sorted(out)


def dataset_for(profile: str, seeds: list[int], duration: int, cache: str, log) -> features.Dataset:
    """Features of the generated traces of ``profile`` for ``seeds``."""
    parts = []
    for s in seeds:
        path = traces.generate(profile, s, duration, cache)
        parts.append(features.build(traces.load_trace(path)))
        log(f"{profile} seed {s}: {len(parts[-1])} rows")
    return features.Dataset.concat(parts)


def fit_all(train: features.Dataset, names, seed: int = 0) -> dict:
    """``{(model, quantity): fitted model}`` for the given model names."""
    fitted = {}
    for name in names:
        for q in ("thr", "rtt"):
            cls = models.ALL[name]
            m = cls(seed=seed) if name in ("gbdt", "lstm") else cls()
            fitted[(name, q)] = m.fit(train, q)
    return fitted


def score(fitted: dict, test: features.Dataset) -> list[dict]:
    """Table 1 rows for every model, quantity and horizon."""
    rows = []
    for (name, q), m in fitted.items():
        pred = m.predict(test)
        actual = test.y_thr if q == "thr" else test.y_rtt
        for k, h in enumerate(features.HORIZONS_S):
            rows.append({"model": name, "quantity": q, "horizon_s": h, **metrics.table1(pred[:, k], actual[:, k])})
    return rows


def markdown(results: dict) -> str:
    """One table per profile: rows model × horizon, columns thr and rtt metrics."""
    lines = []
    for profile, rows in results.items():
        lines.append(f"\n**{profile}** (test rows: {rows[0]['n'] if rows else 0})\n")
        lines.append(
            "| model | ahead | thr MAPE | thr RMSE (Mbit/s) | thr ±5 % | thr ±10 % | RTT MAPE | RTT RMSE (ms) | RTT ±5 % | RTT ±10 % |"
        )
        lines.append("|---|---|---|---|---|---|---|---|---|---|")
        by = {(r["model"], r["quantity"], r["horizon_s"]): r for r in rows}
        for name in dict.fromkeys(r["model"] for r in rows):
            for h in features.HORIZONS_S:
                t, r = by.get((name, "thr", h)), by.get((name, "rtt", h))
                if not t or not r:
                    continue
                lines.append(
                    f"| {name} | {h} s | {t['mape']:.1f} % | {t['rmse']:.1f} | {t['within5']:.1f} % | {t['within10']:.1f} % "
                    f"| {r['mape']:.2f} % | {r['rmse']:.2f} | {r['within5']:.1f} % | {r['within10']:.1f} % |"
                )
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="leocc-predict", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profiles", default=DEFAULT_PROFILES, help=f"comma-separated trace profiles [default: {DEFAULT_PROFILES}]")
    ap.add_argument("--train-seeds", type=parse_seeds, default=parse_seeds("1-20"), help="trace seeds to train on [default: 1-20]")
    ap.add_argument("--test-seeds", type=parse_seeds, default=parse_seeds("101-120"), help="trace seeds to test on [default: 101-120]")
    ap.add_argument("--duration", type=int, default=300, help="seconds per generated trace [default: 300]")
    ap.add_argument("--models", default=",".join(models.ALL), help=f"models [default: {','.join(models.ALL)}]")
    ap.add_argument(
        "--validate",
        action="append",
        default=[],
        metavar="PROFILE=DIR",
        help="also test the PROFILE models on a mahimahi directory (e.g. a real trace; keep its results out of the repo)",
    )
    ap.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "leocc-ml-traces"), help="where generated traces are kept")
    ap.add_argument("--json", help="write all rows as JSON here")
    a = ap.parse_args(argv)
    if set(a.train_seeds) & set(a.test_seeds):
        ap.error(f"train and test seeds overlap: {sorted(set(a.train_seeds) & set(a.test_seeds))}")
    names = [m.strip() for m in a.models.split(",") if m.strip()]
    for n in names:
        if n not in models.ALL:
            ap.error(f"unknown model {n!r} (known: {', '.join(models.ALL)})")
    t0 = time.time()

    def log(msg):
        print(f"[{time.time() - t0:6.1f}s] {msg}", file=sys.stderr, flush=True)

    validate = {}
    for v in a.validate:
        prof, sep, d = v.partition("=")
        if not sep or not os.path.isdir(d):
            ap.error(f"--validate {v!r}: want PROFILE=DIR with an existing directory")
        validate.setdefault(prof, []).append(d)
    results = {}
    for profile in [p.strip() for p in a.profiles.split(",") if p.strip()]:
        train = dataset_for(profile, a.train_seeds, a.duration, a.cache, log)
        test = dataset_for(profile, a.test_seeds, a.duration, a.cache, log)
        log(f"{profile}: training {', '.join(names)} on {len(train)} rows")
        fitted = fit_all(train, names)
        results[profile] = score(fitted, test)
        for d in validate.get(profile, []):
            vs = features.build(traces.load_mahimahi_dir(d, "up" if "up" in profile else "down"))
            results[f"{profile} → {os.path.basename(os.path.normpath(d))}"] = score(fitted, vs)
    print(markdown(results))
    if a.json:
        tmp = a.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump(results, f, indent=1)
        os.replace(tmp, a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
