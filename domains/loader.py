"""Load and validate domain folders: `domain.json` plus `initial_prompt.txt`.

Every problem becomes one `DomainError` line naming the file, the field and the fix, because
slot filling is checked by substring containment and a bad pool silently corrupts scores.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path

from pydantic import ValidationError

from privateshared.domains.schema import (
    ANSWER_TAG,
    ASIDE_TAG,
    PROBE_TAG,
    SLOTS_PLACEHOLDER,
    TAG_PLACEHOLDER,
    Domain,
)

DOMAIN_FILE = "domain.json"
PROMPT_FILE = "initial_prompt.txt"


class DomainError(ValueError):
    """A domain folder that cannot be played; the message is one line with the fix."""


def builtin_domains_dir() -> Path:
    """The folder holding the domains shipped with the package."""
    return Path(str(files("privateshared.domains")))


def load_domain(folder: Path) -> Domain:
    """Read one domain folder and validate it, or raise `DomainError`."""
    path = folder / DOMAIN_FILE
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DomainError(f"{path}: file not found; a domain folder needs {DOMAIN_FILE}") from None
    except json.JSONDecodeError as error:
        raise DomainError(
            f"{path}: invalid JSON at line {error.lineno} column {error.colno}: {error.msg}"
        ) from None
    prompt_path = folder / PROMPT_FILE
    if "initial_prompt" in raw:
        raise DomainError(
            f"{path}: unknown key 'initial_prompt'; put the template in {PROMPT_FILE} instead"
        )
    if not prompt_path.is_file():
        raise DomainError(f"{prompt_path}: file not found; add the answerer's initial prompt")
    raw["initial_prompt"] = prompt_path.read_text(encoding="utf-8").strip("\n")
    try:
        domain = Domain.model_validate(raw)
    except ValidationError as error:
        raise DomainError(f"{path}: {_describe(error)}") from None
    problem = (
        _prompt_problem(domain) or _overlap_problem(domain) or _second_listener_problem(domain)
    )
    if problem:
        file = prompt_path if problem.startswith("initial prompt") else path
        raise DomainError(f"{file}: {problem}")
    return domain


def _describe(error: ValidationError) -> str:
    """One line for the first validation error: where, what, and how to fix it."""
    first = error.errors()[0]
    location = ".".join(str(part) for part in first["loc"])
    kind = first["type"]
    if kind == "extra_forbidden":
        return f"unknown key '{first['loc'][-1]}' at {location}; remove it or fix its spelling"
    if kind == "missing":
        return f"missing key '{location}'; add it"
    if kind == "too_short" and len(first["loc"]) == 3 and first["loc"][0] == "slots":
        slot, field = first["loc"][1], first["loc"][2]
        return f'slot "{slot}" has no {field}; add at least one'
    return f"{location}: {first['msg']}"


def _prompt_problem(domain: Domain) -> str | None:
    """Why the initial prompt cannot teach the game's protocol, if it cannot."""
    for needed in (TAG_PLACEHOLDER, SLOTS_PLACEHOLDER, ANSWER_TAG, ASIDE_TAG, PROBE_TAG):
        if needed not in domain.initial_prompt:
            return f"initial prompt lacks {needed!r}; the answerer must be told it"
    return None


def _second_listener_problem(domain: Domain) -> str | None:
    """A probe that cannot be turned to the second listener: it must name `the <questioner>`."""
    if domain.second_listener is None:
        return None
    if domain.second_listener.tag == domain.tag:
        return f"second_listener.tag {domain.tag!r} is the questioner's tag; choose another"
    needed = f"the {domain.questioner}"
    for slot, spec in domain.slots.items():
        for probe in spec.probes:
            if needed not in probe:
                return (
                    f'slot "{slot}": probe {probe!r} lacks {needed!r}, so it cannot be asked '
                    "about the second listener; name the questioner that way, or remove "
                    "second_listener"
                )
    return None


def _overlap_problem(domain: Domain) -> str | None:
    """A value that contains another value, or the answer tag, in any slot of the domain."""
    owned = [(slot, value) for slot, spec in domain.slots.items() for value in spec.values]
    for slot, value in owned:
        if value.strip() != value or not value:
            return f'slot "{slot}": value {value!r} has surrounding spaces; trim it'
        if value.lower() in ANSWER_TAG.lower():
            return (
                f'slot "{slot}": value {value!r} occurs in the tag {ANSWER_TAG!r}, '
                "so every answer would contain it; choose another value"
            )
    for index, (slot, value) in enumerate(owned):
        for other_index, (other_slot, other) in enumerate(owned):
            if index != other_index and value.lower() in other.lower():
                return (
                    f'slot "{other_slot}": value {other!r} contains {value!r} '
                    f'(slot "{slot}"); slot filling checks containment, so rename one of them'
                )
    return None


def domain_folders(root: Path) -> Iterator[Path]:
    """Domain folders at `root`: the folder itself if it is one, else its subfolders that are."""
    if (root / DOMAIN_FILE).is_file():
        yield root
        return
    for child in sorted(root.iterdir()):
        if (child / DOMAIN_FILE).is_file():
            yield child


def load_domains(root: Path | None = None) -> dict[str, Domain]:
    """All domains under `root` (default: the shipped ones), by experiment name."""
    root = builtin_domains_dir() if root is None else root
    if not root.is_dir():
        raise DomainError(f"{root}: not a folder; pass a domain folder or a folder of domains")
    domains: dict[str, Domain] = {}
    for folder in domain_folders(root):
        domain = load_domain(folder)
        if domain.name in domains:
            raise DomainError(
                f"{folder / DOMAIN_FILE}: name {domain.name!r} is taken by another domain; "
                "rename one"
            )
        domains[domain.name] = domain
    if not domains:
        raise DomainError(f"{root}: no {DOMAIN_FILE} found; a domain folder needs one")
    return domains
