"""The programmatic questioner: asks for each slot with the instance's own phrasing."""

from __future__ import annotations

from dataclasses import dataclass

from privateshared.agents.base import PlayerReply, PlayerRequest


@dataclass(frozen=True)
class ProgrammaticQuestioner:
    """Asks for the slot the game master names, in the words the instance chose for it."""

    name: str = "programmatic"
    temperature: float = 0.0

    async def respond(self, request: PlayerRequest) -> PlayerReply:
        # No prompt and no raw response: nothing was called, so requests.json gets no entry.
        return PlayerReply(text=request.instance.requests[request.slot], prompt=None, raw=None)
