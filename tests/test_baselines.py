"""Reference players land where theory puts them, over every default instance.

oracle: Main Score 100. always-yes and always-no: probe replies that carry no information, so
kappa 0 and Main Score 0 (whatever their accuracy). mock: random replies, kappa near 0.
"""

from __future__ import annotations

import pytest

from privateshared.bench.cli import main
from privateshared.bench.reporting.evaluate import EpisodeRecord, collect


@pytest.fixture(scope="module")
def episodes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[EpisodeRecord]]:
    results = tmp_path_factory.mktemp("baselines")
    argv = ["run", "--results-dir", str(results)]
    for model in ("oracle", "always-yes", "always-no", "mock"):
        argv += ["--model", model]
    assert main(argv) == 0
    by_model: dict[str, list[EpisodeRecord]] = {}
    for episode in collect(results):
        by_model.setdefault(episode.model.split("-t0.0")[0], []).append(episode)
    return by_model


EXPERIMENTS = {
    "job-interview": 5, "letter-number": 10, "restaurant": 5, "things-places": 15,
    "travel-booking": 5,
}  # fmt: skip
"""The five default experiments and their slots, ten instances each."""


def test_every_baseline_plays_every_default_instance(
    episodes: dict[str, list[EpisodeRecord]],
) -> None:
    assert {model: len(played) for model, played in episodes.items()} == {
        "oracle": 50, "always-yes": 50, "always-no": 50, "mock": 50,
    }  # fmt: skip
    for played in episodes.values():
        per_experiment = {name: 0 for name in EXPERIMENTS}
        for episode in played:
            per_experiment[episode.experiment] += 1
        assert per_experiment == dict.fromkeys(EXPERIMENTS, 10)
    # Every probing round of every played episode is scored: n + 1 of them.
    for episode in episodes["oracle"]:
        assert sorted(episode.round_accuracy) == list(range(EXPERIMENTS[episode.experiment] + 1))


def test_oracle_is_perfect(episodes: dict[str, list[EpisodeRecord]]) -> None:
    for episode in episodes["oracle"]:
        assert episode.status == "played"
        assert episode.score("Main Score") == 100.0
        assert episode.score("Kappa") == 1.0


@pytest.mark.parametrize("model", ["always-yes", "always-no"])
def test_constant_replies_score_zero(episodes: dict[str, list[EpisodeRecord]], model: str) -> None:
    for episode in episodes[model]:
        assert episode.status == "played"
        assert episode.score("Kappa") == 0.0
        assert episode.score("Main Score") == 0.0
        assert episode.score("Slot-Filling-Accuracy") == 1.0
        # Right half the time all the same, accuracy alone would flatter them: the slot asked
        # in turn t is shared in rounds t to n, so over rounds 0 to n exactly half of all probes
        # are true (1 + 2 + ... + n of n(n + 1)), whatever n.
        assert episode.score("Accuracy") == 0.5


def test_random_replies_have_kappa_near_zero(episodes: dict[str, list[EpisodeRecord]]) -> None:
    played = [episode for episode in episodes["mock"] if episode.status == "played"]
    assert len(played) >= 10
    mean = sum(episode.score("Truncated Kappa") for episode in played) / len(played)
    assert mean < 0.2
