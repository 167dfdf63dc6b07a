"""After a run, over its records: evaluation, result tables, plots, transcripts, re-scoring.

Everything here reads records back from a results folder (ours or clembench's), so it works the
same on a run that just ended, an old one, or published clembench records.

- `record_files.py`: reading an episode's record files, ours or clembench's, either layout.
- `evaluate.py`: every episode folder read back and aggregated (dataset, episode, turn levels),
  each benchmark (classic, two listeners) on its own.
- `uncertainty.py`: the 95% intervals of those aggregates and every two models compared
  paired, on `statistics.py`'s intervals, tests and Holm's correction (pure, seeded).
- `results.py`: the result files (results.md, results.json, episodes.csv, clembench's raw.csv
  and results.csv) and the terminal table; `comparisons.py` lays out the paired comparisons
  there, `costs.py` the tokens and cost, `conditions.py` a model guided beside unguided, all in
  the cells of `cells.py`; `plots.py` draws the SVG plots.
- `diagnostics/`: where the errors lie (over- and under-attribution and their breakdowns, the
  answers' failures, the questioner's action types), counted from the records, with intervals.
- `transcripts/`: a self-contained HTML page per episode and an index.
- `rescore.py`: scores.json recomputed from interactions.json.
"""

from privateshared.bench.reporting.evaluate import (
    Evaluation,
    collect,
    evaluate,
    evaluate_benchmarks,
)
from privateshared.bench.reporting.results import format_table, write_results
from privateshared.bench.reporting.transcripts import write_transcripts

__all__ = [
    "Evaluation",
    "collect",
    "evaluate",
    "evaluate_benchmarks",
    "format_table",
    "write_results",
    "write_transcripts",
]
