"""A benchmark run: every instance of every experiment, played by every answerer, with records.

Episodes run concurrently in one event loop (up to `concurrency` at once, the models' episodes
interleaved), and the probes of a round concurrently within an episode. Each episode's records
are complete on disk once its last file is written (scores.json, or error.json when a call
failed for good), so a run can be stopped at any moment: the same command plays what is missing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from privateshared.agents.base import Player
from privateshared.bench.episodes import play_episode, save_episode
from privateshared.bench.layout import (
    episode_dir,
    experiment_dir,
    pair_name,
    write_experiment_file,
)
from privateshared.bench.transcripts import TRANSCRIPT_FILE, transcript_page
from privateshared.domains.instances import ExperimentSpec, GameInstance
from privateshared.graph.context import GameContext
from privateshared.graph.recorder import SCORES_FILE, write_text
from privateshared.graph.records import ABORTED, GAME_NAME, CallFailure
from privateshared.graph.state import EpisodeState

Playable = Sequence[tuple[int, ExperimentSpec, Sequence[GameInstance]]]
Status = Literal["played", "aborted", "errored"]


@dataclass(frozen=True)
class Episode:
    """One episode to play: who answers, which instance, where its records go."""

    answerer: Player
    pair: str
    index: int
    experiment: ExperimentSpec
    instance: GameInstance
    folder: Path


@dataclass(frozen=True)
class Finished:
    """An episode this run played, as the progress display needs it."""

    episode: Episode
    status: Status
    calls: int
    """Model calls the episode made (its requests.json entries)."""
    error: CallFailure | None = None
    """Why an errored episode stopped."""


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


def remove_partial_writes(results_dir: Path) -> int:
    """Delete temporary files that a killed run left half-written; return how many."""
    leftovers = list(results_dir.glob(f"*/{GAME_NAME}/**/.*.tmp"))
    for path in leftovers:
        path.unlink(missing_ok=True)
    return len(leftovers)


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
            episode.answerer, questioner, judge,
        )  # fmt: skip


def status_of(state: EpisodeState) -> Status:
    """How a finished episode ended."""
    if state.error is not None:
        return "errored"
    assert state.scores is not None  # the graph ends in score_episode unless a call failed
    return "aborted" if state.scores.episode_scores[ABORTED] else "played"


def record_episode(
    episode: Episode, state: EpisodeState, context: GameContext, results_dir: Path
) -> Finished:
    """Write a finished episode's records and its transcript page."""
    spec = next(
        spec for spec in episode.experiment.game_instances
        if spec.game_id == episode.instance.game_id
    )  # fmt: skip
    instance_spec = spec.model_dump(mode="json", exclude_none=True)
    records = save_episode(episode.folder, instance_spec, state, context)
    # The page now, from the records in hand: the report at the end of the run then reads no
    # interactions.json again, and workers draw their own episodes' pages.
    page = transcript_page(results_dir, episode.folder, records.interactions,
                           state.scores, state.error, instance_spec)  # fmt: skip
    write_text(episode.folder / TRANSCRIPT_FILE, page)
    return Finished(episode, status_of(state), len(records.calls), state.error)


async def run_episodes(
    episodes: Sequence[Episode],
    questioner: Player,
    results_dir: Path,
    concurrency: int = 8,
    sequential_probes: bool = False,
    judge: Player | None = None,
    on_finished: Callable[[Finished], None] = lambda finished: None,
) -> list[Finished]:
    """Play `episodes`, at most `concurrency` at once, writing each one's records as it ends."""
    slots = asyncio.Semaphore(concurrency)
    finished: list[Finished] = []

    async def play(episode: Episode) -> None:
        async with slots:
            context = GameContext(
                answerer=episode.answerer, questioner=questioner, judge=judge,
                sequential_probes=sequential_probes,
            )  # fmt: skip
            state = await play_episode(episode.instance, context)
            result = record_episode(episode, state, context, results_dir)
            finished.append(result)
            on_finished(result)

    async with asyncio.TaskGroup() as group:
        for episode in episodes:
            group.create_task(play(episode))
    return finished
