"""Players by name: how a CLI flag, a Studio input or a config turns into a `Player`.

A name is one of ours (oracle, mock:SEED, programmatic, human, ...), a user's player by import
path (`module:attr`, `./file.py:attr`; agents/imports.py), or else a model's name."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping

from pydantic import ValidationError

from privateshared.agents.base import Player
from privateshared.agents.baselines import (
    ConstantAnswerer,
    MockAnswerer,
    OneListenerAnswerer,
    OracleAnswerer,
)
from privateshared.agents.human import HumanPlayer
from privateshared.agents.imports import is_import_path, load_player
from privateshared.agents.llm import ChatModelPlayer, ModelSpec, PlayerConfigError, api_key
from privateshared.agents.scripted import ProgrammaticQuestioner

PROGRAMMATIC_ANSWERERS = ("oracle", "one-listener", "always-yes", "always-no", "mock")
"""Answerers that need no model (`mock:SEED` picks the mock's seed)."""
PROGRAMMATIC_QUESTIONERS = ("programmatic",)
HUMAN = "human"
"""A person in the seat, through LangGraph interrupts (agents/human.py)."""


def is_programmatic_answerer(name: str) -> bool:
    """Whether `name` names an answerer that needs no model."""
    return name.partition(":")[0] in PROGRAMMATIC_ANSWERERS


def _programmatic_answerer(name: str) -> Player:
    kind, _, argument = name.partition(":")
    if kind == "oracle" and not argument:
        return OracleAnswerer()
    if kind == "one-listener" and not argument:
        return OneListenerAnswerer()
    if kind in ("always-yes", "always-no") and not argument:
        return ConstantAnswerer("yes" if kind == "always-yes" else "no")
    if kind == "mock":
        try:
            return MockAnswerer(seed=int(argument or 0))
        except ValueError:
            pass
    raise PlayerConfigError(
        f"bad answerer {name!r}; use oracle, one-listener, always-yes, always-no, mock or "
        "mock:SEED (an integer)"
    )


def resolve_model(spec: object, environ: Mapping[str, str] | None = None) -> Player:
    """A model player from a model name or a `ModelSpec` (also as a dict, e.g. from Studio)."""
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
        key = api_key(spec, os.environ if environ is None else environ)
        # One player per spec and key, reused: a server (langgraph dev) resolves the context's
        # players for every run, and for every node of a resumed thread; a player per
        # resolution would leave an open connection pool behind each time.
        known = (spec.model_dump_json(), hashlib.sha256(key.get_secret_value().encode()).digest())
        if known not in _MODEL_PLAYERS:
            _MODEL_PLAYERS[known] = ChatModelPlayer(spec, key)
        return _MODEL_PLAYERS[known]
    raise PlayerConfigError(f"cannot make a player of {spec!r}; give a name or a model spec")


_MODEL_PLAYERS: dict[tuple[str, bytes], ChatModelPlayer] = {}
"""Model players made so far, by spec and a digest of the key (see `resolve_model`)."""


def resolve_answerer(spec: object, environ: Mapping[str, str] | None = None) -> Player:
    """The answerer: a `Player`, a name (oracle, always-yes, always-no, mock, mock:SEED), a
    user's player by import path, or a model (a name or a `ModelSpec`)."""
    if isinstance(spec, Player):
        return spec
    if spec == HUMAN:
        return HumanPlayer("answerer")
    if isinstance(spec, str) and is_programmatic_answerer(spec):
        return _programmatic_answerer(spec)
    if spec in PROGRAMMATIC_QUESTIONERS:
        raise PlayerConfigError(f"{spec!r} is a questioner; the answerer is one of "
                                f"{', '.join(PROGRAMMATIC_ANSWERERS)} or a model")  # fmt: skip
    if isinstance(spec, str) and is_import_path(spec):
        return load_player(spec)
    return resolve_model(spec, environ)


def resolve_questioner(spec: object, environ: Mapping[str, str] | None = None) -> Player:
    """The questioner: a `Player`, `programmatic`, a user's player by import path, or a model (a
    name or a `ModelSpec`) that plays through function calls."""
    if isinstance(spec, Player):
        return spec
    if spec == HUMAN:
        return HumanPlayer("questioner")
    if spec in PROGRAMMATIC_QUESTIONERS:
        return ProgrammaticQuestioner()
    if isinstance(spec, str) and is_programmatic_answerer(spec):
        raise PlayerConfigError(
            f"{spec!r} is an answerer; the questioner is programmatic or a model"
        )
    if isinstance(spec, str) and is_import_path(spec):
        return load_player(spec)
    return resolve_model(spec, environ)


def resolve_judge(spec: object, environ: Mapping[str, str] | None = None) -> Player:
    """The judge of the questioner's questions: a `Player`, a user's player by import path, or
    a model."""
    if isinstance(spec, Player):
        return spec
    if isinstance(spec, str) and is_import_path(spec):
        return load_player(spec)
    return resolve_model(spec, environ)
