"""Long dialogues end to end: a 10-slot and a 15-slot episode through the command line and the
local fake endpoint, with the programmatic questioner and with a model questioner, checked
against scores worked out by hand.

The answerer behind the endpoint is scripted to make the scores interesting, the same way
whoever asks:

- letter-number (10 slots): every answer gives the value asked for; the answer to question 2
  also gives the value of the slot asked 5th (X). Probes say yes for exactly the slots asked
  before, so they miss that X is shared from round 2: 3 wrong probes, in rounds 2, 3 and 4.
- things-places (15 slots): the answer to question 3 gives no value ("I do not remember.").
  Probes say yes for exactly the slots asked before, except in round 7, where the slot just
  asked is said to be private: 1 wrong probe, in the middle round.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from typing import Any

import pytest

from privateshared.agents.refusals import CHECK_MESSAGE
from privateshared.bench.cli import main
from privateshared.bench.testing.fake_endpoint import FakeOpenAI
from privateshared.bench.testing.fake_players import asked_slot, perfect_questioner, probed_slot
from privateshared.domains.instances import (
    GameInstance,
    InstancesFile,
    default_instance,
    default_instances_path,
    read_instances,
)
from privateshared.graph.scoring import middle_round

LETTERS, THINGS = default_instance("letter-number", 0), default_instance("things-places", 0)


def ask_order(instance: GameInstance, questioner: str) -> list[str]:
    """The programmatic questioner asks in the instance's order; the fake model questioner in
    the order its instructions list the slots."""
    return list(instance.request_order if questioner == "programmatic" else instance.slots)


def scripted_answerer(questioner: str) -> Any:
    def reply(messages: list[dict[str, Any]]) -> str:
        if messages[0]["content"] == CHECK_MESSAGE:  # the check call before the run
            return "OK"
        instance = next(i for i in (LETTERS, THINGS) if i.initial_prompt == messages[0]["content"])
        order = ask_order(instance, questioner)
        *earlier, last = messages
        questions = [m["content"] for m in earlier[2:] if m["role"] == "user"]
        asked = [asked_slot(instance, question) for question in questions]
        if last["content"].startswith("ME:"):
            round_index = len(asked)
            slot = probed_slot(instance, round_index, last["content"])
            known = slot in asked and not (
                instance is THINGS and round_index == 7 and slot == asked[-1]
            )
            return f"ASIDE: {'yes' if known else 'no'}"
        slot = asked_slot(instance, last["content"])
        if instance is THINGS and len(asked) == 2:  # question 3
            return "ANSWER: I do not remember."
        if instance is LETTERS and len(asked) == 1:  # question 2 gives X away too
            return f"ANSWER: {instance.slots[slot]}, and also {instance.slots[order[4]]}."
        return f"ANSWER: {instance.slots[slot]}."

    def route(messages: list[dict[str, Any]]) -> str | dict[str, Any]:
        if messages[0]["role"] == "system":
            return perfect_questioner(messages)
        return reply(messages)

    return route


@pytest.fixture(scope="module", params=["programmatic", "fake-model"])
def played(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Game 0 of letter-number and of things-places, played through `privateshared run`."""
    questioner = request.param
    folder = tmp_path_factory.mktemp(f"long-{questioner}")
    default = read_instances(default_instances_path())
    only_game_0 = InstancesFile(
        experiments=tuple(
            e.model_copy(update={"game_instances": e.game_instances[:1]})
            for e in default.experiments
            if e.name in ("letter-number", "things-places")
        )
    )
    (folder / "instances.json").write_text(only_game_0.to_json())
    results = folder / "records"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", "sk-test")
        with FakeOpenAI(scripted_answerer(questioner)) as server:
            code = main([
                "run", "--model", "fake-model", "--questioner", questioner, "--base-url",
                server.base_url, "--instances", str(folder / "instances.json"),
                "--results-dir", str(results),
            ])  # fmt: skip
    assert code == 0
    scores = {
        path.parent.parent.name.split("_", 1)[1]: json.loads(path.read_text())
        for path in results.glob("*/privateshared/*/episode_0/scores.json")
    }
    interactions = {
        path.parent.parent.name.split("_", 1)[1]: json.loads(path.read_text())
        for path in results.glob("*/privateshared/*/episode_0/interactions.json")
    }
    return questioner, scores, interactions


def main_score(slot_filling: Fraction, kappa: Fraction) -> float:
    return float(100 * 2 * slot_filling * kappa / (slot_filling + kappa))


def mean(values: list[Fraction]) -> float:
    return float(sum(values) / len(values))


def test_rounds_questions_and_the_answerers_scores(played: Any) -> None:
    _, scores, interactions = played
    for experiment, n in (("letter-number", 10), ("things-places", 15)):
        turn, episode = scores[experiment]["turn scores"], scores[experiment]["episode scores"]
        # n + 1 probing rounds of n probes, n questions, n answers.
        assert [len(probes) for probes in interactions[experiment]["probes"]] == [n] * (n + 1)
        assert interactions[experiment]["Request Count"] == [n] + [n + 1] * n
        assert sorted(turn, key=int) == [str(k) for k in range(n + 1)]
        assert episode["Aborted"] == 0 and interactions[experiment]["Played Probe Rounds"] == n + 1
    assert middle_round(10) == 4 and middle_round(15) == 7

    # letter-number: X shared from round 2, the probes miss it in rounds 2, 3 and 4 (X is asked
    # 5th, so from round 5 on it is asked and said yes). 58 of 110 truths are yes (55 asked +
    # 3), 55 replies are yes; 107 right.
    turn, episode = (
        scores["letter-number"]["turn scores"],
        scores["letter-number"]["episode scores"],
    )
    assert [turn[str(k)]["Accuracy"] for k in range(11)] == [1, 1, 0.9, 0.9, 0.9] + [1.0] * 6
    kappa = (Fraction(107, 110) - Fraction(1, 2)) / (1 - Fraction(1, 2))  # chance: 0.5
    assert episode["Middle-Accuracy"] == 0.9  # round 4
    assert episode["Accuracy"] == pytest.approx(107 / 110)
    assert episode["Kappa"] == pytest.approx(float(kappa))
    assert episode["Slot-Filling-Accuracy"] == 1.0
    assert episode["Main Score"] == pytest.approx(main_score(Fraction(1), kappa))

    # things-places: one wrong probe in round 7 of 16; 120 of 240 truths yes, 119 replies yes.
    turn, episode = (
        scores["things-places"]["turn scores"],
        scores["things-places"]["episode scores"],
    )
    assert [turn[str(k)]["Accuracy"] for k in range(16)] == [1.0] * 7 + [14 / 15] + [1.0] * 8
    assert [turn[str(k)]["Slot Filled?"] for k in range(1, 16)] == [1, 1, 0] + [1] * 12
    kappa = (Fraction(239, 240) - Fraction(1, 2)) / Fraction(1, 2)
    assert episode["Middle-Accuracy"] == pytest.approx(14 / 15)  # round 7
    assert episode["Kappa"] == pytest.approx(float(kappa))
    assert episode["Slot-Filling-Accuracy"] == pytest.approx(14 / 15)
    assert episode["Main Score"] == pytest.approx(main_score(Fraction(14, 15), kappa))


Expected = list[Fraction | None]
"""A turn score for turns 1 to n + 1, worked out by hand; None where it is undefined (NaN)."""


def check_questioner(
    scores: dict[str, Any], n: int, rates: dict[str, Expected], completion: int, violations: int
) -> None:
    """The questioner's turn scores (kept with probing rounds 0 to n), their episode means, and
    its episode counts."""
    for key, expected in rates.items():
        measured = [scores["turn scores"][str(t - 1)][key] for t in range(1, n + 2)]
        assert len(measured) == len(expected), key
        for m, e in zip(measured, expected, strict=True):
            assert math.isnan(m) if e is None else m == pytest.approx(float(e)), key
        defined = [value for value in expected if value is not None]
        assert scores["episode scores"][key] == pytest.approx(mean(defined)), key
    episode = scores["episode scores"]
    assert episode["Questions Asked"] == n and episode["Questioner Call Validity"] == 1.0
    assert episode["Questioner Task Completion"] == completion
    assert episode["Questioner Policy Violations"] == violations


ACCURACY, JOINT, HALLUCINATION = (
    "Questioner Slot Accuracy", "Questioner Joint Goal Accuracy", "Questioner Hallucination Rate",
)  # fmt: skip


def test_the_questioners_scores(played: Any) -> None:
    questioner, scores, _ = played
    F, nan = Fraction, None
    if questioner == "programmatic":
        # letter-number: it records each slot it asked, once answered; X, given away with
        # answer 2, only after answer 5. Turn t has heard answers 1 to t - 1.
        letters = {
            ACCURACY: [nan, F(1), F(2, 3), F(3, 4), F(4, 5)] + [F(1)] * 6,
            JOINT: [F(1), F(1), F(0), F(0), F(0)] + [F(1)] * 6,
            HALLUCINATION: [nan] + [F(0)] * 10,
        }
        # things-places: answer 3 gave no value, so nothing is revealed or recorded for slot 3;
        # the belief always equals what was heard, but slot 3 stays empty when it finishes.
        things = {
            ACCURACY: [nan] + [F(1)] * 15,
            JOINT: [F(1)] * 16,
            HALLUCINATION: [nan] + [F(0)] * 15,
        }
        check_questioner(scores["letter-number"], 10, letters, completion=1, violations=0)
        # finish() with a slot unrecorded is a violation
        check_questioner(scores["things-places"], 15, things, completion=0, violations=1)
    else:
        # The fake model records each answer word for word. letter-number: answer 2 holds two
        # values, so slot 2 is recorded wrong for good; X is asked 5th, recorded after answer 5.
        letters = {
            ACCURACY: [nan, F(1), F(1, 3), F(2, 4), F(3, 5)]
            + [F(t - 2, t - 1) for t in range(6, 12)],
            JOINT: [F(1), F(1)] + [F(0)] * 9,
            HALLUCINATION: [nan, F(0)] + [F(1, t - 1) for t in range(3, 12)],
        }
        # things-places: it records "I do not remember" for slot 3, a value never revealed,
        # from turn 4 on, among t - 1 recorded slots.
        things = {
            ACCURACY: [nan] + [F(1)] * 15,
            JOINT: [F(1)] * 3 + [F(0)] * 13,
            HALLUCINATION: [nan, F(0), F(0)] + [F(1, t - 1) for t in range(4, 17)],
        }
        check_questioner(scores["letter-number"], 10, letters, completion=0, violations=0)
        check_questioner(scores["things-places"], 15, things, completion=0, violations=0)


def test_every_slot_is_asked_once_through_the_ask_function(played: Any) -> None:
    """Both questioners act through the same functions, for any number of slots."""
    questioner, _, interactions = played
    for experiment, instance in (("letter-number", LETTERS), ("things-places", THINGS)):
        calls = [
            e["action"] for turn in interactions[experiment]["turns"] for e in turn
            if e["action"]["type"] == "tool call" and e["action"]["name"] == "ask"
        ]  # fmt: skip
        assert [call["arguments"]["slot"] for call in calls] == ask_order(instance, questioner)
