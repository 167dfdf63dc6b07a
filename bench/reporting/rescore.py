"""Re-score a results folder from its interactions.json files (ours or clembench's, either
clembench layout)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from privateshared.bench.reporting.record_files import RecordsError, read_interactions
from privateshared.graph.files import write_json
from privateshared.graph.recorder import INTERACTIONS_FILE, SCORES_FILE
from privateshared.graph.records import GAME_NAME
from privateshared.graph.scoring import score_interactions


@dataclass(frozen=True)
class Rescored:
    """What re-scoring a folder did."""

    episodes: list[Path]
    """Episode folders whose scores.json was written."""
    unreadable: list[str]
    """One line per interactions.json that could not be read; its scores.json is left alone."""


def rescore(results_dir: Path) -> Rescored:
    """Write scores.json next to every readable interactions.json of the folder."""
    if not results_dir.is_dir():
        raise RecordsError(f"{results_dir}: not a folder; pass a results folder such as records/")
    found = sorted(results_dir.glob(f"**/{GAME_NAME}/*/episode_*/{INTERACTIONS_FILE}"))
    episodes, unreadable = [], []
    for path in found:
        try:
            scores = score_interactions(read_interactions(path))
        except RecordsError as error:
            unreadable.append(str(error))
            continue
        write_json(path.parent / SCORES_FILE, scores)
        episodes.append(path.parent)
    return Rescored(episodes, unreadable)
