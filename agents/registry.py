"""Players by name: how a CLI flag, a Studio input or a config turns into a `Player`.

A name is one of ours (oracle, mock:SEED, programmatic, human, ...), a user's player by import
path (`module:attr`, `./file.py:attr`; agents/imports.py), a LangChain model
(`langchain:PROVIDER:MODEL`; agents/langchain_player.py), or else a model's name at an
OpenAI-compatible endpoint. From Python, a LangChain chat model object plays as it is."""

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
from privateshared.agents.langchain_player import (
    LangChainPlayer,
    LangChainSpec,
    is_chat_model,
    is_langchain_name,
    langchain_spec,
)
from privateshared.agents.llm import ChatModelPlayer, ModelSpec, PlayerConfigError, api_key
from privateshared.agents.names import HUMAN, PROGRAMMATIC_ANSWERERS, PROGRAMMATIC_QUESTIONERS
from privateshared.agents.scripted import ProgrammaticQuestioner


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


def _spec_error(error: ValidationError) -> PlayerConfigError:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    return PlayerConfigError(f"bad model spec: {where}: {first['msg']}")


def resolve_model(spec: object, environ: Mapping[str, str] | None = None) -> Player:
    """A model player from a model name, `langchain:PROVIDER:MODEL`, a `ModelSpec` or a
    `LangChainSpec` (also as a dict, e.g. from Studio: one with `provider` is LangChain's), or a
    LangChain chat model object."""
    if is_chat_model(spec):
        return LangChainPlayer(spec)
    if is_langchain_name(spec):
        try:
            spec = langchain_spec(spec)
        except ValidationError as error:
            raise _spec_error(error) from None
    if isinstance(spec, str):
        spec = ModelSpec(model=spec)
    if isinstance(spec, Mapping):
        kind = LangChainSpec if "provider" in spec else ModelSpec
        try:
            spec = kind.model_validate(spec)
        except ValidationError as error:
            raise _spec_error(error) from None
    environ = os.environ if environ is None else environ
    if isinstance(spec, LangChainSpec):
        # Reused like the fast path's players (below), by spec and the key it names; a key the
        # integration reads itself is read when the model is first built.
        named = environ.get(spec.api_key_env, "") if spec.api_key_env else ""
        known = (spec.model_dump_json(), hashlib.sha256(named.encode()).digest())
        if known not in _LANGCHAIN_PLAYERS:
            _LANGCHAIN_PLAYERS[known] = LangChainPlayer.from_spec(spec, environ)
        return _LANGCHAIN_PLAYERS[known]
    if isinstance(spec, ModelSpec):
        key = api_key(spec, environ)
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
_LANGCHAIN_PLAYERS: dict[tuple[str, bytes], LangChainPlayer] = {}
"""LangChain players made from specs so far, by spec and a digest of the key it names."""


def resolve_answerer(spec: object, environ: Mapping[str, str] | None = None) -> Player:
    """The answerer: a `Player`, a name (oracle, always-yes, always-no, mock, mock:SEED), a
    user's player by import path, or a model (a name, a spec, or a LangChain chat model)."""
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
    name, a spec, or a LangChain chat model) that plays through function calls."""
    if isinstance(spec, Player):
        return questioning(spec)
    if spec == HUMAN:
        return HumanPlayer("questioner")
    if spec in PROGRAMMATIC_QUESTIONERS:
        return ProgrammaticQuestioner()
    if isinstance(spec, str) and is_programmatic_answerer(spec):
        raise PlayerConfigError(
            f"{spec!r} is an answerer; the questioner is programmatic or a model"
        )
    if isinstance(spec, str) and is_import_path(spec):
        return questioning(load_player(spec))
    return questioning(resolve_model(spec, environ))


def questioning(player: Player) -> Player:
    """`player`, checked to be able to ask: a LangChain model needs tool calling."""
    inner = getattr(player, "player", player)  # a user's player by import path holds it
    if isinstance(inner, LangChainPlayer) and not inner.can_call_functions:
        raise PlayerConfigError(
            f"{player.name} cannot be the questioner: {type(inner.model).__name__} does not "
            "implement bind_tools, and the questioner plays through function calls"
        )
    return player


def resolve_judge(spec: object, environ: Mapping[str, str] | None = None) -> Player:
    """The judge of the questioner's questions: a `Player`, a user's player by import path, or
    a model."""
    if isinstance(spec, Player):
        return spec
    if isinstance(spec, str) and is_import_path(spec):
        return load_player(spec)
    return resolve_model(spec, environ)
