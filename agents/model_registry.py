"""A model registry: many models, each on its own endpoint with its own settings, in one file.

`--models FILE` (JSON, or YAML when it ends in .yaml / .yml) lists the models a run may name:

    models:
      - name: gpt-4o                 # the name --model picks and records show
        model: gpt-4o-2024-08-06     # the id the endpoint expects (default: name)
        api_key_env: OPENAI_API_KEY  # the variable holding the key, never the key
        max_concurrent_calls: 16
        extra_body: {max_tokens: 64}
      - name: qwen-7b
        model: Qwen/Qwen2.5-7B-Instruct
        base_url: http://gpu-box:8000/v1
        api_key_env: VLLM_KEY
        extra_body: {chat_template_kwargs: {enable_thinking: false}}

      - name: claude                 # a LangChain chat model (agents/langchain_player.py),
        provider: anthropic          # made by init_chat_model: any provider it knows
        model: claude-sonnet-4-5
        parameters: {max_tokens: 256}

      - name: my-asker               # a user's player, by import path (agents/imports.py)
        player: ./players.py:Asker   # a file relative to this file's folder, or module:attr

Every entry is a `ModelSpec` (agents/llm.py), a `LangChainSpec` when it has `provider`, or a
`PlayerEntry` when it has `player`; each is validated on load: a bad entry is one line naming
the file, the entry, the field and the fix. An entry's `name` is what the command line picks
and what records show.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)

from privateshared.agents.imports import absolute_import_path, is_import_path
from privateshared.agents.langchain_player import LangChainSpec
from privateshared.agents.llm import ModelSpec


class RegistryError(ValueError):
    """A registry file that cannot be used; the message is one line with the fix."""


class PlayerEntry(BaseModel):
    """A user's player in the registry, named by import path."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    """The name the command line picks, and records and tables show."""
    player: str
    """`module:attr` or `./file.py:attr` (agents/imports.py); a relative file starts from the
    registry file's folder, and is kept absolute once read."""

    @field_validator("player")
    @classmethod
    def _is_an_import_path(cls, value: str) -> str:
        if not is_import_path(value, meant=True):
            raise ValueError(
                "must name a player by import path: module:attr, or ./file.py:attr for a file"
            )
        return value

    @property
    def played_as(self) -> str:
        return self.name


def _entry_kind(entry: object) -> str:
    if isinstance(entry, dict):
        return "player" if "player" in entry else "langchain" if "provider" in entry else "model"
    if isinstance(entry, PlayerEntry):
        return "player"
    return "langchain" if isinstance(entry, LangChainSpec) else "model"


RegistryEntry = Annotated[
    Annotated[ModelSpec, Tag("model")]
    | Annotated[LangChainSpec, Tag("langchain")]
    | Annotated[PlayerEntry, Tag("player")],
    Discriminator(_entry_kind),
]
"""A model on its OpenAI-compatible endpoint, a LangChain model (an entry with `provider`), or
a user's player (an entry with `player`)."""
Entry = ModelSpec | LangChainSpec | PlayerEntry
"""A registry entry, read."""


class _Registry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    models: list[RegistryEntry]

    @model_validator(mode="after")
    def _names_are_unique(self) -> _Registry:
        seen: set[str] = set()
        for spec in self.models:
            if entry_name(spec) in seen:
                raise ValueError(f"two entries are named {entry_name(spec)!r}; rename one")
            seen.add(entry_name(spec))
        return self


def entry_name(entry: RegistryEntry) -> str:
    """The name the command line picks an entry by: its `name`, else its model id. Not always
    the name it plays under: a guided entry plays as its own condition, `NAME-guided`."""
    return getattr(entry, "name", None) or entry.played_as


def _load(path: Path) -> object:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RegistryError(f"{path}: file not found; pass an existing registry file") from None
    except OSError as error:
        raise RegistryError(f"{path}: cannot read it ({error.strerror}); check the path") from None
    try:
        if path.suffix.lower() in (".yaml", ".yml"):
            return yaml.safe_load(text)
        return json.loads(text)
    except (yaml.YAMLError, json.JSONDecodeError) as error:
        kind = "YAML" if path.suffix.lower() in (".yaml", ".yml") else "JSON"
        where = str(error).splitlines()[0]
        raise RegistryError(f"{path}: not valid {kind} ({where}); fix the file") from None


def read_registry(path: Path) -> dict[str, Entry]:
    """The models and players of a registry file, by the name they are played under."""
    raw = _load(path)
    try:
        registry = _Registry.model_validate(raw)
    except ValidationError as error:
        first = error.errors()[0]
        location = list(first["loc"])
        where = "the file"
        if len(location) >= 2 and location[0] == "models" and isinstance(location[1], int):
            entries = raw.get("models") if isinstance(raw, dict) else None
            entry = entries[location[1]] if isinstance(entries, list) else None
            name = entry.get("name") or entry.get("model") if isinstance(entry, dict) else None
            where = f"entry {location[1] + 1}" + (f" ({name})" if name else "")
            location = location[3:]  # less the entry's kind (model, langchain or player)
        field = ".".join(str(part) for part in location) or "models"
        message = first["msg"].removeprefix("Value error, ")
        if first["type"] == "extra_forbidden":
            message = "unknown field; remove it or fix its spelling"
        elif first["type"] == "missing":
            message = "missing; add it"
        raise RegistryError(f"{path}: {where}: {field}: {message}") from None
    folder = path.parent.absolute()
    named: dict[str, Entry] = {}
    for entry in registry.models:
        if isinstance(entry, PlayerEntry):  # a file named from the registry's folder
            entry = entry.model_copy(update={"player": absolute_import_path(entry.player, folder)})
        named[entry_name(entry)] = entry
    return named
