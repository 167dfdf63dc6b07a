"""A benchmark run: every instance of every experiment, played by every answerer, with records.

Episodes are played one after another; within an episode the probes of a round are concurrent
unless `sequential_probes` is set.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from privateshared.agents.base import Player
from privateshared.bench.episodes import play_episode, save_episode
from privateshared.bench.layout import episode_dir, experiment_dir, pair_name, player_label
from privateshared.domains.instances import ExperimentSpec, GameInstance
from privateshared.graph.context import GameContext, now_iso
from privateshared.graph.recorder import write_json
from privateshared.graph.records import ABORTED, GAME_NAME, MAIN_SCORE, EpisodeScores

Playable = Sequence[tuple[int, ExperimentSpec, Sequence[GameInstance]]]


@dataclass(frozen=True)
class EpisodeResult:
    """One finished episode, as the run's summary needs it."""

    model: str
    experiment: str
    game_id: int
    scores: EpisodeScores
    folder: Path

    @property
    def aborted(self) -> bool:
        return bool(self.scores.episode_scores[ABORTED])

    @property
    def main_score(self) -> float:
        return float(self.scores.episode_scores[MAIN_SCORE])


async def run_benchmark(
    answerers: Sequence[Player],
    questioner: Player,
    playable: Playable,
    results_dir: Path,
    sequential_probes: bool = False,
    on_episode: Callable[[EpisodeResult], None] = lambda result: None,
) -> list[EpisodeResult]:
    """Play every instance with every answerer and write the records under `results_dir`."""
    results = []
    for answerer in answerers:
        context = GameContext(
            answerer=answerer, questioner=questioner, sequential_probes=sequential_probes
        )
        pair = pair_name(answerer, questioner)
        for index, experiment, instances in playable:
            write_json(
                experiment_dir(results_dir, pair, index, experiment.name) / "experiment.json",
                {
                    "game": GAME_NAME,
                    "name": experiment.name,
                    "domain": experiment.domain,
                    "dialogue_partners": pair,
                    "answerer": answerer.name,
                    "questioner": questioner.name,
                    "timestamp": now_iso(),
                },
            )
            specs = {spec.game_id: spec for spec in experiment.game_instances}
            for instance in instances:
                state = await play_episode(instance, context)
                folder = episode_dir(results_dir, pair, index, experiment.name, instance.game_id)
                save_episode(
                    folder, specs[instance.game_id].model_dump(mode="json"), state, context
                )
                assert state.scores is not None  # save_episode checked
                result = EpisodeResult(
                    player_label(answerer), experiment.name, instance.game_id, state.scores, folder
                )
                results.append(result)
                on_episode(result)
    return results
