"""What an episode is played with: players and settings, passed as the graph's runtime context.

From Python, give `Player` objects or LangChain chat models; from LangGraph Studio or the server
API, give names (`"oracle"`, `"mock"`, a model name, `"langchain:PROVIDER:MODEL"`) or a model
spec (`{"model": ..., "base_url": ...}`, or LangChain's `{"provider": ..., "model": ...}`).

LangGraph takes a run's context from that run alone, but an episode with a person in it is
played over many runs on one thread, one per reply, and a client resuming a turn need not
resend the context. So the players and rules a thread's episode starts with are kept in its
state (`EpisodeState.setup`) and every node plays with them (`game_context(state, runtime)`): a
later run's context may repeat them or leave them out, but one that changes them is refused, so
an episode is never finished, nor recorded, by players who did not start it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Annotated, Any, Literal

from langgraph.runtime import Runtime
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PlainValidator,
    PrivateAttr,
    WithJsonSchema,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from privateshared.agents.base import Player
from privateshared.agents.human import HumanPlayer
from privateshared.agents.langchain_player import LangChainSpec, chat_model_name, is_chat_model
from privateshared.agents.llm import ModelSpec
from privateshared.agents.registry import resolve_answerer, resolve_judge, resolve_questioner
from privateshared.graph.state import EpisodeSetup, EpisodeState, GivenPlayer

MAX_TRIES = 5
"""Tries per probe before its value is invalid and the episode aborts (clembench: 5)."""

_PLAYER_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "string"},
        {
            "type": "object",
            "properties": {
                "model": {"type": "string"},
                "base_url": {"type": "string"},
                "api_key_env": {"type": "string"},
                "temperature": {"type": "number"},
            },
            "required": ["model"],
        },
        {
            "type": "object",
            "description": "a LangChain chat model, made by init_chat_model",
            "properties": {
                "provider": {"type": "string"},
                "model": {"type": "string"},
                "base_url": {"type": "string"},
                "api_key_env": {"type": "string"},
                "temperature": {"type": "number"},
            },
            "required": ["provider", "model"],
        },
    ]
}

Answerer = Annotated[
    Player,
    PlainValidator(resolve_answerer),
    WithJsonSchema(
        {
            **_PLAYER_SCHEMA,
            "description": "oracle, one-listener, mock, mock:SEED, human (a person, through "
            "interrupts), your own player as module:attr or ./file.py:attr (a file relative to "
            "where the server runs), a model name, langchain:PROVIDER:MODEL, {model, base_url, "
            "...}, or {provider, model, ...} (LangChain)",
        }
    ),
]
Questioner = Annotated[
    Player,
    PlainValidator(resolve_questioner),
    WithJsonSchema(
        {
            **_PLAYER_SCHEMA,
            "description": "programmatic, human (a person, through interrupts), your own player "
            "as module:attr or ./file.py:attr, a model name, langchain:PROVIDER:MODEL, {model, "
            "base_url, ...}, or {provider, model, ...} (LangChain)",
        }
    ),
]


Judge = Annotated[
    Player,
    PlainValidator(resolve_judge),
    WithJsonSchema(
        {
            **_PLAYER_SCHEMA,
            "description": "a model name, langchain:PROVIDER:MODEL, {model, base_url, ...}, "
            "{provider, model, ...} (LangChain), or your own player as module:attr or "
            "./file.py:attr",
        }
    ),
]


def now_iso() -> str:
    """The current local time, as clembench stamps its events."""
    return datetime.now().isoformat()


class GameContext(BaseModel):
    """Players and settings of one episode."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    answerer: Answerer = Field(default="oracle", validate_default=True)
    """The player under test."""
    questioner: Questioner = Field(default="programmatic", validate_default=True)
    """Who asks for the slots."""
    judge: Judge | None = None
    """A model that rates each of the questioner's questions; None for no rating."""
    max_tries: int = Field(default=MAX_TRIES, ge=1, le=MAX_TRIES)
    """Tries per probe (the first plus re-prompts)."""
    sequential_probes: bool = False
    """Ask a round's probes one by one in its order and stop at the first failure, as clembench
    does; by default they are asked concurrently, since none enters the others' context."""
    clock: SkipJsonSchema[Callable[[], str]] = now_iso
    """Source of event timestamps."""
    _given: dict[str, object] = PrivateAttr(default_factory=dict)
    """The players as given, before they were made `Player`s: names, specs or objects."""

    @model_validator(mode="wrap")
    @classmethod
    def _keep_given(cls, data: Any, handler: ModelWrapValidatorHandler[GameContext]) -> GameContext:
        """Keep what the seats were given: a name's player does not say the name (`mock:4`
        plays as `mock-s4`, an import path as its class's name), and a thread's later runs
        make the players again from it."""
        context = handler(data)
        if isinstance(data, Mapping):
            context._given = {seat: data[seat] for seat in SEATS if seat in data}
        return context

    @property
    def probes_one_by_one(self) -> bool:
        """Whether a round's probes are asked one by one: when asked to, and always for a person,
        who answers one question at a time."""
        return self.sequential_probes or isinstance(self.answerer, HumanPlayer)


SeatName = Literal["answerer", "questioner", "judge"]
SEATS: tuple[SeatName, ...] = ("answerer", "questioner", "judge")
RULES = ("max_tries", "sequential_probes")
"""Settings kept with the thread like its players: they decide the scores (a probe's tries, a
round's stop at its first failure), so an episode is played under one set of them. The clock
is not kept: it stamps the events but decides nothing, and is no data a state can hold."""


def run_context(runtime: Runtime[GameContext]) -> GameContext:
    """The run's own context; a run started without one (e.g. from Studio) gets the defaults."""
    return runtime.context if runtime.context is not None else GameContext()


def given_player(spec: object) -> GivenPlayer | None:
    """What a seat was given, in a form the state keeps: the name or spec, or a `Player`
    object's name."""
    if spec is None:
        return None
    if isinstance(spec, Player):
        return GivenPlayer(given=spec.name, python_object=True)
    if is_chat_model(spec):
        return GivenPlayer(given=chat_model_name(spec), python_object=True)
    if isinstance(spec, ModelSpec | LangChainSpec):
        return GivenPlayer(given=spec.model_dump(mode="json", exclude_unset=True))
    if isinstance(spec, (str, Mapping)):
        return GivenPlayer.model_validate({"given": spec})
    raise ValueError(f"cannot keep a player given as {spec!r}; give a name or a model spec")


def episode_setup(context: GameContext) -> EpisodeSetup:
    """The players and rules `context` plays with, as it was given them."""
    players: dict[str, GivenPlayer | None] = {}
    for seat in SEATS:
        if seat in context._given:
            spec = context._given[seat]
        elif seat in context.model_fields_set:
            spec = getattr(context, seat)  # given, but not through validation (model_construct)
        else:
            spec = GameContext.model_fields[seat].default
        players[seat] = given_player(spec)
    rules = {rule: getattr(context, rule) for rule in RULES}
    return EpisodeSetup.model_validate({**players, **rules})


def _shown(value: object) -> str:
    """A seat's player or a rule's value, as an error message names it."""
    if value is None:
        return "none"
    if isinstance(value, GivenPlayer):
        if value.python_object:
            return f"{value.given!r} (a Player object from Python)"
        return repr(value.given) if isinstance(value.given, str) else json.dumps(value.given)
    return repr(value)


def game_context(state: EpisodeState, runtime: Runtime[GameContext]) -> GameContext:
    """The players and rules a node plays with: those the thread's episode started with.

    The run's context may repeat them or leave them out (a client resuming a person's turn need
    not resend it): what it leaves out is made again from the state, a person by `human` in
    the same seat. One that changes them is refused with a ValueError, raised before any player
    is called, so the waiting episode stays as it was. Before the episode has started, the run's
    own context.
    """
    context = run_context(runtime)
    kept = state.setup
    if kept is None:
        return context
    given = episode_setup(context)
    for name in (*SEATS, *RULES):
        if name in context.model_fields_set and getattr(given, name) != getattr(kept, name):
            raise ValueError(
                f"this thread's episode is played with {name} {_shown(getattr(kept, name))}; "
                "a run on the thread may repeat it or leave it out of its context, not change "
                f"it to {_shown(getattr(given, name))} (start a new thread for a new episode)"
            )
    if given == kept:
        return context
    # Whatever the context left out and the episode started with otherwise.
    values: dict[str, object] = {name: getattr(context, name) for name in context.model_fields_set}
    for seat in SEATS:
        player = getattr(kept, seat)
        if seat in context.model_fields_set or player == getattr(given, seat):
            continue
        if player is not None and player.python_object:
            raise ValueError(
                f"this thread's {seat} {player.given!r} was given as a Player object from "
                "Python, which the thread cannot make again; pass the same context to resume"
            )
        values[seat] = None if player is None else player.given
    values.update({rule: getattr(kept, rule) for rule in RULES})
    return GameContext.model_validate(values)
