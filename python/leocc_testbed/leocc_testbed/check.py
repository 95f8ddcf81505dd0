"""Checks of a job file's values: each names the key it checks, so an error says where."""

from __future__ import annotations

import math
import re
from typing import Any

# A name the testbed uses in Ray resource names and file names.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class SpecError(ValueError):
    """A job file that cannot be run; the message names the file and the key."""


def num(v: Any, key: str, lo: float, hi: float) -> float:
    """A finite number in lo..hi."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise SpecError(f"{key}: expected a number, got {v!r}")
    if not lo <= v <= hi:
        raise SpecError(f"{key}: {v} is outside {lo:g}..{hi:g}")
    return float(v)


def whole(v: Any, key: str, lo: int, hi: int) -> int:
    """A whole number in lo..hi."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise SpecError(f"{key}: expected a whole number, got {v!r}")
    if not lo <= v <= hi:
        raise SpecError(f"{key}: {v} is outside {lo}..{hi}")
    return v


def text(v: Any, key: str, pattern: re.Pattern | None = None, what: str = "") -> str:
    """A non-empty string, matching `pattern` (described as `what`) if given."""
    if not isinstance(v, str) or not v:
        raise SpecError(f"{key}: expected a non-empty string, got {v!r}")
    if pattern is not None and not pattern.match(v):
        raise SpecError(f"{key}: '{v}' is not {what}")
    return v


def check_name(v: Any, key: str, what: str = "a name") -> str:
    """A terminal's or job's name: it becomes part of Ray resource names and file names."""
    return text(v, key, _NAME, f"{what} of letters, digits, '.', '_' and '-'")


def flag(v: Any, key: str) -> bool:
    """true or false."""
    if not isinstance(v, bool):
        raise SpecError(f"{key}: expected true or false, got {v!r}")
    return v
