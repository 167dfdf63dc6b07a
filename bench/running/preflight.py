"""The check call before the first episode: one short chat call per model and seat, sent with
the run's own settings, so that a refused parameter, an unknown field of `extra_body`, a refused
key or a wrong model id stops the run in one line before any episode is played or written.

A model is checked once as a plain chat model (the answerer's and the judge's calls) and once
with the questioner's tools when it asks; the checks run at once, one thread each, and the first
failure in the order the run names its models is the line shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from pydantic import JsonValue

from privateshared.agents.base import Player
from privateshared.agents.throttle import ThrottledPlayer
from privateshared.bench.running.cast import Model
from privateshared.domains.instances import GameInstance
from privateshared.graph.questioning import questioner_tools


def model_of(player: Player | None) -> Model | None:
    """The model behind a player (through a call cap); None for a program, a person or a user's
    player, which make no call to check."""
    inner = player.inner if isinstance(player, ThrottledPlayer) else player
    return inner if isinstance(inner, Model) else None


def planned_checks(
    answerers: Sequence[Player],
    questioner: Player,
    judge: Player | None,
    instance: GameInstance,
) -> list[tuple[Model, tuple[dict[str, JsonValue], ...]]]:
    """The check calls of a run, in order: each model once without tools (an answerer, the
    judge) and the questioner once with the tools of `instance` (the first one played); a model
    in several seats of one kind is checked once."""
    plain = [model for player in (*answerers, judge) if (model := model_of(player)) is not None]
    checks: list[tuple[Model, tuple[dict[str, JsonValue], ...]]] = []
    seen: set[tuple[int, bool]] = set()
    asker = model_of(questioner)
    with_tools = [(asker, questioner_tools(instance))] if asker is not None else []
    for model, tools in [*((model, ()) for model in plain), *with_tools]:
        if (id(model), bool(tools)) not in seen:
            seen.add((id(model), bool(tools)))
            checks.append((model, tools))
    return checks


def check_models(
    answerers: Sequence[Player], questioner: Player, judge: Player | None, instance: GameInstance
) -> int:
    """Make every check call of a run (`planned_checks`); raise the first failure in order
    (a PlayerConfigError, one line). Returns how many calls were made."""
    checks = planned_checks(answerers, questioner, judge, instance)
    if not checks:
        return 0
    with ThreadPoolExecutor(max_workers=min(8, len(checks))) as pool:
        futures = [pool.submit(model.check, tools) for model, tools in checks]
        for future in futures:
            future.result()
    return len(checks)
