"""What a program in a seat sees: its side of the game as typed data, not as chat.

A model gets messages; a program gets a view. `questioner_view` reads a questioner's request
(what it asked, the answers, what it wrote down, the slots left, the note it took over, who it
is); `answerer_view` reads an answerer's question or probe (the slot, the listener, its own
values, the dialogue as it heard it, what it has said). Both are derived from the
`PlayerRequest` alone, the conversation the game master built from its state and the instance,
so a view is never out of step with the game and nothing is counted twice.

They read the conversations as the game master writes them (graph/questioning.py,
graph/dialogue.py, graph/listeners.py); the texts both sides use are defined here and in
domains/audience.py, so the two cannot drift apart. agents/programs.py adapts a program over a
view to the `Player` protocol.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, JsonValue

from privateshared.agents.base import PlayerRequest, ToolCall
from privateshared.domains.audience import FAREWELL, PRESENT, read_handover_opening, read_note
from privateshared.domains.instances import GameInstance

ANSWERED = "Answer: "
"""Starts the result of an `ask` once the answer came: `Answer: Lisbon.` (the answer without its
`ANSWER:` tag)."""
REFUSED = "Error: "
"""Starts the result of a call the game master refused."""


class Asked(BaseModel):
    """One question the questioner put to the answerer, and the answer it got."""

    model_config = ConfigDict(frozen=True)

    slot: str
    """The slot the question was about."""
    question: str
    """The question's words."""
    answer: str
    """The answer as the answerer gave it, without its `ANSWER:` tag, e.g. `Lisbon.`."""


class QuestionerView(BaseModel):
    """The questioner's side of the game: what it asked, what it heard and wrote down, what is
    left, and who it is. Derived from its request by `questioner_view`."""

    model_config = ConfigDict(frozen=True)

    instance: GameInstance
    """The episode being played: its slots, the instance's words for each question
    (`requests`), the order it asks them in (`request_order`)."""
    tag: str
    """Who it is: its tag, as the answerer sees its questions (`TRAVEL-AGENT`); after a handover
    the second listener's (`COLLEAGUE`)."""
    role: str
    """Its role in plain words, e.g. `travel agent`; after a handover the second listener's,
    e.g. `colleague`."""
    turn: int
    """The dialogue turn whose question it is to ask (1 = the first question)."""
    attempt: int
    """1, or more when its earlier reply this turn neither asked nor finished."""
    asked: tuple[Asked, ...]
    """Its questions the answerer answered, in order, each with its answer."""
    recorded: dict[str, str]
    """What it has written down so far: slot -> value (the last value per slot)."""
    note: str | None
    """After a handover, the note it took over with, as the leaving questioner spoke it; None
    otherwise."""
    noted: dict[str, str]
    """What the note gives, slot -> value; empty without a note."""
    leaving: bool
    """Whether this is its last turn before it hands the conversation over: it may write down
    what it learned, and asks nothing more."""

    @property
    def left(self) -> tuple[str, ...]:
        """The slots it has not asked for, nor written down, nor got from the note, in the
        instance's request order."""
        done = {*(asked.slot for asked in self.asked), *self.recorded, *self.noted}
        return tuple(slot for slot in self.instance.request_order if slot not in done)

    @property
    def heard(self) -> dict[str, str]:
        """The answers it has not written down yet, slot -> answer (`Move(record=game.heard)`
        writes them down as they were said)."""
        return {a.slot: a.answer for a in self.asked if a.slot not in self.recorded}


def _argument(arguments: dict[str, JsonValue] | None, key: str) -> str:
    value = (arguments or {}).get(key)
    return value.strip() if isinstance(value, str) else ""


def questioner_view(request: PlayerRequest) -> QuestionerView:
    """Read a questioner's request (kind `request`) as a `QuestionerView`: its calls and what
    the game master answered to each, from its own conversation."""
    if request.kind != "request":
        raise ValueError(f"a questioner's view is read from a request, not a {request.kind}")
    instance = request.instance
    asked: list[Asked] = []
    recorded: dict[str, str] = {}
    note: str | None = None
    # Each reply's calls, paired with the results that follow it (ids may repeat across replies).
    calls: list[tuple[ToolCall, str]] = []
    pending: list[ToolCall] = []
    for message in request.messages:
        if message.role == "assistant":
            pending = list(message.tool_calls)
        elif message.role == "tool":
            call = next((c for c in pending if c.id == message.tool_call_id), None)
            if call is not None:
                pending.remove(call)
                calls.append((call, message.content))
        elif message.role == "user" and note is None:
            note = read_handover_opening(message.content)
    for call, result in calls:
        slot = _argument(call.arguments, "slot")
        if call.name == "ask" and result.startswith(ANSWERED):
            question = _argument(call.arguments, "question")
            asked.append(Asked(slot=slot, question=question, answer=result.removeprefix(ANSWERED)))
        elif call.name == "record" and not result.startswith(REFUSED):
            recorded[slot] = _argument(call.arguments, "value")
    tag = request.listener or instance.tag
    role = instance.questioner or "questioner"
    if instance.audience is not None and tag == instance.audience.listener:
        role = instance.audience.role  # the second listener, who took over
    last = request.messages[-1] if request.messages else None
    return QuestionerView(
        instance=instance,
        tag=tag,
        role=role,
        turn=request.turn,
        attempt=request.attempt,
        asked=tuple(asked),
        recorded=recorded,
        note=note,
        noted={} if note is None else read_note(note, instance.slots),
        leaving=last is not None and last.role == "user" and last.content == FAREWELL,
    )


class Turn(BaseModel):
    """One dialogue turn as the answerer heard it: the message it got, and what it said."""

    model_config = ConfigDict(frozen=True)

    asker: str | None
    """The tag of who asked; None for turn 0, the instructions."""
    question: str
    """The question's words, without the asker's tag; empty for turn 0."""
    present: tuple[str, ...]
    """Who heard the question and the reply (the questioner alone in the classic game)."""
    notes: dict[str, str]
    """Notes spoken to a listener at the start of this turn (a handover): listener -> note."""
    reply: str
    """What the answerer said, as it said it (turn 0: the `Ok.` put in its mouth)."""


class AnswererView(BaseModel):
    """The answerer's side of the game: what it is asked about and for whom, its values, and the
    dialogue as it heard it. Derived from its question or probe by `answerer_view`."""

    model_config = ConfigDict(frozen=True)

    instance: GameInstance
    """The episode being played; its `slots` are the answerer's own values."""
    kind: Literal["question", "probe"]
    """question: the questioner asks for a slot (reply `ANSWER: ...`); probe: the game master
    asks privately whether the listener knows the slot yet (reply `ASIDE: yes` or `ASIDE: no`)."""
    slot: str
    """The slot asked for, or probed."""
    listener: str
    """Who asks the question, or whom the probe is about: a listener's tag (the questioner's in
    the classic game)."""
    message: str
    """The message as it arrived: the question (with who is present, with two listeners), or
    the probe."""
    turn: int
    """For a question its dialogue turn (1 = the first); for a probe its probing round, which
    comes after that many turns."""
    attempt: int
    """1 for the first try; a probe answered out of format is asked again, up to 5 tries."""
    turns: tuple[Turn, ...]
    """The dialogue so far, turn 0 (the instructions) first; the new message is not in it."""

    @property
    def values(self) -> dict[str, str]:
        """Its own values: slot -> value."""
        return self.instance.slots

    @property
    def said(self) -> tuple[str, ...]:
        """What it has said so far, turn by turn (`said[0]` is the `Ok.` after the
        instructions)."""
        return tuple(turn.reply for turn in self.turns)

    def knows(self, listener: str | None, slot: str) -> bool:
        """Whether `listener` knows `slot` by what it heard: the instance's question for the slot
        or its value, said while the listener was present, or the value in a note spoken to it.
        A listener of None hears everything, present or not (a perspective-blind reading)."""
        instance = self.instance
        value = instance.slots[slot].lower()
        for turn in self.turns:
            if listener is not None and value in turn.notes.get(listener, "").lower():
                return True
            if listener is None or listener in turn.present:
                if turn.asker is not None and turn.question == instance.requests[slot]:
                    return True
                if value in turn.reply.lower():
                    return True
        return False


def _tags(instance: GameInstance) -> tuple[str, ...]:
    return (instance.tag, *((instance.audience.listener,) if instance.audience else ()))


def _heard(
    message: str, instance: GameInstance, present: tuple[str, ...]
) -> tuple[str | None, str, tuple[str, ...], dict[str, str]]:
    """A question message read: (asker, question, present, notes); `present` is who was there
    before it, until a `[Present: ...]` line says otherwise."""
    lines = message.splitlines() or [""]
    notes: dict[str, str] = {}
    tags = _tags(instance)
    for line in lines:
        if line.startswith(PRESENT) and line.endswith("]"):
            present = tuple(line[len(PRESENT) : -1].split(", "))
        for listener in tags[1:]:
            if line.startswith(f"{instance.tag} to {listener}: "):
                notes[listener] = line.removeprefix(f"{instance.tag} to {listener}: ")
    asker, colon, question = lines[-1].partition(": ")
    if colon and asker in tags:
        return asker, question, present, notes
    return None, lines[-1], present, notes


def answerer_view(request: PlayerRequest) -> AnswererView:
    """Read an answerer's question or probe as an `AnswererView`: the dialogue turn by turn,
    from the messages it received and the replies it gave."""
    if request.kind not in ("question", "probe"):
        raise ValueError(f"an answerer's view is read from a question or a probe, not a "
                         f"{request.kind}")  # fmt: skip
    instance = request.instance
    *earlier, last = request.messages
    turns: list[Turn] = []
    present: tuple[str, ...] = (instance.tag,)
    # The first message is the instructions, answered by the `Ok.` put in the answerer's mouth.
    pending: tuple[str | None, str, tuple[str, ...], dict[str, str]] = (None, "", present, {})
    for index, message in enumerate(earlier):
        if message.role == "user" and index > 0:
            pending = _heard(message.content, instance, present)
            present = pending[2]
        elif message.role == "assistant":
            asker, question, heard_by, notes = pending
            turns.append(Turn(asker=asker, question=question, present=heard_by, notes=notes,
                              reply=message.content))  # fmt: skip
    listener = request.listener or instance.tag
    if request.kind == "question":  # who asks is in the message: the second listener, maybe
        listener = _heard(last.content, instance, present)[0] or listener
    return AnswererView(
        instance=instance,
        kind=request.kind,
        slot=request.slot,
        listener=listener,
        message=last.content,
        turn=request.turn,
        attempt=request.attempt,
        turns=tuple(turns),
    )
