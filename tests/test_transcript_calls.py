"""The questioner's function calls on a transcript page: an LLM-like scripted questioner plays
episodes, their transcripts are rendered and read back with html.parser (tests/test_transcripts.py
holds the page reader)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import JsonValue

from privateshared.agents.base import PlayerReply, PlayerRequest, ToolCall
from privateshared.bench.reporting.transcripts.index import write_transcripts
from privateshared.bench.reporting.transcripts.page import render_transcript
from privateshared.bench.running.episodes import play_episode, save_episode
from privateshared.domains.instances import GameInstance
from privateshared.graph.context import GameContext
from privateshared.graph.records import Interactions
from tests.test_transcripts import ORACLE, Node, Rendered, belief_column, bubbles, dialogue, parse

BOLD = "<b>x</b>"
UNREADABLE = "Expecting value: line 1 column 1 (char 0)"
Moves = dict[tuple[int, int], tuple[str, tuple[ToolCall, ...]]]


def calls(*specs: tuple[str, dict[str, JsonValue] | None]) -> tuple[ToolCall, ...]:
    """Function calls as a model makes them; None arguments are ones that could not be read."""
    return tuple(
        ToolCall(id=f"call-{n}", name=name, arguments=arguments,
                 error=UNREADABLE if arguments is None else None)
        for n, (name, arguments) in enumerate(specs)
    )  # fmt: skip


# Questions to, by, from, then finish(). Turn 1 needs two tries (an invented function, an unknown
# slot); turn 2 records a true and a false value, an unreadable call, and asks twice; turn 3 asks
# about a slot already recorded; finish() leaves "by" unrecorded.
LLM_LIKE: Moves = {
    (1, 1): ("Let me think.", calls(("think", {"about": BOLD}),
                                    ("ask", {"slot": "destination", "question": "Where?"}))),
    (1, 2): ("", calls(("ask", {"slot": "to", "question": f"Where to {BOLD}?"}),)),
    (2, 1): ("", calls(("record", {"slot": "to", "value": "Budapest"}),
                       ("record", {"slot": "from", "value": "Porto"}), ("record", None),
                       ("ask", {"slot": "by", "question": "How?"}),
                       ("ask", {"slot": "from", "question": "And from?"}))),
    (3, 1): ("", calls(("ask", {"slot": "from", "question": "Where from?"}),)),
    (4, 1): ("", calls(("finish", {}),)),
}  # fmt: skip


@dataclass
class ScriptedQuestioner:
    """A questioner in a model's place: its reply to turn t, try k is `moves[t, k]` (no text and
    no call when absent)."""

    moves: Moves
    name: str = "llm-like"
    temperature: float = 0.0

    async def respond(self, request: PlayerRequest) -> PlayerReply:
        text, tool_calls = self.moves.get((request.turn, request.attempt), ("", ()))
        prompt: JsonValue = [message.to_openai() for message in request.messages]
        return PlayerReply(text=text, prompt=prompt, raw=None, tool_calls=tool_calls)


async def render_questioner(instance: GameInstance, moves: Moves, results: Path) -> Rendered:
    """Play one episode with the oracle answering `moves`, and render it."""
    folder = results / "oracle--llm-like" / "privateshared" / "0_travel-booking" / "episode_7"
    context = GameContext(answerer=ORACLE, questioner=ScriptedQuestioner(moves))
    state = await play_episode(instance, context)
    save_episode(folder, instance.model_dump(mode="json"), state, context)
    write_transcripts(results)
    source = (folder / "transcript.html").read_text(encoding="utf-8")
    interactions = Interactions.model_validate_json((folder / "interactions.json").read_text())
    return Rendered(parse(source), source, interactions, folder)


@pytest.fixture
async def llm_episode(instance: GameInstance, tmp_path: Path) -> Rendered:
    return await render_questioner(instance, LLM_LIKE, tmp_path)


def tool_calls(interactions: Interactions) -> list[Mapping[str, Any]]:
    """The extra keys of every `tool call` event, in order."""
    return [
        event.action.model_extra or {}
        for turn in interactions.turns
        for event in turn
        if event.action.type == "tool call"
    ]


def questioner_bubbles(page: Node) -> list[Node]:
    return page.find("div", "bubble", "q")


def call_lines(bubble: Node) -> list[tuple[str, str]]:
    """A bubble's calls: each line's signature and validity."""
    return [
        (line.find("code", "sig")[0].text(), "valid" if "valid" in line.classes else "invalid")
        for line in bubble.find("li", "call")
    ]


async def test_tool_calls_are_shown_inline_with_their_validity(llm_episode: Rendered) -> None:
    shown = [call_lines(bubble) for bubble in questioner_bubbles(llm_episode.page)]
    assert shown == [
        [('think(about = "<b>x</b>")', "invalid"), ('ask(destination, "Where?")', "invalid")],
        [("ask(to)", "valid")],  # the question itself is the bubble's text
        [('record(to = "Budapest")', "valid"), ('record(from = "Porto")', "valid"),
         ("record(unreadable arguments)", "invalid"), ("ask(by)", "valid"),
         ('ask(from, "And from?")', "invalid")],
        [("ask(from)", "valid")],
        [("finish()", "valid")],
    ]  # fmt: skip
    # The validity is the game master's, as recorded.
    recorded = [
        "valid" if extra["valid"] else "invalid" for extra in tool_calls(llm_episode.interactions)
    ]
    assert [validity for lines in shown for _, validity in lines] == recorded
    first, second, third = questioner_bubbles(llm_episode.page)[:3]
    assert "failed" in first.classes and "failed" not in second.classes  # the failed try
    assert first.find("", "say", "remark")[0].text() == "Let me think."
    assert "try 2" in second.find("", "who")[0].text()
    verdicts = [line.find("", "verdict")[0].text() for line in third.find("li", "call")[:2]]
    assert verdicts == ["\u2713 true value", "\u2717 not the true value"]


async def test_violation_is_highlighted(llm_episode: Rendered) -> None:
    lines = llm_episode.page.find("li", "call", "violation")
    assert [line.find("", "violation")[-1].text() for line in lines] == [
        "\u26a0 question about an unknown slot",
        "\u26a0 question about a slot already recorded",
        "\u26a0 finish with slots unrecorded",
    ]
    signatures = [line.find("code")[0].text() for line in lines]
    assert signatures == ['ask(destination, "Where?")', "ask(from)", "finish()"]
    assert "unrecorded: by" in lines[-1].text()
    recorded = [
        extra["intermediate_results"]["violation"]
        for extra in tool_calls(llm_episode.interactions)
        if "violation" in extra["intermediate_results"]
    ]
    assert [line.find("", "violation")[-1].text() for line in lines] == [
        f"\u26a0 {violation}" for violation in recorded
    ]
    assert re.search(r"span\.violation \{[^}]*background: var\(--wrong\)", llm_episode.source)


async def test_invalid_call_shows_its_error(llm_episode: Rendered) -> None:
    invalid = llm_episode.page.find("li", "call", "invalid")
    assert [line.find("", "verdict", "wrong")[0].text() for line in invalid] == [
        "\u2717 unknown function 'think'; use ask, record or finish",
        "\u2717 unknown slot 'destination'",
        f"\u2717 {UNREADABLE}",
        "\u2717 one question per turn",
    ]
    assert re.search(r"li\.call\.invalid \.sig \{[^}]*color: var\(--wrong\)", llm_episode.source)


async def test_belief_column_marks_each_slot(llm_episode: Rendered) -> None:
    assert belief_column(llm_episode.page) == {
        "from": ("Porto \u2717", "wrong"),  # a false value
        "to": ("Budapest \u2713", "right"),
        "by": ("\u2014 \u2717", "wrong"),  # never recorded
    }


async def test_model_provided_arguments_are_escaped(llm_episode: Rendered) -> None:
    assert not llm_episode.page.find("b")
    questions = [q for side, q in bubbles(llm_episode.page) if side == "q"]
    assert (
        questions
        == [f"Where to {BOLD}?", "How?", "Where from?"]
        == [q for side, q in dialogue(llm_episode.interactions) if side == "q"]
    )
    assert BOLD not in llm_episode.source
    assert "&lt;b&gt;x&lt;/b&gt;" in llm_episode.source
    # Sent to the answerer as the game master announced it ("TAG: question"): no "sent as".
    assert not llm_episode.page.find("", "relay")


async def test_turns_are_titled_by_the_ask_and_end_with_finish(llm_episode: Rendered) -> None:
    sections = llm_episode.page.find("section", "turn")
    assert [section.find("h2")[0].text() for section in sections] == [
        "Turn 0 · instructions", "Turn 1 · asks for TO", "Turn 2 · asks for BY",
        "Turn 3 · asks for FROM", "Turn 4 · finishes",
    ]  # fmt: skip
    last = sections[-1]  # after the last probing round, the finishing move and the end
    assert not last.find("details") and call_lines(last) == [("finish()", "valid")]
    assert last.find("div", "end")[0].text() == "Game finished."


async def test_question_falls_back_to_the_message_sent(llm_episode: Rendered) -> None:
    """Records whose `ask` lost its question still show it: the game master sent it."""
    data = json.loads((llm_episode.folder / "interactions.json").read_text())
    for event in (event for turn in data["turns"] for event in turn):
        if event["action"]["type"] == "tool call" and event["action"]["name"] == "ask":
            event["action"]["arguments"] = {"slot": event["action"]["arguments"]["slot"]}
    interactions = Interactions.model_validate(data)
    page = parse(render_transcript(interactions, None, None, None))
    assert [q for side, q in bubbles(page) if side == "q"] == [
        f"Where to {BOLD}?",
        "How?",
        "Where from?",
    ]


async def test_failed_tries_are_shown_before_the_abort(instance: GameInstance, tmp_path: Path):
    never: Moves = {
        (1, 1): ("I would ask where to.", ()),
        (1, 2): ("", calls(("ask", {"slot": "to"}),)),
        (1, 3): ("", calls(("finish", None),)),
    }  # fmt: skip
    rendered = await render_questioner(instance, never, tmp_path)
    sections = rendered.page.find("section", "turn")
    assert [section.find("h2")[0].text() for section in sections] == [
        "Turn 0 · instructions",
        "Turn 1 · no valid question",
    ]
    tries = sections[1].find("div", "bubble", "q")
    assert len(tries) == 3 and all("failed" in bubble.classes for bubble in tries)
    assert [
        bubble.find("", "who")[0].text().endswith(f" · try {n}")
        for n, bubble in enumerate(tries, 1)
    ] == [False, True, True]
    assert tries[0].find("", "say", "remark")[0].text() == "I would ask where to."
    assert [bubble.find("li", "call")[0].text() for bubble in tries] == [
        "\u2717 no function call",
        'ask(slot = "to")\u2717 missing question',
        f"finish(unreadable arguments)\u2717 {UNREADABLE}",
    ]
    (abort,) = sections[1].find("", "banner", "abort")  # after the tries, in their section
    assert "no valid question from the questioner" in abort.text()
