"""Re-score a results folder from its interactions.json files (ours or clembench's)."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from privateshared.graph.recorder import write_json
from privateshared.graph.records import GAME_NAME, Interactions
from privateshared.graph.scoring import score_interactions


class RecordsError(ValueError):
    """A record file that cannot be read; the message is one line with the fix."""


def read_interactions(path: Path) -> Interactions:
    """Read one interactions.json, or raise `RecordsError`."""
    try:
        return Interactions.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as error:
        raise RecordsError(f"{path}: cannot read it ({error}); re-run the episode") from None
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise RecordsError(
            f"{path}: {where}: {first['msg']}; this is not a privateshared interactions file"
        ) from None


def rescore(results_dir: Path) -> list[Path]:
    """Write scores.json next to every episode's interactions.json; returns the episodes done."""
    if not results_dir.is_dir():
        raise RecordsError(f"{results_dir}: not a folder; pass a results folder such as records/")
    episodes = sorted(results_dir.glob(f"**/{GAME_NAME}/*/episode_*/interactions.json"))
    # Score everything before writing anything, so a bad file leaves the folder as it was.
    scores = [score_interactions(read_interactions(path)) for path in episodes]
    for path, episode_scores in zip(episodes, scores, strict=True):
        write_json(path.parent / "scores.json", episode_scores)
    return [path.parent for path in episodes]
