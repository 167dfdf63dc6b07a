"""Episode transcripts of a results folder, written after a run over its records.

`write_transcripts` reads every episode folder (interactions.json, scores.json or error.json,
instance.json), ours or clembench's, writes one readable HTML page per episode
(transcript.html, drawn by page.py) and an index of the whole folder (index.html,
drawn here): every model's episodes with their status, Main Score and a link to the page.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote

from pydantic import JsonValue, ValidationError

from privateshared.bench.reporting.record_files import RecordsError, read_interactions
from privateshared.bench.reporting.transcripts.html import CSS, escape_text, format_score
from privateshared.bench.reporting.transcripts.page import Status, episode_status, render_transcript
from privateshared.graph.files import write_text
from privateshared.graph.records import (
    GAME_NAME,
    MAIN_SCORE,
    CallFailure,
    EpisodeScores,
    Interactions,
)

TRANSCRIPT_FILE = "transcript.html"
INDEX_FILE = "index.html"

_Record = TypeVar("_Record", EpisodeScores, CallFailure)


class TranscriptError(ValueError):
    """A record file that cannot be read; the message is one line naming the file."""


# --- the results folder -------------------------------------------------------------------


@dataclass(frozen=True)
class _Episode:
    """One episode folder as the index lists it."""

    folder: Path
    model: str
    experiment: str
    status: Status
    main_score: float | None
    page: str | None
    """The transcript's HTML to write; None without a readable interactions.json, or when the
    page on disk is current."""
    linked: bool
    """Whether the index links to a page of the episode."""
    problem: str | None = None
    """Why a record of the episode could not be read, one line naming the file."""


def _read_json(path: Path) -> JsonValue:
    try:
        data: JsonValue = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as error:
        raise TranscriptError(f"{path}: cannot read it ({error}); re-run the episode") from None
    return data


def _read_record(path: Path, model: type[_Record]) -> _Record | None:
    if not path.exists():
        return None
    try:
        return model.model_validate(_read_json(path))
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise TranscriptError(f"{path}: {where}: {first['msg']}") from None


def _read_instance(path: Path) -> Mapping[str, JsonValue] | None:
    if not path.exists():
        return None
    data = _read_json(path)
    if not isinstance(data, dict):
        raise TranscriptError(f"{path}: not a JSON object; expected an instance")
    return data


def _sort_key(folder: Path) -> tuple[str, int, int]:
    """Model, then experiment index, then game id, numerically."""
    numbers = [re.match(r"\d+", part) for part in (folder.parent.name, folder.name[8:])]
    index, game = (int(match.group()) if match else -1 for match in numbers)
    return str(folder.parent.parent.parent), index, game


def transcript_page(
    results_dir: Path,
    folder: Path,
    interactions: Interactions,
    scores: EpisodeScores | None,
    error: CallFailure | None,
    instance: Mapping[str, JsonValue] | None,
) -> str:
    """One episode's page, linking back to the index at the top of `results_dir`."""
    depth = len(folder.relative_to(results_dir).parts)
    return render_transcript(
        interactions, scores, error, instance,
        experiment=re.sub(r"^\d+_", "", folder.parent.name),
        episode=folder.name.replace("_", " "), index_href="../" * depth + INDEX_FILE,
    )  # fmt: skip


def _is_current(folder: Path) -> bool:
    """Whether the episode's page was written after its last record."""
    page = folder / TRANSCRIPT_FILE
    if not page.exists():
        return False
    records = [folder / name for name in ("interactions.json", "scores.json", "error.json")]
    newest = max((path.stat().st_mtime_ns for path in records if path.exists()), default=0)
    return page.stat().st_mtime_ns >= newest


def _read_episode(results_dir: Path, folder: Path, render: bool) -> _Episode:
    """Read one episode folder's records and, if `render`, render its transcript (else its
    page is the one on disk). A record that cannot be read leaves the episode without a page
    (or without scores), and says why in `problem`."""
    experiment = re.sub(r"^\d+_", "", folder.parent.name)
    scores: EpisodeScores | None = None
    error: CallFailure | None = None
    problem: str | None = None
    try:
        scores = _read_record(folder / "scores.json", EpisodeScores)
        error = _read_record(folder / "error.json", CallFailure)
    except TranscriptError as broken:
        problem = str(broken)
    page = None
    if render and (folder / "interactions.json").exists() and problem is None:
        try:
            interactions = read_interactions(folder / "interactions.json")
            instance = _read_instance(folder / "instance.json")
        except (RecordsError, TranscriptError) as broken:
            problem = str(broken)
        else:
            page = transcript_page(results_dir, folder, interactions, scores, error, instance)
    main_score = scores.episode_scores.get(MAIN_SCORE) if scores is not None else None
    return _Episode(
        folder=folder,
        model=folder.relative_to(results_dir).parts[0],
        experiment=experiment,
        status=episode_status(scores, error),
        main_score=main_score,
        page=page,
        linked=page is not None or (not render and (folder / TRANSCRIPT_FILE).exists()),
        problem=problem,
    )


def _render_model(results_dir: Path, model: str, episodes: Sequence[_Episode]) -> str:
    counts = {status: 0 for status in ("played", "aborted", "errored", "unscored")}
    for episode in episodes:
        counts[episode.status] += 1
    summary = ", ".join(f"{count} {status}" for status, count in counts.items() if count)
    rows = []
    for episode in episodes:
        href = (episode.folder / TRANSCRIPT_FILE).relative_to(results_dir).as_posix()
        name = episode.folder.name.replace("_", " ")
        link = (
            f'<a href="{escape_text(quote(href))}">{escape_text(name)}</a>'
            if episode.linked
            else escape_text(name)
        )
        score = "" if episode.main_score is None else format_score(episode.main_score)
        if episode.problem is not None:
            link += f'<div class="muted">not shown: {escape_text(episode.problem)}</div>'
        rows.append(
            f'<tr class="{episode.status}"><td>{escape_text(episode.experiment)}</td>'
            f"<td>{link}</td>"
            f'<td><span class="status {episode.status}">{episode.status}</span></td>'
            f'<td class="num">{escape_text(score)}</td></tr>'
        )
    return (
        f'<section class="model"><h2>{escape_text(model)}</h2><p class="muted">{len(episodes)} '
        f'episodes: {summary}</p><table class="episodes"><tr><th>experiment</th>'
        f'<th>episode</th><th>status</th><th class="num">Main Score</th></tr>'
        f"{''.join(rows)}</table></section>"
    )


def _render_index(results_dir: Path, episodes: Sequence[_Episode]) -> str:
    """Render the index page: every model's episodes, with status, score and transcript."""
    models = list(dict.fromkeys(episode.model for episode in episodes))
    sections = "".join(
        _render_model(results_dir, model, [e for e in episodes if e.model == model])
        for model in models
    )
    empty = "" if episodes else '<p class="muted">No episodes found.</p>'
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{GAME_NAME} transcripts</title><style>{CSS}</style></head><body>"
        f"<header><h1>{GAME_NAME} transcripts</h1></header><main>{sections}{empty}</main>"
        f"</body></html>\n"
    )


@dataclass(frozen=True)
class Transcribed:
    """What writing a folder's transcripts did."""

    written: list[Path]
    """The files written, index.html last."""
    unreadable: list[str]
    """One line per record file that could not be read; its episode has no page."""


def write_transcripts(results_dir: Path, stale_only: bool = False) -> Transcribed:
    """Write transcript.html into every episode folder with readable records (with
    `stale_only`, only where the page is missing or older than the records: a run writes each
    episode's page as it ends), and index.html at the top, which lists every episode, those
    that could not be read included."""
    if not results_dir.is_dir():
        raise TranscriptError(
            f"{results_dir}: not a folder; pass a results folder such as records/"
        )
    folders = sorted(
        (path for path in results_dir.glob(f"*/{GAME_NAME}/*/episode_*") if path.is_dir()),
        key=_sort_key,
    )
    episodes = [
        _read_episode(results_dir, folder, render=not (stale_only and _is_current(folder)))
        for folder in folders
    ]
    written = []
    for episode in episodes:
        if episode.page is not None:
            write_text(episode.folder / TRANSCRIPT_FILE, episode.page)
            written.append(episode.folder / TRANSCRIPT_FILE)
    write_text(results_dir / INDEX_FILE, _render_index(results_dir, episodes))
    unreadable = [episode.problem for episode in episodes if episode.problem is not None]
    return Transcribed([*written, results_dir / INDEX_FILE], unreadable)
