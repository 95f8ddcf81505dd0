"""The testbed on a real Ray cluster (a head and node processes on loopback): jobs never overlap
on a terminal, a node lost mid-job fails its run and the retry runs, an orchestrator killed
mid-schedule loses nothing."""

from __future__ import annotations

import json
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from collections import defaultdict

import pytest

from cluster import LEOCC, Cluster
from leocc_testbed import jobs
from leocc_testbed.orchestrator import Orchestrator
from leocc_testbed.store import Store

pytestmark = pytest.mark.skipif(not LEOCC.exists(), reason=f"{LEOCC} is not built (cargo build --release)")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("cluster"))
    try:
        c.add_node("dish-a")
        c.add_node("dish-b")
        yield c
    finally:
        c.stop()


def job(name, dish, kind="once", duration=2, extra="", schedule_extra=""):
    text = f"""
name = "{name}"
dish = "{dish}"
retry_delay_s = 0
{extra}
[schedule]
kind = "{kind}"
{schedule_extra}
[experiment]
kind = "sim"
trace = "traces/starlink-down-60s.trace"
cc = "leocc"
duration_s = {duration}
"""
    return jobs.parse(text, name)


def serve_until(orch: Orchestrator, done, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, "the schedule did not finish in time"
        orch.step()


def all_done(st: Store) -> bool:
    return all(state != "active" for _, _, state, _ in st.jobs())


def test_a_random_schedule_never_overlaps_on_a_terminal(cluster, tmp_path):
    st = Store(tmp_path / "state.db")
    rng = random.Random(30)
    now = time.time()
    for i in range(24):
        st.add_job(job(f"rand-{i}", rng.choice(["dish-a", "dish-b"]), duration=rng.choice([1, 2, 4])), now + rng.uniform(0, 5))
    for d in ("dish-a", "dish-b"):
        st.add_job(job(f"cron-{d}", d, kind="cron", schedule_extra='cron = "*/2 * * * * *"\nruns = 3'), now)
    orch = Orchestrator(st, cluster.address, tmp_path / "out", log=lambda m: None)
    orch.connect()
    serve_until(orch, lambda: all_done(st), 300)
    rows = [json.loads(l) for l in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 24 + 6 and all(r["testbed"]["status"] == "done" for r in rows)
    assert all(r["throughput_mbps"] > 0 for r in rows), "each row carries the simulator's record"
    per_dish = defaultdict(list)
    for r in rows:
        tb = r["testbed"]
        per_dish[tb["dish"]].append((tb["started"], tb["ended"], tb["job"]))
    overheads = []
    for dish, spans in per_dish.items():
        spans.sort()
        for (s0, e0, j0), (s1, e1, j1) in zip(spans, spans[1:]):
            assert s1 >= e0, f"{j0} and {j1} overlap on {dish}"
            overheads.append(s1 - e0)
    print(f"\nbetween back-to-back runs on one terminal: median {statistics.median(overheads) * 1000:.0f} ms, max {max(overheads) * 1000:.0f} ms")


def test_a_node_lost_mid_job_fails_the_run_and_the_retry_runs(cluster, tmp_path):
    cluster.add_node("dish-k")
    st = Store(tmp_path / "state.db")
    # 3600 simulated seconds: about ten seconds of work, long enough to be killed in.
    jid = st.add_job(job("long", "dish-k", duration=3600, extra="retries = 1"), time.time())
    orch = Orchestrator(st, cluster.address, tmp_path / "out", log=lambda m: None)
    orch.connect()
    nodes_runs = lambda: list((cluster.tmp / "nodes" / "runs").glob("long-*"))  # noqa: E731
    serve_until(orch, lambda: bool(nodes_runs()), 60)
    cluster.kill_node("dish-k")
    serve_until(orch, lambda: st.runs("job_id = ? AND state = 'failed'", (jid,)) != [], 90)
    failed = st.runs("job_id = ? AND state = 'failed'", (jid,))[0]
    assert "Died" in (failed.detail or "") or "died" in (failed.detail or ""), failed.detail
    retry = st.runs("job_id = ? AND state IN ('queued', 'running')", (jid,))
    assert [r.attempt for r in retry] == [2]
    cluster.add_node("dish-k")
    serve_until(orch, lambda: all_done(st), 120)
    assert [(r.attempt, r.state) for r in st.runs("job_id = ?", (jid,))] == [(1, "failed"), (2, "done")]


def test_an_orchestrator_killed_mid_schedule_loses_nothing(cluster, tmp_path):
    home = tmp_path / "home"
    env = {**cluster.env, "LEOCC_TESTBED_HOME": str(home)}
    for i in range(6):
        (tmp_path / f"j{i}.toml").write_text(
            f'name = "r{i}"\ndish = "dish-{"ab"[i % 2]}"\n[schedule]\nkind = "once"\n[experiment]\nkind = "sim"\n'
            f'trace = "traces/starlink-down-60s.trace"\ncc = "cubic"\nduration_s = {300 if i < 2 else 2}\n'
        )
    cli = [sys.executable, "-m", "leocc_testbed"]
    sub = subprocess.run([*cli, "submit", *[str(tmp_path / f"j{i}.toml") for i in range(6)]], env=env, capture_output=True, text=True)
    assert sub.returncode == 0, sub.stderr
    serve = subprocess.Popen([*cli, "serve", "--address", cluster.address], env=env, stderr=subprocess.PIPE, text=True, start_new_session=True)
    st = Store(home / "state.db")
    deadline = time.monotonic() + 60
    while not st.runs("state = 'running'"):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    time.sleep(1.0)
    os.killpg(serve.pid, signal.SIGKILL)
    serve.wait()
    again = subprocess.run([*cli, "serve", "--address", cluster.address, "--duration", "60"], env=env, capture_output=True, text=True, timeout=120)
    assert "interrupted by the last restart queued again" in again.stderr, again.stderr
    assert all(state == "done" for _, _, state, _ in st.jobs()), again.stderr
    rows = [json.loads(l) for l in (home / "results" / "results.jsonl").read_text().splitlines()]
    done = sorted(r["testbed"]["job"] for r in rows if r["testbed"]["status"] == "done")
    assert done == [f"r{i}" for i in range(6)], "each job's result once, none lost"
    status = subprocess.run([*cli, "status"], env=env, capture_output=True, text=True)
    assert "r5" in status.stdout and "done" in status.stdout
