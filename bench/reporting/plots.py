"""Plots of an evaluation, drawn after a run over its records (results.py writes them).

Each plot is a small SVG file: one panel per experiment, one line per model, on a shared 0-1
scale; the accuracy plot draws each line's 95% interval as a band around it (the episodes
resampled, evaluate.py), so that lines whose bands overlap are not read as apart. Line charts
this plain need no plotting library, and writing their SVG takes a few milliseconds where
importing and rendering with one took over a second of every run; any browser shows them, and
the index page of the transcripts embeds them. The experiments of every benchmark a folder holds
are drawn, each in its own panel: no line averages over two benchmarks.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from html import escape
from pathlib import Path
from typing import NamedTuple

from privateshared.bench.reporting.diagnostics import Diagnostics, Rate
from privateshared.bench.reporting.diagnostics.episode import LAGS
from privateshared.bench.reporting.evaluate import Evaluation, RoundAccuracy
from privateshared.bench.reporting.statistics import Interval
from privateshared.graph.files import write_text

ACCURACY_TITLE = "Scorekeeping: accuracy per probing round (bands: 95% intervals)"
QUESTIONER_TITLE = "Questioner: slot accuracy per turn"
TWO_LISTENER_CAPTION = (
    "Two-listener panels: accuracy per listener, not these experiments' headline. Their Main",
    "Score is 100 x HM(slot filling, HM of the kappas of the 1st listener, the 2nd, and the",
    "pairs where their truths differ): answering both listeners alike scores 0 (results.md).",
)
"""Under the accuracy plot when it has two-listener panels: a listener's accuracy can be perfect
while the headline is 0, so the plot says what the headline is."""
DIAGNOSTICS_TITLE = "Diagnostics: where the probe answers go wrong (bars and bands: 95% intervals)"


class Line(NamedTuple):
    """One model's line in a panel."""

    xs: list[int]
    ys: list[float]
    bands: list[tuple[float, float]] | None = None
    """The interval around each point, (NaN, NaN) where there is none; None: no band."""


Series = dict[str, Line]
"""Model -> its line."""
Panels = dict[str, Series]
"""Experiment -> the lines of its panel. Episodes of different lengths (5 slots, 15 slots) get
panels of their own: round 5 is the last of a 5-slot episode and a third of a 15-slot one, so one
line over both would mix unlike rounds."""

COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf")  # fmt: skip
"""Line colours, a model keeping its colour in every panel."""
PANEL_WIDTH, PANEL_HEIGHT = 360, 240
MARGIN = {"left": 56, "right": 16, "top": 34, "bottom": 46}
COLUMNS = 3


def plot_accuracy_by_round(evaluations: Sequence[Evaluation], path: Path) -> None:
    """Draw each model's mean accuracy per probing round, a panel per experiment of every
    benchmark evaluated, into an SVG file; nothing if no model completed a round. A two-listener
    experiment gets a panel per listener instead: what one listener knows is not what the other
    does."""
    panels: Panels = {}
    for evaluation in evaluations:
        by_listener: dict[tuple[str, str | None], list[RoundAccuracy]] = {}
        for line in evaluation.rounds_by_listener:
            experiment = (line.experiment or "").rsplit(", ", 1)[0]
            by_listener.setdefault((line.model, experiment), []).append(line)
        for whole in evaluation.rounds_by_experiment:
            for line in by_listener.get((whole.model, whole.experiment), [whole]):
                if not line.rounds or line.experiment is None:
                    continue
                panels.setdefault(line.experiment, {})[line.model] = Line(
                    [m.probe_round for m in line.rounds], [m.accuracy for m in line.rounds],
                    [m.ci95 for m in line.rounds],
                )  # fmt: skip
    listeners = any(line.rounds for e in evaluations for line in e.rounds_by_listener)
    _plot(panels, path, ACCURACY_TITLE, "probing round", "mean accuracy",
          TWO_LISTENER_CAPTION if listeners else ())  # fmt: skip


def plot_questioner_by_turn(evaluations: Sequence[Evaluation], path: Path) -> None:
    """Draw each model's mean Questioner Slot Accuracy per questioner turn, a panel per
    experiment of every benchmark evaluated, into an SVG file; nothing if no model has one."""
    panels: Panels = {}
    for line in (line for e in evaluations for line in e.questioner_by_experiment):
        if line.slot_accuracy and line.experiment is not None:
            panels.setdefault(line.experiment, {})[line.model] = Line(
                list(line.slot_accuracy), list(line.slot_accuracy.values()),
            )  # fmt: skip
    _plot(panels, path, QUESTIONER_TITLE, "questioner turn (t prepares question t)",
          "mean slot accuracy")  # fmt: skip


def plot_diagnostics(evaluations: Sequence[Evaluation], path: Path) -> None:
    """Draw each model's diagnostics into an SVG file: over- and under-attribution (a dot per
    model, its interval as a bar), under-attribution by rounds since the slot became shared, and
    accuracy by position in the round (a line per model, its interval as a band); nothing if no
    model has diagnostics. A model of both benchmarks a folder holds is drawn once per benchmark,
    named with it: the two are never pooled."""
    several = len(evaluations) > 1
    found: dict[str, Diagnostics] = {
        f"{row.model} ({evaluation.benchmark})" if several else row.model: row.diagnostics
        for evaluation in evaluations
        for row in evaluation.models
        if row.diagnostics is not None
    }
    if not found:
        return
    colours = _colours(found)

    def dots(title: str, rate: str) -> str:
        return _dot_panel(title, {m: getattr(d, rate) for m, d in found.items()}, colours)

    def line(rates: dict[int, Rate]) -> Line:
        xs = sorted(x for x, rate in rates.items() if rate.total)
        return Line(xs, [rates[x].rate for x in xs], [rates[x].ci95 for x in xs])

    lags = {
        model: line({i: d.under_attribution_by_lag[b] for i, b in enumerate(LAGS)
                     if b in d.under_attribution_by_lag})
        for model, d in found.items()
    }  # fmt: skip
    positions = {model: line(d.accuracy_by_position) for model, d in found.items()}
    groups = [
        dots("over-attribution: private said shared", "over_attribution"),
        dots("under-attribution: shared said private", "under_attribution"),
    ]
    # A line panel only where some model has a point (none when every episode aborted at once).
    for title, lines, x_label, y_label in (
        ("under-attribution by lag", lags, "rounds since shared (3: 3 or more)",
         "under-attribution"),
        ("accuracy by position in the round", positions,
         "position of the probe (1: asked first)", "accuracy"),
    ):  # fmt: skip
        if drawn := {model: line for model, line in lines.items() if line.xs}:
            groups.append(_panel(title, drawn, colours, x_label, y_label))
    _figure(groups, colours, path, DIAGNOSTICS_TITLE, columns=2, fit_legend=True)


def _dot_panel(title: str, rates: dict[str, Rate], colours: dict[str, str]) -> str:
    """One panel of a share per model: a row each, a dot at the share and a bar over its
    interval, on a 0-1 scale across; the row of a model without anything counted stays empty."""
    left, top = MARGIN["left"], MARGIN["top"]
    width = PANEL_WIDTH - MARGIN["left"] - MARGIN["right"]
    height = PANEL_HEIGHT - MARGIN["top"] - MARGIN["bottom"]
    # A row for every model, so that a model keeps its row in both panels.
    shown = sorted(rates)
    step = height / max(len(shown), 1)

    def x(value: float) -> float:
        return left + value * width

    parts = [
        f'<text x="{left + width / 2}" y="20" class="title">{escape(title)}</text>',
        f'<rect x="{left}" y="{top}" width="{width}" height="{height}" class="frame"/>',
    ]
    for tick in (0, 0.2, 0.4, 0.6, 0.8, 1.0):
        parts.append(
            f'<line x1="{x(tick):.1f}" x2="{x(tick):.1f}" y1="{top}" y2="{top + height}" '
            f'class="grid"/><text x="{x(tick):.1f}" y="{top + height + 16}" class="xtick">'
            f"{tick:.1f}</text>"
        )
    parts.append(
        f'<text x="{left + width / 2}" y="{PANEL_HEIGHT - 8}" class="label">share of the '
        "probes answered yes or no</text>"
    )
    for i, model in enumerate(shown):
        rate, colour, y = rates[model], colours[model], top + (i + 0.5) * step
        if not rate.total:  # nothing counted: an empty row
            continue
        about = f"{escape(model)}: {rate.rate:.2f} ({rate.count}/{rate.total})"
        low, high = rate.ci95
        if not math.isnan(low):
            about += f", 95% interval [{low:.2f}, {high:.2f}]"
            parts.append(
                f'<line x1="{x(low):.1f}" x2="{x(high):.1f}" y1="{y:.1f}" y2="{y:.1f}" '
                f'stroke="{colour}" class="bar"/>'
            )
        parts.append(
            f'<circle cx="{x(rate.rate):.1f}" cy="{y:.1f}" r="4" fill="{colour}">'
            f"<title>{about}</title></circle>"
        )
        # The counts beside the dot, on whichever side has room: what the share rests on.
        right = rate.rate < 0.6
        parts.append(
            f'<text x="{x(rate.rate) + (8 if right else -8):.1f}" y="{y + 4:.1f}" '
            f'class="count" style="text-anchor:{"start" if right else "end"}">'
            f"{rate.count}/{rate.total}</text>"
        )
    return "".join(parts)


def _ticks(low: int, high: int) -> list[int]:
    """At most about eight whole-number ticks from `low` to `high`."""
    step = max(1, -(-(high - low) // 8))
    return list(range(low, high + 1, step))


def _panel(experiment: str, series: Series, colours: dict[str, str], x_label: str,
           y_label: str) -> str:  # fmt: skip
    """One panel's SVG group, drawn in a PANEL_WIDTH x PANEL_HEIGHT box."""
    left, top = MARGIN["left"], MARGIN["top"]
    width = PANEL_WIDTH - MARGIN["left"] - MARGIN["right"]
    height = PANEL_HEIGHT - MARGIN["top"] - MARGIN["bottom"]
    xs = [x for line in series.values() for x in line.xs]
    low, high = min(xs), max(max(xs), min(xs) + 1)

    def at(x: float, y: float) -> str:
        return f"{left + (x - low) / (high - low) * width:.1f},{top + (1 - y) * height:.1f}"

    parts = [
        f'<text x="{left + width / 2}" y="20" class="title">{escape(experiment)}</text>',
        f'<rect x="{left}" y="{top}" width="{width}" height="{height}" class="frame"/>',
    ]
    for tick in (0, 0.2, 0.4, 0.6, 0.8, 1.0):
        y = top + (1 - tick) * height
        parts.append(
            f'<line x1="{left}" x2="{left + width}" y1="{y:.1f}" y2="{y:.1f}" '
            f'class="grid"/><text x="{left - 6}" y="{y + 4:.1f}" class="ytick">'
            f"{tick:.1f}</text>"
        )
    for tick in _ticks(low, high):
        x = left + (tick - low) / (high - low) * width
        parts.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{top + height}" '
            f'class="grid"/><text x="{x:.1f}" y="{top + height + 16}" class="xtick">'
            f"{tick}</text>"
        )
    parts.append(
        f'<text x="{left + width / 2}" y="{PANEL_HEIGHT - 8}" class="label">'
        f"{escape(x_label)}</text>"
    )
    parts.append(
        f'<text x="14" y="{top + height / 2}" class="label" transform="rotate(-90 14 '
        f'{top + height / 2})">{escape(y_label)}</text>'
    )
    # Every band under every line, so that no band hides another model's line.
    for model, line in sorted(series.items()):
        for segment in _band_segments(line):
            outline = [at(x, high) for x, (_, high) in segment]
            outline += [at(x, low) for x, (low, _) in reversed(segment)]
            parts.append(
                f'<polygon points="{" ".join(outline)}" fill="{colours[model]}" class="band">'
                f"<title>{escape(model)}: 95% interval</title></polygon>"
            )
    for model, (line_xs, line_ys, _) in sorted(series.items()):
        points = " ".join(at(x, y) for x, y in zip(line_xs, line_ys, strict=True))
        colour = colours[model]
        parts.append(
            f'<polyline points="{points}" stroke="{colour}" class="line">'
            f"<title>{escape(model)}</title></polyline>"
        )
        parts += [f'<circle cx="{p.split(",")[0]}" cy="{p.split(",")[1]}" r="2.5" '
                  f'fill="{colour}"/>' for p in points.split()]  # fmt: skip
    return "".join(parts)


def _band_segments(line: Line) -> list[list[tuple[int, Interval]]]:
    """The runs of consecutive points of `line` that have an interval: one band each (a point
    without one, a round of a single episode, breaks the band)."""
    segments: list[list[tuple[int, Interval]]] = [[]]
    for x, band in zip(line.xs, line.bands or [], strict=False):
        if math.isnan(band[0]):
            segments.append([])
        else:
            segments[-1].append((x, band))
    return [segment for segment in segments if segment]


def _colours(models: Iterable[str]) -> dict[str, str]:
    """A colour per model, in the order of their names."""
    return {model: COLOURS[i % len(COLOURS)] for i, model in enumerate(sorted(models))}


def _plot(panels: Panels, path: Path, title: str, x_label: str, y_label: str,
          caption: Sequence[str] = ()) -> None:  # fmt: skip
    """One panel per experiment, one line per model, `caption`'s lines under the legend; no
    file when there is no line to draw."""
    if not panels:
        return
    colours = _colours({model for series in panels.values() for model in series})
    groups = [
        _panel(experiment, series, colours, x_label, y_label)
        for experiment, series in sorted(panels.items())
    ]
    _figure(groups, colours, path, title, caption=caption)


def _figure(
    panels: Sequence[str], colours: dict[str, str], path: Path, title: str, columns: int = COLUMNS,
    fit_legend: bool = False, caption: Sequence[str] = (),
) -> None:  # fmt: skip
    """Lay out panels (each a PANEL_WIDTH x PANEL_HEIGHT group) in rows of `columns`, under the
    title and above a legend of every model in two columns, then `caption`'s lines, into an SVG
    file; with `fit_legend`, the legend in one column when two would not hold the longest
    name."""
    models = list(colours)
    columns = min(len(panels), columns)
    rows = -(-len(panels) // columns)
    legend_top = 40 + rows * PANEL_HEIGHT + 10
    width = columns * PANEL_WIDTH
    # About 7 pixels a character at the legend's 12 px, after the 30 of its line sample.
    wide = fit_legend and 30 + 7 * max(map(len, models)) > width / 2 - 20
    per_row = 1 if wide else 2
    height = legend_top + 22 * -(-len(models) // per_row) + 10
    notes = [
        f'<text x="20" y="{height + 16 * i + 8}" class="legend">{escape(line)}</text>'
        for i, line in enumerate(caption)
    ]
    height += 16 * len(caption) + (8 if caption else 0)
    groups = [
        f'<g transform="translate({(i % columns) * PANEL_WIDTH},'
        f'{40 + (i // columns) * PANEL_HEIGHT})">{panel}</g>'
        for i, panel in enumerate(panels)
    ]
    legend = [
        f'<g transform="translate({20 + (i % per_row) * width / 2},'
        f'{legend_top + 22 * (i // per_row)})">'
        f'<line x1="0" x2="24" y1="-4" y2="-4" stroke="{colours[model]}" class="line"/>'
        f'<text x="30" y="0" class="legend">{escape(model)}</text></g>'
        for i, model in enumerate(models)
    ]
    style = (
        "text{font-family:sans-serif;fill:#222}.title{font-size:14px;text-anchor:middle}"
        ".label{font-size:12px;text-anchor:middle}.xtick{font-size:11px;text-anchor:middle}"
        ".ytick{font-size:11px;text-anchor:end}.legend{font-size:12px}"
        ".frame{fill:none;stroke:#888}.grid{stroke:#ddd}.line{fill:none;stroke-width:2}"
        ".band{fill-opacity:0.15;stroke:none}.bar{stroke-width:2;stroke-opacity:0.5}"
        ".count{font-size:10px;fill:#555}"
    )
    write_text(path, (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}"><style>{style}</style><rect width="100%" '
        f'height="100%" fill="white"/><text x="{width / 2}" y="24" class="title" '
        f'style="font-size:16px">{escape(title)}</text>{"".join(groups)}{"".join(legend)}'
        f'{"".join(notes)}</svg>\n'
    ))  # fmt: skip
