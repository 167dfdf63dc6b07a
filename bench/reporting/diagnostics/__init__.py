"""Why a model loses points: error diagnostics of any results folder, ours or replayed clembench
records, computed from the records alone.

- `episode.py`: one episode's counts, pure functions over its records (over- and
  under-attribution, per listener and by lag, early disclosures, position in the round, the
  answers' slot-filling failures, the questioner's action types);
- `reading.py`: an episode folder read and counted;
- `rates.py`: a group of episodes' rates, each with its 95% interval (episodes resampled);
- `report.py`: the "Diagnostics" section of results.md.

evaluate.py puts each model's (and each model and experiment's) into its aggregate, results.py
writes them, and plots.py draws them beside the accuracy per probing round.
"""

from privateshared.bench.reporting.diagnostics.episode import (
    EpisodeDiagnostics,
    Tally,
    episode_diagnostics,
)
from privateshared.bench.reporting.diagnostics.rates import (
    Diagnostics,
    EpisodeMean,
    Rate,
    diagnose,
)
from privateshared.bench.reporting.diagnostics.reading import read_episode_diagnostics

__all__ = [
    "Diagnostics",
    "EpisodeDiagnostics",
    "EpisodeMean",
    "Rate",
    "Tally",
    "diagnose",
    "episode_diagnostics",
    "read_episode_diagnostics",
]
