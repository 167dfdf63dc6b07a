"""Players by name: how a CLI flag, a Studio input or a config turns into a `Player`."""

from __future__ import annotations

import os
from collections.abc import Mapping

from pydantic import ValidationError

from privateshared.agents.base import Player
from privateshared.agents.baselines import ConstantAnswerer, MockAnswerer, OracleAnswerer
from privateshared.agents.llm import ChatModelPlayer, ModelSpec, PlayerConfigError, api_key
from privateshared.agents.scripted import ProgrammaticQuestioner

PROGRAMMATIC_ANSWERERS = ("oracle", "always-yes", "always-no", "mock")
"""Answerers that need no model (`mock:SEED` picks the mock's seed)."""
PROGRAMMATIC_QUESTIONERS = ("programmatic",)


def is_programmatic_answerer(name: str) -> bool:
    """Whether `name` names an answerer that needs no model."""
    return name.partition(":")[0] in PROGRAMMATIC_ANSWERERS


def _programmatic_answerer(name: str) -> Player:
    kind, _, argument = name.partition(":")
    if kind == "oracle" and not argument:
        return OracleAnswerer()
    if kind in ("always-yes", "always-no") and not argument:
        return ConstantAnswerer("yes" if kind == "always-yes" else "no")
    if kind == "mock":
        try:
            return MockAnswerer(seed=int(argument or 0))
        except ValueError:
            pass
    raise PlayerConfigError(
        f"bad answerer {name!r}; use oracle, always-yes, always-no, mock or mock:SEED (an integer)"
    )


def resolve_answerer(spec: object, environ: Mapping[str, str] | None = None) -> Player:
    """A player from a `Player`, a name (oracle, mock, mock:SEED, or a model name), or a
    `ModelSpec` (also as a dict, e.g. from LangGraph Studio)."""
    if isinstance(spec, Player):
        return spec
    if isinstance(spec, str) and is_programmatic_answerer(spec):
        return _programmatic_answerer(spec)
    if isinstance(spec, str):
        spec = ModelSpec(model=spec)
    if isinstance(spec, Mapping):
        try:
            spec = ModelSpec.model_validate(spec)
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise PlayerConfigError(f"bad model spec: {where}: {first['msg']}") from None
    if isinstance(spec, ModelSpec):
        return ChatModelPlayer(spec, api_key(spec, os.environ if environ is None else environ))
    raise PlayerConfigError(f"cannot make a player of {spec!r}; give a name or a model spec")


def resolve_questioner(spec: object) -> Player:
    """The questioner: a `Player`, or `programmatic` (the only kind so far)."""
    if isinstance(spec, Player):
        return spec
    if spec == "programmatic":
        return ProgrammaticQuestioner()
    raise PlayerConfigError(f"unknown questioner {spec!r}; use programmatic")
