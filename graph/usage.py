"""The tokens an episode's model calls used, seat by seat: usage.json, beside the records.

Each call's usage is in its raw response in requests.json (agents/usage.py reads it); the
episode's sum per seat is written to usage.json when the episode's records are, because only
the state knows which seat made each call, and the cost of a call depends on whose price it is
billed at. Every episode that made a call reporting usage has one, whether it was scored or
errored (a failed episode's calls were billed too); an episode of programs has none: no usage
was reported, which the results say rather than count as 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

from pydantic import RootModel

from privateshared.agents.usage import Usage, total_usage, usage_of
from privateshared.graph.state import EpisodeState, Reply

Seat = Literal["answerer", "questioner", "judge"]
"""Who made a call; the roles experiment.json records the settings (and prices) of."""
SEATS: tuple[Seat, ...] = ("answerer", "questioner", "judge")
USAGE_FILE = "usage.json"


class SeatUsage(Usage):
    """The tokens one seat's calls used in one episode, as their endpoint reported them."""

    model: str
    """Who sat there: the player's name, as in interactions.json's `players`."""


class EpisodeUsage(RootModel[dict[Seat, SeatUsage]]):
    """usage.json: per seat whose calls reported usage, its sum."""


def seat_replies(state: EpisodeState) -> dict[Seat, list[Reply]]:
    """Every reply of an episode, by the seat that gave it (pseudo replies included: they
    report no usage)."""
    answers = [exchange.answer for exchange in state.dialogue if exchange.answer is not None]
    probes = [attempt.reply for probes in state.probe_rounds for probe in probes
              for attempt in probe.attempts]  # fmt: skip
    return {
        "answerer": [*answers, *probes],
        "questioner": [step.reply for step in state.questioner_steps],
        "judge": [judgment.reply for judgment in state.judgments],
    }


def episode_usage(state: EpisodeState, players: Mapping[Seat, str]) -> EpisodeUsage | None:
    """The usage of each seat of `players` (seat -> the name it plays under) whose calls
    reported some; None when no call did."""
    by_seat: dict[Seat, SeatUsage] = {}
    for seat, replies in seat_replies(state).items():
        used = total_usage(usage_of(reply.raw) for reply in replies)
        if used is not None and seat in players:
            by_seat[seat] = SeatUsage(model=players[seat], **used.model_dump())
    return EpisodeUsage(by_seat) if by_seat else None


def usage_total(usage: EpisodeUsage | None, seats: Iterable[Seat] = SEATS) -> Usage | None:
    """The sum over `seats` of an episode's usage; None when none of them reported any."""
    if usage is None:
        return None
    return total_usage(usage.root.get(seat) for seat in seats)
