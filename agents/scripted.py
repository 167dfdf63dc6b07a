"""The programmatic questioner: asks for each slot, in the instance's order and words.

It plays through the same functions as an LLM questioner: after each answer it records the value
it asked for when the answer gave it, then asks the next question; after the last one it
finishes. With a perfect answerer its belief-state metrics are perfect, a sanity line for the
questioner metrics; it does not record values given before they were asked.
"""

from __future__ import annotations

from dataclasses import dataclass

from privateshared.agents.base import PlayerReply, PlayerRequest, ToolCall


@dataclass(frozen=True)
class ProgrammaticQuestioner:
    """Asks for the slots in the instance's request order, records what it asked for."""

    name: str = "programmatic"
    temperature: float = 0.0

    async def respond(self, request: PlayerRequest) -> PlayerReply:
        instance, turn = request.instance, request.turn
        order = instance.request_order
        calls = []
        if turn >= 2:
            asked = order[turn - 2]
            # The result of its last `ask` is the answer it got.
            answer = next((m.content for m in reversed(request.messages) if m.role == "tool"), "")
            value = instance.slots[asked]
            if value.lower() in answer.lower():
                calls.append(ToolCall(id=f"record-{turn}", name="record",
                                      arguments={"slot": asked, "value": value}))  # fmt: skip
        if turn <= len(order):
            slot = order[turn - 1]
            question = instance.requests[slot]
            calls.append(ToolCall(id=f"ask-{turn}", name="ask",
                                  arguments={"slot": slot, "question": question}))  # fmt: skip
        else:
            calls.append(ToolCall(id=f"finish-{turn}", name="finish", arguments={}))
        # No prompt and no raw response: nothing was called, so requests.json gets no entry.
        return PlayerReply(text="", prompt=None, raw=None, tool_calls=tuple(calls))
