"""The adapters that make a program over a view a `Player`: a questioner's `Move` becomes its
function calls, an answerer's text its reply; a program may be a function, a callable object or
async, and one that returns the wrong thing says so."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest
from pydantic import JsonValue

from privateshared.agents import (
    AnswererView,
    ChatMessage,
    Move,
    PlayerReply,
    PlayerRequest,
    ProgramAnswerer,
    ProgramQuestioner,
    QuestionerView,
    ToolCall,
)
from privateshared.domains.audience import FAREWELL
from privateshared.domains.instances import default_instance

INSTANCE = default_instance("travel-booking", 0)
ASKED = (
    ChatMessage(role="system", content="..."),
    ChatMessage(role="user", content="Start."),
    ChatMessage(role="assistant", content="", tool_calls=(
        ToolCall(id="c1", name="ask", arguments={"slot": "class", "question": "Class?"}),)),
    ChatMessage(role="tool", content="Answer: Private compartment.", tool_call_id="c1"),
)  # fmt: skip
"""A questioner's conversation after its first question was answered."""


Call = tuple[str, str, dict[str, JsonValue] | None]
"""A function call as (id, name, arguments)."""


def move_calls(move: Move, attempt: int = 1, farewell: bool = False) -> list[Call]:
    """The calls a questioner that makes `move` sends on turn 2: (id, name, arguments)."""
    messages = (*ASKED, ChatMessage(role="user", content=FAREWELL)) if farewell else ASKED
    request = PlayerRequest(kind="request", messages=messages, instance=INSTANCE, turn=2,
                            slot="", attempt=attempt)  # fmt: skip
    reply = asyncio.run(ProgramQuestioner(lambda game: move, "q").respond(request))
    assert (reply.text, reply.prompt, reply.raw) == ("", None, None)  # nothing for requests.json
    return [(call.id, call.name, call.arguments) for call in reply.tool_calls]


@pytest.mark.parametrize(
    ("move", "attempt", "farewell", "expected"),
    [
        (Move(ask="to"), 1, False,
         [("ask-2", "ask", {"slot": "to", "question": INSTANCE.requests["to"]})]),
        (Move(), 1, False, [("finish-2", "finish", {})]),
        # The answer to its last question is `record-<turn>`, anything else by its slot; then
        # the question, in the program's own words.
        (Move(record={"from": "Edinburgh", "class": "Private"}, ask="to", question="Where to?"),
         1, False,
         [("record-2-from", "record", {"slot": "from", "value": "Edinburgh"}),
          ("record-2", "record", {"slot": "class", "value": "Private"}),
          ("ask-2", "ask", {"slot": "to", "question": "Where to?"})]),
        # A second try in the same turn gets ids of its own.
        (Move(ask="to"), 2, False,
         [("ask-2-try2", "ask", {"slot": "to", "question": INSTANCE.requests["to"]})]),
        # Leaving before a handover: only what it writes down is sent.
        (Move(record={"class": "Private"}, ask="to"), 1, True,
         [("record-2", "record", {"slot": "class", "value": "Private"})]),
        # An unknown slot is asked as it is, for the game master to refuse, as a model's.
        (Move(ask="price"), 1, False, [("ask-2", "ask", {"slot": "price", "question": ""})]),
    ],
    ids=["ask", "finish", "record-then-ask", "second-try", "leaving", "unknown-slot"],
)  # fmt: skip
def test_a_move_becomes_function_calls(
    move: Move, attempt: int, farewell: bool, expected: list[Call]
) -> None:
    assert move_calls(move, attempt, farewell) == expected


PROBE = PlayerRequest(
    kind="probe", instance=INSTANCE, turn=0, slot="from",
    messages=(ChatMessage(role="user", content=INSTANCE.initial_prompt),
              ChatMessage(role="assistant", content="Ok."),
              ChatMessage(role="user", content="ME: Do they know?")),
)  # fmt: skip


@dataclass(frozen=True)
class Stubborn:
    """A small class as a program: its settings are its fields."""

    reply: str

    def __call__(self, game: AnswererView) -> str:
        return f"ASIDE: {self.reply}"


async def later(game: AnswererView) -> str:
    """An async program."""
    await asyncio.sleep(0)
    return f"ASIDE: {'no' if game.turn == 0 else 'yes'}"


@pytest.mark.parametrize(
    ("program", "text"), [(Stubborn("yes"), "ASIDE: yes"), (later, "ASIDE: no")],
    ids=["callable-object", "async-function"],
)  # fmt: skip
def test_an_answerer_program_replies_as_a_model_is_recorded(program: object, text: str) -> None:
    reply = asyncio.run(ProgramAnswerer(program, "mine").respond(PROBE))  # type: ignore[arg-type]
    assert reply == PlayerReply(
        text=text,
        prompt=[message.to_openai() for message in PROBE.messages],
        raw={"player": "mine", "text": text},
    )


def test_a_program_that_returns_the_wrong_thing_says_so() -> None:
    def says_yes(game: QuestionerView) -> bool:
        return True

    asker = ProgramQuestioner(says_yes, "q")  # type: ignore[arg-type]
    request = PlayerRequest(kind="request", messages=ASKED, instance=INSTANCE, turn=2, slot="")
    with pytest.raises(TypeError, match="says_yes returned bool, not a Move"):
        asyncio.run(asker.respond(request))
    with pytest.raises(TypeError, match="<lambda> returned NoneType, not a str"):
        asyncio.run(ProgramAnswerer(lambda game: None, "a").respond(PROBE))  # type: ignore[arg-type]
