"""The questioner's scores: pure metric functions, then whole episodes with tool-calling
questioners (scripted, programmatic, and a model over real HTTP), asserting on scores.json.

The conftest instance has 3 slots (from=Lisbon, to=Budapest, by=Night train), asked in the order
to, by, from; the oracle answers each question with the asked slot's value and nothing else, so
after answer k exactly the first k slots asked for are revealed. Turn t (the replies preparing
question t; the finishing turn is n + 1) is scored with probing round t - 1.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pydantic import JsonValue, SecretStr

from privateshared.agents.base import Player, PlayerReply, PlayerRequest, ToolCall
from privateshared.agents.baselines import OracleAnswerer
from privateshared.agents.llm import ChatModelPlayer, ModelSpec, PlayerConfigError
from privateshared.agents.registry import resolve_questioner
from privateshared.bench.running.episodes import play_episode, save_episode
from privateshared.bench.testing.fake_endpoint import FakeOpenAI
from privateshared.domains.instances import GameInstance
from privateshared.graph.context import GameContext
from privateshared.graph.questioner_metrics import (
    CheckedCall,
    belief_after,
    call_validity,
    hallucination_rate,
    joint_goal_accuracy,
    questioner_scores,
    questioner_turns,
    slot_accuracy,
    task_completion,
)
from privateshared.graph.records import (
    ABORTED,
    QUESTIONER_CALL_VALIDITY,
    QUESTIONER_HALLUCINATION_RATE,
    QUESTIONER_JOINT_GOAL_ACCURACY,
    QUESTIONER_POLICY_VIOLATIONS,
    QUESTIONER_SCORES,
    QUESTIONER_SLOT_ACCURACY,
    QUESTIONER_TASK_COMPLETION,
    QUESTIONS_ASKED,
    Interactions,
)
from privateshared.graph.scoring import score_interactions
from tests.conftest import SHARED_RECORDS

T, F = True, False


def _plain(value: float) -> float | None:
    """NaN as None, so that scores compare with ==."""
    return None if math.isnan(value) else value


# Pure functions


@pytest.mark.parametrize(
    ("revealed", "belief", "accuracy", "joint", "hallucination"),
    [
        (set(), {}, None, 1, None),  # before any answer: nothing to recall, nothing claimed
        ({"to"}, {"to": T}, 1.0, 1, 0.0),
        ({"to", "by"}, {"to": T}, 0.5, 0, 0.0),  # a revealed value not recorded: recall only
        ({"to"}, {"to": F}, 0.0, 0, 1.0),  # the wrong value counts on both sides
        ({"to"}, {"to": T, "from": T}, 1.0, 0, 0.5),  # true but not revealed yet: a guess
        (set(), {"from": F}, None, 0, 1.0),  # claimed before anything was said
        ({"to", "by", "from"}, {"to": T, "by": F, "from": T}, 2 / 3, 0, 1 / 3),
    ],
    ids=["empty", "one-true", "missed", "wrong", "guessed", "invented", "mixed"],
)
def test_belief_state_metrics(
    revealed: set[str], belief: dict[str, bool], accuracy: float | None, joint: int,
    hallucination: float | None,
) -> None:  # fmt: skip
    assert _plain(slot_accuracy(frozenset(revealed), belief)) == pytest.approx(accuracy)
    assert joint_goal_accuracy(frozenset(revealed), belief) == joint
    assert _plain(hallucination_rate(frozenset(revealed), belief)) == pytest.approx(hallucination)


def _call(name: str, valid: bool = True, **checks: Any) -> CheckedCall:
    return CheckedCall(name=name, valid=valid, **checks)


@pytest.mark.parametrize(
    ("calls", "expected"),
    [
        ([], None),  # a reply with text only: no call to judge
        ([_call("ask")], 1.0),
        ([_call("record"), _call("ask", valid=False)], 0.5),
        ([_call("ask", valid=False)] * 3, 0.0),
    ],
    ids=["none", "valid", "half", "all-invalid"],
)
def test_call_validity(calls: list[CheckedCall], expected: float | None) -> None:
    assert _plain(call_validity(calls)) == expected


def test_belief_keeps_each_slots_latest_valid_record() -> None:
    calls = [
        _call("record", recorded="to", true_value=False),
        _call("record", recorded="to", true_value=True),  # corrected
        _call("record", valid=False),  # refused: no slot written
        _call("ask"),
    ]
    assert belief_after({"by": True}, calls) == {"by": True, "to": True}


@pytest.mark.parametrize(
    ("belief", "violations", "expected"),
    [
        ({"to": T, "by": T, "from": T}, 0, 1),
        ({"to": T, "by": T}, 0, 0),  # a slot never recorded
        ({"to": T, "by": F, "from": T}, 0, 0),  # a wrong value at the end
        ({"to": T, "by": T, "from": T}, 1, 0),  # MAS4CS's policy gate
    ],
    ids=["complete", "unrecorded", "wrong", "violation"],
)
def test_task_completion(belief: dict[str, bool], violations: int, expected: int) -> None:
    assert task_completion(("to", "by", "from"), belief, violations) == expected


# Whole episodes

ORACLE = OracleAnswerer()
QUESTIONS = {"from": "Where from?", "to": "Where to?", "by": "How?"}
"""The conftest instance's own questions, so the oracle's probes see the slots asked."""


def ask(slot: str) -> ToolCall:
    return ToolCall(
        id="", name="ask", arguments={"slot": slot, "question": QUESTIONS.get(slot, "?")}
    )


def record(slot: str, value: str) -> ToolCall:
    return ToolCall(id="", name="record", arguments={"slot": slot, "value": value})


def finish() -> ToolCall:
    return ToolCall(id="", name="finish", arguments={})


@dataclass
class ToolQuestioner:
    """Makes the calls its script gives for each turn, one list per attempt (the last repeats)."""

    script: Mapping[int, Sequence[Sequence[ToolCall]]]
    name: str = "tool-questioner"
    temperature: float = 0.0
    requests: list[PlayerRequest] = field(default_factory=list)

    async def respond(self, request: PlayerRequest) -> PlayerReply:
        self.requests.append(request)
        attempts = self.script[request.turn]
        calls = attempts[min(request.attempt, len(attempts)) - 1]
        numbered = tuple(
            call.model_copy(update={"id": f"call-{request.turn}-{request.attempt}-{i}"})
            for i, call in enumerate(calls)
        )
        return PlayerReply(text="", prompt=None, raw=None, tool_calls=numbered)


def attentive_calls(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """An LLM-like questioner's next calls, from its conversation alone (OpenAI format): record
    each answer it heard and has not recorded, then ask for the next slot, or finish."""
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    heard: dict[str, str] = {}
    recorded: set[str] = set()
    for message in messages:
        for call in message.get("tool_calls") or []:
            arguments = json.loads(call["function"]["arguments"])
            calls[call["id"]] = (call["function"]["name"], arguments)
            if call["function"]["name"] == "record":
                recorded.add(arguments["slot"])
        name, arguments = calls.get(message.get("tool_call_id") or "", ("", {}))
        if name == "ask" and message["content"].startswith("Answer: "):
            heard[arguments["slot"]] = message["content"].removeprefix("Answer: ").rstrip(".")
    asked = {arguments.get("slot") for name, arguments in calls.values() if name == "ask"}
    moves: list[dict[str, Any]] = [
        {"name": "record", "arguments": {"slot": slot, "value": value}}
        for slot, value in heard.items()
        if slot not in recorded
    ]
    pending = [slot for slot in ("to", "by", "from") if slot not in asked]
    if pending:
        moves.append(
            {"name": "ask", "arguments": {"slot": pending[0], "question": QUESTIONS[pending[0]]}}
        )
    else:
        moves.append({"name": "finish", "arguments": {}})
    return moves


@dataclass
class AttentiveQuestioner:
    """`attentive_calls` as a player: it reads only `request.messages`."""

    name: str = "attentive"
    temperature: float = 0.0

    async def respond(self, request: PlayerRequest) -> PlayerReply:
        moves = attentive_calls([message.to_openai() for message in request.messages])
        calls = tuple(
            ToolCall(id=f"call-{request.turn}-{i}", name=move["name"], arguments=move["arguments"])
            for i, move in enumerate(moves)
        )
        return PlayerReply(text="", prompt=None, raw=None, tool_calls=calls)


async def play(
    instance: GameInstance, questioner: Player | str, folder: Path
) -> tuple[Interactions, dict[str, Any]]:
    """Play and save one episode with the oracle answerer; return interactions.json and
    scores.json as written."""
    context = GameContext(answerer=ORACLE, questioner=questioner)
    state = await play_episode(instance, context)
    save_episode(folder, instance.model_dump(mode="json"), state, context)
    if isinstance(context.questioner, ChatModelPlayer):
        await context.questioner.aclose()
    interactions = Interactions.model_validate_json((folder / "interactions.json").read_text())
    return interactions, json.loads((folder / "scores.json").read_text())


def episode_scores(scores: dict[str, Any]) -> dict[str, float | None]:
    return {name: _plain(scores["episode scores"][name]) for name in QUESTIONER_SCORES}


TURN_NAMES = (
    QUESTIONER_SLOT_ACCURACY, QUESTIONER_JOINT_GOAL_ACCURACY, QUESTIONER_HALLUCINATION_RATE,
    QUESTIONER_POLICY_VIOLATIONS, QUESTIONER_CALL_VALIDITY,
)  # fmt: skip


def turn_scores(scores: dict[str, Any]) -> dict[str, tuple[float | None, ...]]:
    """Probing round -> (slot accuracy, JGA, hallucination, violations, validity)."""
    return {
        key: tuple(_plain(turn[name]) for name in TURN_NAMES)
        for key, turn in scores["turn scores"].items()
    }


def episode(
    accuracy: float | None, joint: float, hallucination: float | None, violations: int,
    validity: float | None, completion: int, asked: int,
) -> dict[str, Any]:  # fmt: skip
    """The questioner's episode scores, NaN as None."""
    return {
        QUESTIONER_SLOT_ACCURACY: accuracy, QUESTIONER_JOINT_GOAL_ACCURACY: joint,
        QUESTIONER_HALLUCINATION_RATE: hallucination, QUESTIONER_POLICY_VIOLATIONS: violations,
        QUESTIONER_CALL_VALIDITY: validity, QUESTIONER_TASK_COMPLETION: completion,
        QUESTIONS_ASKED: asked,
    }  # fmt: skip


# Every turn of a questioner that records each answer before its next move.
PERFECT_TURN = (1.0, 1, 0.0, 0, 1.0)
# Turn 1, before any answer: slot accuracy and hallucination rate undefined; an empty belief
# state matches the empty set of revealed slots.
FIRST_TURN = (None, 1, None, 0, 1.0)


async def test_programmatic_questioner_is_perfect(instance: GameInstance, tmp_path: Path) -> None:
    _, scores = await play(instance, "programmatic", tmp_path)
    assert turn_scores(scores) == {
        "0": FIRST_TURN, "1": PERFECT_TURN, "2": PERFECT_TURN, "3": PERFECT_TURN,
    }  # fmt: skip
    # Means over turns 2-4 (accuracy, hallucination) and 1-4 (JGA); 8 valid calls of 8.
    assert episode_scores(scores) == episode(1.0, 1.0, 0.0, 0, 1.0, 1, 3)


async def test_attentive_questioner_is_perfect(instance: GameInstance, tmp_path: Path) -> None:
    interactions, scores = await play(instance, AttentiveQuestioner(), tmp_path)
    # It records what it heard as the result of its ask: "Budapest", "Night train", "Lisbon".
    recorded = [
        event.action.model_extra["arguments"]["value"]
        for events in interactions.turns
        for event in events
        if event.action.type == "tool call" and event.action.model_extra["name"] == "record"
    ]
    assert recorded == ["Budapest", "Night train", "Lisbon"]
    assert turn_scores(scores) == {
        "0": FIRST_TURN, "1": PERFECT_TURN, "2": PERFECT_TURN, "3": PERFECT_TURN,
    }  # fmt: skip
    assert episode_scores(scores) == episode(1.0, 1.0, 0.0, 0, 1.0, 1, 3)
    assert scores["episode scores"]["Main Score"] == 100.0  # the dialogue is clembench's


async def test_hallucinating_questioner(instance: GameInstance, tmp_path: Path) -> None:
    questioner = ToolQuestioner({
        1: [[record("from", "Porto"), ask("to")]],  # a value never given (and wrong)
        2: [[record("to", "Vienna"), ask("by")]],  # a wrong value for one just given
        # by is true (containment ignores case); asking about from, which it "recorded" in
        # turn 1, breaks the rule against asking about a recorded slot.
        3: [[record("by", "night train"), ask("from")]],
        4: [[record("from", "Lisbon"), finish()]],  # corrects from; to stays wrong
    })  # fmt: skip
    interactions, scores = await play(instance, questioner, tmp_path)
    assert [(turn.turn, set(turn.revealed)) for turn in questioner_turns(interactions)[None]] == [
        (1, set()), (2, {"to"}), (3, {"to", "by"}), (4, {"to", "by", "from"}),
    ]  # fmt: skip
    assert turn_scores(scores) == {
        # belief {from: wrong}; nothing revealed: accuracy undefined, the one record invented
        "0": (None, 0, 1.0, 0, 1.0),
        # {from: wrong, to: wrong} against {to}: 0/1 recalled; 2/2 hallucinated
        "1": (0.0, 0, 1.0, 0, 1.0),
        # {from: wrong, to: wrong, by} against {to, by}: 1/2; from and to hallucinated, 2/3
        "2": (0.5, 0, pytest.approx(2 / 3), 1, 1.0),
        # {from, to: wrong, by} against all: 2/3 recalled; only to hallucinated, 1/3
        "3": (pytest.approx(2 / 3), 0, pytest.approx(1 / 3), 0, 1.0),
    }
    # accuracy (0 + 1/2 + 2/3) / 3 = 7/18 over turns 2-4; hallucination (1 + 1 + 2/3 + 1/3) / 4
    # = 3/4; JGA never 1; one violation; all 8 calls valid; to ends wrong: not completed.
    assert episode_scores(scores) == episode(pytest.approx(7 / 18), 0.0, 0.75, 1, 1.0, 0, 3)
    assert scores["episode scores"]["Main Score"] == 100.0  # the answerer is not to blame


async def test_questioner_asking_again(instance: GameInstance, tmp_path: Path) -> None:
    questioner = ToolQuestioner({
        1: [[ask("to")]],
        2: [[record("to", "Budapest"), ask("to")]],  # a slot already recorded: a violation
        3: [[ask("date")], [ask("by")]],  # an unknown slot: refused, a violation, asked again
        4: [[record("by", "Night train"), ask("from")]],
        5: [[record("from", "Lisbon"), finish()]],
    })  # fmt: skip
    interactions, scores = await play(instance, questioner, tmp_path)
    checks = [
        event.action.model_extra["intermediate_results"]
        for events in interactions.turns
        for event in events
        if event.action.type == "tool call" and event.action.model_extra["name"] == "ask"
    ]
    assert checks[1] == {
        "asked_before": True, "violation": "question about a slot already recorded",
    }  # fmt: skip
    assert checks[2]["violation"] == "question about an unknown slot"
    assert [request.attempt for request in questioner.requests if request.turn == 3] == [1, 2]
    assert turn_scores(scores) == {
        "0": FIRST_TURN,
        "1": (1.0, 1, 0.0, 1, 1.0),  # the second ask about to
        "2": (1.0, 1, 0.0, 1, 0.5),  # answer 2 revealed nothing new; 1 of 2 calls valid
        "3": PERFECT_TURN,
        "4": PERFECT_TURN,  # the finishing turn, after 4 questions
    }
    # 2 violations; 8 of 9 calls valid; the policy gate fails the task; 4 questions asked.
    assert episode_scores(scores) == episode(1.0, 1.0, 0.0, 2, pytest.approx(8 / 9), 0, 4)


async def test_questioner_finishing_early(instance: GameInstance, tmp_path: Path) -> None:
    questioner = ToolQuestioner({
        1: [[ask("to")]],
        2: [[record("to", "Budapest"), ask("by")]],
        3: [[record("by", "Night train"), finish()]],  # from never asked nor recorded
    })  # fmt: skip
    interactions, scores = await play(instance, questioner, tmp_path)
    assert [
        event.action.model_extra["intermediate_results"]
        for event in interactions.turns[-1]
        if event.action.type == "tool call" and event.action.model_extra["name"] == "finish"
    ] == [{"unrecorded": ["from"], "violation": "finish with slots unrecorded"}]
    # Its belief state is right at every turn: only Task Completion sees what is missing.
    assert turn_scores(scores) == {
        "0": FIRST_TURN, "1": PERFECT_TURN, "2": (1.0, 1, 0.0, 1, 1.0),
    }  # fmt: skip
    assert episode_scores(scores) == episode(1.0, 1.0, 0.0, 1, 1.0, 0, 2)
    assert scores["episode scores"][ABORTED] == 0


MALFORMED = ToolCall(id="", name="ask", arguments=None, error="arguments are not JSON: '{slot'")


async def test_malformed_calls_abort_the_episode(instance: GameInstance, tmp_path: Path) -> None:
    questioner = ToolQuestioner({1: [[MALFORMED]]})
    interactions, scores = await play(instance, questioner, tmp_path)
    assert [request.attempt for request in questioner.requests] == [1, 2, 3]
    # Re-prompted with the refusal as its call's result, then a nudge.
    retry = questioner.requests[1].messages
    assert retry[-2].role == "tool" and retry[-2].content.startswith("Error: arguments are not")
    assert retry[-1].role == "user"
    assert "Abort: no valid question from the questioner." in [
        event.action.content for events in interactions.turns for event in events
    ]
    assert scores["episode scores"][ABORTED] == 1
    # Three calls, none valid, none a violation (a broken call is not a move); nothing
    # revealed nor recorded. The questioner metrics are kept although the episode aborted.
    assert turn_scores(scores) == {"0": (None, 1, None, 0, 0.0)}
    assert episode_scores(scores) == episode(None, 1.0, None, 0, 0.0, 0, 0)
    # Had probing round 0 not been scored, turn 1's scores would still get its key.
    unscored = interactions.model_copy(update={"played_probe_rounds": 0})
    rescored = score_interactions(unscored).model_dump(mode="json", by_alias=True)
    assert turn_scores(rescored) == {"0": (None, 1, None, 0, 0.0)}


async def test_rescoring_the_records_gives_the_same_scores(
    instance: GameInstance, tmp_path: Path
) -> None:
    interactions, scores = await play(instance, AttentiveQuestioner(), tmp_path)
    rescored = score_interactions(interactions).model_dump(mode="json", by_alias=True)
    assert json.dumps(rescored) == json.dumps(scores)


@pytest.mark.skipif(not SHARED_RECORDS.is_dir(), reason="../shared/clembench-records is absent")
def test_clembench_records_get_no_questioner_scores() -> None:
    paths = sorted(SHARED_RECORDS.glob("*/privateshared/*/episode_*/interactions.json"))
    assert paths
    for path in paths:
        interactions = Interactions.model_validate_json(path.read_text())
        assert questioner_scores(interactions) is None
        scored = score_interactions(interactions)
        names = set(scored.episode_scores).union(*scored.turn_scores.values())
        assert not names & {*QUESTIONER_SCORES, *TURN_NAMES}


# A model questioner over real HTTP


def model_questioner(server: FakeOpenAI) -> Player:
    """The chat-model player at the fake server, as the registry builds it once it takes model
    specs for the questioner; built directly until then."""
    spec = ModelSpec(model="fake-model", base_url=server.base_url)
    try:
        return resolve_questioner(spec)
    except PlayerConfigError:
        return ChatModelPlayer(spec, SecretStr("x"))


def http_questioner(messages: list[dict[str, Any]]) -> dict[str, JsonValue]:
    """The fake model: `attentive_calls`, except that the first try of turn 2 sends the ask's
    arguments as broken JSON."""
    moves = attentive_calls(messages)
    answers = sum(1 for m in messages if m["role"] == "tool" and m["content"].startswith("Answer"))
    nudged = messages[-1]["role"] == "user" and len(messages) > 2
    if answers == 1 and not nudged:
        moves[-1] = {"name": "ask", "arguments": '{"slot": "by", "question": "How?"'}
    return {"content": "", "tool_calls": moves}


async def test_model_questioner_over_http(
    instance: GameInstance, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-questioner-0123456789")
    with FakeOpenAI(http_questioner) as server:
        _, scores = await play(instance, model_questioner(server), tmp_path)
        sent = server.requests
    # Turns 1, 2 (twice), 3 and 4 reached the model, each with the three functions.
    assert len(sent) == 5
    assert all(
        [tool["function"]["name"] for tool in request["body"]["tools"]]
        == ["ask", "record", "finish"]
        for request in sent
    )
    calls = json.loads((tmp_path / "requests.json").read_text())
    questioner_calls = [
        call for call in calls if call["manipulated_prompt_obj"][0]["role"] == "system"
    ]
    # Each carries its prompt, and the calls the model made, the broken one included.
    assert [
        [
            c["function"]["name"]
            for c in call["raw_response_obj"]["choices"][0]["message"]["tool_calls"]
        ]
        for call in questioner_calls
    ] == [["ask"], ["record", "ask"], ["ask"], ["record", "ask"], ["record", "finish"]]
    assert len(calls) == 5 + 15  # and the oracle's 3 answers and 12 probes
    assert turn_scores(scores) == {
        "0": FIRST_TURN,
        "1": (1.0, 1, 0.0, 0, pytest.approx(2 / 3)),  # record, broken ask; then ask: 2 of 3
        "2": PERFECT_TURN,
        "3": PERFECT_TURN,
    }
    # 7 of 8 calls valid; a broken call is no violation, so the task is completed.
    assert episode_scores(scores) == episode(1.0, 1.0, 0.0, 0, 0.875, 1, 3)
