"""The per-model table printed at the end of a run: played, aborted, quality score, clemscore.

clembench's definitions: % Played is the share of episodes not aborted; the Quality Score is
the mean Main Score over played episodes; clemscore = % Played / 100 x Quality Score.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from privateshared.bench.run import EpisodeResult


@dataclass(frozen=True)
class ModelSummary:
    model: str
    episodes: int
    played: int
    quality: float
    """Mean Main Score over played episodes; NaN when none was played."""
    quality_std: float

    @property
    def aborted(self) -> int:
        return self.episodes - self.played

    @property
    def percent_played(self) -> float:
        return 100 * self.played / self.episodes

    @property
    def clemscore(self) -> float:
        return self.percent_played / 100 * self.quality


def summarize(results: Sequence[EpisodeResult]) -> list[ModelSummary]:
    """One summary per model, in the order the models were played."""
    models = list(dict.fromkeys(result.model for result in results))
    summaries = []
    for model in models:
        mine = [result for result in results if result.model == model]
        played = [result.main_score for result in mine if not result.aborted]
        summaries.append(
            ModelSummary(
                model=model,
                episodes=len(mine),
                played=len(played),
                quality=statistics.fmean(played) if played else float("nan"),
                quality_std=statistics.pstdev(played) if played else float("nan"),
            )
        )
    return summaries


def format_table(summaries: Sequence[ModelSummary]) -> str:
    """A plain-text table, one row per model."""
    header = ("model", "episodes", "played", "aborted", "% played", "quality (std)", "clemscore")
    rows = [
        (
            summary.model,
            str(summary.episodes),
            str(summary.played),
            str(summary.aborted),
            f"{summary.percent_played:.1f}",
            f"{summary.quality:.2f} ({summary.quality_std:.2f})",
            f"{summary.clemscore:.2f}",
        )
        for summary in summaries
    ]
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    lines = [
        "  ".join(
            cell.ljust(width) if i == 0 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        )
        for row in (header, *rows)
    ]
    return "\n".join(lines)
