"""Child processes that die with the harness that started them."""

from __future__ import annotations

import ctypes
import os
import signal

#: prctl(2) option: the signal the kernel sends this process when its parent dies.
PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGTERM) -> None:
    """For ``preexec_fn``: the child gets ``sig`` when the harness dies, so a killed harness
    never leaves an emulator or a browser running."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, sig)


def own_group_dying_with_parent() -> None:
    """For ``preexec_fn``: the child leads a process group of its own (its helpers can be
    killed with it at once) and is killed when the harness dies."""
    os.setsid()
    die_with_parent(signal.SIGKILL)
