"""A testbed job (`leocc testbed submit JOB.toml`): which measurement, on which terminal, when.

    name = "leocc-vs-cubic-evening"
    dish = "dish-a"            # the terminal (a node joined with --dish dish-a runs it)
    overhead = true            # scavenger mode may stop it when the terminal's owner needs it
    retries = 2                # a run that failed (node lost, tool error) is tried again
    [schedule]
    kind = "cron"              # "once", "cron" or "trigger"
    cron = "*/30 * * * *"      # cron: when (UTC; see cron.py)
    # at = "2026-12-01T18:00:00Z"      once: when (default: now)
    # when = "event == 1"              trigger: the detector's expression (leocc probe --trigger)
    # timeout_s = 600                  trigger: give up waiting after this long
    # runs = 10                        cron and trigger: stop after this many runs
    [experiment]
    kind = "sim"               # one of the project's own measurements: sim, emu, iperf3, quic, leotp, video
    trace = "traces/starlink-down-60s.trace"
    cc = "leocc"
    duration_s = 30

An experiment is never a shell string: each kind has a fixed set of typed arguments, checked
here at submission, and becomes an argument vector of one of the project's tools on the node
(experiments.py). Errors name the file and the key (TOML syntax errors the line and column).
"""

from __future__ import annotations

import json
import time
import tomllib
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .check import SpecError, check_name, flag, num, text, whole
from .cron import Cron, CronError
from .experiments import KINDS, REQUIRED

SCHEDULE_KINDS = ("once", "cron", "trigger")
# One-off jobs that scavenger mode aborted come back this much later (LEOScope: >= 30 min).
DEFAULT_RESCHEDULE_AFTER_S = 1800.0
DEFAULT_RETRY_DELAY_S = 60.0
EXPERIMENT_KINDS = tuple(KINDS)


@dataclass(frozen=True)
class Schedule:
    """When a job's runs fall due."""

    kind: str
    at: float | None = None  # once: seconds since the epoch (None: at submission)
    cron: str | None = None
    when: str | None = None  # trigger expression
    timeout_s: float = 600.0  # trigger: how long one wait may last
    runs: int | None = None  # cron, trigger: at most this many runs (None: no limit)


@dataclass(frozen=True)
class Experiment:
    """One of the project's measurements with its checked arguments."""

    kind: str
    args: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Job:
    """A job as submitted."""

    name: str
    dish: str
    schedule: Schedule
    experiment: Experiment
    overhead: bool = True
    retries: int = 2
    retry_delay_s: float = DEFAULT_RETRY_DELAY_S
    reschedule_after_s: float = DEFAULT_RESCHEDULE_AFTER_S

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "Job":
        d = json.loads(text)
        return cls(**{**d, "schedule": Schedule(**d["schedule"]), "experiment": Experiment(**d["experiment"])})


def _parse_time(v: Any, key: str) -> float:
    if isinstance(v, datetime):
        t = v if v.tzinfo else v.replace(tzinfo=timezone.utc)
        return t.timestamp()
    if isinstance(v, str):
        try:
            t = datetime.fromisoformat(v.replace("Z", "+00:00"))
        except ValueError:
            raise SpecError(f"{key}: '{v}' is not a time such as 2026-12-01T18:00:00Z") from None
        return (t if t.tzinfo else t.replace(tzinfo=timezone.utc)).timestamp()
    raise SpecError(f"{key}: expected a time such as 2026-12-01T18:00:00Z, got {v!r}")


def _unknown(table: dict, known: set, where: str) -> None:
    extra = sorted(set(table) - known)
    if extra:
        raise SpecError(f"{where}: unknown key(s) {', '.join(extra)} (known: {', '.join(sorted(known))})")


def _schedule(t: Any) -> Schedule:
    if not isinstance(t, dict):
        raise SpecError("[schedule]: missing (kind = once, cron or trigger)")
    kind = t.get("kind")
    if kind not in SCHEDULE_KINDS:
        raise SpecError(f"schedule.kind: expected one of {', '.join(SCHEDULE_KINDS)}, got {kind!r}")
    keys = {"once": {"kind", "at"}, "cron": {"kind", "cron", "runs"}, "trigger": {"kind", "when", "timeout_s", "runs"}}[kind]
    _unknown(t, keys, f"[schedule] of kind {kind}")
    runs = whole(t["runs"], "schedule.runs", 1, 1_000_000) if "runs" in t else None
    if kind == "once":
        return Schedule("once", at=_parse_time(t["at"], "schedule.at") if "at" in t else None)
    if kind == "cron":
        expr = text(t.get("cron"), "schedule.cron")
        try:
            Cron.parse(expr)
        except CronError as e:
            raise SpecError(f"schedule.cron: {e}") from None
        return Schedule("cron", cron=expr, runs=runs)
    when = text(t.get("when"), "schedule.when")
    return Schedule("trigger", when=when, timeout_s=num(t.get("timeout_s", 600.0), "schedule.timeout_s", 1, 86400 * 7), runs=runs)


def _experiment(t: Any) -> Experiment:
    if not isinstance(t, dict):
        raise SpecError(f"[experiment]: missing (kind = {' or '.join(EXPERIMENT_KINDS)})")
    kind = t.get("kind")
    if kind not in KINDS:
        raise SpecError(f"experiment.kind: expected one of {', '.join(EXPERIMENT_KINDS)}, got {kind!r}")
    spec = KINDS[kind].args
    _unknown(t, set(spec) | {"kind"}, f"[experiment] of kind {kind}")
    args = {}
    for name, (check, default) in spec.items():
        if name in t:
            args[name] = check(t[name], f"experiment.{name}")
        elif default is REQUIRED:
            raise SpecError(f"experiment.{name}: required for kind {kind}")
        else:
            args[name] = default
    return Experiment(kind, args)


def parse(text: str, source: str = "job") -> Job:
    """A job from TOML text; `source` names it in errors."""
    try:
        t = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SpecError(f"{source}: {e}") from None
    try:
        _unknown(t, {"name", "dish", "overhead", "retries", "retry_delay_s", "reschedule_after_s", "schedule", "experiment"}, "top level")
        return Job(
            name=check_name(t.get("name"), "name"),
            dish=check_name(t.get("dish"), "dish", "a terminal's name"),
            overhead=flag(t.get("overhead", True), "overhead"),
            retries=whole(t.get("retries", 2), "retries", 0, 100),
            retry_delay_s=num(t.get("retry_delay_s", DEFAULT_RETRY_DELAY_S), "retry_delay_s", 0, 86400),
            reschedule_after_s=num(t.get("reschedule_after_s", DEFAULT_RESCHEDULE_AFTER_S), "reschedule_after_s", 0, 86400 * 7),
            schedule=_schedule(t.get("schedule")),
            experiment=_experiment(t.get("experiment")),
        )
    except SpecError as e:
        raise SpecError(f"{source}: {e}") from None


def load(path: str | Path) -> Job:
    """A job from a TOML file."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise SpecError(f"{p}: cannot read ({e.strerror})") from None
    return parse(text, str(p))


def first_due(job: Job, now: float | None = None) -> float:
    """When the job's first run falls due."""
    now = time.time() if now is None else now
    s = job.schedule
    if s.kind == "once":
        return s.at if s.at is not None else now
    if s.kind == "cron":
        return Cron.parse(s.cron).next_after(now)
    return now  # a trigger job starts waiting at once
