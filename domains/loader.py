"""Load and validate domain folders: `domain.json` plus `initial_prompt.txt`.

`check_domain` finds every problem of a folder, each one line naming the file, the field and the
fix, because slot filling is checked by substring containment and a bad pool silently corrupts
scores; `privateshared domains check` prints them all. `load_domain` and `load_domains`, which
load domains to play, stop a run with one `DomainError` line: the first problem.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from importlib.resources import files
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import ErrorDetails

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


class DomainCheck(BaseModel):
    """What checking one domain folder found: its domain, or every problem it has."""

    model_config = ConfigDict(frozen=True)

    folder: Path
    """The domain folder checked."""
    name: str | None
    """The name its domain.json gives, even when invalid; None if it gives none."""
    domain: Domain | None
    """The validated domain; None when the folder has any problem."""
    problems: tuple[str, ...]
    """Every problem, one line each: `<file>: <what>; <fix>`."""


def builtin_domains_dir() -> Path:
    """The folder holding the domains shipped with the package."""
    return Path(str(files("privateshared.domains")))


def check_domain(folder: Path) -> DomainCheck:
    """Find every problem of one domain folder; the domain itself when there is none."""
    path = folder / DOMAIN_FILE
    raw = _read_json(path)
    if isinstance(raw, str):  # nothing else can be checked without the file's contents
        return DomainCheck(folder=folder, name=None, domain=None, problems=(raw,))
    name = raw.get("name")
    problems: list[str] = []
    if "initial_prompt" in raw:
        problems.append(
            f"{path}: unknown key 'initial_prompt'; put the template in {PROMPT_FILE} instead"
        )
    prompt_path = folder / PROMPT_FILE
    prompt, prompt_problem = _read_prompt(prompt_path)
    if prompt_problem:
        problems.append(prompt_problem)
    domain: Domain | None = None
    try:
        domain = Domain.model_validate({**raw, "initial_prompt": prompt or ""})
    except ValidationError as error:
        # pydantic's complaint about the prompt is skipped: a missing prompt file is reported
        # above, and an empty one lacks every label below, under the prompt file's own name.
        problems += [
            f"{path}: {_describe(detail)}"
            for detail in error.errors()
            if detail["loc"][:1] != ("initial_prompt",)
        ]
    if prompt is not None:
        problems += [f"{prompt_path}: {problem}" for problem in prompt_problems(prompt)]
    # The game's own checks read the JSON leniently, so they still run beside pydantic's errors.
    problems += [f"{path}: {problem}" for problem in value_problems(_slot_texts(raw, "values"))]
    problems += [f"{path}: {problem}" for problem in _second_listener_problems(raw)]
    return DomainCheck(
        folder=folder,
        name=name if isinstance(name, str) else None,
        domain=None if problems else domain,
        problems=tuple(problems),
    )


def _read_json(path: Path) -> dict[str, Any] | str:
    """The JSON object in `path`, or the one line saying why it cannot be read."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return f"{path}: file not found; a domain folder needs {DOMAIN_FILE}"
    except UnicodeDecodeError:
        return f"{path}: not UTF-8 text; save it as UTF-8"
    except json.JSONDecodeError as error:
        return f"{path}: invalid JSON at line {error.lineno} column {error.colno}: {error.msg}"
    if not isinstance(raw, dict):
        return f'{path}: not a JSON object; write the domain as one {{"name": ...}} object'
    return raw


def _read_prompt(path: Path) -> tuple[str | None, str | None]:
    """The initial prompt's template and None, or None and the line saying why it is unread."""
    if not path.is_file():
        return None, f"{path}: file not found; add the answerer's initial prompt"
    try:
        return path.read_text(encoding="utf-8").strip("\n"), None
    except UnicodeDecodeError:
        return None, f"{path}: not UTF-8 text; save it as UTF-8"


def _describe(detail: ErrorDetails) -> str:
    """One validation error as one line: where, what, and how to fix it."""
    location = ".".join(str(part) for part in detail["loc"])
    kind = detail["type"]
    if kind == "extra_forbidden":
        return f"unknown key '{detail['loc'][-1]}' at {location}; remove it or fix its spelling"
    if kind == "missing":
        return f"missing key '{location}'; add it"
    if kind == "too_short" and len(detail["loc"]) == 3 and detail["loc"][0] == "slots":
        slot, field = detail["loc"][1], detail["loc"][2]
        return f'slot "{slot}" has no {field}; add at least one'
    return f"{location}: {detail['msg']}"


def prompt_problems(prompt: str) -> list[str]:
    """Each label of the game's protocol the initial prompt does not teach, one line each."""
    return [
        f"initial prompt lacks {needed!r}; the answerer must be told it"
        for needed in (TAG_PLACEHOLDER, SLOTS_PLACEHOLDER, ANSWER_TAG, ASIDE_TAG, PROBE_TAG)
        if needed not in prompt
    ]


def value_problems(values: Sequence[tuple[str, str]]) -> list[str]:
    """Values that slot filling would misread, given as (slot, value) in the domain's order.

    A value is blank, padded, inside the answer tag, or contains another value of the domain
    (case-insensitive, as slot filling checks); each overlapping pair is named once.
    """
    problems: list[str] = []
    for slot, value in values:
        if not value.strip():
            problems.append(f'slot "{slot}": value {value!r} is blank; remove it')
        elif value.strip() != value:
            problems.append(f'slot "{slot}": value {value!r} has surrounding spaces; trim it')
        elif value.lower() in ANSWER_TAG.lower():
            problems.append(
                f'slot "{slot}": value {value!r} occurs in the tag {ANSWER_TAG!r}, '
                "so every answer would contain it; choose another value"
            )
    # A blank value is inside every other value; the line above already names it.
    said = [(slot, value) for slot, value in values if value.strip()]
    for index, (slot, value) in enumerate(said):
        for other_slot, other in said[index + 1 :]:
            if slot == other_slot and value.lower() == other.lower():
                problems.append(f'slot "{slot}": value {value!r} is listed twice; remove one')
            elif value.lower() in other.lower():
                problems.append(_containment(other_slot, other, slot, value))
            elif other.lower() in value.lower():
                problems.append(_containment(slot, value, other_slot, other))
    return problems


def _containment(slot: str, value: str, inner_slot: str, inner: str) -> str:
    return (
        f'slot "{slot}": value {value!r} contains {inner!r} (slot "{inner_slot}"); '
        "slot filling checks containment, so rename one of them"
    )


def _second_listener_problems(raw: dict[str, Any]) -> list[str]:
    """Why the second listener cannot be probed: it shares the questioner's tag, or a probe
    lacks `the <questioner>`, which is what turns a probe to the second listener."""
    listener = raw.get("second_listener")
    if not isinstance(listener, dict):  # absent or null: classic game only; else pydantic says
        return []
    problems: list[str] = []
    tag = raw.get("tag")
    if isinstance(tag, str) and listener.get("tag") == tag:
        problems.append(f"second_listener.tag {tag!r} is the questioner's tag; choose another")
    questioner = raw.get("questioner")
    if not isinstance(questioner, str) or not questioner:
        return problems
    needed = f"the {questioner}"
    problems += [
        f'slot "{slot}": probe {probe!r} lacks {needed!r}, so it cannot be asked about the '
        "second listener; name the questioner that way, or remove second_listener"
        for slot, probe in _slot_texts(raw, "probes")
        if needed not in probe
    ]
    return problems


def _slot_texts(raw: dict[str, Any], field: str) -> list[tuple[str, str]]:
    """(slot, text) for each string in `field` of each slot, skipping whatever is shaped wrong
    (pydantic reports that on its own line)."""
    slots = raw.get("slots")
    if not isinstance(slots, dict):
        return []
    return [
        (slot, text)
        for slot, spec in slots.items()
        if isinstance(spec, dict) and isinstance(spec.get(field), list)
        for text in spec[field]
        if isinstance(text, str)
    ]


def domain_folders(root: Path) -> Iterator[Path]:
    """Domain folders at `root`: the folder itself if it is one, else its subfolders that are."""
    if (root / DOMAIN_FILE).is_file():
        yield root
        return
    for child in sorted(root.iterdir()):
        if (child / DOMAIN_FILE).is_file():
            yield child


def check_domains(root: Path) -> list[DomainCheck]:
    """Check every domain folder under `root`, and that no two share a name.

    Raises `DomainError` when `root` is no folder or holds no domain folder: nothing to check.
    """
    if not root.is_dir():
        raise DomainError(f"{root}: not a folder; pass a domain folder or a folder of domains")
    checks: list[DomainCheck] = []
    first_with: dict[str, Path] = {}
    for check in map(check_domain, domain_folders(root)):
        if check.name is None or first_with.setdefault(check.name, check.folder) == check.folder:
            checks.append(check)
            continue
        taken = (
            f"{check.folder / DOMAIN_FILE}: name {check.name!r} is taken by another domain "
            f"({first_with[check.name] / DOMAIN_FILE}); rename one"
        )
        checks.append(
            check.model_copy(update={"domain": None, "problems": (*check.problems, taken)})
        )
    if not checks:
        raise DomainError(f"{root}: no {DOMAIN_FILE} found; a domain folder needs one")
    return checks


def load_domain(folder: Path) -> Domain:
    """Read one domain folder and validate it, or raise `DomainError` naming its first problem."""
    check = check_domain(folder)
    if check.domain is None:
        raise DomainError(first_problem(check.problems, folder))
    return check.domain


def load_domains(root: Path | None = None) -> dict[str, Domain]:
    """All domains under `root` (default: the shipped ones), by experiment name.

    Raises `DomainError` naming the first problem of any of them.
    """
    root = builtin_domains_dir() if root is None else root
    checks = check_domains(root)
    problems = [problem for check in checks for problem in check.problems]
    if problems:
        raise DomainError(first_problem(problems, root))
    return {check.domain.name: check.domain for check in checks if check.domain is not None}


def first_problem(problems: Sequence[str], path: Path) -> str:
    """The first problem and a count of the others: a run stops with one line, and
    `domains check` lists them all."""
    if len(problems) == 1:
        return problems[0]
    more = len(problems) - 1
    return f"{problems[0]} (and {more} more; run `privateshared domains check {path}` to see all)"
