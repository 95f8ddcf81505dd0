"""`leocc testbed bench`: the testbed's own numbers on a whole local cluster (local.py).

A randomized schedule: JOBS one-off simulator runs of 1-4 simulated seconds on TERMINALS
terminals, due at random over the first SPREAD seconds, plus a cron job on each terminal every
2 s. Printed: overlapping experiments per terminal (the target is none), and the scheduling
overhead of each run: from when it could have started (its due time, or the end of the run
before it on its terminal, whichever is later) to when it started on the node.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from . import jobs
from .local import Cluster
from .orchestrator import Orchestrator
from .store import Store


def _job(name: str, dish: str, duration: float, cron: str | None = None) -> jobs.Job:
    schedule = f'kind = "cron"\ncron = "{cron}"\nruns = 5' if cron else 'kind = "once"'
    return jobs.parse(
        f'name = "{name}"\ndish = "{dish}"\n[schedule]\n{schedule}\n[experiment]\nkind = "sim"\n'
        f'trace = "traces/starlink-down-60s.trace"\ncc = "leocc"\nduration_s = {duration}\n',
        name,
    )


def run(n_jobs: int, terminals: int, spread_s: float, seed: int) -> int:
    rng = random.Random(seed)
    tmp = Path(tempfile.mkdtemp(prefix="leocc-testbed-bench-"))
    dishes = [f"dish-{i}" for i in range(terminals)]
    say = lambda m: print(f"testbed bench: {m}", file=sys.stderr, flush=True)  # noqa: E731
    say(f"starting a head and {terminals} nodes on loopback (in {tmp})")
    cluster = Cluster(tmp)
    try:
        for d in dishes:
            cluster.add_node(d)
        st = Store(tmp / "state.db")
        orch = Orchestrator(st, cluster.address, tmp / "out", log=lambda m: None)
        orch.connect()
        say(f"the nodes' Ray workers started in {orch.wait_warm():.1f} s")
        now = time.time() + 1
        for i in range(n_jobs):
            st.add_job(_job(f"once-{i}", rng.choice(dishes), rng.choice([1, 2, 4])), now + rng.uniform(0, spread_s))
        for d in dishes:
            st.add_job(_job(f"cron-{d}", d, 1, cron="*/2 * * * * *"), now)
        total = n_jobs + 5 * terminals
        t0, last = time.monotonic(), -1
        while any(state == "active" for _, _, state, _ in st.jobs()):
            orch.step()
            done = len(st.runs("state IN ('done', 'failed', 'aborted')"))
            if done != last and (done % 10 == 0 or done == total):
                say(f"{done}/{total} runs finished ({time.monotonic() - t0:.0f} s)")
                last = done
        rows = [json.loads(l)["testbed"] for l in (tmp / "out" / "results.jsonl").read_text().splitlines()]
        runs = {r.id: r for r in st.runs()}
    finally:
        cluster.stop()
    per_dish = defaultdict(list)
    for r in rows:
        per_dish[r["dish"]].append(r)
    overlaps, overhead, first = 0, [], []
    for spans in per_dish.values():
        spans.sort(key=lambda r: r["started"])
        prev_end = None
        for r in spans:
            if prev_end is not None and r["started"] < prev_end:
                overlaps += 1
            ready = max(runs[r["run"]].due, prev_end or 0.0)
            # Shown apart: without the orchestrator's warm-up a node's first run waits ~1.5 s
            # for Ray to start a worker process there.
            (overhead if prev_end is not None else first).append(r["started"] - ready)
            prev_end = r["ended"]
    overhead.sort()
    failed = sum(r["status"] != "done" for r in rows)
    print(f"runs: {len(rows)} on {terminals} terminals ({failed} not done)")
    print(f"overlapping experiments on one terminal: {overlaps}")
    p95 = overhead[int(0.95 * (len(overhead) - 1))]
    print(f"scheduling overhead (ready to started on the node): median {statistics.median(overhead) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, max {overhead[-1] * 1000:.0f} ms")
    print(f"  each terminal's first run: {', '.join(f'{t * 1000:.0f}' for t in sorted(first))} ms")
    return 0 if overlaps == 0 and failed == 0 else 1
