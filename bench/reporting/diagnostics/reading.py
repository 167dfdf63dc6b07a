"""An episode folder's diagnostics: its records read and counted (episode.py).

What the counts need besides `interactions.json`: the instance's values (the episode's
`instance.json`), and to tell a wrong value from a missing one, the values the domain offers.
Those come from the experiment's `experiment.json`: the clembench values a replay recorded
(`slot_values`), else the domain it names, when this process knows that domain and it offers
every value the instance holds (else the instance was not drawn from it, and its values are
taken as unknown).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from functools import cache
from pathlib import Path

from pydantic import BaseModel, JsonValue, ValidationError

from privateshared.bench.reporting.diagnostics.episode import (
    EpisodeDiagnostics,
    episode_diagnostics,
)
from privateshared.domains.loader import DomainError
from privateshared.domains.registry import known_domains
from privateshared.domains.schema import Domain
from privateshared.graph.record_formats import RecordFormatError, parse_interactions
from privateshared.graph.recorder import INTERACTIONS_FILE
from privateshared.graph.records import QUESTIONER

INSTANCE_FILE = "instance.json"
EXPERIMENT_FILE = "experiment.json"
SLOT_VALUES = "slot_values"
"""experiment.json's key for the values clembench's texts offer per slot (a replay writes it)."""


class _Instance(BaseModel):
    slots: dict[str, str]


class _Experiment(BaseModel):
    domain: str | None = None
    slot_values: dict[str, tuple[str, ...]] | None = None


def _json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None


def instance_slots(path: Path) -> dict[str, str] | None:
    """The slot values an instance.json holds; None when it holds none or cannot be read."""
    try:
        return _Instance.model_validate(_json(path)).slots
    except ValidationError:
        return None


@cache
def _experiment(path: Path) -> _Experiment:
    try:
        return _Experiment.model_validate(_json(path))
    except ValidationError:
        return _Experiment()


@cache
def _domains() -> Mapping[str, Domain]:
    try:
        return known_domains()
    except DomainError:  # a broken domain folder somewhere: no values, not a failed eval
        return {}


def offered_values(
    path: Path, slots: Mapping[str, str] | None
) -> Mapping[str, Collection[str]] | None:
    """The values per slot the experiment of `path` (its experiment.json) drew from, if known
    and holding every value of `slots`; else None."""
    if slots is None:
        return None
    experiment = _experiment(path)
    offered: Mapping[str, Collection[str]] | None = experiment.slot_values
    if offered is None and experiment.domain is not None:
        domain = _domains().get(experiment.domain)
        if domain is not None:
            offered = {slot: spec.values for slot, spec in domain.slots.items()}
    if offered is None or any(value not in offered.get(s, ()) for s, value in slots.items()):
        return None
    return offered


def _is_read(events: list[JsonValue], i: int) -> bool:
    """Whether the diagnostics read event `i` of a turn: the game master's notes with facts in
    them (a slot asked, values revealed or given early), the questioner's replies and calls, a
    handover's note, and the `parse` of an answer (the one right before the note naming its
    slot)."""
    event = events[i]
    action = event.get("action") if isinstance(event, dict) else None
    if not isinstance(event, dict) or not isinstance(action, dict):
        return True  # let validation name what is wrong with it
    kind, sender = action.get("type"), event.get("from")
    if kind in ("tool call", "note") or (isinstance(sender, str) and sender.startswith(QUESTIONER)):
        return True
    if kind == "metadata":
        return bool(action.keys() - {"type", "content"})
    if kind == "parse" and i + 1 < len(events):
        after = events[i + 1]
        after_action = after.get("action") if isinstance(after, dict) else None
        return isinstance(after_action, dict) and "slot" in after_action
    return False


def trimmed(raw: JsonValue) -> JsonValue:
    """An interactions.json without the events no diagnostic reads: most of a long episode's
    events are its probes' tries, which the probe entries sum up, and validating them all took
    ten times as long as counting (20 ms for a 15-slot episode)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("turns"), list):
        return raw
    turns = [
        [event for i, event in enumerate(turn) if _is_read(turn, i)]
        if isinstance(turn, list) else turn
        for turn in raw["turns"]  # type: ignore[union-attr]
    ]  # fmt: skip
    return {**raw, "turns": turns}


def read_episode_diagnostics(folder: Path) -> EpisodeDiagnostics | None:
    """Count an episode folder's diagnostics; None when its interactions.json cannot be read
    (the evaluation's other numbers come from scores.json, and still stand)."""
    try:
        raw = json.loads((folder / INTERACTIONS_FILE).read_text(encoding="utf-8"))
        interactions = parse_interactions(trimmed(raw))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecordFormatError):
        return None
    slots = instance_slots(folder / INSTANCE_FILE)
    values = offered_values(folder.parent / EXPERIMENT_FILE, slots)
    return episode_diagnostics(interactions, slots, values)
