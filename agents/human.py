"""A person in either seat: the answerer or the questioner, behind the same `Player` protocol.

The person's turn is a LangGraph `interrupt()`: the run stops with a payload saying what the
person needs to see (the message to answer and, for the answerer, the private values; for the
questioner, the slots still to find and what was said), and goes on when the person's reply comes
back as the resume value (Studio's resume, or `privateshared play` in the terminal). The reply is
passed on as typed, so a person is held to the same format and rules as a model: a broken reply
counts as a failed try. On resume LangGraph runs the node again and `interrupt()` hands each
earlier reply back in order, so the replies of a node are replayed, never asked twice.

The questioner types its moves, one per line, which become the same function calls a model
makes: `ask SLOT: question`, `record SLOT: value`, `finish`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from langgraph.types import interrupt
from pydantic import JsonValue

from privateshared.agents.base import ChatMessage, PlayerReply, PlayerRequest, ToolCall
from privateshared.domains.schema import ANSWER_TAG, ASIDE_TAG

Seat = Literal["answerer", "questioner"]
ANSWER_FORMAT = f"one line: {ANSWER_TAG} <your answer>"
PROBE_FORMAT = f"one line: {ASIDE_TAG} yes, or {ASIDE_TAG} no"
QUESTIONER_FORMAT = (
    "one move per line: `ask SLOT: question` (one per turn; it ends your turn), "
    "`record SLOT: value`, or `finish` once every slot is recorded"
)
_MOVE = re.compile(r"^\s*(ask|record)\s+(.+?)\s*:\s*(.*?)\s*$|^\s*(finish)\s*$", re.IGNORECASE)


def format_problem(seat: Seat, kind: str, reply: str) -> str | None:
    """Why a person's reply breaks the game's format, in a few words; None if it keeps it.

    Only to warn the person: the game master judges the reply by its own rules."""
    if seat == "questioner":
        lines = [line for line in reply.splitlines() if line.strip()]
        bad = [line for line in lines if not _MOVE.match(line)]
        if not lines:
            return "no move"
        return f"not a move: {bad[0]!r}" if bad else None
    tag = ASIDE_TAG if kind == "probe" else ANSWER_TAG
    if not reply.startswith(tag):
        return f"it must start with {tag}"
    if "\n" in reply.strip("\n"):
        return "it must stay on one line"
    if kind == "probe" and not reply[len(tag) :].strip().lower().startswith(("yes", "no")):
        return "it must say yes or no"
    return None


def parse_moves(reply: str, prefix: str = "human") -> tuple[ToolCall, ...]:
    """A person's moves as function calls, with ids `<prefix>-<n>`; a line that is no move
    becomes a call to an unknown function, which the game master refuses like any invalid
    call."""
    calls = []
    for number, line in enumerate((line for line in reply.splitlines() if line.strip()), 1):
        match = _MOVE.match(line)
        call_id = f"{prefix}-{number}"
        if match is None:
            calls.append(ToolCall(id=call_id, name=line.strip().split()[0], arguments={}))
        elif match.group(4):
            calls.append(ToolCall(id=call_id, name="finish", arguments={}))
        else:
            name, slot, text = match.group(1).lower(), match.group(2), match.group(3)
            key = "question" if name == "ask" else "value"
            calls.append(ToolCall(id=call_id, name=name, arguments={"slot": slot, key: text}))
    return tuple(calls)


def _dialogue(messages: Sequence[ChatMessage]) -> list[JsonValue]:
    """The dialogue so far, `you` for the answerer's own replies."""
    return [
        {"from": "you" if message.role == "assistant" else "them", "text": message.content}
        for message in messages
    ]


def answerer_payload(request: PlayerRequest) -> dict[str, JsonValue]:
    """What a person in the answerer's seat sees: the private values, the dialogue so far, and
    the message to answer (a question, or the game master's private side question)."""
    instance = request.instance
    *before, new = request.messages
    return {
        "seat": "answerer",
        "kind": request.kind,
        "experiment": instance.experiment,
        "game_id": instance.game_id,
        "private_values": dict(instance.slots),
        "instructions": instance.initial_prompt,
        # The initial prompt and the pseudo answer `Ok.` open every context.
        "dialogue": _dialogue(before[2:]),
        "message": new.content,
        "side_question": request.kind == "probe",
        "try": request.attempt,
        "format": PROBE_FORMAT if request.kind == "probe" else ANSWER_FORMAT,
    }


def questioner_payload(request: PlayerRequest) -> dict[str, JsonValue]:
    """What a person in the questioner's seat sees: the slots still to find, what was said, what
    it has recorded, and the outcome of its last moves."""
    instance = request.instance
    said: list[JsonValue] = []
    recorded: dict[str, JsonValue] = {}
    results = {m.tool_call_id: m.content for m in request.messages if m.role == "tool"}
    last: list[JsonValue] = []
    for message in request.messages:
        if message.role != "assistant":
            continue
        last = []
        for call in message.tool_calls:
            arguments = call.arguments or {}
            result = results.get(call.id, "")
            last.append(f"{call.name}: {result}")
            if call.name == "ask" and result.startswith("Answer:"):
                said.append({"question": arguments.get("question"), "answer": result[7:].strip()})
            if call.name == "record" and result.startswith("Recorded"):
                recorded[str(arguments.get("slot"))] = arguments.get("value")
    return {
        "seat": "questioner",
        "experiment": instance.experiment,
        "game_id": instance.game_id,
        "instructions": request.messages[0].content,
        "message": request.messages[-1].content if request.messages[-1].role == "user" else "",
        "slots_to_find": {
            slot: instance.slot_descriptions.get(slot, slot)
            for slot in instance.slots
            if slot not in recorded
        },
        "said": said,
        "recorded": recorded,
        "last_moves": last,
        "try": request.attempt,
        "format": QUESTIONER_FORMAT,
    }


@dataclass(frozen=True)
class HumanPlayer:
    """A person in `seat`, answering through LangGraph interrupts."""

    seat: Seat
    name: str = "human"
    temperature: float = 0.0

    async def respond(self, request: PlayerRequest) -> PlayerReply:
        if self.seat == "questioner":
            payload = questioner_payload(request)
        else:
            payload = answerer_payload(request)
        reply = interrupt(payload)
        text = reply if isinstance(reply, str) else json.dumps(reply)
        # Call ids stay unique over the conversation: results are matched to calls by id.
        prefix = f"human-{request.turn}-{request.attempt}"
        calls = parse_moves(text, prefix) if self.seat == "questioner" else ()
        # requests.json keeps what the person was shown and what they typed.
        return PlayerReply(
            text=text, prompt=payload, raw={"player": self.name, "text": text}, tool_calls=calls
        )
