"""Worker processes: episodes dealt out, reports gathered, failures told in one line."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from privateshared.bench.running.episodes import Finished
from privateshared.bench.running.plan import Episode
from privateshared.bench.running.workers import OnFinished, WorkerError, deal, play_in_workers


def test_episodes_are_dealt_round_robin() -> None:
    assert deal(7, 2) == [[0, 2, 4, 6], [1, 3, 5]]
    assert deal(2, 3) == [[0], [1], []]  # an empty share starts no process


def fake(count: int) -> Sequence[Episode]:
    """Stand-ins for episodes: the workers only pass them back."""
    return [f"episode {i}" for i in range(count)]  # type: ignore[misc]


def test_every_episode_is_reported_once_from_its_worker() -> None:
    def play(share: Sequence[Any], report: OnFinished) -> list[Finished]:
        done = [Finished(episode, "played", os.getpid(), None) for episode in share]
        for finished in done:
            report(finished)
        return done

    seen: list[Finished] = []
    finished = play_in_workers(fake(9), play, workers=2, on_finished=seen.append)
    assert sorted(str(f.episode) for f in finished) == [f"episode {i}" for i in range(9)]
    assert seen == finished
    assert len({f.calls for f in finished}) == 2  # two processes played them
    assert os.getpid() not in {f.calls for f in finished}  # neither of them this one


def test_a_worker_that_cannot_write_stops_the_run_with_the_file_named(tmp_path: Path) -> None:
    def play(share: Sequence[Any], report: OnFinished) -> list[Finished]:
        (tmp_path / "missing" / "scores.json").write_text("{}")
        return []

    with pytest.raises(OSError) as caught:
        play_in_workers(fake(4), play, workers=2)
    assert caught.value.filename == str(tmp_path / "missing" / "scores.json")


@pytest.mark.parametrize(
    ("failing", "expected"),
    [
        (lambda: int("x"), "a worker process stopped: ValueError: invalid literal"),
        (lambda: os._exit(3), "a worker process died (exit code 3)"),
    ],
    ids=["exception", "killed"],
)
def test_a_failing_worker_is_one_line(failing: Any, expected: str) -> None:
    def play(share: Sequence[Any], report: OnFinished) -> list[Finished]:
        failing()
        return []

    with pytest.raises(WorkerError) as caught:
        play_in_workers(fake(4), play, workers=2)
    assert expected in str(caught.value) and "\n" not in str(caught.value)
