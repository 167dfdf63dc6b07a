"""Success and Lose, played through the graph and read from scores.json.

clembench's rule, as graph/scoring.py computes it: an episode that was played (not aborted) is a
Success when every probe was answered correctly (Accuracy 1) AND every slot was filled
(Slot-Filling-Accuracy 1), and a Lose otherwise (Lose = 1 - Success); an aborted episode is
neither (both 0). The game's goal state is "having all values correctly filled" (clembench's
description of privateshared), so perfect probes alone do not make a Success, nor does filling
alone.

The instance (conftest.py) has 3 slots asked in the order to, by, from; the oracle answers each
question with the slot's value and each probe correctly.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from privateshared.agents.base import PlayerRequest
from privateshared.domains.instances import GameInstance
from tests.test_episodes import Scripted, play


def like_the_oracle(request: PlayerRequest) -> str | None:
    return None


def misses_a_slot(request: PlayerRequest) -> str | None:
    # "by" is Night train; this answer names no value of the instance, so the slot stays unfilled.
    return "ANSWER: By bus." if request.kind == "question" and request.slot == "by" else None


def misjudges_a_probe(request: PlayerRequest) -> str | None:
    # Before the first question nothing is shared: "yes" about "from" is the one wrong probe.
    if request.kind == "probe" and request.turn == 0 and request.slot == "from":
        return "ASIDE: yes"
    return None


@pytest.mark.parametrize(
    ("script", "filled", "accuracy", "main_score", "success", "lose"),
    [
        # Every slot filled, every probe right: the one way to succeed.
        (like_the_oracle, [True, True, True], 1.0, 100.0, 1, 0),
        # Probes still perfect: the asked slot is shared whatever the answer said (a wrong value
        # is still shared), and the oracle's probe replies say so. Slot filling is 2/3, so no
        # Success, and the played episode is a Lose. Main Score: harmonic mean of 2/3 and kappa
        # 1, times 100 = 100 * 2 * (2/3) / (2/3 + 1) = 80.
        (misses_a_slot, [True, False, True], 1.0, 80.0, 0, 1),
        # Every slot filled, 11 of 12 probes right. Gold has six 0s and six 1s, the replies five
        # 0s and seven 1s: chance agreement (6*5 + 6*7) / 144 = 1/2, kappa (11/12 - 1/2) / (1/2)
        # = 5/6, Main Score 100 * 2 * (5/6) / (1 + 5/6) = 1000/11. Not every probe right: a Lose.
        (misjudges_a_probe, [True, True, True], 11 / 12, 1000 / 11, 0, 1),
    ],
    ids=["all-filled-perfect-probes", "slot-missed", "probe-wrong"],
)
async def test_success_needs_every_slot_filled_and_every_probe_right(
    instance: GameInstance,
    tmp_path: Path,
    script: Callable[[PlayerRequest], str | None],
    filled: list[bool],
    accuracy: float,
    main_score: float,
    success: int,
    lose: int,
) -> None:
    _, interactions, scores = await play(instance, Scripted(script), tmp_path)
    episode = scores["episode scores"]
    assert interactions.filled_slots == filled
    assert episode["Aborted"] == 0  # played: Success and Lose are decided, one of them 1
    assert episode["Accuracy"] == pytest.approx(accuracy)
    assert episode["Slot-Filling-Accuracy"] == pytest.approx(sum(filled) / len(filled))
    assert episode["Main Score"] == pytest.approx(main_score)
    assert (episode["Success"], episode["Lose"]) == (success, lose)
