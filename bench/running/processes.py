"""Child processes that must not outlive the run: a local model's server, worker processes."""

from __future__ import annotations

import contextlib
import ctypes
import signal


def die_with_parent() -> None:
    """In a child process: ask Linux to end it when the run's process dies, even by kill -9
    (elsewhere, a no-op: the run stops its children itself when it ends normally)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
