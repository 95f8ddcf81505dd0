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
    kind = "sim"               # one of the project's own measurements: sim, emu, iperf3
    trace = "traces/starlink-down-60s.trace"
    cc = "leocc"
    duration_s = 30

An experiment is never a shell string: each kind has a fixed set of typed arguments, checked
here at submission, and becomes an argument vector of the `leocc` binary on the node
(experiments.py). Errors name the file and the key (TOML syntax errors the line and column).
"""

from __future__ import annotations

import json
import math
import re
import time
import tomllib
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .cron import Cron, CronError

SCHEDULE_KINDS = ("once", "cron", "trigger")
# A name the testbed uses in Ray resource names and file names.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
# A control's name as `leocc sim --list-cc` and the kernel spell them.
_CC = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
# A queue limit as `leocc sim --queue` takes it: packets, bytes or time.
_QUEUE = re.compile(r"^[0-9]+(\.[0-9]+)?(ms|s|kB|KiB|MB|MiB|B)?$")
# One-off jobs that scavenger mode aborted come back this much later (LEOScope: >= 30 min).
DEFAULT_RESCHEDULE_AFTER_S = 1800.0
DEFAULT_RETRY_DELAY_S = 60.0


class SpecError(ValueError):
    """A job file that cannot be run; the message names the file and the key."""


def _num(v: Any, key: str, lo: float, hi: float) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise SpecError(f"{key}: expected a number, got {v!r}")
    if not lo <= v <= hi:
        raise SpecError(f"{key}: {v} is outside {lo:g}..{hi:g}")
    return float(v)


def _int(v: Any, key: str, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise SpecError(f"{key}: expected a whole number, got {v!r}")
    if not lo <= v <= hi:
        raise SpecError(f"{key}: {v} is outside {lo}..{hi}")
    return v


def _str(v: Any, key: str, pattern: re.Pattern | None = None, what: str = "") -> str:
    if not isinstance(v, str) or not v:
        raise SpecError(f"{key}: expected a non-empty string, got {v!r}")
    if pattern is not None and not pattern.match(v):
        raise SpecError(f"{key}: '{v}' is not {what}")
    return v


def check_name(v: Any, key: str, what: str = "a name") -> str:
    """A terminal's or job's name: it becomes part of Ray resource names and file names."""
    return _str(v, key, _NAME, f"{what} of letters, digits, '.', '_' and '-'")


def _bool(v: Any, key: str) -> bool:
    if not isinstance(v, bool):
        raise SpecError(f"{key}: expected true or false, got {v!r}")
    return v


# Each experiment kind's arguments: name -> (checker, default or REQUIRED).
REQUIRED = object()
# A trace, a control and the link's settings: what `leocc sim` and `leocc emu-run` share.
_LINK_RUN_ARGS: dict[str, tuple] = {
    "trace": (lambda v, k: _str(v, k), REQUIRED),
    "cc": (lambda v, k: _str(v, k, _CC, "a control's name"), REQUIRED),
    "duration_s": (lambda v, k: _num(v, k, 1, 3600), 30.0),
    "queue": (lambda v, k: _str(str(v), k, _QUEUE, "a queue limit (500, 150ms, 750kB)"), "150ms"),
    "loss": (lambda v, k: _num(v, k, 0, 0.5), 0.0),
    "seed": (lambda v, k: _int(v, k, 0, 2**32 - 1), 1),
}
_EXPERIMENT_ARGS: dict[str, dict[str, tuple]] = {
    # The simulator: `leocc sim --json`.
    "sim": _LINK_RUN_ARGS,
    # Kernel TCP with the chosen control through an emulated link, in namespaces of its own:
    # `leocc emu-run` (root on the node).
    "emu": _LINK_RUN_ARGS,
    # Kernel TCP between this terminal's node and a server node (`role = server`, the name its
    # node joined with): iperf3 with the chosen control on the sending side. The server holds its
    # own terminal resource for the run, so two jobs never share a server either.
    "iperf3": {
        "server": (lambda v, k: check_name(v, k, "a server node's name"), REQUIRED),
        "cc": (lambda v, k: _str(v, k, _CC, "a control's name"), REQUIRED),
        "duration_s": (lambda v, k: _num(v, k, 1, 3600), 10.0),
        "reverse": (_bool, True),  # the server sends: the downlink, toward the satellite user
        "port": (lambda v, k: _int(v, k, 1024, 65535), 5201),
    },
}
EXPERIMENT_KINDS = tuple(_EXPERIMENT_ARGS)


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
    runs = _int(t["runs"], "schedule.runs", 1, 1_000_000) if "runs" in t else None
    if kind == "once":
        return Schedule("once", at=_parse_time(t["at"], "schedule.at") if "at" in t else None)
    if kind == "cron":
        text = _str(t.get("cron"), "schedule.cron")
        try:
            Cron.parse(text)
        except CronError as e:
            raise SpecError(f"schedule.cron: {e}") from None
        return Schedule("cron", cron=text, runs=runs)
    when = _str(t.get("when"), "schedule.when")
    return Schedule("trigger", when=when, timeout_s=_num(t.get("timeout_s", 600.0), "schedule.timeout_s", 1, 86400 * 7), runs=runs)


def _experiment(t: Any) -> Experiment:
    if not isinstance(t, dict):
        raise SpecError(f"[experiment]: missing (kind = {' or '.join(EXPERIMENT_KINDS)})")
    kind = t.get("kind")
    if kind not in _EXPERIMENT_ARGS:
        raise SpecError(f"experiment.kind: expected one of {', '.join(EXPERIMENT_KINDS)}, got {kind!r}")
    spec = _EXPERIMENT_ARGS[kind]
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
            overhead=_bool(t.get("overhead", True), "overhead"),
            retries=_int(t.get("retries", 2), "retries", 0, 100),
            retry_delay_s=_num(t.get("retry_delay_s", DEFAULT_RETRY_DELAY_S), "retry_delay_s", 0, 86400),
            reschedule_after_s=_num(t.get("reschedule_after_s", DEFAULT_RESCHEDULE_AFTER_S), "reschedule_after_s", 0, 86400 * 7),
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
