"""Reading an episode's record files from disk, ours or clembench's, in either of its layouts.

Every reader of records (score, replay, transcribe) comes through here, so a file that cannot
be read is always reported the same way: one line naming the file, what is wrong with it and
what to do.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, JsonValue, TypeAdapter, ValidationError

from privateshared.graph.record_formats import RecordFormatError, parse_interactions
from privateshared.graph.records import CallRecord, EpisodeScores, Interactions

_Read = TypeVar("_Read")
_CALLS = TypeAdapter(list[CallRecord])
_SCORES = TypeAdapter(EpisodeScores)


class RecordsError(ValueError):
    """A record file that cannot be read; the message is one line with the fix."""


def _read_json(path: Path) -> JsonValue:
    try:
        data: JsonValue = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as error:
        reason = " ".join(str(error).split())
        raise RecordsError(f"{path}: cannot read it ({reason}); re-run the episode") from None
    return data


def _first_error(error: ValidationError) -> str:
    first = error.errors()[0]
    return f"{'.'.join(str(part) for part in first['loc']) or 'top level'}: {first['msg']}"


def read_interactions(path: Path) -> Interactions:
    """Read one interactions.json of either clembench layout, or raise `RecordsError`."""
    try:
        return parse_interactions(_read_json(path))
    except RecordFormatError as error:
        raise RecordsError(
            f"{path}: {error}; pass an episode folder written by clembench or privateshared"
        ) from None


def _validated(path: Path, adapter: TypeAdapter[_Read], fix: str) -> _Read:
    try:
        return adapter.validate_python(_read_json(path))
    except ValidationError as error:
        raise RecordsError(f"{path}: {_first_error(error)}; {fix}") from None


def read_requests(path: Path) -> list[CallRecord]:
    """Read one requests.json (a list of calls, each with its timestamp, prompt and response)."""
    return _validated(path, _CALLS, "this is not a clembench requests.json")


class _PlayerCall(BaseModel):
    model_config = ConfigDict(extra="allow")
    call: CallRecord


class _PlayerRequests(BaseModel):
    """A player's requests file of later clemcore versions (`player_1.requests.json`)."""

    model_config = ConfigDict(extra="allow")
    calls: list[_PlayerCall]


_PLAYER_REQUESTS = TypeAdapter(_PlayerRequests)


def read_player_requests(path: Path) -> list[CallRecord]:
    """Read one player's requests file of later clemcore versions: its calls, in order."""
    requests = _validated(path, _PLAYER_REQUESTS, "this is not a clembench player's requests")
    return [entry.call for entry in requests.calls]


def read_scores(path: Path) -> EpisodeScores:
    """Read one scores.json, or raise `RecordsError`."""
    return _validated(path, _SCORES, "re-score the episode with `privateshared score`")
