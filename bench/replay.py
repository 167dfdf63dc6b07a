"""Replay recorded clembench episodes through our game master and compare the scores.

Each episode under a clembench results folder is played again with a `ReplayAnswerer` that gives
back the recorded replies, probes asked one by one in the recorded order (as clembench asked
them). Our game master decides validity, filling, ground truth and the end of the episode; the
scores it computes must equal the recorded ones.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from privateshared.agents.replay import ReplayAnswerer, ReplayError
from privateshared.bench.episodes import play_episode, save_episode
from privateshared.domains.instances import (
    InstancesError,
    InstancesFile,
    InstanceSpec,
    placeholder_phrasings,
    resolve_instance,
    resource_phrasings,
)
from privateshared.graph.context import GameContext
from privateshared.graph.records import GAME_NAME, EpisodeScores, Interactions, ScoreValue
from privateshared.graph.scoring import is_nan

TOLERANCE = 1e-9


@dataclass(frozen=True)
class RecordedEpisode:
    """One episode folder of a clembench results tree."""

    folder: Path
    relative: Path
    """Path below the results root: `<pair>/privateshared/<index>_<experiment>/episode_<id>`."""
    experiment: str
    game_id: int


@dataclass
class ReplayOutcome:
    """What replaying one episode gave."""

    episode: RecordedEpisode
    differences: list[str] = field(default_factory=list)
    """Every way our scores or probes differ from the recording; empty when they agree."""


def find_recorded_episodes(root: Path) -> Iterator[RecordedEpisode]:
    """Every `.../privateshared/<index>_<experiment>/episode_<id>/` with interactions and scores."""
    for interactions in sorted(root.glob(f"**/{GAME_NAME}/*_*/episode_*/interactions.json")):
        folder = interactions.parent
        if not (folder / "scores.json").is_file():
            continue
        experiment = folder.parent.name.split("_", 1)[1]
        game_id = int(folder.name.removeprefix("episode_"))
        yield RecordedEpisode(folder, folder.relative_to(root), experiment, game_id)


def _find_spec(instances: InstancesFile, experiment: str, game_id: int) -> InstanceSpec:
    for spec in instances.experiments:
        if spec.name == experiment:
            for instance in spec.game_instances:
                if instance.game_id == game_id:
                    return instance
    raise InstancesError(
        f"the instances file has no experiment {experiment!r} with game_id {game_id}; "
        "pass the instances file the records were played on"
    )


def _same(recorded: ScoreValue, ours: ScoreValue) -> bool:
    if is_nan(recorded) or is_nan(ours):
        return is_nan(recorded) and is_nan(ours)
    return abs(recorded - ours) <= TOLERANCE


def is_ours(score: str) -> bool:
    """Whether a score is one clembench does not compute (the questioner's metrics)."""
    return score.startswith("Questioner ") or score == "Questions Asked"


def compare_scores(recorded: EpisodeScores, ours: EpisodeScores) -> list[str]:
    """Differences between recorded and replayed scores (NaN equals NaN; floats within 1e-9).

    clembench logs Middle-Accuracy only when the middle round was played; we always log it (NaN
    when aborted), so a NaN score that the recording lacks is not a difference; nor are the
    questioner's metrics, which clembench does not compute.
    """
    differences = []
    if set(recorded.turn_scores) != set(ours.turn_scores):
        differences.append(
            f"scored rounds: recorded {sorted(recorded.turn_scores)}, "
            f"ours {sorted(ours.turn_scores)}"
        )
    for turn, scores in recorded.turn_scores.items():
        for name, value in scores.items():
            mine = ours.turn_scores.get(turn, {}).get(name)
            if mine is None or not _same(value, mine):
                differences.append(f"round {turn} {name}: recorded {value}, ours {mine}")
    for name, value in recorded.episode_scores.items():
        mine = ours.episode_scores.get(name)
        if mine is None or not _same(value, mine):
            differences.append(f"{name}: recorded {value}, ours {mine}")
    for name, mine in ours.episode_scores.items():
        if name not in recorded.episode_scores and not is_nan(mine) and not is_ours(name):
            differences.append(f"{name}: not recorded, ours {mine}")
    return differences


def compare_probes(recorded: Interactions, ours: Interactions) -> list[str]:
    """Differences in the truth (`gt`) and the parsed reply (`value`) of every asked probe."""

    def asked(interactions: Interactions) -> list[list[tuple[str, int, int | None]]]:
        return [
            [(probe.target.lower(), probe.gt, probe.value) for probe in probes if probe.tries]
            for probes in interactions.probes
        ]

    differences = []
    theirs, mine = asked(recorded), asked(ours)
    if len(theirs) != len(mine):
        differences.append(f"probing rounds: recorded {len(theirs)}, ours {len(mine)}")
    for k, (their_round, my_round) in enumerate(zip(theirs, mine, strict=False)):
        if their_round != my_round:
            differences.append(
                f"round {k} probes (slot, gt, value): recorded {their_round}, ours {my_round}"
            )
    return differences


async def replay_episode(
    episode: RecordedEpisode,
    instances: InstancesFile,
    results_dir: Path,
    resources: Path | None = None,
) -> ReplayOutcome:
    """Replay one recorded episode, write its records under `results_dir`, and compare."""
    recorded_interactions = json.loads((episode.folder / "interactions.json").read_text("utf-8"))
    recorded = Interactions.model_validate(recorded_interactions)
    recorded_scores = EpisodeScores.model_validate(
        json.loads((episode.folder / "scores.json").read_text("utf-8"))
    )
    spec = _find_spec(instances, episode.experiment, episode.game_id)
    lookups = (
        resource_phrasings(resources, episode.experiment)
        if resources is not None
        else placeholder_phrasings(episode.experiment)
    )
    instance = resolve_instance(episode.experiment, spec, *lookups)
    context = GameContext(
        answerer=ReplayAnswerer.from_interactions(recorded_interactions), sequential_probes=True
    )
    outcome = ReplayOutcome(episode)
    try:
        state = await play_episode(instance, context)
    except ReplayError as error:
        outcome.differences.append(f"our game master went further than the recording: {error}")
        return outcome
    save_episode(results_dir / episode.relative, spec.model_dump(mode="json"), state, context)
    ours = Interactions.model_validate(
        json.loads((results_dir / episode.relative / "interactions.json").read_text("utf-8"))
    )
    assert state.scores is not None  # save_episode checked
    outcome.differences += compare_scores(recorded_scores, state.scores)
    outcome.differences += compare_probes(recorded, ours)
    return outcome
