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

Every entry is a `ModelSpec` (agents/llm.py), validated on load: a bad entry is one line naming
the file, the entry, the field and the fix.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from privateshared.agents.llm import ModelSpec


class RegistryError(ValueError):
    """A registry file that cannot be used; the message is one line with the fix."""


class _Registry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    models: list[ModelSpec]

    @model_validator(mode="after")
    def _names_are_unique(self) -> _Registry:
        seen: set[str] = set()
        for spec in self.models:
            if spec.played_as in seen:
                raise ValueError(f"two entries are named {spec.played_as!r}; rename one")
            seen.add(spec.played_as)
        return self


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


def read_registry(path: Path) -> dict[str, ModelSpec]:
    """The models of a registry file, by the name they are played under."""
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
            location = location[2:]
        field = ".".join(str(part) for part in location) or "models"
        message = first["msg"].removeprefix("Value error, ")
        if first["type"] == "extra_forbidden":
            message = "unknown field; remove it or fix its spelling"
        elif first["type"] == "missing":
            message = "missing; add it"
        raise RegistryError(f"{path}: {where}: {field}: {message}") from None
    return {spec.played_as: spec for spec in registry.models}
