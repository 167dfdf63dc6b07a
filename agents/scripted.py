"""The programmatic questioner: asks for each slot, in the instance's order and words.

It plays through the same functions as an LLM questioner: after each answer it records the value
it asked for when the answer gave it, then asks the next question; after the last one it
finishes. With a perfect answerer its belief-state metrics are perfect, a sanity line for the
questioner metrics; it does not record values given before they were asked.
"""

from __future__ import annotations

from dataclasses import dataclass

from privateshared.agents.base import PlayerReply, PlayerRequest, ToolCall
from privateshared.domains.audience import FAREWELL


@dataclass(frozen=True)
class ProgrammaticQuestioner:
    """Asks for the slots in the instance's request order, records what it asked for.

    It reads where it stands from its own conversation (which slots it asked, the answer it got
    last), so it can also play the second questioner of a handover, whose conversation starts
    from the note: it asks only for what the note does not give. Before a handover, it writes
    down only the instance's `note_slots` (a seeded subset), so that its note carries part of
    what it heard, as a hurried colleague's would."""

    name: str = "programmatic"
    temperature: float = 0.0

    async def respond(self, request: PlayerRequest) -> PlayerReply:
        instance, turn = request.instance, request.turn
        messages = request.messages
        asked = [
            str(call.arguments["slot"])
            for message in messages if message.role == "assistant"
            for call in message.tool_calls if call.name == "ask" and call.arguments
        ]  # fmt: skip
        calls = []
        noted = self._noted(request)
        if not asked:  # a second questioner's first turn: it writes down what the note gave
            calls += [ToolCall(id=f"record-{turn}-{slot}", name="record",
                               arguments={"slot": slot, "value": instance.slots[slot]})
                      for slot in noted]  # fmt: skip
        if asked and self._writes_down(request, asked[-1]):
            # The result of its last `ask` is the answer it got.
            answer = next((m.content for m in reversed(messages) if m.role == "tool"), "")
            value = instance.slots[asked[-1]]
            if value.lower() in answer.lower():
                calls.append(ToolCall(id=f"record-{turn}", name="record",
                                      arguments={"slot": asked[-1], "value": value}))  # fmt: skip
        if messages and messages[-1].role == "user" and messages[-1].content == FAREWELL:
            # Handing over: it records, and asks nothing more.
            return PlayerReply(text="", prompt=None, raw=None, tool_calls=tuple(calls))
        remaining = [slot for slot in instance.request_order if slot not in (*asked, *noted)]
        if remaining:
            slot = remaining[0]
            question = instance.requests[slot]
            calls.append(ToolCall(id=f"ask-{turn}", name="ask",
                                  arguments={"slot": slot, "question": question}))  # fmt: skip
        else:
            calls.append(ToolCall(id=f"finish-{turn}", name="finish", arguments={}))
        # No prompt and no raw response: nothing was called, so requests.json gets no entry.
        return PlayerReply(text="", prompt=None, raw=None, tool_calls=tuple(calls))

    @staticmethod
    def _writes_down(request: PlayerRequest, slot: str) -> bool:
        audience = request.instance.audience
        if audience is None or audience.kind != "handover":
            return True
        return request.listener != request.instance.tag or slot in audience.note_slots

    @staticmethod
    def _noted(request: PlayerRequest) -> list[str]:
        """Slots whose values the note it took over with gives (none without a handover)."""
        audience = request.instance.audience
        if audience is None or request.listener != audience.listener:
            return []
        heard = " ".join(m.content for m in request.messages if m.role == "user").lower()
        return [slot for slot, value in request.instance.slots.items() if value.lower() in heard]
