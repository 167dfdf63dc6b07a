"""The "Diagnostics" section of results.md: where each model's errors lie, with intervals.

Tables per model, then per model and experiment: over- and under-attribution with early
disclosures and slot-filling failures; under-attribution by rounds since the slot became shared;
the failures by kind; accuracy by position in the round; with two listeners, each listener's
over- and under-attribution; with a questioner acting through functions, its action types per
turn. Every rate reads `rate (count/total) [low, high]`: the counts say how little a rate of a
few episodes rests on, the interval how far it could move (diagnostics/rates.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from privateshared.bench.reporting.cells import fixed, interval_cell, markdown_table
from privateshared.bench.reporting.diagnostics.episode import FAILURE_KINDS, LAGS, FailureKind
from privateshared.bench.reporting.diagnostics.rates import Diagnostics, EpisodeMean, Rate
from privateshared.bench.reporting.evaluate import Aggregate, Evaluation

FAILURE_NAMES: dict[FailureKind, str] = {
    "other_slot_value": "another slot's value",
    "value_not_in_instance": "a value not in the instance",
    "value_missing": "value missing",
    "unclassified": "unclassified (domain's values unknown)",
}
"""Each kind of slot-filling failure as the table heads it."""


def rate_cell(rate: Rate) -> str:
    """e.g. `0.33 (5/15) [0.20, 0.47]`; the interval left out where there is none, n/a without
    anything counted."""
    if not rate.total:
        return "n/a"
    cell = f"{rate.rate:.2f} ({rate.count}/{rate.total})"
    return cell if math.isnan(rate.ci95[0]) else f"{cell} {interval_cell(rate.ci95, 2)}"


def mean_cell(mean: EpisodeMean) -> str:
    """e.g. `0.83 [0.70, 0.95]`; n/a without an episode."""
    if not mean.episodes:
        return "n/a"
    cell = fixed(mean.mean, 2)
    return cell if math.isnan(mean.ci95[0]) else f"{cell} {interval_cell(mean.ci95, 2)}"


def _rows(evaluation: Evaluation) -> list[tuple[Aggregate, Diagnostics]]:
    """Each model over all its experiments, then on each, where it has diagnostics."""
    rows = []
    for model in evaluation.models:
        group = [model, *(row for row in evaluation.experiments if row.model == model.model)]
        rows += [(row, row.diagnostics) for row in group if row.diagnostics is not None]
    return rows


def _table(
    rows: Sequence[tuple[Aggregate, Diagnostics]], header: Sequence[str],
    cells: Callable[[Diagnostics], list[str]],
) -> str:  # fmt: skip
    return markdown_table(
        ["model", "experiment", *header],
        [[row.model, row.experiment or "all", *cells(found)] for row, found in rows],
        left=2,
    )


def has_action_types(evaluation: Evaluation) -> bool:
    """Whether any model's questioner acted through functions, so that its action types count."""
    return any(found.action_type_accuracy.episodes for _, found in _rows(evaluation))


def _headline(found: Diagnostics) -> list[str]:
    return [
        str(found.episodes),
        rate_cell(found.over_attribution),
        rate_cell(found.under_attribution),
        rate_cell(found.early_disclosures),
        rate_cell(found.slot_filling_failures),
    ]


def _lags(found: Diagnostics) -> list[str]:
    by_lag = found.under_attribution_by_lag
    return [rate_cell(by_lag[bucket]) if bucket in by_lag else "n/a" for bucket in LAGS]


def _listeners(found: Diagnostics) -> list[str]:
    cells = []
    for rank in ("1st", "2nd"):
        rates = found.by_listener.get(rank)
        cells += ["n/a", "n/a"] if rates is None else [
            rate_cell(rates.over_attribution), rate_cell(rates.under_attribution),
        ]  # fmt: skip
    return cells


def _shares(rates: Mapping[int, Rate], count: int) -> list[str]:
    """The share of each of 1 to `count`, empty where nothing was counted."""
    return [fixed(rates[i].rate, 2) if i in rates else "" for i in range(1, count + 1)]


def diagnostics_section(evaluation: Evaluation) -> str | None:
    """The section, or None when no episode's records could be read."""
    rows = _rows(evaluation)
    if not rows:
        return None
    parts = [
        "## Diagnostics\n\nWhere the answers go wrong, counted from the records over every "
        "probe answered yes or no, aborted episodes included. Over-attribution: a slot still "
        "private answered shared (yes); under-attribution: a slot already shared answered "
        "private (no). Early disclosures counted: probes of a slot whose value an answer gave "
        "before it was asked, until it was asked, answered shared. Slot-filling failures: valid "
        "answers without their slot's value. Each rate as rate (count/total) [95% interval]: "
        "a percentile bootstrap of the episodes within each experiment, never of their probes "
        f"({evaluation.resamples} resamples, seed {evaluation.seed}); no interval where fewer "
        "than two episodes count. diagnostics.svg draws them beside accuracy_by_round.svg.",
        _table(rows, HEADLINE, _headline),
        "### Under-attribution by rounds since the slot became shared\n\nRound 0 is the one "
        "right after the answer that shared it: a model that updates late errs at 0 and 1, one "
        "that never updates at every lag.",
        _table(rows, [f"lag {bucket}" for bucket in LAGS], _lags),
    ]
    # Unclassified only where some failure was: a folder whose domains are all known has none.
    kinds = [
        kind
        for kind in FAILURE_KINDS
        if kind != "unclassified"
        or any(kind in d.failure_kinds and d.failure_kinds[kind].count for _, d in rows)
    ]

    def failures(found: Diagnostics) -> list[str]:
        shares = found.failure_kinds
        return [
            str(found.slot_filling_failures.count),
            *(rate_cell(shares[kind]) if kind in shares else "n/a" for kind in kinds),
        ]

    positions = max(max(d.accuracy_by_position, default=0) for _, d in rows)
    parts += [
        "### Slot-filling failures by kind\n\nWhat an answer without its value gave instead, "
        "as a share of the failures, by the game's containment rule: another slot's value of "
        "the instance; another value the domain offers for the slot; or neither, where the "
        "right value said in other words also falls.",
        _table(rows, ["failures", *(FAILURE_NAMES[kind] for kind in kinds)], failures),
        "### Accuracy by position in the round\n\nThe share of probes answered right by their "
        "place in the round's order (1 the first asked); results.json gives each its interval.",
        _table(
            rows,
            [str(position) for position in range(1, positions + 1)],
            lambda found: _shares(found.accuracy_by_position, positions),
        ),
    ]
    listened = [(row, found) for row, found in rows if found.by_listener]
    if listened:
        parts += [
            "### Per listener\n\n1st: the questioner; 2nd: the one who joins or takes over.",
            _table(listened, LISTENER_COLUMNS, _listeners),
        ]
    questioned = [(row, d) for row, d in rows if d.action_type_accuracy.episodes]
    if questioned:
        turns = max(max(d.action_type_accuracy_by_turn, default=0) for _, d in questioned)
        parts += [
            "### The questioner's action types\n\nMAS4CS's Action-Type Accuracy: a turn is "
            "right when the kinds of its valid calls are the ones it called for (record while a "
            "value heard is not recorded right; ask while a slot's value is unheard, else "
            "finish); per episode the share of its turns, then the mean over episodes. Per "
            "turn (1 prepares the first question), the share of episodes right there.",
            _table(
                questioned,
                ["action-type accuracy", *(f"turn {t}" for t in range(1, turns + 1))],
                lambda found: [
                    mean_cell(found.action_type_accuracy),
                    *_shares(found.action_type_accuracy_by_turn, turns),
                ],
            ),
        ]
    return "\n\n".join(parts)


HEADLINE = ["episodes", "over-attribution", "under-attribution", "early disclosures counted",
            "slot-filling failures"]  # fmt: skip
LISTENER_COLUMNS = ["over-attribution 1st", "under-attribution 1st", "over-attribution 2nd",
                    "under-attribution 2nd"]  # fmt: skip
