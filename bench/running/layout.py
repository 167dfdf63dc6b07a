"""Where records go: `<results>/<pair>/privateshared/<index>_<experiment>/episode_<game_id>/`,
named as clembench names them."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from pydantic import JsonValue

from privateshared.agents.base import Player
from privateshared.agents.langchain_player import LangChainPlayer, LangChainSpec
from privateshared.agents.llm import ChatModelPlayer, ModelSpec
from privateshared.agents.throttle import ThrottledPlayer
from privateshared.domains.audience import Benchmark
from privateshared.domains.instances import InstanceSpec
from privateshared.graph.context import now_iso
from privateshared.graph.files import write_json
from privateshared.graph.records import GAME_NAME

EPISODE_FILES = ("instance.json", "interactions.json", "requests.json", "scores.json")


def safe_name(name: str) -> str:
    """A model name usable as one path component: no separators, no `..`, nothing odd."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", name)
    cleaned = re.sub(r"\.{2,}", "_", cleaned).strip("._")
    return cleaned or "model"


DEFAULT_TEMPERATURE = "default"
"""A folder name's temperature for a model sent none, which samples at its provider's default:
`o3-tdefault`. Not a number, since none was chosen (OpenAI's default is 1, others' differ), and
never a number an existing folder has (`-t1.0` is a model sent 1)."""


def player_label(player: Player) -> str:
    """clembench's `<model>-t<temperature>`; `<model>-tdefault` for a model sent no temperature."""
    temperature = player.temperature
    shown = DEFAULT_TEMPERATURE if temperature is None else float(temperature)
    return f"{safe_name(player.name)}-t{shown}"


def pair_name(answerer: Player, questioner: Player) -> str:
    """The dialogue partners' folder; a programmatic questioner names the answerer twice."""
    if questioner.name == "programmatic":
        return f"{player_label(answerer)}--{player_label(answerer)}"
    return f"{player_label(answerer)}--{player_label(questioner)}"


def experiment_dir(results: Path, pair: str, index: int, experiment: str) -> Path:
    return results / pair / GAME_NAME / f"{index}_{experiment}"


def episode_dir(results: Path, pair: str, index: int, experiment: str, game_id: int) -> Path:
    return experiment_dir(results, pair, index, experiment) / f"episode_{game_id}"


EXPERIMENT_FILE = "experiment.json"


def benchmark_of(instances: Iterable[InstanceSpec]) -> Benchmark:
    """The benchmark an experiment's instances belong to: two-listeners when they have an
    audience, else classic."""
    return "two-listeners" if any(spec.audience is not None for spec in instances) else "classic"


def write_experiment_file(
    folder: Path,
    name: str,
    domain: str | None,
    pair: str,
    answerer: Player,
    questioner: Player,
    judge: Player | None = None,
    benchmark: Benchmark = "classic",
    slot_values: Mapping[str, Sequence[str]] | None = None,
) -> None:
    """An experiment folder's experiment.json: what was played, by whom, with which settings
    (for models: their ModelSpec, the name of the key's variable but never the key), when, and,
    for the two-listener experiments only, their benchmark (the evaluation reports it apart)."""
    settings: dict[str, JsonValue] = {
        role: spec.settings()
        for role, player in (("answerer", answerer), ("questioner", questioner), ("judge", judge))
        if (spec := model_spec_of(player)) is not None
    }
    write_json(
        folder / EXPERIMENT_FILE,
        {
            "game": GAME_NAME, "name": name, "domain": domain, "dialogue_partners": pair,
            "answerer": answerer.name, "questioner": questioner.name,
            **({"settings": settings} if settings else {}),
            # Only where it is news: a classic experiment.json stays what it always was.
            **({"benchmark": benchmark} if benchmark != "classic" else {}),
            # A replay of clembench's records with clembench's texts: the values its instances
            # were drawn from, which no domain of ours names (the diagnostics read them).
            **({"slot_values": {s: list(v) for s, v in slot_values.items()}}
               if slot_values is not None else {}),
            "timestamp": now_iso(),
        },
    )  # fmt: skip


def model_spec_of(player: Player | None) -> ModelSpec | LangChainSpec | None:
    """The model behind a player, through a call cap: its endpoint's spec, or the registry entry
    a LangChain model was built from; None for a program, a person, or a LangChain model passed
    in from Python (built by its user, with no spec to record or to build it again from)."""
    if isinstance(player, ThrottledPlayer):
        player = player.inner
    if isinstance(player, ChatModelPlayer | LangChainPlayer):
        return player.spec
    return None
