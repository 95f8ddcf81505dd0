"""Cron expressions: when a cron job's runs fall due.

Five fields, as crontab(5): minute hour day-of-month month day-of-week, each `*`, `N`, `A-B`,
a list of those, and any of them with `/STEP`; day-of-week 0-7 with 0 and 7 both Sunday. An
optional sixth field in front gives seconds (`*/10 * * * * *`: every ten seconds), as several
job schedulers allow; a testbed test cannot wait a minute per run. Times are UTC: terminals and
servers of one testbed sit in different time zones, and a job must mean the same instant on all.
As in cron, when both day fields are restricted a day matches if either does.
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

# (name, lowest, highest) of each field, seconds first.
_FIELDS = [("second", 0, 59), ("minute", 0, 59), ("hour", 0, 23), ("day of month", 1, 31), ("month", 1, 12), ("day of week", 0, 7)]
# How far ahead next_after looks before it calls an expression unsatisfiable (31 February).
_HORIZON_DAYS = 366 * 5


class CronError(ValueError):
    """An expression that is not valid cron; the message names the field and the problem."""


def _parse_field(text: str, name: str, lo: int, hi: int) -> frozenset[int]:
    values: set[int] = set()
    for part in text.split(","):
        body, _, step_text = part.partition("/")
        step = 1
        if step_text:
            if not step_text.isdigit() or int(step_text) == 0:
                raise CronError(f"{name} '{text}': step '{step_text}' must be a positive number")
            step = int(step_text)
        if body == "*":
            a, b = lo, hi
        else:
            first, dash, last = body.partition("-")
            if not first.isdigit() or (dash and not last.isdigit()):
                raise CronError(f"{name} '{text}': expected *, N or A-B (with an optional /STEP)")
            a = int(first)
            b = int(last) if dash else (hi if step_text else a)
        if not (lo <= a <= hi and lo <= b <= hi) or a > b:
            raise CronError(f"{name} '{text}': values must lie in {lo}-{hi}, in rising order")
        values.update(range(a, b + 1, step))
    return frozenset(values)


@dataclass(frozen=True)
class Cron:
    """A parsed cron expression."""

    text: str
    seconds: frozenset[int]
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Monday ... 6 = Sunday (Python's numbering)
    days_restricted: bool
    weekdays_restricted: bool

    @classmethod
    def parse(cls, text: str) -> "Cron":
        fields = text.split()
        if len(fields) == 5:
            fields = ["0"] + fields
        if len(fields) != 6:
            raise CronError(f"cron '{text}': expected 5 fields (minute hour day month weekday) or 6 (seconds first), got {len(fields)}")
        parsed = [_parse_field(f, name, lo, hi) for f, (name, lo, hi) in zip(fields, _FIELDS)]
        # cron's Sunday is 0 and 7; Python's Monday is 0.
        weekdays = frozenset((d - 1) % 7 for d in parsed[5])
        return cls(text, parsed[0], parsed[1], parsed[2], parsed[3], parsed[4], weekdays, fields[3] != "*", fields[5] != "*")

    def _day_matches(self, day: datetime) -> bool:
        dom, dow = day.day in self.days, day.weekday() in self.weekdays
        if self.days_restricted and self.weekdays_restricted:
            return dom or dow
        return dom and dow

    def next_after(self, t: float) -> float:
        """The first matching instant strictly after `t` (seconds since the epoch, UTC)."""
        start = datetime.fromtimestamp(int(t) + 1, tz=timezone.utc)
        day = start.replace(hour=0, minute=0, second=0)
        for _ in range(_HORIZON_DAYS):
            if day.month in self.months and self._day_matches(day):
                for h in sorted(self.hours):
                    for m in sorted(self.minutes):
                        for s in sorted(self.seconds):
                            at = day.replace(hour=h, minute=m, second=s)
                            if at >= start:
                                return float(calendar.timegm(at.timetuple()))
            day += timedelta(days=1)
        raise CronError(f"cron '{self.text}' matches no time in the next {_HORIZON_DAYS // 366} years")
