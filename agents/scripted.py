"""The programmatic questioner: asks for each slot, in the instance's order and words.

A program over the questioner's view (agents/programs.py), like any user's: after each answer it
writes down the value it asked for when the answer gave it, then asks the next question; after
the last one it finishes. With a perfect answerer its belief-state metrics are perfect, a sanity
line for the questioner metrics; it does not record values given before they were asked.
"""

from __future__ import annotations

from dataclasses import dataclass

from privateshared.agents.base import PlayerReply, PlayerRequest
from privateshared.agents.programs import Move, ProgramQuestioner
from privateshared.agents.views import QuestionerView


def ask_in_order(game: QuestionerView) -> Move:
    """Write down the value asked for last if the answer gave it, then ask for the next slot.

    As the second questioner of a handover it first writes down what the note gives and asks
    only for the rest. Before a handover it writes down only the instance's `note_slots` (a
    seeded subset), so that its note carries part of what it heard, as a hurried colleague's
    would."""
    slots = game.instance.slots
    # Its first turn after a handover: the note, written down slot by slot.
    record = {} if game.asked else {slot: game.noted[slot] for slot in slots if slot in game.noted}
    last = game.asked[-1] if game.asked else None
    if last and slots[last.slot].lower() in last.answer.lower() and _writes_down(game, last.slot):
        record[last.slot] = slots[last.slot]
    return Move(record=record, ask=game.left[0] if game.left else None)


def _writes_down(game: QuestionerView, slot: str) -> bool:
    audience = game.instance.audience
    if audience is not None and audience.kind == "handover" and game.tag == game.instance.tag:
        return slot in audience.note_slots  # the hurried note of the one who leaves
    return True


@dataclass(frozen=True)
class ProgrammaticQuestioner:
    """Asks for the slots in the instance's request order, records what it asked for
    (`ask_in_order`)."""

    name: str = "programmatic"
    temperature: float = 0.0

    async def respond(self, request: PlayerRequest) -> PlayerReply:
        return await ProgramQuestioner(ask_in_order, self.name, self.temperature).respond(request)
