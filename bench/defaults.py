"""The harness's defaults that the command line shows: the models a run plays, where records go,
the worker processes, the resamples behind every interval.

Each is used where its part of the run lives (running/cast.py, cli/run.py, reporting/evaluate.py)
and shown by the parser's help (cli/parser.py). They live here, on the standard library alone,
so that `privateshared --help` answers without importing the stack (LangGraph, the openai SDK,
numpy, pydantic: over a second); `python scripts/startup.py` times it.
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_MODELS = ("smollm2", "oracle", "mock")
"""The answerers of `privateshared run` without --model."""
DEFAULT_RESULTS_DIR = Path("records")
"""Where the commands write and read records without --results-dir."""
DEFAULT_RESAMPLES = 9999
"""Bootstrap resamples (and random sign flips) per interval or test, `eval --resamples`:
scipy's default for both. Fewer would be faster, but a random sign-flip test cannot give a
p-value below 2 / (resamples + 1), and Holm's correction multiplies it by the comparisons:
with 9999, 45 comparisons (ten models) still reach 0.01. They add 0.1 to 0.2 s to an eval of
three models' 50 episodes each (2-core development machine; 0.05 s with 2000)."""


def default_workers() -> int:
    """One worker per core this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
