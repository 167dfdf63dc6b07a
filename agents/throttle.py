"""A cap on how many calls a player has under way at once, for self-hosted servers and
rate-limited APIs that cannot take a whole run's concurrency."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from privateshared.agents.base import Player, PlayerReply, PlayerRequest


@dataclass
class ThrottledPlayer:
    """`inner`, with at most `limit` calls under way at once across all episodes."""

    inner: Player
    limit: int
    _slots: asyncio.Semaphore = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.limit < 1:
            raise ValueError("a call limit must be at least 1")
        self._slots = asyncio.Semaphore(self.limit)

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def temperature(self) -> float:
        return self.inner.temperature

    async def respond(self, request: PlayerRequest) -> PlayerReply:
        async with self._slots:
            return await self.inner.respond(request)
