"""The two layouts of clembench's interactions.json, read into one `Interactions` model.

clembench 2.0 records come in two layouts, side by side in the same published runs, even for
one model:

- **classic** (clembench's own game master, and ours): events between `GM`, `Player 1` and
  `Player 2`; probes logged as `probe question` / `probe answer` between `info` events
  `Begin probing` and `End probing`.
- **newer** (the 2025 re-runs on clemcore's dialogue game master): a top-level `meta` block,
  players named `Player 1 (Answerer)` / `Player 2 (Questioner)` in events, an `action.label` on
  messages (`pseudo`, `forget`, `context`, `response`), probes logged as `send message` /
  `get message` labelled `forget` (they are not remembered), no `info` events, and the pseudo
  answer `Ok.` logged as the answerer's `get message`. Later clemcore versions also describe
  players as objects (`{"game_role": "Answerer", "model_name": ...}`).

`parse_interactions` detects each file's layout and maps the newer one's names onto the classic
vocabulary, the one every reader here speaks (replay, scoring, transcripts). Only names are
mapped: facts are read as each file writes them (a probe left invalid logs `tries: 6` in both).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

from pydantic import JsonValue, ValidationError

from privateshared.graph.records import (
    ABORTED,
    ANSWERER,
    FILLED_SLOTS,
    GM,
    PARSED_REQUEST_COUNT,
    PLAYED_PROBE_ROUNDS,
    REQUEST_COUNT,
    VIOLATED_REQUEST_COUNT,
    Interactions,
)

RecordFormat = Literal["classic", "newer"]

REQUIRED_KEYS = (
    "players", "turns", "probes", "realised_slots", REQUEST_COUNT, PARSED_REQUEST_COUNT,
    VIOLATED_REQUEST_COUNT, FILLED_SLOTS, ABORTED, PLAYED_PROBE_ROUNDS,
)  # fmt: skip
"""Top-level keys both layouts have: the game's log and everything its scorer reads."""

NEWER_PLAYER = re.compile(r"^(Player \d+) \(.+\)$")
"""A player as the newer layout names it in events: `Player 1 (Answerer)`."""
NOT_REMEMBERED = "forget"
"""The newer layout's label of a message kept out of the answerer's memory: a probe."""


class RecordFormatError(ValueError):
    """A file in neither layout; the message says what it lacks (the caller names the file)."""


def _events(raw: Mapping[str, JsonValue]) -> list[Mapping[str, JsonValue]]:
    turns = raw.get("turns")
    if not isinstance(turns, list):
        return []
    return [e for turn in turns if isinstance(turn, list) for e in turn if isinstance(e, dict)]


def record_format(raw: Mapping[str, JsonValue]) -> RecordFormat:
    """The layout of an interactions.json: newer when it has a `meta` block or names its
    players in events, classic otherwise."""
    if isinstance(raw.get("meta"), dict):
        return "newer"
    for event in _events(raw):
        for who in (event.get("from"), event.get("to")):
            if isinstance(who, str) and NEWER_PLAYER.match(who):
                return "newer"
    return "classic"


def _classic_player(name: JsonValue) -> JsonValue:
    if isinstance(name, str) and (match := NEWER_PLAYER.match(name)):
        return match.group(1)
    return name


def _classic_role(role: JsonValue) -> JsonValue:
    """A player as later clemcore versions describe it, `{"game_role": "Answerer",
    "model_name": "m"}`, in classic words: `Answerer: m`."""
    if isinstance(role, dict) and {"game_role", "model_name"} <= role.keys():
        return f"{role['game_role']}: {role['model_name']}"
    return role


def _classic_event(event: JsonValue) -> JsonValue:
    """One newer-layout event in classic names: players by number, probes as probe events."""
    if not isinstance(event, dict):
        return event
    sender, to = _classic_player(event.get("from")), _classic_player(event.get("to"))
    action = event.get("action")
    if isinstance(action, dict) and action.get("label") == NOT_REMEMBERED:
        kind = action.get("type")
        if kind == "send message" and (sender, to) == (GM, ANSWERER):
            action = {**action, "type": "probe question"}
        elif kind == "get message" and (sender, to) == (ANSWERER, GM):
            action = {**action, "type": "probe answer"}
    return {**event, "from": sender, "to": to, "action": action}


def _describe(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "top level"
    return f"{where}: {first['msg']}"


def parse_interactions(raw: JsonValue) -> Interactions:
    """Read an interactions.json of either layout, ours included, in classic names; raise
    `RecordFormatError` for anything else."""
    if not isinstance(raw, dict):
        raise RecordFormatError(
            "not a JSON object; neither clembench record format (classic or newer)"
        )
    missing = [key for key in REQUIRED_KEYS if key not in raw]
    if missing:
        listed = ", ".join(repr(key) for key in missing)
        raise RecordFormatError(
            f"no {listed}: neither clembench record format (classic or newer) has an "
            "interactions.json without them"
        )
    layout = record_format(raw)
    turns, players = raw["turns"], raw["players"]
    if layout == "newer" and isinstance(turns, list):  # anything else fails validation below
        renamed = [[_classic_event(e) for e in t] if isinstance(t, list) else t for t in turns]
        raw = {**raw, "turns": renamed}
    if layout == "newer" and isinstance(players, dict):
        raw = {**raw, "players": {name: _classic_role(role) for name, role in players.items()}}
    try:
        return Interactions.model_validate(raw)
    except ValidationError as error:
        raise RecordFormatError(f"{_describe(error)} ({layout} format)") from None
