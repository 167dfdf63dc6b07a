"""A run spread over worker processes, one per core.

One Python process keeps one core busy: the game master, the records and each model call's
client work take CPU, and with a fast model server that CPU, not the model, sets the pace. So
the planned episodes are dealt out to worker processes, each playing its share on its own event
loop with its own players, exactly as a single process would (`run.run_episodes`), and writing
its episodes' records itself: episodes never share a file, and every record file is written
atomically, so the results folder is the same whoever wrote it.

Workers are forked from the run's process after its imports and planning, so they start in
milliseconds, not the second or more a fresh interpreter takes to import the stack. They ignore
Ctrl-C (the run's process stops them) and Linux ends them should the run's process die, even by
kill -9; an episode a worker was playing then has no scores.json, and the next run plays it.
Each worker claims the episodes it plays itself (claims.py), so its claims end with it.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.queues import Queue
from queue import Empty
from typing import TYPE_CHECKING

from privateshared.bench.running.episodes import Finished, Status
from privateshared.bench.running.plan import Episode
from privateshared.bench.running.processes import die_with_parent
from privateshared.graph.records import CallFailure
from privateshared.graph.usage import EpisodeUsage

WAKE_UP = 1.0
"""Seconds between looks at the workers while none reports."""
OnFinished = Callable[[Finished], None]
PlayShare = Callable[[Sequence[Episode], OnFinished], list[Finished]]
"""Plays some episodes in the calling process, reporting each as it ends (run.run_episodes with
its players and settings bound)."""


class WorkerError(RuntimeError):
    """A worker process that failed for a reason other than a model call; one line."""


@dataclass(frozen=True)
class _Report:
    """What a worker sends back for one finished episode (episodes stay in the run's process)."""

    index: int
    """The episode's place in the run's list."""
    status: Status
    calls: int
    error: CallFailure | None
    usage: EpisodeUsage | None


@dataclass(frozen=True)
class _Failure:
    """A worker's last message when it stops on an exception."""

    kind: str
    message: str
    filename: str | None
    """For an OSError: the file it could not write."""
    errno: int | None


def deal(count: int, workers: int) -> list[list[int]]:
    """Episode indices for each worker, dealt round-robin: each gets a share of every
    experiment and model, so the workers finish at about the same time."""
    return [list(range(worker, count, workers)) for worker in range(workers)]


if TYPE_CHECKING:
    Messages = Queue[_Report | _Failure | None]


def _work(
    play: PlayShare, episodes: Sequence[Episode], indices: list[int], queue: Messages
) -> None:
    """In a worker: play the episodes at `indices`, report each, then stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent()
    by_episode = {id(episodes[index]): index for index in indices}

    def report(finished: Finished) -> None:
        index = by_episode[id(finished.episode)]
        queue.put(_Report(index, finished.status, finished.calls, finished.error,
                          finished.usage))  # fmt: skip

    try:
        play([episodes[index] for index in indices], report)
    except BaseException as error:  # tell the run why, in one line, then stop
        if isinstance(error, OSError):
            failure = _Failure(type(error).__name__, error.strerror or str(error),
                               error.filename, error.errno)  # fmt: skip
        else:
            message = str(error) or traceback.format_exc(limit=1).strip().splitlines()[-1]
            failure = _Failure(type(error).__name__, " ".join(message.split()), None, None)
        queue.put(failure)
        queue.close()
        queue.join_thread()
        os._exit(1)
    queue.put(None)  # done
    queue.close()
    queue.join_thread()


def play_in_workers(
    episodes: Sequence[Episode],
    play: PlayShare,
    workers: int,
    on_finished: OnFinished = lambda finished: None,
) -> list[Finished]:
    """Play `episodes` in `workers` forked processes; report each episode as it ends."""
    context = multiprocessing.get_context("fork")
    queue: Messages = context.Queue()
    processes = [
        context.Process(target=_work, args=(play, episodes, share, queue), daemon=True)
        for share in deal(len(episodes), workers)
        if share
    ]
    for process in processes:
        process.start()
    finished: list[Finished] = []
    running = len(processes)
    try:
        while running:
            try:
                message = queue.get(timeout=WAKE_UP)
            except Empty:  # a worker killed outright (out of memory, say) sends nothing
                dead = [p.exitcode for p in processes if p.exitcode not in (None, 0)]
                if dead:
                    raise WorkerError(
                        f"a worker process died (exit code {dead[0]}); finished episodes are "
                        "kept, run the same command again"
                    ) from None
                continue
            if message is None:
                running -= 1
            elif isinstance(message, _Failure):
                if message.errno is not None:
                    raise OSError(message.errno, message.message, message.filename)
                raise WorkerError(f"a worker process stopped: {message.kind}: {message.message}")
            else:
                result = Finished(
                    episodes[message.index], message.status, message.calls, message.error,
                    message.usage,
                )  # fmt: skip
                finished.append(result)
                on_finished(result)
    finally:
        for process in processes:
            if process.is_alive():
                process.terminate()
            process.join()
    return finished
