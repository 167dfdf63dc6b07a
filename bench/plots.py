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
Panels = dict[str, Series]
"""Experiment -> the lines of its panel. Episodes of different lengths (5 slots, 15 slots) get
panels of their own: round 5 is the last of a 5-slot episode and a third of a 15-slot one, so one
line over both would mix unlike rounds."""


def plot_accuracy_by_round(evaluation: Evaluation, path: Path) -> None:
    """Draw each model's mean accuracy per probing round, a panel per experiment, into a PNG;
    nothing if no model has a round."""
    panels: Panels = {}
    for line in evaluation.rounds_by_experiment:
        if line.rounds and line.experiment is not None:
            panels.setdefault(line.experiment, {})[line.model] = (
                [m.probe_round for m in line.rounds], [m.accuracy for m in line.rounds],
            )  # fmt: skip
    _plot(panels, path, ACCURACY_TITLE, "probing round", "mean accuracy")


def plot_questioner_by_turn(evaluation: Evaluation, path: Path) -> None:
    """Draw each model's mean Questioner Slot Accuracy per questioner turn, a panel per
    experiment, into a PNG; nothing if no model has one."""
    panels: Panels = {}
    for line in evaluation.questioner_by_experiment:
        if line.slot_accuracy and line.experiment is not None:
            panels.setdefault(line.experiment, {})[line.model] = (
                list(line.slot_accuracy), list(line.slot_accuracy.values()),
            )  # fmt: skip
    _plot(
        panels, path, QUESTIONER_TITLE, "questioner turn (turn t prepares question t)",
        "mean slot accuracy of the belief state",
    )  # fmt: skip


def _plot(panels: Panels, path: Path, title: str, x_label: str, y_label: str) -> None:
    """One panel per experiment, one line per model, on a shared 0-1 scale; no file when there
    is no line to draw."""
    if not panels:
        return
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.ticker import MaxNLocator

    columns = min(len(panels), 3)
    rows = -(-len(panels) // columns)
    figure = Figure(figsize=(4.2 * columns + 1, 3.4 * rows + 1.2), layout="constrained")
    FigureCanvasAgg(figure)
    grid = figure.subplots(rows, columns, sharey=True, squeeze=False)
    models = sorted({model for series in panels.values() for model in series})
    colours = {model: f"C{index % 10}" for index, model in enumerate(models)}
    for axes, (experiment, series) in zip(grid.flat, sorted(panels.items()), strict=False):
        for model, (xs, ys) in sorted(series.items()):
            axes.plot(xs, ys, marker="o", markersize=3, color=colours[model], label=model)
        axes.set_title(experiment)
        axes.set_xlabel(x_label)
        axes.set_ylim(-0.03, 1.03)
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        axes.grid(True, alpha=0.4)
    for axes in grid[:, 0]:
        axes.set_ylabel(y_label)
    for axes in list(grid.flat)[len(panels) :]:
        axes.set_visible(False)
    handles = [
        Line2D([], [], color=colours[model], marker="o", markersize=3, label=model)
        for model in models
    ]
    figure.legend(handles=handles, loc="outside lower center", ncols=min(len(models), 3))
    figure.suptitle(title)
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
