"""Child processes that never outlive the testbed process that started them."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


def die_with_parent() -> None:
    """preexec_fn: the kernel sends the child SIGKILL when its parent dies."""
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def stop_group(p: subprocess.Popen, grace_s: float = 1.0) -> None:
    """SIGTERM the child's process group (it was started with start_new_session), then SIGKILL
    what is left after `grace_s`."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            return
        try:
            p.wait(timeout=grace_s)
            if sig == signal.SIGTERM:
                # The leader is gone; its group may not be.
                continue
            return
        except subprocess.TimeoutExpired:
            continue
