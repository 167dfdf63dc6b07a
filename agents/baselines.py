"""Answerers that need no model: the reference points a model's scores are read against.

`OracleAnswerer` reads the dialogue the way a perfect listener would and never looks at the game
master's ground truth, so its Main Score of 100 is an independent check of the game master.
`ConstantAnswerer` gives every value when asked but answers every probe the same way (always
yes, or always no): its probe answers carry no information, so kappa is 0 and so is its Main
Score, however many probes it gets right by chance.
`MockAnswerer` breaks the format now and then and guesses every probe, for a run without a model.
`OneListenerAnswerer` answers like the oracle but as if there were one listener who heard
everything: in the two-listener experiments it shows what a perspective-blind answerer scores.

Each is a program over the answerer's view (agents/views.py), called with it by the one adapter
every program plays through, `ProgramAnswerer` (agents/programs.py); the classes keep their
settings (a name, a seed) and their identity, which a thread's setup compares.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Literal

from privateshared.agents.base import PlayerReply, PlayerRequest
from privateshared.agents.programs import ProgramAnswerer
from privateshared.agents.views import AnswererView
from privateshared.domains.schema import ANSWER_TAG, ASIDE_TAG

ProbeAnswer = Literal["yes", "no"]


def _value(game: AnswererView) -> str:
    """The reply that gives the value asked for."""
    return f"{ANSWER_TAG} {game.values[game.slot]}."


def _aside(yes: bool) -> str:
    return f"{ASIDE_TAG} {'yes' if yes else 'no'}"


@dataclass(frozen=True)
class OracleAnswerer:
    """Gives each value when asked and answers every probe correctly."""

    name: str = "oracle"
    temperature: float = 0.0

    def __call__(self, game: AnswererView) -> str:
        if game.kind == "probe":
            return _aside(game.knows(game.listener, game.slot))
        return _value(game)

    async def respond(self, request: PlayerRequest) -> PlayerReply:
        return await ProgramAnswerer(self, self.name, self.temperature).respond(request)


@dataclass(frozen=True)
class OneListenerAnswerer:
    """Answers every probe as if the questioner had heard everything, whoever the probe is about
    and whoever was present: what the oracle does in the classic game, blind to perspective."""

    name: str = "one-listener"
    temperature: float = 0.0

    def __call__(self, game: AnswererView) -> str:
        if game.kind == "probe":
            return _aside(game.knows(None, game.slot))
        return _value(game)

    async def respond(self, request: PlayerRequest) -> PlayerReply:
        return await ProgramAnswerer(self, self.name, self.temperature).respond(request)


@dataclass(frozen=True)
class ConstantAnswerer:
    """Gives each value when asked and the same reply to every probe."""

    reply: ProbeAnswer
    temperature: float = 0.0

    @property
    def name(self) -> str:
        return f"always-{self.reply}"

    def __call__(self, game: AnswererView) -> str:
        return f"{ASIDE_TAG} {self.reply}" if game.kind == "probe" else _value(game)

    async def respond(self, request: PlayerRequest) -> PlayerReply:
        return await ProgramAnswerer(self, self.name, self.temperature).respond(request)


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

    def __call__(self, game: AnswererView) -> str:
        instance = game.instance
        key = f"{self.seed}|{instance.experiment}|{instance.game_id}|{game.kind}|"
        rng = random.Random(f"{key}{game.turn}|{game.slot}|{game.attempt}")
        draw = rng.random()
        if game.kind == "probe":
            guess = rng.choice(["yes", "no"])
            if draw < 0.15:
                return guess.capitalize() + "."  # tag missing
            if draw < 0.25:
                return f"{ASIDE_TAG} {guess}\n{ANSWER_TAG} Let me add something."  # extra line
            return f"{ASIDE_TAG} {guess.capitalize()}."
        value = game.values[game.slot]
        if draw < 0.02:
            return f"{value}."  # tag missing: aborts the episode
        if draw < 0.04:
            return f"{ANSWER_TAG} {value}.\nAnything else?"  # extra line: aborts the episode
        if draw < 0.14:
            other = rng.choice([slot for slot in game.values if slot != game.slot])
            return f"{ANSWER_TAG} {value}, and also {game.values[other]}."  # volunteers early
        if draw < 0.20:
            return f"{ANSWER_TAG} I would rather not say."  # slot not filled
        return f"{ANSWER_TAG} {value}."

    async def respond(self, request: PlayerRequest) -> PlayerReply:
        return await ProgramAnswerer(self, self.name, self.temperature).respond(request)
