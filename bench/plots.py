"""Plots of an evaluation, drawn after a run over its records (results.py writes them).

matplotlib is imported inside the function, so `privateshared` starts fast when nothing is
plotted, and draws on a bare `Figure` with an Agg canvas: no global backend is chosen, no window
can open, and whoever imports this module keeps their own matplotlib settings.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from privateshared.bench.evaluate import Evaluation

if TYPE_CHECKING:
    from matplotlib.figure import Figure

ACCURACY_TITLE = "Scorekeeping: accuracy per probing round"
QUESTIONER_TITLE = "Questioner: slot accuracy per turn"


Series = dict[str, tuple[list[int], list[float]]]
"""Model -> (x values, y values) of its line."""


def plot_accuracy_by_round(evaluation: Evaluation, path: Path) -> None:
    """Draw each model's mean accuracy per probing round into a PNG; nothing if no model has one."""
    series = {
        line.model: ([m.probe_round for m in line.rounds], [m.accuracy for m in line.rounds])
        for line in evaluation.rounds_by_model
        if line.rounds
    }
    _plot(series, path, ACCURACY_TITLE, "probing round", "mean accuracy")


def plot_questioner_by_turn(evaluation: Evaluation, path: Path) -> None:
    """Draw each model's mean Questioner Slot Accuracy per questioner turn into a PNG; nothing
    if no model has one."""
    series = {
        line.model: (list(line.slot_accuracy), list(line.slot_accuracy.values()))
        for line in evaluation.questioner_by_model
        if line.slot_accuracy
    }
    _plot(
        series, path, QUESTIONER_TITLE, "questioner turn (turn t prepares question t)",
        "mean slot accuracy of the belief state",
    )  # fmt: skip


def _plot(series: Series, path: Path, title: str, x_label: str, y_label: str) -> None:
    """One line per model on a 0-1 scale; no file when there is no line to draw."""
    if not series:
        return
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    figure = Figure(figsize=(8, 5), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    for model, (xs, ys) in series.items():
        axes.plot(xs, ys, marker="o", label=model)
    axes.set_title(title)
    axes.set_xlabel(x_label)
    axes.set_ylabel(y_label)
    axes.set_ylim(-0.03, 1.03)
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.grid(True, alpha=0.4)
    axes.legend()
    _save(figure, path)


def _save(figure: Figure, path: Path) -> None:
    # Atomic like every record: a crash leaves the old picture or the new one, never half of one.
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            figure.savefig(file, format="png")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
