"""Several runs into one results folder: each episode is played by one of them, once.

Two runs of the same command into one folder would otherwise each play every episode, and
against a paid model pay for each twice. So a run claims an episode before playing it: an
exclusive `flock` on a small file of its own under `<results>/.claims/` (hidden, and flat: no
folder there looks like an episode's, so readers of records never see it). A run that finds an
episode claimed leaves it to the run that holds it and plays the next; once the claim is free,
the episode is either done (the other run played it) or not (the other run died first), and
then this run plays it.

A claim is a lock the kernel holds for the process, never a file's mere presence: when the
process ends, however it ends (Ctrl-C, an exception, kill -9, a worker ended with its run),
the kernel releases its locks, so no claim outlives its run and none can block the next run.
A lock file a killed run left is only an empty file, which the next run may lock at once.

Each run also holds the folder itself, with a shared `flock` on `.claims/run.lock` for as long
as it writes there (`hold_folder`). Only a run that can lock it exclusively, that is with no
other run alive, sweeps the temporary files killed writes left (graph/files.py): another live
run's temporary files are its writes under way, not leftovers. The last run to leave removes
`.claims/`, so a folder nobody plays into holds records only.

`flock` locks hold between the processes of one machine; between machines, only on a shared
file system that honours them.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from urllib.parse import quote

from privateshared.graph.files import sweep_leftovers

CLAIMS_DIR = ".claims"
"""The folder of claims in a results folder; hidden, as readers of records skip it."""
RUN_LOCK = "run.lock"
"""The lock every run holds shared in `CLAIMS_DIR` while it writes into the results folder."""
CLAIM_SUFFIX = ".lock"
MAX_NAME = 255
"""The longest file name most file systems take."""
WAIT = 0.25
"""Seconds between tries at a claim another run holds."""


def claim_name(results_dir: Path, folder: Path) -> str:
    """The name of the lock file of the episode whose records go to `folder`: its path inside
    the results folder, with every `/` quoted (so two episodes never share a name), or, past
    what a file name may hold, that path's digest."""
    relative = folder.relative_to(results_dir).as_posix()
    name = quote(relative, safe="") + CLAIM_SUFFIX
    if len(name) <= MAX_NAME:
        return name
    return hashlib.sha256(relative.encode()).hexdigest() + CLAIM_SUFFIX


def is_same_file(fd: int, path: Path) -> bool:
    """Whether the open file `fd` is still the file at `path` (not one removed meanwhile)."""
    try:
        named = os.stat(path)
    except FileNotFoundError:
        return False
    opened = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (opened.st_dev, opened.st_ino)


def lock_file(path: Path, operation: int) -> int | None:
    """Open `path` (creating it and its folder) and `flock` it; return the open file, or None
    when `operation` does not block (LOCK_NB) and another process holds a lock in the way."""
    while True:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except FileNotFoundError:  # the last run out removed the folder between the two steps
            continue
        try:
            fcntl.flock(fd, operation)
        except BlockingIOError:
            os.close(fd)
            return None
        except OSError as error:  # a file system that cannot lock (ENOLCK): name the file
            os.close(fd)
            raise OSError(error.errno, error.strerror, str(path)) from None
        except BaseException:
            os.close(fd)
            raise
        # A run removes a lock file while it holds it (on release): a process that opened the
        # file before that and locked it after holds a lock nobody else will ever ask for, so
        # it tries again on the file now at that path.
        if is_same_file(fd, path):
            return fd
        os.close(fd)


def unlock_and_remove(fd: int, path: Path) -> None:
    """Remove the lock file `path` while still holding it (see `lock_file`), then let it go."""
    try:
        path.unlink(missing_ok=True)
    finally:
        os.close(fd)  # closing the last descriptor releases the lock


class Claim:
    """This process's claim on one episode; `release` (or the end of a `with` block) lets it go."""

    def __init__(self, fd: int, path: Path) -> None:
        self._fd: int | None = fd
        self.path = path

    def release(self) -> None:
        """Give up the claim and remove its file; a second call does nothing."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            unlock_and_remove(fd, self.path)

    def __enter__(self) -> Claim:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()


def claim_path(results_dir: Path, folder: Path) -> Path:
    """Where the lock file of the episode whose records go to `folder` is."""
    return results_dir / CLAIMS_DIR / claim_name(results_dir, folder)


def try_claim(results_dir: Path, folder: Path) -> Claim | None:
    """Claim the episode whose records go to `folder`, or None when another run holds it."""
    path = claim_path(results_dir, folder)
    fd = lock_file(path, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return None if fd is None else Claim(fd, path)


async def wait_for_claim(results_dir: Path, folder: Path) -> Claim:
    """Claim the episode whose records go to `folder` once the run that holds it lets it go
    (it finished the episode, or it died)."""
    # Tried again every WAIT seconds rather than blocking in flock: a thread blocked there
    # cannot be cancelled, so Ctrl-C would wait for the other run to let the episode go.
    while (claim := try_claim(results_dir, folder)) is None:
        await asyncio.sleep(WAIT)
    return claim


def remove_stale_claims(results_dir: Path) -> None:
    """Remove the lock files killed runs left: those no process holds."""
    for path in (results_dir / CLAIMS_DIR).glob(f"*{CLAIM_SUFFIX}"):
        if path.name == RUN_LOCK:
            continue
        fd = lock_file(path, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if fd is not None:
            unlock_and_remove(fd, path)


@contextlib.contextmanager
def hold_folder(results_dir: Path) -> Iterator[bool]:
    """Hold `results_dir` for a run writing into it, beside any other run; yield whether this
    run is alone there. A run alone first sweeps what killed runs left there."""
    path = results_dir / CLAIMS_DIR / RUN_LOCK
    fd = lock_file(path, fcntl.LOCK_EX | fcntl.LOCK_NB)
    alone = fd is not None
    if fd is not None:
        # No other run is alive here, so every temporary file is a killed write's.
        sweep_leftovers(results_dir)
        remove_stale_claims(results_dir)
        # Shared from now on, for other runs to join. Linux converts a lock by letting it go
        # and taking the new one: should a run have removed the file in between, hold the new.
        fcntl.flock(fd, fcntl.LOCK_SH)
        if not is_same_file(fd, path):
            os.close(fd)
            fd = None
    if fd is None:
        # Blocks only while another run sweeps or leaves, moments.
        fd = lock_file(path, fcntl.LOCK_SH)
        assert fd is not None  # a blocking lock returns only once held
    try:
        yield alone
    finally:
        leave_folder(fd, path)


def leave_folder(fd: int, path: Path) -> None:
    """Let go of the folder; the last run out removes `.claims/`."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:  # another run is still here: it is the one to tidy up
        os.close(fd)
        return
    remove_stale_claims(path.parent.parent)
    unlock_and_remove(fd, path)
    # A run that came meanwhile has made the folder its own again: leave it.
    with contextlib.suppress(OSError):
        path.parent.rmdir()
