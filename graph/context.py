"""What an episode is played with: players and settings, passed as the graph's runtime context.

From Python, give `Player` objects; from LangGraph Studio or the server API, give names
(`"oracle"`, `"mock"`, a model name) or a model spec (`{"model": ..., "base_url": ...}`).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any

from langgraph.runtime import Runtime
from pydantic import BaseModel, ConfigDict, Field, PlainValidator, WithJsonSchema
from pydantic.json_schema import SkipJsonSchema

from privateshared.agents.base import Player
from privateshared.agents.human import HumanPlayer
from privateshared.agents.registry import resolve_answerer, resolve_judge, resolve_questioner

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
    ]
}

Answerer = Annotated[
    Player,
    PlainValidator(resolve_answerer),
    WithJsonSchema(
        {
            **_PLAYER_SCHEMA,
            "description": "oracle, one-listener, mock, mock:SEED, human (a person, through "
            "interrupts), a model name, or {model, base_url, ...}",
        }
    ),
]
Questioner = Annotated[
    Player,
    PlainValidator(resolve_questioner),
    WithJsonSchema(
        {
            **_PLAYER_SCHEMA,
            "description": "programmatic, human (a person, through interrupts), a model name, "
            "or {model, base_url, ...}",
        }
    ),
]


Judge = Annotated[
    Player,
    PlainValidator(resolve_judge),
    WithJsonSchema({**_PLAYER_SCHEMA, "description": "a model name, or {model, base_url, ...}"}),
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

    @property
    def probes_one_by_one(self) -> bool:
        """Whether a round's probes are asked one by one: when asked to, and always for a person,
        who answers one question at a time."""
        return self.sequential_probes or isinstance(self.answerer, HumanPlayer)


def game_context(runtime: Runtime[GameContext]) -> GameContext:
    """The run's context; a run started without one (e.g. from Studio) gets the defaults."""
    return runtime.context if runtime.context is not None else GameContext()
