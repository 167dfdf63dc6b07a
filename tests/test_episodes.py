"""Whole episodes with scripted answerers, asserting on records and scores."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver

from privateshared.agents.base import PlayerReply, PlayerRequest
from privateshared.agents.baselines import MockAnswerer, OracleAnswerer
from privateshared.bench.running.episodes import play_episode, save_episode
from privateshared.domains.instances import GameInstance
from privateshared.graph.builder import build_graph
from privateshared.graph.context import GameContext
from privateshared.graph.recorder import interactions_json
from privateshared.graph.records import Interactions
from privateshared.graph.state import EpisodeState

ORACLE = OracleAnswerer()


@dataclass
class Scripted:
    """An answerer that replies with `script(request)`, or like the oracle when it returns None."""

    script: Callable[[PlayerRequest], str | None]
    name: str = "scripted"
    temperature: float = 0.0
    requests: list[PlayerRequest] = field(default_factory=list)

    async def respond(self, request: PlayerRequest) -> PlayerReply:
        self.requests.append(request)
        text = self.script(request)
        if text is None:
            return await ORACLE.respond(request)
        return PlayerReply(text=text, prompt=[m.to_openai() for m in request.messages], raw=None)


async def play(
    instance: GameInstance, answerer: Scripted | OracleAnswerer, folder: Path, **settings: bool
) -> tuple[EpisodeState, Interactions, dict[str, dict[str, float]]]:
    """Play and save one episode; return its state, interactions.json and scores.json."""
    context = GameContext(answerer=answerer, **settings)
    state = await play_episode(instance, context)
    save_episode(folder, instance.model_dump(mode="json"), state, context)
    interactions = Interactions.model_validate_json((folder / "interactions.json").read_text())
    scores = json.loads((folder / "scores.json").read_text())
    return state, interactions, scores


def golds(interactions: Interactions) -> list[dict[str, int]]:
    """Per round: slot -> ground truth of its probe."""
    return [{p.target.lower(): p.gt for p in probes} for probes in interactions.probes]


async def test_oracle_episode_is_perfect_and_complete(instance: GameInstance, tmp_path: Path):
    state, interactions, scores = await play(instance, ORACLE, tmp_path)
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "instance.json", "interactions.json", "requests.json", "scores.json",
    ]  # fmt: skip
    assert scores["episode scores"]["Main Score"] == 100.0
    assert scores["episode scores"]["Success"] == 1
    assert list(scores["turn scores"]) == ["0", "1", "2", "3"]
    # Slots asked in the order to, by, from become shared after turns 1, 2, 3.
    assert state.shared_since == {"to": 1, "by": 2, "from": 3}
    assert golds(interactions) == [
        {"from": 0, "to": 0, "by": 0},
        {"by": 0, "from": 0, "to": 1},
        {"to": 1, "by": 1, "from": 0},
        {"from": 1, "by": 1, "to": 1},
    ]
    assert interactions.realised_slots == {"to": 0, "by": 1, "from": 2}
    assert interactions.request_count == [3, 4, 4, 4]
    assert interactions.filled_slots == [True, True, True]
    assert interactions.played_probe_rounds == 4


async def test_value_volunteered_early_is_shared_from_that_turn(
    instance: GameInstance, tmp_path: Path
):
    def volunteer(request: PlayerRequest) -> str | None:
        # The first question asks for "to"; the answer also gives away "from".
        if request.kind == "question" and request.turn == 1:
            return "ANSWER: Budapest, leaving from Lisbon."
        return None

    state, interactions, scores = await play(instance, Scripted(volunteer), tmp_path)
    assert state.shared_since == {"to": 1, "from": 1, "by": 2}
    assert golds(interactions)[1] == {"by": 0, "from": 1, "to": 1}
    assert interactions.realised_slots == {"to": 0, "by": 1, "from": 0}
    early = [
        event.action.model_extra
        for event in interactions.turns[1]
        if event.action.type == "metadata" and "shared_early" in (event.action.model_extra or {})
    ]
    assert early == [{"shared_early": "from"}]
    # The oracle's probe replies see the early value too, so the episode is still perfect.
    assert scores["episode scores"]["Main Score"] == 100.0


async def test_answer_without_tag_aborts_at_once(instance: GameInstance, tmp_path: Path):
    def untagged(request: PlayerRequest) -> str | None:
        return "By night train." if request.kind == "question" and request.turn == 2 else None

    answerer = Scripted(untagged)
    state, interactions, scores = await play(instance, answerer, tmp_path)
    assert state.abort_reason == "invalid format in slot filling"
    assert len(state.dialogue) == 3 and len(state.probe_rounds) == 2
    assert answerer.requests[-1].kind == "question"  # nothing asked after the broken answer
    assert interactions.aborted and interactions.played_probe_rounds == 2
    assert interactions.request_count == [3, 4, 1, 0]
    assert interactions.violated_request_count == [0, 0, 1, 0]
    assert interactions.filled_slots == [True]
    assert list(scores["turn scores"]) == ["0", "1"]
    episode = scores["episode scores"]
    assert math.isnan(episode["Main Score"]) and episode["Aborted"] == 1
    assert episode["Request Count"] == 8
    kinds = [event.action.type for event in interactions.turns[-1]]
    assert kinds[-2:] == ["invalid format", "end"]


def broken_probe(
    slot: str, round_index: int, bad_tries: int
) -> Callable[[PlayerRequest], str | None]:
    """A script whose probe about `slot` in `round_index` is malformed on its first tries."""

    def script(request: PlayerRequest) -> str | None:
        if (request.kind, request.turn, request.slot) == ("probe", round_index, slot):
            return "No." if request.attempt <= bad_tries else None
        return None

    return script


async def test_five_bad_probe_replies_abort(instance: GameInstance, tmp_path: Path):
    answerer = Scripted(broken_probe("by", 1, bad_tries=5))
    state, interactions, scores = await play(instance, answerer, tmp_path)
    assert state.abort_reason == "invalid format in probing"
    probe = next(p for p in interactions.probes[1] if p.target == "BY")
    assert (probe.value, probe.tries, probe.answer) == (2, 5, "No.")
    tries = [
        r.attempt for r in answerer.requests if r.kind == "probe" and r.slot == "by" and r.turn == 1
    ]
    assert tries == [1, 2, 3, 4, 5]
    assert interactions.played_probe_rounds == 1
    # Round 1: the answer, two good probes (asked concurrently) and five tries at the bad one.
    assert interactions.request_count == [3, 8, 0, 0]
    assert interactions.violated_request_count == [0, 5, 0, 0]
    assert list(scores["turn scores"]) == ["0"]
    assert scores["episode scores"]["Aborted"] == 1
    assert not any(r.kind == "question" and r.turn == 2 for r in answerer.requests)


async def test_good_reply_on_fifth_try_does_not_abort(instance: GameInstance, tmp_path: Path):
    answerer = Scripted(broken_probe("by", 1, bad_tries=4))
    state, interactions, scores = await play(instance, answerer, tmp_path)
    assert state.abort_reason is None
    probe = next(p for p in interactions.probes[1] if p.target == "BY")
    assert (probe.value, probe.tries) == (0, 5)
    assert interactions.request_count == [3, 8, 4, 4]
    assert interactions.parsed_request_count == [3, 4, 4, 4]
    assert scores["episode scores"]["Main Score"] == 100.0
    assert scores["episode scores"]["Request Success Ratio"] == pytest.approx(15 / 19)
    messages = [r.messages[-1].content for r in answerer.requests if r.slot == "by" and r.turn == 1]
    assert len(set(messages[:5])) == 5  # every try words the re-prompt differently


async def test_sequential_probes_stop_at_the_first_failure(instance: GameInstance, tmp_path: Path):
    # Round 1 probes in the order by, from, to: the first one fails for good.
    answerer = Scripted(broken_probe("by", 1, bad_tries=5))
    _, interactions, _ = await play(instance, answerer, tmp_path, sequential_probes=True)
    assert [p.target for p in interactions.probes[1]] == ["BY"]
    assert interactions.request_count == [3, 6, 0, 0]


async def test_probes_follow_the_instance_order(instance: GameInstance, tmp_path: Path):
    for sequential in (False, True):
        _, interactions, _ = await play(
            instance, ORACLE, tmp_path / str(sequential), sequential_probes=sequential
        )
        recorded = [[p.target.lower() for p in probes] for probes in interactions.probes]
        assert recorded == [list(order) for order in instance.probes]


async def test_probes_never_enter_the_dialogue(instance: GameInstance, tmp_path: Path):
    answerer = Scripted(lambda request: None)
    await play(instance, answerer, tmp_path)
    for request in answerer.requests:
        contents = [message.content for message in request.messages]
        earlier = contents[:-1]
        assert not any(content.startswith("ME:") for content in earlier)
        assert earlier[:2] == [instance.initial_prompt, "Ok."]
        roles = [message.role for message in request.messages]
        assert roles == ["user", "assistant"] * (len(roles) // 2) + ["user"]
    questions = [r for r in answerer.requests if r.kind == "question"]
    assert [r.messages[-1].content for r in questions] == [
        "TRAVEL-AGENT: Where to?", "TRAVEL-AGENT: How?", "TRAVEL-AGENT: Where from?",
    ]  # fmt: skip
    assert len(questions[-1].messages) == 2 + 2 * 2 + 1


async def test_requests_json_holds_every_answerer_call_with_its_event_time(
    instance: GameInstance, tmp_path: Path
):
    _, interactions, _ = await play(instance, Scripted(broken_probe("to", 0, 2)), tmp_path)
    calls = json.loads((tmp_path / "requests.json").read_text())
    assert len(calls) == sum(interactions.request_count) == 17
    replies = [
        event
        for turn in interactions.turns
        for event in turn
        if event.sender == "Player 1" and event.action.type in ("get message", "probe answer")
    ]
    assert [call["timestamp"] for call in calls] == [event.timestamp for event in replies]
    assert [call["manipulated_prompt_obj"][-1]["content"] for call in calls] == [
        # the last message of each call is what the event says was sent just before the reply
        next(
            e.action.content
            for e in reversed(turn[: turn.index(event)])
            if e.sender == "GM" and e.to == "Player 1"
        )
        for turn in interactions.turns
        for event in turn
        if event in replies
    ]


async def test_a_thread_plays_one_episode_only() -> None:
    """With a checkpointer (as in Studio), a second run on a thread is refused, not mixed in."""
    saved = build_graph(InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": "t1"}}
    first = await saved.ainvoke({"experiment": "travel-booking", "game_id": 1}, config)
    assert first["scores"].episode_scores["Main Score"] == 100.0
    with pytest.raises(ValueError, match="start a new thread"):
        await saved.ainvoke({"experiment": "job-interview", "game_id": 2}, config)


async def test_interactions_json_is_what_json_dumps_writes(instance: GameInstance) -> None:
    """pydantic's writer stands in for json.dumps(indent=2) for the largest record: the same
    bytes, non-ASCII text and every extra key of the events included."""
    state = await play_episode(instance, GameContext(answerer=MockAnswerer(seed=4)))
    assert state.records is not None
    interactions = state.records.interactions
    interactions.turns[0][0].action.content = 'Grüße, naïve café ☕ "quoted"\n'
    expected = json.dumps(interactions.model_dump(mode="python"), indent=2, ensure_ascii=False)
    assert interactions_json(interactions) == expected + "\n"
