"""The orchestrator (`leocc testbed serve`): hands due runs to Ray and records what comes back.

Ray is the scheduler and the executor: a run is a Ray task that asks for its terminal's
resource (`dish:NAME`, capacity 1 on the node that joined with that terminal, node.py), so Ray
itself runs at most one experiment per terminal and queues the rest; a trigger's wait asks only
for `at:NAME`, which pins it to the node without taking the terminal. The orchestrator's own
loop, every TICK_S: queue-to-Ray for runs that fell due (store.py), and collect finished tasks.
What follows a run is decided here (`follow_up`), in the same transaction that records it:

| schedule | done | failed (node lost, tool error) | aborted (scavenger mode) |
|---|---|---|---|
| once | job done | retried after retry_delay_s while attempts last, then job failed | again after reschedule_after_s |
| cron | next cron instant | retried while attempts last, else next instant | next instant (LEOScope aborts cron runs) |
| trigger | wait again | wait again | wait again |

A trigger wait that times out ends the job. A cron or trigger job ends after `runs` slots.
Every finished run is one line of OUT/results.jsonl, the evaluation store's format
(`leocc.read_results`): the experiment's own record at the top level, the testbed's provenance
under `testbed`; its time series go to OUT/ts, folded into Parquet parts when the orchestrator
is idle (series.py; `leocc.read_timeseries`).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Callable

from .cron import Cron
from .experiments import KINDS
from .jobs import Job
from . import series
from .store import Run, Store

TICK_S = 0.2
RESULTS_SCHEMA = 1


def _remote_functions():
    """The tasks, defined on first use so that importing this module does not import Ray."""
    import ray

    @ray.remote(num_cpus=0, max_retries=0)
    def watch(job_json: str) -> dict:
        from .jobs import Job
        from .node import NodeConfig
        from .runner import wait_trigger

        job = Job.from_json(job_json)
        return wait_trigger(job, NodeConfig.load(job.dish))

    @ray.remote(num_cpus=0, max_retries=0)
    def execute(job_json: str, run_id: int, peer: dict | None = None) -> dict:
        from .jobs import Job
        from .node import NodeConfig, node_dir
        from .runner import execute as run

        job = Job.from_json(job_json)
        return run(job, NodeConfig.load(job.dish), node_dir() / "runs" / f"{job.name}-{run_id}", peer)

    @ray.remote(num_cpus=0, max_retries=0)
    def warm() -> None:
        from . import runner  # noqa: F401  (the import is the work: a run's task finds it done)

    from .runner import ServerSide

    server = ray.remote(num_cpus=0, max_restarts=0)(ServerSide)
    return watch, execute, warm, server


class Orchestrator:
    """One orchestrator per store; restartable at any point (store.recover)."""

    def __init__(self, store: Store, address: str, out_dir: str | Path, log: Callable[[str], None] | None = None):
        self.store = store
        self.address = address
        self.out = Path(out_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        self.log = log or (lambda m: print(f"testbed: {m}", file=sys.stderr, flush=True))
        # ObjectRef -> (run id, "watch" | "server" | "exec" | "finish" | "warm", trigger info, the server actor)
        self.pending: dict = {}
        self.submitted_at: dict[int, float] = {}
        self.checked: set[str] = set()  # terminals whose presence in the cluster was checked
        self.finishing: dict[int, dict] = {}  # run id -> the client's result, while the server side ends
        self.unfolded: dict[str, str] = {}  # time series waiting in CSVs: path -> run key (series.py)

    def connect(self) -> None:
        import ray

        if not ray.is_initialized():
            ray.init(address=self.address, logging_level="ERROR", log_to_driver=False, namespace="leocc-testbed")
        self.watch, self.execute, self.warm, self.server = _remote_functions()
        for name in ray.cluster_resources():
            if name.startswith("dish:"):
                self._warm(name.removeprefix("dish:"))

    def wait_warm(self, timeout_s: float = 30.0) -> float:
        """Wait until the nodes' workers have started (see _warm); returns the seconds waited."""
        import ray

        t0 = time.monotonic()
        refs = [r for r, (_, what, _, _) in self.pending.items() if what == "warm"]
        ray.wait(refs, num_returns=len(refs), timeout=timeout_s)
        for r in refs:
            self.pending.pop(r, None)
        return time.monotonic() - t0

    def _warm(self, dish: str) -> None:
        """Have Ray start a worker on the terminal's node now: a node's first task otherwise
        waits ~1.5 s for one (Ray keeps it for the runs that follow)."""
        self.checked.add(dish)
        self.pending[self.warm.options(resources={f"at:{dish}": 1}).remote()] = (None, "warm", None, None)

    def serve(self, stop: Callable[[], bool] = lambda: False) -> None:
        """Run until `stop()` is true (or forever)."""
        self.connect()
        n = self.store.recover()
        if n:
            self.log(f"{n} run(s) interrupted by the last restart queued again")
        self.fold()  # what the last orchestrator left unfolded
        try:
            while not stop():
                self.step()
        finally:
            self.fold()

    def fold(self) -> None:
        """Fold the finished runs' time series into a Parquet part (series.py)."""
        n = series.fold(self.out, self.unfolded)
        self.unfolded = {}
        if n:
            self.log(f"{n} run(s)' time series folded into {self.out / series.TS_DIR}")

    def step(self) -> None:
        import ray

        for run in self.store.due_runs(time.time()):
            self._submit(run)
        if not self.pending:
            if self.unfolded:
                self.fold()  # nothing runs: a good moment for the Parquet part
            time.sleep(TICK_S)
            return
        ready, _ = ray.wait(list(self.pending), num_returns=len(self.pending), timeout=TICK_S)
        for ref in ready:
            self._collect(ref)

    def _submit(self, run: Run, trigger: dict | None = None) -> None:
        import ray

        job, _, _ = self.store.job(run.job_id)
        if job.dish not in self.checked:
            # Once per terminal: a question to Ray's control store per run would slow the loop.
            self.checked.add(job.dish)
            if f"dish:{job.dish}" not in ray.cluster_resources():
                self.log(f"no node of terminal {job.dish} is in the cluster: {job.name}'s run waits for one (leocc testbed node --dish {job.dish})")
        if job.schedule.kind == "trigger" and trigger is None:
            ref = self.watch.options(resources={f"at:{job.dish}": 1}).remote(job.to_json())
            self.store.set_run(run.id, "watching", started=time.time())
            self.pending[ref] = (run.id, "watch", None, None)
            self.log(f"{job.name} run {run.id}: waiting on {job.dish} for {job.schedule.when}")
            return
        self.submitted_at.setdefault(run.id, time.time())
        self.store.set_run(run.id, "running")
        if KINDS[job.experiment.kind].server is not None:
            # The server side first, on its own node and holding that node's resource.
            srv = job.experiment.args["server"]
            actor = self.server.options(resources={f"dish:{srv}": 1}).remote(job.experiment.kind, srv, job.experiment.args)
            self.pending[actor.address.remote()] = (run.id, "server", trigger, actor)
            self.log(f"{job.name} run {run.id}: starting {job.experiment.kind}'s server on {srv}")
            return
        self._execute(job, run, trigger, None, None)

    def _execute(self, job: Job, run: Run, trigger: dict | None, peer: dict | None, actor) -> None:
        ref = self.execute.options(resources={f"dish:{job.dish}": 1}).remote(job.to_json(), run.id, peer)
        self.pending[ref] = (run.id, "exec", trigger, actor)
        self.log(f"{job.name} run {run.id} (slot {run.slot}, attempt {run.attempt}): {job.experiment.kind} on {job.dish}")

    def _collect(self, ref) -> None:
        import ray

        run_id, what, trigger, actor = self.pending.pop(ref)
        if what == "warm":
            return
        run = self.store.runs("id = ?", (run_id,))[0]
        job, job_state, _ = self.store.job(run.job_id)
        try:
            res = ray.get(ref)
        except Exception as e:  # the node died, the worker crashed, or the task raised
            res = {"status": "failed", "error": _one_line(e)}
        if what == "server" and res.get("status") != "failed":
            self._execute(job, run, trigger, res, actor)
            return
        if what == "exec" and actor is not None:
            # The server side's last words come back as a task of their own: waiting for them
            # here would hold up every other terminal's runs.
            self.finishing[run.id] = res
            self.pending[actor.finish.remote()] = (run.id, "finish", trigger, actor)
            return
        if what == "finish":
            res = {**self.finishing.pop(run.id), "server": res if "error" not in res else {"error": res["error"]}}
        if actor is not None:
            ray.kill(actor)
        if what == "watch" and res.get("status") != "failed":
            if res["fired"]:
                self.log(f"{job.name} run {run.id}: trigger fired after {res['waited_s']:.1f} s")
                self._submit(run, trigger=res)
            else:
                self.log(f"{job.name} run {run.id}: no trigger within {job.schedule.timeout_s:g} s; job done")
                self.store.finish(run, "timeout", follow_up=None, job_state="done", ended=time.time(), detail="trigger timeout")
            return
        status = res.get("status", "failed")
        rows = res.pop("series", None) or []
        res["trigger"] = trigger
        res["submitted"] = self.submitted_at.pop(run.id, None)
        follow, new_state = follow_up(job, run, status, self.store, time.time())
        if job_state != "active":
            follow, new_state = None, None
        detail = res.get("error") or (json.dumps(res["abort"]) if "abort" in res else None)
        self.store.finish(
            run, status, follow_up=follow, job_state=new_state,
            started=res.get("started"), ended=res.get("ended", time.time()), node=res.get("node"), detail=detail, result=json.dumps(res),
        )
        self._append_result(job, run, res, rows)
        nxt = f"; next: {follow[0]} at {time.strftime('%H:%M:%S', time.localtime(follow[1]))}" if follow else ""
        self.log(f"{job.name} run {run.id}: {status}{' (' + detail + ')' if detail and status != 'done' else ''}{nxt}")

    def _append_result(self, job: Job, run: Run, res: dict, rows: list[dict]) -> None:
        record = res.get("record") or {}
        key = f"testbed|{job.name}|{run.slot}|{run.attempt}|{run.id}"
        row = {
            **record,
            "schema": RESULTS_SCHEMA,
            "key": key,
            "engine": job.experiment.kind,
            "testbed": {
                "job": job.name,
                "run": run.id,
                "slot": run.slot,
                "attempt": run.attempt,
                "status": res.get("status"),
                "dish": job.dish,
                "node": res.get("node"),
                "schedule": job.schedule.kind,
                "trigger": res.get("trigger"),
                "experiment": {"kind": job.experiment.kind, **job.experiment.args},
                "overhead": job.overhead,
                "submitted": res.get("submitted"),
                "started": res.get("started"),
                "ended": res.get("ended"),
                "versions": res.get("versions"),
                "server": res.get("server"),
                "error": res.get("error"),
                "abort": res.get("abort"),
                "own_traffic": res.get("own_traffic"),
            },
        }
        ts = series.write_run(self.out, key, rows)
        if ts is not None:
            row["timeseries"] = ts  # a run without rows has none (leocc.read_timeseries skips it)
            self.unfolded[ts] = key
        with open(self.out / "results.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(row, sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())


def follow_up(job: Job, run: Run, status: str, store: Store, now: float) -> tuple[tuple[str, float] | None, str | None]:
    """What follows a finished run: (follow-up for Store.finish, the job's new state)."""
    s = job.schedule
    _, _, slots = store.job(run.job_id)
    last_slot = s.runs is not None and slots >= s.runs
    retry = status == "failed" and run.attempt <= job.retries
    if s.kind == "once":
        if status == "done":
            return None, "done"
        if status == "aborted":
            return ("again", now + job.reschedule_after_s), None
        return (("retry", now + job.retry_delay_s), None) if retry else (None, "failed")
    if retry and s.kind == "cron":
        return ("retry", now + job.retry_delay_s), None
    if last_slot:
        return None, "done"
    if s.kind == "cron":
        return ("next", Cron.parse(s.cron).next_after(max(run.slot_due, now))), None
    return ("next", now), None


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    first = text[0] if text else type(e).__name__
    # A task's own exception arrives wrapped; its last line is the cause.
    last = text[-1] if len(text) > 1 else ""
    return f"{type(e).__name__}: {first}" + (f" ... {last}" if last and last != first else "")

