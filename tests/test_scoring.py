"""Scores from records: the metric functions and the whole-episode scorer."""

from __future__ import annotations

import math
import random

import pytest

from privateshared.agents.base import PlayerReply, PlayerRequest, ToolCall
from privateshared.agents.baselines import OracleAnswerer
from privateshared.bench.running.episodes import play_episode
from privateshared.domains.instances import default_instance
from privateshared.graph.context import GameContext
from privateshared.graph.records import Interactions, ProbeEntry
from privateshared.graph.scoring import (
    accuracy,
    kappa,
    main_score,
    middle_round,
    score_interactions,
    truncated_kappa,
)


@pytest.mark.parametrize(
    ("gold", "predicted", "expected"),
    [([0, 1, 1, 0], [0, 1, 1, 0], 1.0), ([0, 1, 1, 0], [1, 1, 1, 0], 0.75), ([0, 1], [1, 0], 0.0)],
    ids=["perfect", "one-wrong", "all-wrong"],
)
def test_accuracy(gold: list[int], predicted: list[int], expected: float) -> None:
    assert accuracy(gold, predicted) == expected


@pytest.mark.parametrize(
    ("gold", "predicted", "expected"),
    [
        ([0, 0, 1, 1], [0, 0, 1, 1], 1.0),
        ([0, 0, 1, 1], [1, 1, 1, 1], 0.0),  # always yes: chance agreement only
        ([0, 0, 1, 1], [1, 1, 0, 0], -1.0),  # systematic disagreement
        ([0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 1, 0], 1 / 3),
    ],
    ids=["perfect", "constant", "inverted", "partial"],
)
def test_kappa(gold: list[int], predicted: list[int], expected: float) -> None:
    assert kappa(gold, predicted) == pytest.approx(expected)


def test_truncated_kappa_cuts_below_chance_only() -> None:
    assert truncated_kappa(-0.4) == 0.0
    assert truncated_kappa(0.0) == 0.0
    assert truncated_kappa(0.6) == 0.6


@pytest.mark.parametrize(
    ("slot_filling", "truncated", "expected"),
    [(1.0, 1.0, 100.0), (1.0, 0.6, 75.0), (0.8, 0.0, 0.0), (0.0, 0.0, 0.0), (0.8, 0.5333333, 64.0)],
    ids=["perfect", "gpt-4o-record", "no-kappa", "both-zero", "llama-8b-record"],
)
def test_main_score_is_the_harmonic_mean_times_100(
    slot_filling: float, truncated: float, expected: float
) -> None:
    assert main_score(slot_filling, truncated) == pytest.approx(expected, abs=1e-4)


@pytest.mark.parametrize(("n_slots", "expected"), [(5, 2), (4, 1), (3, 1), (1, 0)])
def test_middle_round(n_slots: int, expected: int) -> None:
    assert middle_round(n_slots) == expected


def _interactions(
    rounds: list[list[tuple[int, int]]],
    filled: list[bool],
    counts: list[int],
    aborted: bool = False,
    played: int | None = None,
) -> Interactions:
    """Records of a 2-slot episode; each round lists (gt, value) per probe."""
    return Interactions(
        players={},
        turns=[],
        probes=[
            [
                ProbeEntry(target=f"S{i}", question="?", gt=gt, value=value, tries=1)
                for i, (gt, value) in enumerate(probes)
            ]
            for probes in rounds
        ],
        realised_slots={"a": 0, "b": 1},
        request_count=counts,
        parsed_request_count=counts,
        violated_request_count=[0] * len(counts),
        filled_slots=filled,
        aborted=aborted,
        played_probe_rounds=len(rounds) if played is None else played,
    )


def test_played_episode_scores() -> None:
    interactions = _interactions(
        rounds=[[(0, 0), (0, 0)], [(1, 1), (0, 1)], [(1, 1), (1, 1)]],
        filled=[True, False],
        counts=[2, 3, 3],
    )
    scores = score_interactions(interactions)
    assert scores.turn_scores == {
        "0": {"Request Count": 2, "Parsed Request Count": 2, "Violated Request Count": 0,
              "Accuracy": 1.0},
        "1": {"Request Count": 3, "Parsed Request Count": 3, "Violated Request Count": 0,
              "Accuracy": 0.5, "Slot Filled?": 1},
        "2": {"Request Count": 3, "Parsed Request Count": 3, "Violated Request Count": 0,
              "Accuracy": 1.0, "Slot Filled?": 0},
    }  # fmt: skip
    episode = scores.episode_scores
    assert episode["Accuracy"] == pytest.approx(5 / 6)
    assert episode["Kappa"] == pytest.approx(kappa([0, 0, 1, 0, 1, 1], [0, 0, 1, 1, 1, 1]))
    assert episode["Middle-Accuracy"] == 1.0  # round int(3/2) - 1 = 0
    assert episode["Slot-Filling-Accuracy"] == 0.5
    truncated = episode["Truncated Kappa"]
    assert episode["Main Score"] == pytest.approx(100 * 2 * 0.5 * truncated / (0.5 + truncated))
    assert (episode["Aborted"], episode["Lose"], episode["Success"]) == (0, 1, 0)
    assert episode["Request Count"] == 8
    assert episode["Request Success Ratio"] == 1.0


def test_success_needs_perfect_probes_and_filling() -> None:
    perfect = _interactions(
        rounds=[[(0, 0), (0, 0)], [(1, 1), (0, 0)], [(1, 1), (1, 1)]], filled=[True, True],
        counts=[2, 3, 3],
    )  # fmt: skip
    episode = score_interactions(perfect).episode_scores
    assert (episode["Success"], episode["Lose"], episode["Main Score"]) == (1, 0, 100.0)


def test_aborted_episode_keeps_counts_and_played_rounds_only() -> None:
    interactions = _interactions(
        rounds=[[(0, 0), (0, 1)], [(1, 2), (0, 0)]],  # round 1: a probe invalid after 5 tries
        filled=[True],
        counts=[2, 7, 0],
        aborted=True,
        played=1,
    ).model_copy(update={"parsed_request_count": [2, 2, 0], "violated_request_count": [0, 5, 0]})
    scores = score_interactions(interactions)
    assert list(scores.turn_scores) == ["0"]
    assert scores.turn_scores["0"]["Accuracy"] == 0.5
    episode = scores.episode_scores
    for name in ("Middle-Accuracy", "Accuracy", "Kappa", "Truncated Kappa",
                 "Slot-Filling-Accuracy", "Main Score"):  # fmt: skip
        assert math.isnan(episode[name]), name
    assert (episode["Aborted"], episode["Lose"], episode["Success"]) == (1, 0, 0)
    assert episode["Request Count"] == 9
    assert episode["Violated Request Count"] == 5
    assert episode["Request Success Ratio"] == pytest.approx(4 / 9)


@pytest.mark.filterwarnings("ignore")  # scikit-learn warns on the undefined (NaN) cases
def test_kappa_agrees_with_scikit_learn() -> None:
    """Our kappa is scikit-learn's arithmetic, which clembench's published scores used."""
    from sklearn.metrics import cohen_kappa_score

    rng = random.Random(7)
    for _ in range(500):
        size = rng.randint(2, 36)
        gold = [rng.randint(0, 1) for _ in range(size)]
        predicted = [rng.choice([0, 1, 1, 2]) if rng.random() < 0.1 else rng.randint(0, 1)
                     for _ in range(size)]  # fmt: skip
        theirs = float(cohen_kappa_score(gold, predicted))
        ours = kappa(gold, predicted)
        assert ours == theirs or (math.isnan(ours) and math.isnan(theirs)), (gold, predicted)


class _Quitter:
    """A questioner that finishes at once, as a person may: `finish` before any question."""

    name = "quitter"
    temperature = 0.0

    async def respond(self, request: PlayerRequest) -> PlayerReply:
        finish = ToolCall(id="call-0", name="finish", arguments={})
        return PlayerReply(text="", prompt=None, raw=None, tool_calls=(finish,))


@pytest.mark.parametrize("instance_id", [0])
async def test_a_questioner_that_asks_nothing_leaves_the_main_score_undefined(
    instance_id: int,
) -> None:
    """No answer was asked for: the answerer's slot filling, the middle round and the Main
    Score are undefined (NaN, left out of the Quality Score), and the episode is still scored."""
    instance = default_instance("travel-booking", instance_id)
    state = await play_episode(instance, GameContext(answerer=OracleAnswerer(),
                                                     questioner=_Quitter()))  # fmt: skip
    scores = state.scores
    assert scores is not None
    episode = scores.episode_scores
    assert episode["Aborted"] == 0 and episode["Accuracy"] == 1.0  # round 0, all private
    assert all(math.isnan(episode[name]) for name in
               ("Slot-Filling-Accuracy", "Main Score", "Middle-Accuracy"))  # fmt: skip
