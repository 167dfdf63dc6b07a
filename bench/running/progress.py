"""The progress bar of a run: on stderr when it is a terminal, silent otherwise."""

from __future__ import annotations

import shutil
import sys

from tqdm import tqdm

from privateshared.bench.running.episodes import Finished


class ProgressBar:
    """Episodes done out of the total, with aborted and errored ones, those another run into the
    folder played (once there are any), and model calls so far."""

    def __init__(self, total: int) -> None:
        # A terminal that reports no size would make tqdm print nothing; shutil falls back to 80x24.
        size = shutil.get_terminal_size()
        self.bar = tqdm(
            total=total, unit="episode", file=sys.stderr, disable=not sys.stderr.isatty(),
            ncols=size.columns, nrows=size.lines,
        )  # fmt: skip
        self.counts = {"aborted": 0, "errored": 0, "calls": 0}

    def __call__(self, finished: Finished) -> None:
        self.counts["calls"] += finished.calls
        if finished.status != "played":
            self.counts[finished.status] = self.counts.get(finished.status, 0) + 1
        self.bar.set_postfix(self.counts, refresh=False)
        self.bar.update()

    def close(self) -> None:
        self.bar.close()
