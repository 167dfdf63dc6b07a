"""Programs in a seat: a function over a view of the game, adapted once to the `Player` protocol.

A questioner program takes a `QuestionerView` and returns a `Move` (what to write down, which
slot to ask next or None to finish); an answerer program takes an `AnswererView` and returns its
reply's text. `ProgramQuestioner` and `ProgramAnswerer` make either a `Player`, so that it plays
wherever a model or a person does: named by import path on the command line, in Studio's
context, or passed as an object from Python.

    def reverse_order(game: QuestionerView) -> Move:
        return Move(record=game.heard, ask=game.left[-1] if game.left else None)

    ReverseAsker = ProgramQuestioner(reverse_order, name="reverse-asker")

A program is any callable: a function, or an object with `__call__` when it needs settings (a
seed, say). It may be async. It keeps no history: each call gets the whole view, derived from
the request (agents/views.py).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, JsonValue

from privateshared.agents.base import PlayerReply, PlayerRequest, ToolCall
from privateshared.agents.views import (
    AnswererView,
    QuestionerView,
    answerer_view,
    questioner_view,
)


class Move(BaseModel):
    """A questioner's move: values to write down, then a question, or the end."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    record: dict[str, str] = {}
    """Values to write down, slot -> value, in order (`game.heard`: the answers as they were
    said)."""
    ask: str | None = None
    """The slot to ask for next; None to finish. On a leaving questioner's last turn neither is
    sent: it only writes down."""
    question: str | None = None
    """The question's words; None for the instance's own words for the slot."""


QuestionerProgram = Callable[[QuestionerView], Move | Awaitable[Move]]
"""A questioner as a program: the view of its side of the game in, its move out."""
AnswererProgram = Callable[[AnswererView], str | Awaitable[str]]
"""An answerer as a program: the view of its side of the game in, the reply's text out
(`ANSWER: ...` to a question, `ASIDE: yes` or `ASIDE: no` to a probe)."""


T = TypeVar("T")


async def _result(program: Callable[..., T | Awaitable[T]], view: object, kind: type[T]) -> T:
    result = program(view)
    if inspect.isawaitable(result):
        result = await result
    if not isinstance(result, kind):
        raise TypeError(
            f"{getattr(program, '__name__', type(program).__name__)} returned "
            f"{type(result).__name__}, not a {kind.__name__}"
        )
    return result


@dataclass(frozen=True)
class ProgramQuestioner:
    """A questioner program as a `Player`: it reads the request as a `QuestionerView` and turns
    the program's `Move` into the questioner's function calls (`record`, then `ask` or
    `finish`).

    It calls no model, so it adds nothing to requests.json; its calls are in interactions.json
    like any questioner's."""

    program: QuestionerProgram
    """The function (or callable object) that makes the moves."""
    name: str
    """The player's name, as records and result folders show it."""
    temperature: float = 0.0
    """0.0: a program does not sample (part of the results folder's name)."""

    async def respond(self, request: PlayerRequest) -> PlayerReply:
        """Make the program's move for this request."""
        game = questioner_view(request)
        move = await _result(self.program, game, Move)
        turn = f"{game.turn}" if game.attempt == 1 else f"{game.turn}-try{game.attempt}"
        last = game.asked[-1].slot if game.asked else None
        calls = [
            # The answer to its last question is written down as `record-<turn>`; anything
            # else by slot, so that every call of the conversation has an id of its own.
            ToolCall(id=f"record-{turn}" if slot == last else f"record-{turn}-{slot}",
                     name="record", arguments={"slot": slot, "value": value})
            for slot, value in move.record.items()
        ]  # fmt: skip
        if not game.leaving and move.ask is not None:
            question = move.question or game.instance.requests.get(move.ask, "")
            arguments: dict[str, JsonValue] = {"slot": move.ask, "question": question}
            calls.append(ToolCall(id=f"ask-{turn}", name="ask", arguments=arguments))
        elif not game.leaving:
            calls.append(ToolCall(id=f"finish-{turn}", name="finish", arguments={}))
        # No prompt and no raw response: nothing was called, so requests.json gets no entry.
        return PlayerReply(text="", prompt=None, raw=None, tool_calls=tuple(calls))


@dataclass(frozen=True)
class ProgramAnswerer:
    """An answerer program as a `Player`: it reads the question or probe as an `AnswererView`
    and replies with the program's text.

    requests.json keeps each call as a model's: the messages the request carried, and the reply
    as `{"player": name, "text": text}`."""

    program: AnswererProgram
    """The function (or callable object) that replies."""
    name: str
    """The player's name, as records and result folders show it."""
    temperature: float = 0.0
    """0.0: a program does not sample (part of the results folder's name)."""

    async def respond(self, request: PlayerRequest) -> PlayerReply:
        """Reply to one question or probe with the program's text."""
        text = await _result(self.program, answerer_view(request), str)
        return PlayerReply(
            text=text,
            prompt=[message.to_openai() for message in request.messages],
            raw={"player": self.name, "text": text},
        )
