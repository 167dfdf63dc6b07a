"""clembench's own texts, for playing and replaying clembench's instances as clembench does.

clembench's instances files store phrasings as indices into texts that ship with clembench, not
with us: a user passes clembench's `privateshared/resources/texts` folder (`--resources`), and
we read from it the request and probe phrasings of each experiment and the re-prompt words of
every probe try. With them, the answerer receives exactly the bytes clembench sends; our own
domains keep our own texts (`schema.OUR_PROBE_WORDING`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from privateshared.domains.schema import PROBE_TAG, QUESTION_PLACEHOLDER, ProbeWording

REPROMPTS_FILE = "reprompts.json"
CLEMBENCH_PROBE_INSTRUCTION = "Answer this question with yes or no and then stop."
"""The sentence clembench's game master puts after every probe question. It sits in clembench's
language file, not in its resources/texts folder, so it is spelled here to reproduce clembench's
messages byte for byte."""

PhrasingLookup = Callable[[str, int], str]
"""(slot, index) -> text."""


class ResourcesError(ValueError):
    """A resources folder that cannot be read; the message is one line with the fix."""


class _Reprompts(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    suffixes: tuple[str, ...] = Field(min_length=1)
    """Words after `ME:` on try 1, 2, ...: the first is empty, and their number is the tries."""


def _read_json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ResourcesError(
            f"{path}: cannot read it ({error.__class__.__name__}); pass clembench's "
            "privateshared/resources/texts folder as --resources"
        ) from None


def resource_phrasings(folder: Path, experiment: str) -> tuple[PhrasingLookup, PhrasingLookup]:
    """Lookups into a clembench resources folder (`<folder>/<experiment>/requests.json` and
    `probing_questions.json`, each mapping slot -> list of texts)."""
    requests, probes = (
        _read_json(folder / experiment / name)
        for name in ("requests.json", "probing_questions.json")
    )
    if not isinstance(requests, dict) or not isinstance(probes, dict):
        raise ResourcesError(
            f"{folder / experiment}: requests.json and probing_questions.json must map slots to "
            "lists of texts; pass clembench's privateshared/resources/texts folder as --resources"
        )
    return (lambda slot, index: requests[slot][index], lambda slot, index: probes[slot][index])


SLOT_VALUES_FILE = "slot_values.json"


def resource_values(folder: Path, experiment: str) -> dict[str, tuple[str, ...]] | None:
    """The values clembench's texts offer each slot of an experiment
    (`<folder>/<experiment>/slot_values.json`, slot -> list of values): what its instances were
    drawn from. None when the folder has no such file, or not one in that shape: the game never
    needs them, only the diagnostics do, to tell a wrong value from a missing one."""
    path = folder / experiment / SLOT_VALUES_FILE
    try:
        values = _read_json(path)
    except ResourcesError:
        return None
    if not isinstance(values, dict) or not all(
        isinstance(pool, list) and all(isinstance(value, str) for value in pool)
        for pool in values.values()
    ):
        return None
    return {str(slot): tuple(pool) for slot, pool in values.items()}


def clembench_probe_wording(folder: Path) -> ProbeWording:
    """Probes framed as clembench frames them: `ME: <suffix> <question> <instruction>`.

    The first try's suffix is empty, yet its spaces stay: clembench's first try reads
    `ME:  Does ...`, with two spaces, and a model at temperature 0 may answer differently to
    one space than to two.
    """
    path = folder / REPROMPTS_FILE
    try:
        reprompts = _Reprompts.model_validate(_read_json(path))
    except ValidationError as error:
        raise ResourcesError(
            f'{path}: {error.errors()[0]["msg"]} (expected {{"suffixes": ["", ...]}}); pass '
            "clembench's privateshared/resources/texts folder as --resources"
        ) from None
    return ProbeWording(
        tries=tuple(
            f"{PROBE_TAG} {suffix} {QUESTION_PLACEHOLDER} {CLEMBENCH_PROBE_INSTRUCTION}"
            for suffix in reprompts.suffixes
        )
    )
