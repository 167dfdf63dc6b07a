"""An answerer that gives back what a recorded model said, for parity with clembench's records.

Replies are keyed by what is asked (the dialogue turn of a question; the round, slot and try of a
probe), never by the text asked, so the game master under test decides everything else: what is
valid, what is filled, what is shared, when the episode ends.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from privateshared.agents.base import PlayerReply, PlayerRequest
from privateshared.graph.records import ANSWERER, Event, Interactions

MAX_TRIES = 5
"""Tries of a probe in clembench's records (its reprompts.json has five suffixes)."""


class ReplayError(LookupError):
    """The game master asked for something the recording does not hold."""


def _probe_segments(events: Sequence[Event]) -> list[list[str]]:
    """The answerer's replies to each probe of a round, in order: a `check` event closes a probe."""
    segments: list[list[str]] = []
    current: list[str] = []
    for event in events:
        if event.action.type == "probe answer":
            current.append(str(event.action.content))
        elif event.action.type == "check":
            segments.append(current)
            current = []
    return segments


@dataclass(frozen=True)
class ReplayAnswerer:
    """Replies from a recorded episode."""

    name: str
    answers: Mapping[int, str]
    """Question number (its dialogue turn) -> the recorded answer."""
    probe_replies: Mapping[tuple[int, str, int], str]
    """(probing round, slot in lower case, try) -> the recorded reply."""
    temperature: float = 0.0

    @classmethod
    def from_interactions(cls, recording: Interactions) -> ReplayAnswerer:
        """Index the replies of a clembench (or our own) `interactions.json`, in classic names
        (`record_formats.parse_interactions` reads either layout so)."""
        # Answers in order: the n-th answer replies to question n, whichever turn logs it
        # (clembench's pseudo answer `Ok.`, labelled so, is none).
        said = [
            str(event.action.content)
            for events in recording.turns
            for event in events
            if event.sender == ANSWERER and event.action.type == "get message"
            and (event.action.model_extra or {}).get("label") != "pseudo"
        ]  # fmt: skip
        answers = dict(enumerate(said, start=1))
        probe_replies: dict[tuple[int, str, int], str] = {}
        for turn, events in enumerate(recording.turns):
            asked = recording.probes[turn] if turn < len(recording.probes) else []
            for probe, replies in zip(asked, _probe_segments(events), strict=False):
                for attempt, reply in enumerate(replies, start=1):
                    probe_replies[(turn, probe.target.lower(), attempt)] = reply

        # Records that log no probe events still keep each probe's last reply, the only one
        # of a probe valid on its first try (a probe left invalid logs one try more).
        for round_index, probes in enumerate(recording.probes):
            for probe in probes:
                if probe.answer is not None and probe.tries:
                    last = (round_index, probe.target.lower(), min(probe.tries, MAX_TRIES))
                    probe_replies.setdefault(last, probe.answer)
        described = recording.players.get(ANSWERER, "replay")
        return cls(
            name=described.split(":", 1)[-1].strip(),
            answers=answers,
            probe_replies=probe_replies,
        )

    async def respond(self, request: PlayerRequest) -> PlayerReply:
        if request.kind == "probe":
            key = (request.turn, request.slot.lower(), request.attempt)
            if key not in self.probe_replies:
                raise ReplayError(
                    f"the recording has no reply to the probe of round {request.turn}, "
                    f"slot {request.slot!r}, try {request.attempt}"
                )
            text = self.probe_replies[key]
        else:
            if request.turn not in self.answers:
                raise ReplayError(f"the recording has no answer in turn {request.turn}")
            text = self.answers[request.turn]
        return PlayerReply(
            text=text,
            prompt=[message.to_openai() for message in request.messages],
            raw={"player": "replay", "recorded_model": self.name, "text": text},
        )
