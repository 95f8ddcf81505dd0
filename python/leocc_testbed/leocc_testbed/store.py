"""The testbed's state: jobs and their runs in one SQLite file (embedded, no server).

Every change is one transaction, so an orchestrator killed at any point restarts from a
consistent state: a run it had handed to Ray is found `running` (or `watching`) and is marked
`interrupted` and queued again (`recover`), and nothing that finished is lost.

A job is `active` until its schedule has no more runs (`done`), a one-off run failed more
often than it may be retried (`failed`), or it was cancelled. Each run is one attempt at one
*slot* of the schedule (the one-off time, a cron instant, one trigger wait):

    queued -> watching (trigger jobs: waiting on the node) -> running -> done | failed | aborted
                                                                      -> interrupted (restart)
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from .jobs import Job

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    spec TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'active',
    submitted REAL NOT NULL,
    slots INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    job_id INTEGER NOT NULL REFERENCES jobs(id),
    slot INTEGER NOT NULL,
    slot_due REAL NOT NULL,
    attempt INTEGER NOT NULL,
    state TEXT NOT NULL,
    due REAL NOT NULL,
    started REAL,
    ended REAL,
    node TEXT,
    detail TEXT,
    result TEXT
);
CREATE INDEX IF NOT EXISTS runs_state ON runs(state, due);
"""
OPEN_STATES = ("queued", "watching", "running")


@dataclass(frozen=True)
class Run:
    """One row of `runs`."""

    id: int
    job_id: int
    slot: int
    slot_due: float
    attempt: int
    state: str
    due: float
    started: float | None
    ended: float | None
    node: str | None
    detail: str | None
    result: str | None


class Store:
    """The SQLite file; safe to open from several processes (submit while serve runs)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.executescript(_SCHEMA)

    def close(self) -> None:
        self.db.close()

    def _tx(self):
        return _Tx(self.db)

    # Jobs.
    def add_job(self, job: Job, first_due: float) -> int:
        """Store a job and queue its first slot; a name already used is an error."""
        with self._tx():
            try:
                cur = self.db.execute("INSERT INTO jobs(name, spec, submitted) VALUES (?, ?, ?)", (job.name, job.to_json(), time.time()))
            except sqlite3.IntegrityError:
                raise ValueError(f"a job named {job.name} exists already (leocc testbed cancel {job.name} first)") from None
            job_id = cur.lastrowid
            self._queue_slot(job_id, first_due)
        return job_id

    def job(self, job_id: int) -> tuple[Job, str, int]:
        spec, state, slots = self.db.execute("SELECT spec, state, slots FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return Job.from_json(spec), state, slots

    def job_id(self, name: str) -> int | None:
        row = self.db.execute("SELECT id FROM jobs WHERE name = ?", (name,)).fetchone()
        return row[0] if row else None

    def jobs(self) -> list[tuple[int, str, str, int]]:
        return self.db.execute("SELECT id, name, state, slots FROM jobs ORDER BY id").fetchall()

    def set_job_state(self, job_id: int, state: str) -> None:
        self.db.execute("UPDATE jobs SET state = ? WHERE id = ?", (state, job_id))

    def cancel(self, name: str) -> bool:
        """Cancel a job: its queued runs go, a running one finishes; False if no such job."""
        with self._tx():
            jid = self.job_id(name)
            if jid is None:
                return False
            self.db.execute("UPDATE jobs SET state = 'cancelled' WHERE id = ?", (jid,))
            self.db.execute("UPDATE runs SET state = 'cancelled', ended = ? WHERE job_id = ? AND state = 'queued'", (time.time(), jid))
        return True

    # Runs.
    def _queue_slot(self, job_id: int, due: float) -> None:
        slot = self.db.execute("SELECT slots FROM jobs WHERE id = ?", (job_id,)).fetchone()[0]
        self.db.execute("UPDATE jobs SET slots = slots + 1 WHERE id = ?", (job_id,))
        self.db.execute(
            "INSERT INTO runs(job_id, slot, slot_due, attempt, state, due) VALUES (?, ?, ?, 1, 'queued', ?)", (job_id, slot + 1, due, due)
        )

    def queue_slot(self, job_id: int, due: float) -> None:
        """Queue the job's next slot."""
        with self._tx():
            self._queue_slot(job_id, due)

    def queue_attempt(self, run: Run, due: float, same_attempt: bool = False) -> None:
        """Queue another attempt at `run`'s slot (the same attempt number after an interruption
        or a reschedule, which are not the job's failures)."""
        attempt = run.attempt if same_attempt else run.attempt + 1
        self.db.execute(
            "INSERT INTO runs(job_id, slot, slot_due, attempt, state, due) VALUES (?, ?, ?, ?, 'queued', ?)",
            (run.job_id, run.slot, run.slot_due, attempt, due),
        )

    def runs(self, where: str = "1", args: tuple = ()) -> list[Run]:
        rows = self.db.execute(f"SELECT id, job_id, slot, slot_due, attempt, state, due, started, ended, node, detail, result FROM runs WHERE {where} ORDER BY id", args)
        return [Run(*r) for r in rows.fetchall()]

    def due_runs(self, now: float) -> list[Run]:
        return self.runs("state = 'queued' AND due <= ? AND job_id IN (SELECT id FROM jobs WHERE state = 'active')", (now,))

    def open_runs(self, job_id: int) -> int:
        q = f"SELECT COUNT(*) FROM runs WHERE job_id = ? AND state IN ({','.join('?' * len(OPEN_STATES))})"
        return self.db.execute(q, (job_id, *OPEN_STATES)).fetchone()[0]

    def set_run(self, run_id: int, state: str, **fields) -> None:
        cols = ", ".join(f"{k} = ?" for k in fields)
        vals = [json.dumps(v) if k == "result" and not isinstance(v, str) and v is not None else v for k, v in fields.items()]
        self.db.execute(f"UPDATE runs SET state = ?{', ' + cols if cols else ''} WHERE id = ?", (state, *vals, run_id))

    def summary(self) -> dict:
        """Counts for monitoring: jobs and runs by state, open runs per (terminal, state), and
        the due time of the oldest queued run of an active job (None: none)."""
        open_rows = self.db.execute(
            "SELECT j.spec, r.state, COUNT(*) FROM runs r JOIN jobs j ON j.id = r.job_id "
            f"WHERE r.state IN ({','.join('?' * len(OPEN_STATES))}) GROUP BY j.id, r.state",
            OPEN_STATES,
        ).fetchall()
        per_dish: dict[tuple[str, str], int] = {}
        for spec, state, n in open_rows:
            key = (json.loads(spec)["dish"], state)
            per_dish[key] = per_dish.get(key, 0) + n
        return {
            "jobs": dict(self.db.execute("SELECT state, COUNT(*) FROM jobs GROUP BY state").fetchall()),
            "runs": dict(self.db.execute("SELECT state, COUNT(*) FROM runs GROUP BY state").fetchall()),
            "open": per_dish,
            "oldest_due": self.db.execute(
                "SELECT MIN(r.due) FROM runs r JOIN jobs j ON j.id = r.job_id WHERE r.state = 'queued' AND j.state = 'active'"
            ).fetchone()[0],
        }

    def recover(self) -> int:
        """After a restart: runs the last orchestrator had handed to Ray are interrupted and
        queued again at once. Returns how many."""
        with self._tx():
            lost = self.runs("state IN ('watching', 'running')")
            now = time.time()
            for r in lost:
                self.set_run(r.id, "interrupted", ended=now, detail="the orchestrator restarted while it ran")
                self.queue_attempt(r, now, same_attempt=True)
        return len(lost)

    def finish(self, run: Run, state: str, *, follow_up: tuple[str, float] | None, job_state: str | None, **fields) -> None:
        """Record a run's end and, in the same transaction, what follows it: ("retry", due),
        ("again", due) for the same slot without counting an attempt, ("next", due) for the
        job's next slot; and the job's new state if it changes."""
        with self._tx():
            self.set_run(run.id, state, **fields)
            if follow_up is not None:
                kind, due = follow_up
                if kind == "next":
                    self._queue_slot(run.job_id, due)
                else:
                    self.queue_attempt(run, due, same_attempt=kind == "again")
            if job_state is not None:
                self.set_job_state(run.job_id, job_state)


class _Tx:
    """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on error); nests as one transaction."""

    def __init__(self, db: sqlite3.Connection):
        self.db = db
        self.outer = False

    def __enter__(self):
        if not self.db.in_transaction:
            self.db.execute("BEGIN IMMEDIATE")
            self.outer = True
        return self

    def __exit__(self, exc_type, *_):
        if self.outer:
            self.db.execute("ROLLBACK" if exc_type else "COMMIT")
        return False
