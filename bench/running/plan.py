"""What a run plays: every instance of every experiment, by every answerer, and what is left.

`plan_episodes` lists the (instance, answerer) pairs in the order they are dealt out, each with
the folder its records go to; an episode whose scores.json is on disk is done (`is_done`), so
the same command after a crash plays only what is missing. episodes.py plays them.

What the plan found on disk of each episode it sets out to play is kept with it (`found`): when
a second run shares the folder, an episode whose last record changed since was played by the
other run meanwhile (`is_played_meanwhile`), and is not played again.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from privateshared.agents.base import Player
from privateshared.bench.running.layout import (
    benchmark_of,
    episode_dir,
    experiment_dir,
    pair_name,
    write_experiment_file,
)
from privateshared.domains.instances import ExperimentSpec, GameInstance
from privateshared.graph.recorder import ERROR_FILE, SCORES_FILE

Playable = Sequence[tuple[int, ExperimentSpec, Sequence[GameInstance]]]
"""Experiments to play: each with its index (its place in the instances file, which names its
folder) and its instances."""
Ending = tuple[str, int, int]
"""An episode's last record on disk: its name (scores.json or error.json) and which write made
it (inode and modification time; every write makes a new file, see graph/files.py)."""


@dataclass(frozen=True)
class Episode:
    """One episode to play: who answers, which instance, where its records go."""

    answerer: Player
    pair: str
    index: int
    experiment: ExperimentSpec
    instance: GameInstance
    folder: Path
    found: Ending | None = None
    """The last record the run found when it set out to play the episode; None when none."""


def plan_episodes(
    answerers: Sequence[Player],
    questioner: Player,
    playable: Playable,
    results_dir: Path,
    max_slots: Mapping[str, int] | None = None,
) -> list[Episode]:
    """Every (instance, answerer) pair, instance by instance so that the models interleave;
    an answerer named in `max_slots` plays only instances of at most that many slots."""
    limits = max_slots or {}
    episodes = []
    for index, experiment, instances in playable:
        for instance in instances:
            for answerer in answerers:
                if len(instance.slots) > limits.get(answerer.name, len(instance.slots)):
                    continue
                pair = pair_name(answerer, questioner)
                folder = episode_dir(results_dir, pair, index, experiment.name, instance.game_id)
                episodes.append(Episode(answerer, pair, index, experiment, instance, folder))
    return episodes


def is_done(folder: Path) -> bool:
    """Whether an episode was played to its end (scored). Errored episodes are played again."""
    return (folder / SCORES_FILE).is_file()


def ending(folder: Path) -> Ending | None:
    """The episode's last record on disk (scores.json, else error.json); None when it has none."""
    for name in (SCORES_FILE, ERROR_FILE):
        try:
            found = os.stat(folder / name)
        except FileNotFoundError:
            continue
        return name, found.st_ino, found.st_mtime_ns
    return None


def pending_episodes(planned: Sequence[Episode], rerun: bool = False) -> list[Episode]:
    """The episodes of `planned` to play (those not done, or all when `rerun`), each with what
    was found of it (`Episode.found`)."""
    return [replace(episode, found=ending(episode.folder))
            for episode in planned if rerun or not is_done(episode.folder)]  # fmt: skip


def is_played_meanwhile(episode: Episode) -> bool:
    """Whether another run played `episode` since this one set out to play it: its last record
    is not the one found then."""
    return ending(episode.folder) != episode.found


def write_experiment_files(
    episodes: Sequence[Episode], questioner: Player, results: Path, judge: Player | None = None
) -> None:
    """experiment.json in every experiment folder the episodes play in."""
    seen = set()
    for episode in episodes:
        folder = experiment_dir(results, episode.pair, episode.index, episode.experiment.name)
        if folder in seen:
            continue
        seen.add(folder)
        write_experiment_file(
            folder, episode.experiment.name, episode.experiment.domain, episode.pair,
            episode.answerer, questioner, judge, benchmark_of(episode.experiment.game_instances),
        )  # fmt: skip
