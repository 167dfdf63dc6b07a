"""The diagnostics of a group of episodes (one model, or one model on one experiment): each
rate with its 95% interval.

A rate pools its episodes' counts (episode.py): over-attribution is every private probe answered
yes over every private probe answered yes or no, whichever episode they came from. Its interval
is a percentile bootstrap of the episodes, resampled within each experiment and the rate
recomputed from the resampled counts, as every interval of the evaluation is
(uncertainty.py): episodes, never probes, since the probes of one dialogue go together. All
rates of a group come from the same resamples; a rate gets an interval where two episodes count
towards it and resampling can vary something, else none (NaN), as the Quality Score needs two
played episodes.

The questioner's action-type accuracy is MAS4CS's: the mean over episodes of each episode's
mean over its turns (its dataset level), not a pooled rate; per turn it is the share of
episodes whose turn was right.

Only played and aborted episodes count (errored and unscored ones are the infrastructure's, as
in % Played), and only those whose records could be read.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from pydantic import BaseModel, ConfigDict

from privateshared.bench.reporting.diagnostics.episode import (
    FAILURE_KINDS,
    LAGS,
    EpisodeDiagnostics,
    FailureKind,
    LagBucket,
    Listener,
    Tally,
)
from privateshared.bench.reporting.statistics import (
    CONFIDENCE,
    NO_INTERVAL,
    SEED,
    Floats,
    Interval,
    has_spread,
    ratio,
    resampled_totals,
)

if TYPE_CHECKING:  # evaluate.py imports this module; only the annotations need its records
    from privateshared.bench.reporting.evaluate import EpisodeRecord


class Rate(BaseModel):
    """`count` of `total` as a share, with its 95% interval."""

    model_config = ConfigDict(frozen=True)

    rate: float
    """count / total; NaN when total is 0."""
    ci95: tuple[float, float]
    """Percentile bootstrap of the episodes; NaN unless two episodes count towards it."""
    count: int
    total: int


class EpisodeMean(BaseModel):
    """A mean over episodes of one value per episode, with its 95% interval."""

    model_config = ConfigDict(frozen=True)

    mean: float
    """NaN without an episode."""
    ci95: tuple[float, float]
    """Percentile bootstrap of the episodes; NaN for fewer than two."""
    episodes: int


class AttributionRates(BaseModel):
    """Over- and under-attribution of one listener."""

    model_config = ConfigDict(frozen=True)

    over_attribution: Rate
    under_attribution: Rate


class Diagnostics(BaseModel):
    """Where a group of episodes' scorekeeping errors lie: its rates, each with its interval."""

    model_config = ConfigDict(frozen=True)

    episodes: int
    """Played and aborted episodes whose records were read."""
    over_attribution: Rate
    """Probes whose truth is private answered yes, of those answered yes or no."""
    under_attribution: Rate
    """Probes whose truth is shared answered no, of those answered yes or no."""
    by_listener: dict[Listener, AttributionRates] = {}
    """Two listeners only: the same per listener, 1st the questioner."""
    under_attribution_by_lag: dict[LagBucket, Rate] = {}
    """Under-attribution by rounds since the slot became shared: 0, 1, 2, 3+."""
    early_disclosures: Rate
    """Probes of slots whose value was given before it was asked, until it was asked, answered
    shared (yes): does the answerer count what it volunteered?"""
    accuracy_by_position: dict[int, Rate] = {}
    """Position of the probe in its round (1 the first) -> right, of those answered."""
    slot_filling_failures: Rate
    """Valid answers without their slot's value, of the valid answers."""
    failure_kinds: dict[FailureKind, Rate] = {}
    """Each kind's share of those failures: another slot's value, a value not in the instance,
    the value missing; unclassified where the domain's values were unknown."""
    action_type_accuracy: EpisodeMean
    """The questioner's (MAS4CS): mean over episodes of the share of turns whose kinds of call
    were the ones called for; NaN without a questioner acting through functions."""
    action_type_accuracy_by_turn: dict[int, Rate] = {}
    """Questioner turn (1 prepares the first question) -> turns right, of the turns."""


_OVER, _UNDER, _EARLY, _FAILURES, _ACTIONS = "over", "under", "early", "failures", "actions"


def _tallies(counted: EpisodeDiagnostics) -> dict[str, tuple[float, float]]:
    """One episode's counts as (numerator, denominator) columns, keyed by what they count.

    The action-type accuracy is the episode's own mean, over 1: a mean of episode means."""
    turns = sum(counted.action_types.values(), Tally())
    failures = counted.slot_filling_failures.count
    tallies: dict[str, Tally] = {
        _OVER: counted.attribution.over_attribution,
        _UNDER: counted.attribution.under_attribution,
        **{f"{rank} {_OVER}": a.over_attribution for rank, a in counted.by_listener.items()},
        **{f"{rank} {_UNDER}": a.under_attribution for rank, a in counted.by_listener.items()},
        **{f"lag {b}": tally for b, tally in counted.under_attribution_by_lag.items()},
        _EARLY: counted.early_disclosures,
        **{f"position {p}": tally for p, tally in counted.accuracy_by_position.items()},
        _FAILURES: counted.slot_filling_failures,
        **{f"kind {kind}": Tally(count=counted.failure_kinds.get(kind, 0), total=failures)
           for kind in FAILURE_KINDS},
        **{f"turn {t}": tally for t, tally in counted.action_types.items()},
    }  # fmt: skip
    columns = {key: (float(t.count), float(t.total)) for key, t in tallies.items()}
    if turns.total:
        columns[_ACTIONS] = (turns.count / turns.total, 1.0)
    return columns


def diagnose(
    episodes: Sequence[EpisodeRecord], resamples: int, seed: int = SEED
) -> Diagnostics | None:
    """Return the diagnostics of a group of episodes, every interval from the same `resamples`
    bootstrap resamples; None when no played or aborted episode's records were read."""
    counted = [
        (episode.experiment, _tallies(episode.diagnostics))
        for episode in episodes
        if episode.status in ("played", "aborted") and episode.diagnostics is not None
    ]
    if not counted:
        return None
    keys = list(dict.fromkeys(key for _, columns in counted for key in columns))
    by_experiment: dict[str, list[list[float]]] = {}
    for experiment, columns in counted:
        row = [value for key in keys for value in columns.get(key, (0.0, 0.0))]
        by_experiment.setdefault(experiment, []).append(row)
    strata = [np.array(rows, dtype=float) for rows in by_experiment.values()]
    observed = np.sum([units.sum(axis=0) for units in strata], axis=0)
    contributing = np.sum([(units > 0).sum(axis=0) for units in strata], axis=0)
    bounds = _intervals(strata, resamples, seed) if has_spread(strata) else None

    def interval(i: int) -> Interval:
        if bounds is None or contributing[2 * i + 1] < 2:
            return NO_INTERVAL
        low, high = bounds[:, i]
        return NO_INTERVAL if math.isnan(low) else (float(low), float(high))

    def rate(key: str) -> Rate:
        if key not in keys:
            return Rate(rate=math.nan, ci95=NO_INTERVAL, count=0, total=0)
        i = keys.index(key)
        count, total = observed[2 * i], observed[2 * i + 1]
        share = float(count / total) if total else math.nan
        return Rate(rate=share, ci95=interval(i), count=int(count), total=int(total))

    def listener(rank: Listener) -> AttributionRates:
        return AttributionRates(
            over_attribution=rate(f"{rank} {_OVER}"), under_attribution=rate(f"{rank} {_UNDER}")
        )

    ranks: tuple[Listener, ...] = ("1st", "2nd")
    positions = sorted(int(key.split()[1]) for key in keys if key.startswith("position "))
    turns = sorted(int(key.split()[1]) for key in keys if key.startswith("turn "))
    failures = rate(_FAILURES)
    if _ACTIONS in keys:
        i = keys.index(_ACTIONS)
        actions = EpisodeMean(
            mean=float(observed[2 * i] / observed[2 * i + 1]),
            ci95=interval(i),
            episodes=int(observed[2 * i + 1]),
        )
    else:
        actions = EpisodeMean(mean=math.nan, ci95=NO_INTERVAL, episodes=0)
    return Diagnostics(
        episodes=len(counted),
        over_attribution=rate(_OVER),
        under_attribution=rate(_UNDER),
        by_listener={rank: listener(rank) for rank in ranks if f"{rank} {_OVER}" in keys},
        under_attribution_by_lag={b: rate(f"lag {b}") for b in LAGS if f"lag {b}" in keys},
        early_disclosures=rate(_EARLY),
        accuracy_by_position={p: rate(f"position {p}") for p in positions},
        slot_filling_failures=failures,
        failure_kinds={kind: rate(f"kind {kind}") for kind in FAILURE_KINDS} if failures.count
        else {},
        action_type_accuracy=actions,
        action_type_accuracy_by_turn={t: rate(f"turn {t}") for t in turns},
    )  # fmt: skip


def _intervals(strata: Sequence[Floats], resamples: int, seed: int) -> Floats:
    """The percentile interval of every column pair's ratio, from one set of resamples: shape
    (2, pairs), low then high; NaN for a pair without a denominator in any resample. The same
    as `percentile_interval` of each pair's resampled ratios (resamples without a denominator
    left out), all pairs at once: a group has dozens."""
    totals = resampled_totals(strata, resamples, seed)
    ratios = ratio(totals[:, 0::2], totals[:, 1::2])
    tail = 100 * (1 - CONFIDENCE) / 2
    defined = ~np.isnan(ratios).all(axis=0)
    bounds = np.full((2, ratios.shape[1]), math.nan)
    if defined.any():
        bounds[:, defined] = np.nanpercentile(ratios[:, defined], [tail, 100 - tail], axis=0)
    return bounds
