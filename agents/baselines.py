"""Answerers that need no model: the reference points a model's scores are read against.

`OracleAnswerer` reads the dialogue the way a perfect listener would and never looks at the game
master's ground truth, so its Main Score of 100 is an independent check of the game master.
`ConstantAnswerer` gives every value when asked but answers every probe the same way (always
yes, or always no): its probe answers carry no information, so kappa is 0 and so is its Main
Score, however many probes it gets right by chance.
`MockAnswerer` breaks the format now and then and guesses every probe, for a run without a model.
`OneListenerAnswerer` answers like the oracle but as if there were one listener who heard
everything: in the two-listener experiments it shows what a perspective-blind answerer scores.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Literal

from privateshared.agents.base import ChatMessage, PlayerReply, PlayerRequest
from privateshared.domains.audience import PRESENT
from privateshared.domains.instances import GameInstance
from privateshared.domains.schema import ANSWER_TAG, ASIDE_TAG

ProbeAnswer = Literal["yes", "no"]


def _reply(player: str, request: PlayerRequest, text: str) -> PlayerReply:
    return PlayerReply(
        text=text,
        prompt=[message.to_openai() for message in request.messages],
        raw={"player": player, "text": text},
    )


def is_known_to(
    listener: str | None, slot: str, instance: GameInstance, dialogue: tuple[ChatMessage, ...]
) -> bool:
    """Whether `listener` has heard `slot` asked for, or its value given, in `dialogue`.

    Read as the answerer reads it: a `[Present: ...]` line says who hears what follows (the
    questioner alone until one does), a line `<TAG> to <listener>: ...` is a note to the
    listener. A listener of None hears everything, present or not (the one-listener view)."""
    tags = [instance.tag] + ([instance.audience.listener] if instance.audience else [])
    questions = {f"{tag}: {instance.requests[slot]}" for tag in tags}
    value = instance.slots[slot].lower()
    present: tuple[str, ...] = (instance.tag,)
    for message in dialogue:
        lines = message.content.splitlines() or [""]
        if message.role == "user":
            for line in lines:
                if line.startswith(PRESENT) and line.endswith("]"):
                    present = tuple(line[len(PRESENT) : -1].split(", "))
                elif (
                    listener is not None
                    and line.startswith(f"{instance.tag} to {listener}: ")
                    and value in line.lower()
                ):
                    return True  # a note to the listener gave the value
        hears = listener is None or listener in present
        if hears and message.role == "user" and lines[-1] in questions:
            return True
        if hears and message.role == "assistant" and value in message.content.lower():
            return True
    return False


@dataclass(frozen=True)
class OracleAnswerer:
    """Gives each value when asked and answers every probe correctly."""

    name: str = "oracle"
    temperature: float = 0.0

    async def respond(self, request: PlayerRequest) -> PlayerReply:
        if request.kind == "probe":
            # The context is the initial prompt, then the dialogue, then the probe itself.
            dialogue = request.messages[1:-1]
            listener = request.listener or request.instance.tag
            known = is_known_to(listener, request.slot, request.instance, dialogue)
            return _reply(self.name, request, f"{ASIDE_TAG} {'yes' if known else 'no'}")
        return _reply(self.name, request, f"{ANSWER_TAG} {request.instance.slots[request.slot]}.")


@dataclass(frozen=True)
class OneListenerAnswerer:
    """Answers every probe as if the questioner had heard everything, whoever the probe is about
    and whoever was present: what the oracle does in the classic game, blind to perspective."""

    name: str = "one-listener"
    temperature: float = 0.0

    async def respond(self, request: PlayerRequest) -> PlayerReply:
        if request.kind == "probe":
            known = is_known_to(None, request.slot, request.instance, request.messages[1:-1])
            return _reply(self.name, request, f"{ASIDE_TAG} {'yes' if known else 'no'}")
        return _reply(self.name, request, f"{ANSWER_TAG} {request.instance.slots[request.slot]}.")


@dataclass(frozen=True)
class ConstantAnswerer:
    """Gives each value when asked and the same reply to every probe."""

    reply: ProbeAnswer
    temperature: float = 0.0

    @property
    def name(self) -> str:
        return f"always-{self.reply}"

    async def respond(self, request: PlayerRequest) -> PlayerReply:
        if request.kind == "probe":
            return _reply(self.name, request, f"{ASIDE_TAG} {self.reply}")
        return _reply(self.name, request, f"{ANSWER_TAG} {request.instance.slots[request.slot]}.")


@dataclass(frozen=True)
class MockAnswerer:
    """Seeded random answerer: mostly well-formed, sometimes not, probes guessed at random.

    Every reply depends only on the seed and on what is asked (episode, turn, slot, try), so
    replies are the same whatever order or concurrency the episodes and probes run in.
    """

    seed: int = 0
    temperature: float = 0.0
    name: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", "mock" if self.seed == 0 else f"mock-s{self.seed}")

    def _rng(self, request: PlayerRequest) -> random.Random:
        instance = request.instance
        key = f"{self.seed}|{instance.experiment}|{instance.game_id}|{request.kind}|"
        return random.Random(f"{key}{request.turn}|{request.slot}|{request.attempt}")

    async def respond(self, request: PlayerRequest) -> PlayerReply:
        rng = self._rng(request)
        draw = rng.random()
        if request.kind == "probe":
            guess = rng.choice(["yes", "no"])
            if draw < 0.15:
                text = guess.capitalize() + "."  # tag missing
            elif draw < 0.25:
                text = f"{ASIDE_TAG} {guess}\n{ANSWER_TAG} Let me add something."  # extra line
            else:
                text = f"{ASIDE_TAG} {guess.capitalize()}."
            return _reply(self.name, request, text)
        slots = request.instance.slots
        value = slots[request.slot]
        if draw < 0.02:
            text = f"{value}."  # tag missing: aborts the episode
        elif draw < 0.04:
            text = f"{ANSWER_TAG} {value}.\nAnything else?"  # extra line: aborts the episode
        elif draw < 0.14:
            other = rng.choice([slot for slot in slots if slot != request.slot])
            text = f"{ANSWER_TAG} {value}, and also {slots[other]}."  # volunteers a value early
        elif draw < 0.20:
            text = f"{ANSWER_TAG} I would rather not say."  # slot not filled
        else:
            text = f"{ANSWER_TAG} {value}."
        return _reply(self.name, request, text)
