"""Who plays a run: the answerers, the questioner and the judge the command line names.

Names become players by role: the programmatic answerers (oracle, always-yes, always-no, mock)
answer only, `programmatic` only asks, `langchain:PROVIDER:MODEL` is a LangChain chat model made
by `init_chat_model` with the command line's settings, and any other name is a model behind the
endpoint options, or a local model served by llama.cpp once its server runs. A name in the model
registry (`--models FILE`, agents/model_registry.py) is that entry's model, with its own endpoint
and settings (a LangChain one for an entry with `provider`), or its user's player. An import
path (`module:attr`, `./file.py:attr`; agents/imports.py) is a user's player, in any seat its
protocol lets it take.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from pydantic import SecretStr, ValidationError

from privateshared.agents.base import Player
from privateshared.agents.guided import Guidance
from privateshared.agents.imports import is_import_path, load_player
from privateshared.agents.langchain_player import (
    LangChainPlayer,
    LangChainSpec,
    is_langchain_name,
    langchain_spec,
)
from privateshared.agents.llm import LOCAL_SERVER_KEY, ChatModelPlayer, ModelSpec
from privateshared.agents.model_registry import PlayerEntry
from privateshared.agents.names import HUMAN, PROGRAMMATIC_QUESTIONERS
from privateshared.agents.registry import (
    is_programmatic_answerer,
    resolve_answerer,
    resolve_model,
    resolve_questioner,
)
from privateshared.agents.throttle import ThrottledPlayer
from privateshared.bench.defaults import DEFAULT_MODELS
from privateshared.bench.running.layout import model_spec_of
from privateshared.bench.running.local_model import LocalServer, is_local_model

DEFAULT_GUIDED = ("smollm2",)
"""Models the default run plays twice: as clembench would (unguided) and guided, so that its
tables set the model's format apart from its scorekeeping (agents/guided.py)."""
DEFAULT_MAX_SLOTS = {"smollm2": 5, "smollm2-guided": 5}
"""In the default run SmolLM2 plays the 5-slot experiments only, guided or not: it answers one
call at a time on this machine, and its 20 episodes of 10 and 15 slots would add some 20
minutes on 2 cores (guided, every probe of every round is a call: 3,750 more calls, at about
0.3 s each).
`--model smollm2` plays every experiment."""
Role = Literal["answerer", "questioner", "judge"]


class CastError(ValueError):
    """A player that cannot take its role; the message is one line with the fix."""


def _option_error(error: ValidationError) -> CastError:
    first = error.errors()[0]
    option = "--" + str(first["loc"][0]).replace("_", "-")
    return CastError(f"{option}: {first['msg']}")


def model_spec(args: argparse.Namespace, model: str, base_url: str | None) -> ModelSpec:
    """A model with the command line's endpoint options."""
    try:
        return ModelSpec(
            model=model, base_url=base_url, api_key_env=args.api_key_env,
            temperature=args.temperature, timeout=args.timeout, max_retries=args.max_retries,
        )  # fmt: skip
    except ValidationError as error:
        raise _option_error(error) from None


def langchain_model_spec(args: argparse.Namespace, name: str) -> LangChainSpec:
    """`langchain:PROVIDER:MODEL` with the command line's settings. --api-key-env counts only
    when it names another variable than OPENAI_API_KEY, its default: other integrations read
    their own (ANTHROPIC_API_KEY, ...), and OpenAI's reads that one itself."""
    key = args.api_key_env if args.api_key_env != DEFAULT_KEY_VARIABLE else None
    try:
        return langchain_spec(
            name, base_url=args.base_url, api_key_env=key, temperature=args.temperature,
            timeout=args.timeout, max_retries=args.max_retries,
        )  # fmt: skip
    except ValidationError as error:
        raise _option_error(error) from None


DEFAULT_KEY_VARIABLE = "OPENAI_API_KEY"
"""--api-key-env's default."""


def player(
    args: argparse.Namespace,
    name: str,
    role: Role,
    servers: Mapping[str, LocalServer],
    environ: Mapping[str, str] | None = None,
) -> Player | None:
    """One player by name, for `role`; None for a local model whose server is not started yet
    (so every other name can be checked before any server starts). Keys are read from
    `environ` (default: the process's environment)."""
    if name == HUMAN:
        raise CastError(
            f"a person cannot be the {role} of a run, whose episodes play unattended; play "
            "yourself with `privateshared play`, or in LangGraph Studio (langgraph dev)"
        )
    if role == "answerer" and is_programmatic_answerer(name):
        return resolve_answerer(name)
    if role == "questioner" and name in PROGRAMMATIC_QUESTIONERS:
        return resolve_questioner(name)
    if is_programmatic_answerer(name) or name in PROGRAMMATIC_QUESTIONERS:
        raise CastError(f"{name!r} cannot be the {role}; give a model name")
    registered = getattr(args, "registry", {}).get(name)
    if isinstance(registered, PlayerEntry):  # its file was made absolute when the registry was read
        return load_player(registered.player, name=registered.name)
    if registered is not None:  # the registry's own endpoint and settings
        return _in_seat(resolve_model(registered, environ), role)
    if is_langchain_name(name):
        return _in_seat(resolve_model(langchain_model_spec(args, name), environ), role)
    if is_import_path(name):  # a user's player; no role check beyond the protocol
        return _in_seat(load_player(name), role)
    if is_local_model(name):
        if name not in servers:
            return None
        server = servers[name]
        spec = model_spec(args, server.model.alias, server.base_url)
        # A local server needs no key: never send it one meant for another endpoint.
        return ChatModelPlayer(spec, SecretStr(LOCAL_SERVER_KEY))
    return resolve_model(model_spec(args, name, args.base_url), environ)


def _in_seat(player: Player, role: Role) -> Player:
    """`player`, checked to be able to take `role`: a questioner calls functions."""
    return resolve_questioner(player) if role == "questioner" else player


Model = ChatModelPlayer | LangChainPlayer
"""A player behind a model: checked before a run, closed after it."""


@dataclass(frozen=True)
class Cast:
    """The players of a run."""

    answerers: list[Player]
    questioner: Player
    judge: Player | None

    def models(self) -> list[Model]:
        """The players behind a model, to check before the first episode."""
        players = [*self.answerers, self.questioner, *([self.judge] if self.judge else [])]
        return [player for player in players if isinstance(player, Model)]

    def settled(self) -> Cast:
        """The same players, each guided answerer's form settled from its server (one line,
        before any episode, for a server that cannot be guided)."""

        def settle(player: Player) -> Player:
            return player.settle_guidance() if isinstance(player, ChatModelPlayer) else player

        return Cast([settle(p) for p in self.answerers], self.questioner, self.judge)

    def caps(self, limit: int | None) -> list[int]:
        """Every cap on calls under way in the run: `limit` (--max-concurrent-calls) and the
        registry's per-model caps."""
        own = [spec.max_concurrent_calls for model in self.models()
               if (spec := model_spec_of(model)) is not None]  # fmt: skip
        return [cap for cap in (limit, *own) if cap is not None]

    def throttled(self, limit: int | None, shares: int = 1) -> Cast:
        """The same players, each with at most `limit` calls under way, or its own cap from the
        registry when lower, divided into `shares` (one per worker process)."""

        def cap(player: Player) -> Player:
            spec = model_spec_of(player)
            own = spec.max_concurrent_calls if spec is not None else None
            caps = [c for c in (limit, own) if c is not None]
            return ThrottledPlayer(player, max(1, min(caps) // shares)) if caps else player

        return Cast(
            [cap(p) for p in self.answerers], cap(self.questioner),
            cap(self.judge) if self.judge else None,
        )  # fmt: skip


def named_models(args: argparse.Namespace) -> list[str]:
    """Every name the command line gives a player."""
    return [
        *(args.models or DEFAULT_MODELS),
        args.questioner,
        *([args.judge] if args.judge else []),
    ]


def guided(player: Player | None, form: Guidance) -> Player | None:
    """`player` held to the game's format (its own condition and name) when it is a model on
    an OpenAI-compatible endpoint; programs and users' players keep the format themselves and
    play as they are; a LangChain model cannot be guided."""
    if isinstance(player, ChatModelPlayer):
        spec = player.spec
        return player if spec.guided is not None else player.guided_as(form)
    if isinstance(player, LangChainPlayer):
        raise CastError(
            f"{player.name}: guided decoding needs an OpenAI-compatible server (llama.cpp, "
            "vLLM, SGLang) played through the fast path, not a LangChain model; name the model "
            "and its --base-url instead"
        )
    return player


def cast_players(
    args: argparse.Namespace,
    servers: Mapping[str, LocalServer],
    environ: Mapping[str, str] | None = None,
) -> Cast | None:
    """The players the command line names; None while a local model's server is not started
    (a first call with no servers checks every other name). With --guided, every model
    answerer plays held to the game's format; the default run adds SmolLM2 guided beside
    SmolLM2 as clembench plays it."""
    names = args.models or DEFAULT_MODELS
    answerers = [player(args, name, "answerer", servers, environ) for name in names]
    # A local model's server is ours (llama-cpp-python): its form is known. Others say it in
    # /v1/models, asked once the servers run (`Cast.settled`).
    forms: list[Guidance] = ["llama.cpp" if is_local_model(name) else "auto" for name in names]
    if getattr(args, "guided", False):
        answerers = [guided(one, form) for one, form in zip(answerers, forms, strict=True)]
    elif args.models is None:
        answerers += [
            guided(one, form)
            for name, one, form in zip(names, answerers, forms, strict=True)
            if name in DEFAULT_GUIDED
        ]
    questioner = player(args, args.questioner, "questioner", servers, environ)
    judge = player(args, args.judge, "judge", servers, environ) if args.judge else None
    if questioner is None or None in answerers or (args.judge and judge is None):
        return None
    return Cast([a for a in answerers if a is not None], questioner, judge)
