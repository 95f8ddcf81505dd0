"""The testbed on a real Ray cluster (a head and node processes on loopback): jobs never overlap
on a terminal, a node lost mid-job fails its run and the retry runs, an orchestrator killed
mid-schedule loses nothing."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
from collections import defaultdict

import pytest

from leocc_testbed.local import LEOCC, Cluster, free_port
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


def connected(cluster, st: Store, out) -> Orchestrator:
    """A quiet orchestrator over `st`, connected to the cluster."""
    orch = Orchestrator(st, cluster.address, out, log=lambda m: None)
    orch.connect()
    return orch


def serve_until(orch: Orchestrator, done, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, "the schedule did not finish in time"
        orch.step()


def scrape_metrics(port: int) -> str:
    """What a node serves at /metrics on loopback `port`."""
    return urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()


def metric(text: str, name: str) -> float:
    """The value of the first sample of `name` in a Prometheus text page."""
    return float(next(l for l in text.splitlines() if l.startswith(name)).split()[1])


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
    orch = connected(cluster, st, tmp_path / "out")
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
    orch = connected(cluster, st, tmp_path / "out")
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
    cli = [str(LEOCC), "testbed"]  # as users run it: the binary hands over to this package
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
    again = subprocess.run([*cli, "serve", "--address", cluster.address, "--until-idle", "--duration", "90"], env=env, capture_output=True, text=True, timeout=150)
    assert "interrupted by the last restart queued again" in again.stderr, again.stderr
    assert all(state == "done" for _, _, state, _ in st.jobs()), again.stderr
    rows = [json.loads(l) for l in (home / "results" / "results.jsonl").read_text().splitlines()]
    done = sorted(r["testbed"]["job"] for r in rows if r["testbed"]["status"] == "done")
    assert done == [f"r{i}" for i in range(6)], "each job's result once, none lost"
    status = subprocess.run([*cli, "status"], env=env, capture_output=True, text=True)
    assert "r5" in status.stdout and "done" in status.stdout
    listed = subprocess.run([*cli, "results"], env=env, capture_output=True, text=True).stdout.splitlines()
    assert listed[0].split()[:4] == ["job", "run", "kind", "status"], listed[0]
    assert sum(line.split()[2:4] == ["sim", "done"] for line in listed[1:]) == 6, listed


class Terminal:
    """Two namespaces joined by a veth pair: the terminal's interface `tb0` on the dish side,
    and a far end that synthetic user traffic goes to."""

    def __init__(self, tag: str):
        self.dish_ns, self.far_ns = f"tb{tag}-{os.getpid()}-d", f"tb{tag}-{os.getpid()}-f"
        self.procs: list[subprocess.Popen] = []
        for ns in (self.dish_ns, self.far_ns):
            subprocess.run(["ip", "netns", "add", ns], check=True)
        sh = lambda *a: subprocess.run(list(a), check=True)  # noqa: E731
        sh("ip", "-n", self.dish_ns, "link", "add", "tb0", "type", "veth", "peer", "name", "tb1", "netns", self.far_ns)
        sh("ip", "-n", self.dish_ns, "addr", "add", "10.250.0.1/24", "dev", "tb0")
        sh("ip", "-n", self.far_ns, "addr", "add", "10.250.0.2/24", "dev", "tb1")
        for ns, dev in ((self.dish_ns, "tb0"), (self.far_ns, "tb1")):
            sh("ip", "-n", ns, "link", "set", dev, "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        self.spawn(self.far_ns, "iperf3", "-s", "-p", "5299")

    def spawn(self, ns: str, *argv: str) -> subprocess.Popen:
        p = subprocess.Popen(["ip", "netns", "exec", ns, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        self.procs.append(p)
        return p

    def user_traffic(self, mbps: int, seconds: int) -> subprocess.Popen:
        time.sleep(0.5)  # the server is up
        return self.spawn(self.dish_ns, "iperf3", "-c", "10.250.0.2", "-p", "5299", "-u", "-b", f"{mbps}M", "-t", str(seconds))

    def close(self) -> None:
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
        for ns in (self.dish_ns, self.far_ns):
            subprocess.run(["ip", "netns", "del", ns])


@pytest.mark.skipif(os.geteuid() != 0, reason="namespaces need root")
def test_scavenger_mode_stops_an_overhead_run_and_reschedules_it(cluster, tmp_path):
    term = Terminal("s")
    try:
        port = free_port()
        cluster.add_node("dish-s", "--netns", term.dish_ns, "--iface", "tb0", "--scavenger-mbps", "20", "--metrics", f"127.0.0.1:{port}")
        scrape = lambda: scrape_metrics(port)  # noqa: E731
        st = Store(tmp_path / "state.db")
        jid = st.add_job(job("scav", "dish-s", duration=3600, extra="overhead = true\nreschedule_after_s = 1"), time.time())
        orch = connected(cluster, st, tmp_path / "out")
        serve_until(orch, lambda: bool(list((cluster.tmp / "nodes" / "runs").glob("scav-*"))), 60)
        deadline = time.monotonic() + 10
        while metric(scrape(), "leocc_testbed_experiment_running") != 1:
            assert time.monotonic() < deadline, "the node's metrics never showed the experiment"
            time.sleep(0.1)
        user = term.user_traffic(100, 6)
        traffic_at = time.time()
        serve_until(orch, lambda: bool(st.runs("job_id = ? AND state = 'aborted'", (jid,))), 60)
        first = json.loads(st.runs("job_id = ? AND state = 'aborted'", (jid,))[0].result)
        took = first["abort"]["stopped"] - traffic_at
        print(f"\nscavenger mode: user traffic {first['abort']['user_mbps']:.0f} Mbit/s seen and the experiment stopped {took:.2f} s after it began")
        assert first["abort"]["user_mbps"] > 20 and took < 5
        assert "partial_stdout" in first and "stderr_tail" in first, "what the experiment wrote is kept"
        deadline = time.monotonic() + 4
        while metric(text := scrape(), "leocc_testbed_user_traffic_mbps") <= 20:
            assert time.monotonic() < deadline, f"the node's metrics never showed the user's traffic: {text}"
            time.sleep(0.1)
        assert metric(text, "leocc_testbed_scavenger_threshold_mbps") == 20, text
        if shutil.which("promtool"):
            check = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
            assert check.returncode == 0, check.stdout + check.stderr
        user.wait()
        serve_until(orch, lambda: all_done(st), 120)
        states = [r.state for r in st.runs("job_id = ?", (jid,))]
        assert states[0] == "aborted" and states[-1] == "done", states
        assert all(s == "aborted" for s in states[:-1]), "rescheduled, not failed"
        assert all(r.attempt == 1 for r in st.runs("job_id = ?", (jid,))), "an abort is not an attempt of the job's"
    finally:
        if "dish-s" in cluster.nodes:
            cluster.kill_node("dish-s")
        term.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="namespaces and BPF need root")
def test_scavenger_mode_leaves_the_experiments_own_traffic_out(cluster, tmp_path):
    # An overhead iperf3 run at 200 Mbit/s through a terminal whose threshold is 50: its own
    # traffic (counted in the kernel, `leocc kernel traffic`) is not the user's, so it runs to
    # the end; the same run with 150 Mbit/s of user traffic beside it is stopped, and the user
    # rate it reports is the user's alone. The node's metric leaves it out too.
    term = Terminal("o")
    try:
        port = free_port()
        cluster.add_node("dish-o", "--netns", term.dish_ns, "--iface", "tb0", "--scavenger-mbps", "50", "--metrics", f"127.0.0.1:{port}")
        scrape = lambda: scrape_metrics(port)  # noqa: E731
        cluster.add_node("cloud-o", "--netns", term.far_ns, "--serve-addr", "10.250.0.2", role="server")
        st = Store(tmp_path / "state.db")
        iperf = lambda name, secs: jobs.parse(  # noqa: E731
            f'name = "{name}"\ndish = "dish-o"\noverhead = true\nreschedule_after_s = 3600\n[schedule]\nkind = "once"\n'
            f'[experiment]\nkind = "iperf3"\nserver = "cloud-o"\ncc = "cubic"\nduration_s = {secs}\nbitrate_mbps = 200\n', name)
        quiet = st.add_job(iperf("quiet", 4), time.time())
        orch = connected(cluster, st, tmp_path / "out")
        seen = []  # the node's user traffic metric while the run goes

        def watch():
            text = scrape()
            if metric(text, "leocc_testbed_experiment_running") == 1:
                seen.append(metric(text, "leocc_testbed_user_traffic_mbps"))
            return all_done(st)

        serve_until(orch, watch, 120)
        (run,) = st.runs("job_id = ?", (quiet,))
        assert run.state == "done", run.detail
        own = json.loads(run.result)["own_traffic"]
        own_mbps = (own["rx_bytes"] + own["tx_bytes"]) * 8 / 4 / 1e6
        assert 150 < own_mbps < 260, own
        seen = [x for x in seen if x == x]  # NaN: the window restarting as the run began
        assert len(seen) >= 5 and max(seen) < 50, f"the node's metric counted the run's own traffic: {seen}"

        busy = st.add_job(iperf("busy", 60), time.time())
        serve_until(orch, lambda: bool(list((cluster.tmp / "nodes" / "runs").glob("busy-*"))), 60)
        time.sleep(2)  # the experiment's own traffic flows
        user = term.user_traffic(150, 10)
        traffic_at = time.time()
        serve_until(orch, lambda: bool(st.runs("job_id = ? AND state = 'aborted'", (busy,))), 60)
        abort = json.loads(st.runs("job_id = ? AND state = 'aborted'", (busy,))[0].result)["abort"]
        took = abort["stopped"] - traffic_at
        print(f"\nscavenger mode: own traffic {own_mbps:.0f} Mbit/s left out; user traffic seen at {abort['user_mbps']:.0f} Mbit/s "
              f"(1 s average) and the run stopped {took:.2f} s after it began")
        # The window's average crosses the threshold while the user's traffic ramps in; it
        # never holds the experiment's own 200 Mbit/s.
        assert 50 < abort["user_mbps"] < 170 and took < 3, abort
        st.cancel("busy")
        user.wait()
    finally:
        for n in ("dish-o", "cloud-o"):
            if n in cluster.nodes:
                cluster.kill_node(n)
        term.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="the emulator needs root")
def test_a_trigger_fires_on_a_reconfiguration_of_the_emulated_terminal(cluster, tmp_path):
    # The terminal: the bundled Starlink downlink replayed by the emulator (reconfigurations
    # every 15 s, each with its outage); the node probes its PoP from the client namespace.
    ns_file = tmp_path / "ns"
    emu = subprocess.Popen(
        [str(LEOCC), "emu", "--trace", str(LEOCC.parents[2] / "traces" / "starlink-down-60s.trace"), "--", "sh", "-c", f"ip netns identify > {ns_file}; sleep 300"],
        stdout=subprocess.DEVNULL, stderr=open(tmp_path / "emu.log", "wb"), start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not (ns_file.exists() and ns_file.read_text().strip()):
            assert time.monotonic() < deadline and emu.poll() is None, (tmp_path / "emu.log").read_text()
            time.sleep(0.1)
        cluster.add_node("dish-t", "--netns", ns_file.read_text().strip(), "--pop", "100.64.0.1")
        st = Store(tmp_path / "state.db")
        jid = st.add_job(job("trig", "dish-t", kind="trigger", schedule_extra='when = "event == 1"\ntimeout_s = 90\nruns = 1'), time.time())
        orch = connected(cluster, st, tmp_path / "out")
        serve_until(orch, lambda: all_done(st), 150)
        (run,) = st.runs("job_id = ?", (jid,))
        assert run.state == "done", run.detail
        trigger = json.loads(run.result)["trigger"]
        assert trigger["fired"] and trigger["values"]["LEOCC_EVENT"] == "1", trigger
        event = trigger["events"][-1]
        delay_ms = trigger["at_mono_ms"] - event["detect_mono_ms"]
        since_outage_ms = trigger["at_mono_ms"] - event["t_mono_ms"]
        print(f"\ntrigger: fired {delay_ms:.1f} ms after the detector's event (confidence {event['confidence']}) and {since_outage_ms:.0f} ms after "
              f"the outage began by the detector's estimate, {trigger['waited_s']:.1f} s into the wait")
        assert 0 <= delay_ms < 1000
        row = json.loads((tmp_path / "out" / "results.jsonl").read_text().splitlines()[0])
        assert row["testbed"]["trigger"]["values"]["LEOCC_EVENT"] == "1", "the trigger that fired is in the result's provenance"
    finally:
        if "dish-t" in cluster.nodes:
            cluster.kill_node("dish-t")
        os.killpg(emu.pid, signal.SIGTERM)
        emu.wait(timeout=30)


def test_a_client_without_the_token_is_refused(cluster):
    env = {k: v for k, v in cluster.env.items() if not k.startswith(("RAY_AUTH", "LEOCC_TESTBED_TOKEN"))}
    probe = "import ray; ray.init(address='%s', logging_level='ERROR'); print('connected')" % cluster.address
    p = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and "connected" not in p.stdout, "a client without the cluster's token got in"


SERVER_KINDS = {
    "iperf3": 'cc = "cubic"\nduration_s = 3',
    "quic": 'cc = "cubic"\nduration_s = 3',
    "leotp": "duration_s = 3",
    "video": 'cc = "cubic"\nchunks = 2\ntop_mbps = 8',
}


@pytest.mark.skipif(os.geteuid() != 0, reason="namespaces need root")
def test_each_kind_with_a_server_runs_between_a_terminal_and_a_server_node(cluster, tmp_path):
    # The terminal's node in one namespace, a server node in the other (the veth's far end):
    # each kind's server side starts on the server node, the client on the terminal's node, the
    # server sending (the downlink); results and time series land in the evaluation store.
    import leocc

    term = Terminal("i")
    try:
        cluster.add_node("dish-i", "--netns", term.dish_ns)
        cluster.add_node("cloud-i", "--netns", term.far_ns, "--serve-addr", "10.250.0.2", role="server")
        st = Store(tmp_path / "state.db")
        for kind, args in SERVER_KINDS.items():
            text = f'name = "{kind}"\ndish = "dish-i"\nretries = 0\n[schedule]\nkind = "once"\n[experiment]\nkind = "{kind}"\nserver = "cloud-i"\n{args}\n'
            st.add_job(jobs.parse(text, kind), time.time())
        out = tmp_path / "out"
        orch = connected(cluster, st, out)
        serve_until(orch, lambda: all_done(st), 240)
        for run in st.runs():
            assert run.state == "done", (run.detail, json.loads(run.result or "{}").get("stderr_tail"))
        rows = {r["testbed"]["job"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
        for kind in ("iperf3", "quic", "leotp"):
            assert rows[kind]["throughput_mbps"] > 100, rows[kind]
        assert rows["iperf3"]["cc"] == "cubic"
        assert rows["video"]["qoe"] is not None and len(rows["video"]["chunks_log"]) == 2, rows["video"]
        for kind, row in rows.items():
            server = row["testbed"]["server"]
            assert server["exit_code"] in (0, -15), (kind, server)
        orch.fold()
        assert not list((out / "ts").glob("*.csv")), "the CSVs were folded into a Parquet part"
        ts = leocc.read_timeseries(out)
        for kind in ("iperf3", "quic", "leotp"):
            mine = ts[ts["key"] == rows[kind]["key"]]
            assert len(mine) >= 25 and mine["throughput_mbps"].mean() > 100, (kind, mine.head())
        print("\nthrough the testbed over a veth: " + ", ".join(
            f"{k} {rows[k]['throughput_mbps']:.0f} Mbit/s" for k in ("iperf3", "quic", "leotp")) + f", video QoE {rows['video']['qoe']:.2f}")
    finally:
        for n in ("dish-i", "cloud-i"):
            if n in cluster.nodes:
                cluster.kill_node(n)
        term.close()
