"""A cap on how many calls a player has under way at once, for self-hosted servers and
rate-limited APIs that cannot take a whole run's concurrency."""

from __future__ import annotations

import asyncio
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

from privateshared.agents.base import Player, PlayerReply, PlayerRequest


@dataclass
class ThrottledPlayer:
    """`inner`, with at most `limit` calls under way at once across all episodes: each call
    holds one of the `slots`, a semaphore of this process by default, or slots shared further
    (a Ray actor shares them over a cluster, bench/running/ray_cluster.py)."""

    inner: Player
    limit: int
    slots: AbstractAsyncContextManager[Any] | None = None

    def __post_init__(self) -> None:
        if self.limit < 1:
            raise ValueError("a call limit must be at least 1")
        if self.slots is None:
            self.slots = asyncio.Semaphore(self.limit)

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def temperature(self) -> float | None:
        return self.inner.temperature

    async def respond(self, request: PlayerRequest) -> PlayerReply:
        assert self.slots is not None  # set on creation
        async with self.slots:
            return await self.inner.respond(request)
