"""The two-listener experiments: a late joiner and a handover, played end to end, with the
ground truth per (listener, slot) and the reference players' scores worked out by hand.

Theory, for an answerer that gives every value when asked and the programmatic questioner:
- `oracle` answers each probe from what its listener heard: every score is perfect.
- `one-listener` answers as if the questioner had heard everything, whoever is asked about: it
  says yes to a slot once anyone heard it. It is wrong exactly where the listeners' truths
  differ, once per such pair (it is right for the listener who heard it), so its perspective
  accuracy and kappa are 0, and with them its Main Score; its classic Main Score, over every
  probe, stays high.
- `always-yes` / `always-no` carry no information: kappa 0, Main Score 0.

tests/test_perspective.py works the headline out on small constructed episodes.
"""

from __future__ import annotations

import html
import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from privateshared.agents.baselines import (
    ConstantAnswerer,
    OneListenerAnswerer,
    OracleAnswerer,
)
from privateshared.bench.cli import main
from privateshared.bench.cli.play import outcome
from privateshared.bench.reporting.plots import TWO_LISTENER_CAPTION
from privateshared.bench.reporting.results import (
    TWO_LISTENER_HEADLINE,
    TWO_LISTENER_QUALITY,
    TWO_LISTENER_TERMINAL,
)
from privateshared.bench.reporting.transcripts.page import render_transcript
from privateshared.bench.running.episodes import play_episode, save_episode
from privateshared.bench.testing.fake_endpoint import FakeOpenAI
from privateshared.bench.testing.fake_players import default_players
from privateshared.domains.instances import (
    GameInstance,
    default_instance,
    read_instances,
    two_listener_instances_path,
)
from privateshared.graph.context import GameContext
from privateshared.graph.records import Interactions

HANDOVER = default_instance("travel-booking-handover", 2)
LATE_JOINER = default_instance("travel-booking-late-joiner", 0)
AGENT, COLLEAGUE = "TRAVEL-AGENT", "COLLEAGUE"


async def play(
    instance: GameInstance, answerer: object, folder: Path
) -> tuple[Interactions, dict[str, float]]:
    context = GameContext(answerer=answerer)
    state = await play_episode(instance, context)
    save_episode(folder, instance.model_dump(mode="json"), state, context)
    interactions = Interactions.model_validate_json((folder / "interactions.json").read_text())
    return interactions, json.loads((folder / "scores.json").read_text())["episode scores"]


def truth(interactions: Interactions) -> list[dict[str, set[str]]]:
    """Per probing round: listener -> the slots whose probe has gold yes."""
    rounds = []
    for probes in interactions.probes:
        known: dict[str, set[str]] = {}
        for entry in probes:
            listener = str((entry.model_extra or {})["listener"])
            slots = known.setdefault(listener, set())
            if entry.gt == 1:
                slots.add(entry.target.lower())
        rounds.append(known)
    return rounds


def kappa(gold_yes: int, predicted_yes: int, right: int, total: int) -> float:
    """Cohen's kappa from the counts, as fractions: (po - pe) / (1 - pe)."""
    po = Fraction(right, total)
    pe = Fraction(gold_yes * predicted_yes + (total - gold_yes) * (total - predicted_yes),
                  total * total)  # fmt: skip
    return float((po - pe) / (1 - pe))


def test_the_instances_are_what_the_hand_worked_cases_assume() -> None:
    assert HANDOVER.request_order == ("by", "from", "when", "to", "class")
    assert HANDOVER.audience is not None and HANDOVER.audience.kind == "handover"
    assert (HANDOVER.audience.after_turn, HANDOVER.audience.note_slots) == (3, ("by", "from"))
    assert LATE_JOINER.request_order == ("to", "class", "when", "by", "from")
    assert LATE_JOINER.audience is not None and LATE_JOINER.audience.after_turn == 2


async def test_handover_truth_messages_and_scores_by_hand(tmp_path: Path) -> None:
    interactions, oracle = await play(HANDOVER, OracleAnswerer(), tmp_path / "oracle")
    # The agent asks by, from, when and writes down by and from; the colleague, told those two,
    # asks when again, then to and class. The agent stops hearing after turn 3.
    agent = [set(), {"by"}, {"by", "from"}] + [{"by", "from", "when"}] * 4
    colleague = [None] * 4 + [
        {"by", "from", "when"},
        {"by", "from", "when", "to"},
        {"by", "from", "when", "to", "class"},
    ]
    expected = [
        {AGENT: a} if c is None else {AGENT: a, COLLEAGUE: c}
        for a, c in zip(agent, colleague, strict=True)
    ]
    assert truth(interactions) == expected
    events = [event.action for turn in interactions.turns for event in turn]
    kinds = [action.type for action in events if action.type in ("arrival", "note", "departure")]
    assert kinds == ["arrival", "arrival", "note", "departure"]
    note = next(action for action in events if action.type == "note")
    assert note.content == (
        f"{AGENT} to {COLLEAGUE}: Here is what I have noted: BY: {HANDOVER.slots['by']}; "
        f"FROM: {HANDOVER.slots['from']}."
    )
    # Questions to the answerer start with a bracketed line; the note comes with question 4.
    sent = [a.content for a in events if a.type == "send message" and str(a.content)[0] == "["]
    assert str(sent[3]).splitlines() == [
        f"[{AGENT} hands the conversation over to {COLLEAGUE} and leaves.]",
        note.content,
        f"[Present: {COLLEAGUE}]",
        f"{COLLEAGUE}: {HANDOVER.requests['when']}",
    ]
    assert oracle["Main Score"] == 100 and oracle["Perspective Accuracy"] == 1
    assert oracle["Classic Main Score"] == 100 and oracle["Perspective Kappa"] == 1
    assert oracle["Transfer Completeness"] == pytest.approx(2 / 3)  # by, from of by, from, when
    assert oracle["Redundant Questions"] == 0
    # Pairs whose truths differ: `to` in round 5; `to` and `class` in round 6.
    assert oracle["Perspective Pairs"] == 3

    page = render_transcript(interactions, None, None, HANDOVER.model_dump(mode="json"))
    # Who was present at each turn, the note, and each round's probes grouped by listener.
    assert page.count("· present: TRAVEL-AGENT</span>") == 3
    assert page.count("· present: COLLEAGUE</span>") == 3
    assert f"Note, heard by all:</strong> {html.escape(str(note.content))}" in page
    assert "Leaves:</strong> TRAVEL-AGENT leaves the conversation." in page
    assert "hands over" in page
    assert page.count("Does COLLEAGUE know it?") == 3
    assert page.count("Does TRAVEL-AGENT know it?") == 7
    assert "TRAVEL-AGENT knows from round 3; COLLEAGUE knows from round 4" in page  # `when`

    _, blind = await play(HANDOVER, OneListenerAnswerer(), tmp_path / "one-listener")
    # Wrong on the agent's side of each of the 3 pairs; 20 + 30 probes; 27 gold yes.
    assert blind["Perspective Accuracy"] == 0
    assert blind["Accuracy"] == pytest.approx(47 / 50)
    expected_kappa = kappa(gold_yes=27, predicted_yes=30, right=47, total=50)
    assert blind["Kappa"] == pytest.approx(expected_kappa)
    classic = 200 * expected_kappa / (1 + expected_kappa)  # slot filling 1
    assert blind["Classic Main Score"] == pytest.approx(classic)
    assert blind["First Listener Accuracy"] == pytest.approx(32 / 35)
    assert blind["Second Listener Accuracy"] == 1
    # Both probes of a pair get yes (someone heard it): answers independent of the truth there.
    assert blind["Perspective Kappa"] == 0 and blind["Two-Listener Kappa"] == 0
    assert blind["Main Score"] == 0


async def test_late_joiner_truth_and_scores_by_hand(tmp_path: Path) -> None:
    interactions, oracle = await play(LATE_JOINER, OracleAnswerer(), tmp_path / "oracle")
    order = LATE_JOINER.request_order
    # The colleague joins after turn 2 and hears turns 3 to 5 only.
    expected = [{AGENT: set(order[:t])} for t in range(3)] + [
        {AGENT: set(order[:t]), COLLEAGUE: set(order[2:t])} for t in range(3, 6)
    ]
    assert truth(interactions) == expected
    assert oracle["Main Score"] == 100 and oracle["Perspective Pairs"] == 6
    assert oracle["Two-Listener Kappa"] == 1
    assert "Transfer Completeness" not in oracle  # no note in a late join

    _, blind = await play(LATE_JOINER, OneListenerAnswerer(), tmp_path / "one-listener")
    # It says yes to the two slots said before the join for the colleague, in rounds 3 to 5.
    assert blind["Perspective Accuracy"] == 0
    assert blind["Second Listener Accuracy"] == pytest.approx(9 / 15)
    assert blind["First Listener Accuracy"] == 1
    expected_kappa = kappa(gold_yes=21, predicted_yes=27, right=39, total=45)
    assert blind["Kappa"] == pytest.approx(expected_kappa)
    assert blind["Classic Main Score"] == pytest.approx(200 * expected_kappa / (1 + expected_kappa))
    # The colleague's 15 probes: 6 gold yes, 12 answered yes (every slot said), 9 right.
    assert blind["Second Listener Kappa"] == pytest.approx(
        kappa(gold_yes=6, predicted_yes=12, right=9, total=15)
    )
    assert blind["First Listener Kappa"] == 1
    assert blind["Perspective Kappa"] == 0 and blind["Main Score"] == 0


async def test_a_person_who_plays_sees_both_main_scores() -> None:
    """`privateshared play` ends with the scores: a two-listener episode's own Main Score first,
    the classic one beside it."""
    state = await play_episode(HANDOVER, GameContext(answerer=OneListenerAnswerer()))
    assert outcome(state).startswith("Played. Main Score 0.00, Classic Main Score 93.51, ")


@pytest.mark.parametrize("reply", ["yes", "no"])
async def test_constant_answers_carry_no_information(tmp_path: Path, reply: str) -> None:
    for instance in (HANDOVER, LATE_JOINER):
        _, scores = await play(instance, ConstantAnswerer(reply), tmp_path / instance.experiment)
        assert scores["Kappa"] == 0 and scores["Main Score"] == 0
        assert scores["Classic Main Score"] == 0
        assert scores["Perspective Accuracy"] == 0 and scores["Perspective Kappa"] == 0


def test_every_reference_player_lands_where_theory_puts_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """All 40 two-listener episodes, through the command line."""
    names = ["oracle", "one-listener", "always-yes", "always-no", "mock"]
    experiments = [e.name for e in read_instances(two_listener_instances_path()).experiments]
    assert len(experiments) == 4
    argv = ["run", "--results-dir", str(tmp_path)]
    argv += [arg for name in experiments for arg in ("--experiment", name)]
    argv += [arg for name in names for arg in ("--model", name)]
    assert main(argv) == 0
    # The terminal says what the quality score is, right above it.
    printed = capsys.readouterr().out.splitlines()
    assert printed[printed.index(TWO_LISTENER_TERMINAL) + 1].startswith("model ")
    results = json.loads((tmp_path / "results.json").read_text())
    quality = {row["model"].split("-t0.0")[0]: row["quality_score"] for row in results["models"]}
    assert quality["oracle"] == 100
    assert quality["always-yes"] == quality["always-no"] == 0
    # Blind to who heard what: nothing of the headline, whatever it gets of the classic score.
    assert quality["one-listener"] == 0
    assert quality["mock"] < 5  # guesses: chance earns (nearly) nothing
    mock = next(row for row in results["models"] if row["model"].startswith("mock"))
    assert mock["played"] + mock["aborted"] == 40 and mock["aborted"] > 0  # it breaks the format
    for row in results["listeners"]:
        model = row["model"].split("-t0.0")[0]
        if model == "oracle":
            assert row["perspective_accuracy"] == row["perspective_kappa"] == 1
        else:  # the mock too: it draws by round and slot, not by listener
            assert row["perspective_accuracy"] == row["perspective_kappa"] == 0
        if model == "one-listener":  # what the classic score would have given it
            assert 80 < row["classic_main_score"] < 90
        if "handover" in row["experiment"]:
            assert 0 < row["transfer_completeness"] < 1  # a seeded part of what was said
        else:
            assert math.isnan(row["transfer_completeness"])
    # Accuracy per round, split by listener: the oracle is right about both in every round;
    # one-listener is always right about the questioner in a late join, not about the joiner.
    rounds = {(row["model"].split("-t0.0")[0], row["experiment"]): row["rounds"]
              for row in results["rounds_by_listener"]}  # fmt: skip
    assert len(rounds) == 5 * 4 * 2
    for (model, experiment), by_round in rounds.items():
        accuracies = [r["accuracy"] for r in by_round]
        if model == "oracle":
            assert accuracies and set(accuracies) == {1.0}
        if model == "one-listener" and experiment.endswith("late-joiner, 1st listener"):
            assert set(accuracies) == {1.0}
        if model == "one-listener" and experiment.endswith("late-joiner, 2nd listener"):
            assert min(accuracies) < 1
        if experiment.endswith("2nd listener"):
            assert by_round[0]["probe_round"] >= 2  # the second listener comes after turn 1
    # Scores come from the records alone: re-scoring them gives the same files, byte for byte.
    paths = sorted(tmp_path.glob("*/privateshared/*/episode_*/scores.json"))
    before = {path: path.read_bytes() for path in paths}
    for path in paths:
        path.unlink()
    assert main(["score", str(tmp_path)]) == 0
    assert {path: path.read_bytes() for path in paths} == before
    markdown = (tmp_path / "results.md").read_text()
    assert f"## Two listeners\n\n{TWO_LISTENER_HEADLINE}\n\n" in markdown
    assert TWO_LISTENER_QUALITY in markdown
    assert "| Main Score | classic Main Score |" in markdown
    plot = (tmp_path / "accuracy_by_round.svg").read_text()
    assert all(f">{html.escape(line)}</text>" in plot for line in TWO_LISTENER_CAPTION)
    assert "travel-booking-handover, 2nd listener" in plot
    assert ">travel-booking-handover<" not in plot  # its panels are the listeners'
    assert (
        "Second Listener Accuracy"
        in json.loads(
            next(tmp_path.glob("oracle*/privateshared/*handover/episode_0/scores.json")).read_text()
        )["turn scores"]["4"]
    )


def test_classic_experiments_keep_their_records_without_audience_keys(tmp_path: Path) -> None:
    assert main(["run", "--experiment", "travel-booking", "--model", "oracle",
                 "--results-dir", str(tmp_path)]) == 0  # fmt: skip
    folder = next(tmp_path.glob("*/privateshared/*travel-booking/episode_0"))
    text = (folder / "interactions.json").read_text()
    assert "listener" not in text and "arrival" not in text
    assert "audience" not in (folder / "instance.json").read_text()
    results = json.loads((tmp_path / "results.json").read_text())
    assert "listeners" not in results and "rounds_by_listener" not in results
    assert "Two-listener" not in (tmp_path / "accuracy_by_round.svg").read_text()
    assert "two-listener" not in (tmp_path / "results.md").read_text()
    assert all("listener_round_accuracy" not in episode for episode in results["episodes"])


@pytest.mark.parametrize("forgetful", [False, True])
def test_model_questioner_hands_over_what_it_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forgetful: bool
) -> None:
    """Every role through the fake endpoint: a perfect answerer, a judge, and a model questioner
    whose note is exactly what it recorded. A questioner that never records before the handover
    hands over an empty note, and its colleague asks for everything again."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-two-listeners")
    players = default_players()

    def reply(messages: list[dict[str, Any]]) -> str | dict[str, Any]:
        move = players(messages)
        if forgetful and isinstance(move, dict) and "saying to you" not in str(messages[1]):
            # The first questioner never writes anything down.
            move = {**move, "tool_calls": [c for c in move["tool_calls"] if c["name"] != "record"]}
        return move

    with FakeOpenAI(reply) as server:
        code = main(["run", "--model", "fake-model", "--questioner", "fake-model",
                     "--judge", "fake-model", "--base-url",
                     server.base_url, "--experiment", "travel-booking-handover",
                     "--experiment", "travel-booking-late-joiner",
                     "--results-dir", str(tmp_path)])  # fmt: skip
    assert code == 0
    folders = sorted(tmp_path.glob("*/privateshared/*-handover/episode_*"))
    assert len(folders) == 10
    for folder in folders:
        instance = default_instance("travel-booking-handover", int(folder.name.split("_")[1]))
        assert instance.audience is not None
        k = instance.audience.after_turn
        scores = json.loads((folder / "scores.json").read_text())["episode scores"]
        perspective = scores["Perspective Accuracy"]
        if scores["Perspective Pairs"]:
            assert scores["Main Score"] == 100 and perspective == 1
        else:  # nothing here needs a perspective: no headline to give
            assert math.isnan(scores["Main Score"]) and math.isnan(perspective)
        assert scores["Classic Main Score"] == 100
        events = [e["action"] for turn in json.loads((folder / "interactions.json").read_text())
                  ["turns"] for e in turn]  # fmt: skip
        note = next(a for a in events if a["type"] == "note")
        asks = [a for a in events if a["type"] == "tool call" and a["name"] == "ask" and a["valid"]]
        second = [a["arguments"]["slot"] for a in asks if a["questioner"] == COLLEAGUE]
        # The fake questioner asks in the order its instructions list the slots.
        order = list(instance.slots)
        if forgetful:
            assert note["values"] == {} and note["carried"] == []
            assert scores["Transfer Completeness"] == 0
            assert second == order  # everything again, nothing redundant
        else:
            assert sorted(note["carried"]) == sorted(order[:k])
            assert scores["Transfer Completeness"] == 1
            assert second == order[k:]
        assert scores["Redundant Questions"] == 0
        # Each questioner scored on its own turns against what it heard; the first hands over
        # and has no task completion of its own.
        assert math.isnan(scores["Questioner Task Completion"])
        assert scores["Questioner Slot Accuracy"] == (0 if forgetful else 1)
        assert scores["Questions Asked"] == k
        assert scores["Second Questioner Slot Accuracy"] == 1
        assert scores["Second Questioner Task Completion"] == 1
        assert scores["Second Questions Asked"] == len(second)
        assert scores["Questioner Judge Score"] == 4  # every question of both rated
    assert len(list(tmp_path.glob("*/privateshared/*-late-joiner/episode_*/scores.json"))) == 10
