"""How sure an evaluation's numbers are: their 95% intervals, and every two models compared.

evaluate.py aggregates the episodes read back from a results folder; it asks this module for
the intervals of each aggregate (`aggregate_intervals`) and for the paired comparisons of its
models (`compare_models`). This module turns episodes into units and statistics.py does the
statistics.

- % Played: Wilson's interval over the decided (played or aborted) episodes.
- Quality Score, clemscore, and the probe-level means (accuracy, kappa): a percentile bootstrap
  of the decided episodes, resampled within each experiment (stratified: every resample keeps
  each experiment's number of episodes, as the benchmark does) with the statistic recomputed
  on each resample exactly as `aggregate` computes it. Over several models ("all"), the unit
  resampled is the instance: its episodes, one per model that played it, go together, since
  models playing the same instance do not vary apart.
- Comparisons: two models paired on the instances both played (Main Score; a sign-flip test)
  or both decided (% Played; McNemar's exact test), the mean difference with a bootstrap
  interval over the pairs, stratified by experiment; Holm's correction over the comparisons
  of a metric.

Errored and unscored episodes are in none of these, as in % Played. Pairs are matched by
experiment and game id: the models of one results folder played the same instances file (a
folder mixing instances files would pair unlike instances).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from itertools import combinations
from typing import TYPE_CHECKING, Literal, NamedTuple

import numpy as np
from pydantic import BaseModel, ConfigDict

from privateshared.bench.reporting.statistics import (
    NO_INTERVAL,
    SEED,
    Floats,
    Interval,
    has_spread,
    holm,
    mcnemar_p_value,
    mean_interval,
    percentile_interval,
    ratio,
    resampled_totals,
    sign_flip_p_value,
    wilson_interval,
)
from privateshared.graph.records import ACCURACY, KAPPA, MAIN_SCORE

if TYPE_CHECKING:  # evaluate.py imports this module; only the annotations need its records
    from privateshared.bench.reporting.evaluate import EpisodeRecord

Instance = tuple[str, int]
"""An instance: the experiment's name and the game id."""


class AggregateIntervals(NamedTuple):
    """The 95% intervals of one aggregate's numbers; NO_INTERVAL where none can be given."""

    played: Interval
    """% Played, in percent: Wilson's, NO_INTERVAL without a decided episode."""
    quality_score: Interval
    """Bootstrap; needs two played episodes, as the standard deviation does. Resamples
    without a played episode have no Quality Score and are left out."""
    clemscore: Interval
    """Bootstrap; needs a played episode (clemscore is undefined without one). A resample
    without a played episode scores 0 (% Played 0 times any Quality Score)."""
    accuracy: Interval
    kappa: Interval
    """Bootstrap of the mean over played episodes, each episode's value one unit (its probes
    are never resampled); each needs two played episodes that define it."""


# The columns of an instance's unit: sums over its decided episodes. Every statistic of an
# aggregate is a ratio of column totals, so a resample's statistics come from its totals.
_PLAYED, _DECIDED, _MAIN, _MAINS, _ACCURACY, _ACCURACIES, _KAPPA, _KAPPAS = range(8)


def _unit(episodes: Sequence[EpisodeRecord]) -> list[float]:
    """The sums of one instance's decided episodes (one per model that played it)."""
    row = [0.0] * 8
    for episode in episodes:
        row[_DECIDED] += 1
        if episode.status != "played":
            continue
        row[_PLAYED] += 1
        for name, total, count in ((MAIN_SCORE, _MAIN, _MAINS), (ACCURACY, _ACCURACY, _ACCURACIES),
                                   (KAPPA, _KAPPA, _KAPPAS)):  # fmt: skip
            value = episode.score(name)
            if not math.isnan(value):
                row[total] += value
                row[count] += 1
    return row


def _strata(episodes: Sequence[EpisodeRecord]) -> list[Floats]:
    """The decided episodes as units (instances) grouped by experiment: an array per
    experiment, a row per instance."""
    by_instance: dict[str, dict[int, list[EpisodeRecord]]] = {}
    for episode in episodes:
        if episode.status in ("played", "aborted"):
            by_game = by_instance.setdefault(episode.experiment, {})
            by_game.setdefault(episode.game_id, []).append(episode)
    return [
        np.array([_unit(group) for group in by_game.values()], dtype=float)
        for by_game in by_instance.values()
    ]


def _quality(totals: Floats) -> Floats:
    return ratio(totals[:, _MAIN], totals[:, _MAINS])


def _clemscore(totals: Floats) -> Floats:
    played = ratio(totals[:, _PLAYED], totals[:, _DECIDED])
    return np.where(totals[:, _MAINS] > 0, played * _quality(totals), 0.0)


def aggregate_intervals(
    episodes: Sequence[EpisodeRecord], resamples: int, seed: int = SEED
) -> AggregateIntervals:
    """Return the 95% intervals of the aggregate `episodes` make (one model, one model on one
    experiment, or every model together), every bootstrap one from the same resamples."""
    strata = _strata(episodes)
    observed = np.sum([units.sum(axis=0) for units in strata], axis=0) if strata else np.zeros(8)
    low, high = wilson_interval(int(observed[_PLAYED]), int(observed[_DECIDED]))
    played = NO_INTERVAL if math.isnan(low) else (100 * low, 100 * high)
    if not has_spread(strata):
        return AggregateIntervals(played, NO_INTERVAL, NO_INTERVAL, NO_INTERVAL, NO_INTERVAL)
    totals = resampled_totals(strata, resamples, seed)

    def interval(statistic: Callable[[Floats], Floats], count: int, at_least: int) -> Interval:
        """The statistic's interval, if `observed` has `at_least` units counted in `count`."""
        return (
            percentile_interval(statistic(totals)) if observed[count] >= at_least else NO_INTERVAL
        )

    return AggregateIntervals(
        played=played,
        quality_score=interval(_quality, _MAINS, 2),
        clemscore=interval(_clemscore, _MAINS, 1),
        accuracy=interval(lambda t: ratio(t[:, _ACCURACY], t[:, _ACCURACIES]), _ACCURACIES, 2),
        kappa=interval(lambda t: ratio(t[:, _KAPPA], t[:, _KAPPAS]), _KAPPAS, 2),
    )


ComparedMetric = Literal["Main Score", "% Played"]
"""What two models are compared on: Main Score where both played, % Played where both
decided."""
COMPARED: tuple[ComparedMetric, ...] = ("Main Score", "% Played")


class Comparison(BaseModel):
    """Two models compared on the instances both played (Main Score) or both decided
    (% Played): model_a - model_b, paired."""

    model_config = ConfigDict(frozen=True)

    model_a: str
    """The pair folder first by name."""
    model_b: str
    metric: ComparedMetric
    pairs: int
    """Instances both models played (Main Score) or both played or aborted (% Played)."""
    experiments: int
    """Experiments those pairs come from."""
    mean_difference: float
    """Mean of model_a's minus model_b's Main Score over the pairs; for % Played, model_a's
    % Played minus model_b's, in points. NaN without pairs."""
    ci95: tuple[float, float]
    """95% percentile bootstrap interval of that mean, the pairs resampled within each
    experiment; NaN unless an experiment has two pairs."""
    p_value: float
    """Two-sided p-value that the two do not differ: a paired permutation (sign-flip) test for
    Main Score, McNemar's exact test for % Played; NaN without pairs."""
    p_holm: float
    """p_value adjusted by Holm's method over the comparisons of this metric (of this
    benchmark) that have one: what to read when many pairs of models are compared."""
    a_ahead: int
    """Pairs where model_a's is higher (for % Played: model_a played, model_b aborted)."""
    b_ahead: int
    """Pairs where model_b's is higher."""
    difference_std: float
    """Sample standard deviation (ddof=1) of the paired differences; NaN for fewer than two.
    How many instances a difference needs is computed from it (results.md)."""


def _outcomes(episodes: Sequence[EpisodeRecord]) -> dict[str, dict[Instance, EpisodeRecord]]:
    """Model -> its decided episodes by instance."""
    by_model: dict[str, dict[Instance, EpisodeRecord]] = {}
    for episode in episodes:
        if episode.status in ("played", "aborted"):
            by_model.setdefault(episode.model, {})[episode.experiment, episode.game_id] = episode
    return by_model


def _difference(metric: ComparedMetric, a: EpisodeRecord, b: EpisodeRecord) -> float:
    """a's minus b's on `metric`; NaN where this pair does not count."""
    if metric == "% Played":
        return 100.0 * ((a.status == "played") - (b.status == "played"))
    if a.status != "played" or b.status != "played":
        return math.nan
    return a.score(MAIN_SCORE) - b.score(MAIN_SCORE)


def _compare(
    metric: ComparedMetric, a: str, b: str, a_episodes: dict[Instance, EpisodeRecord],
    b_episodes: dict[Instance, EpisodeRecord], resamples: int, seed: int,
) -> Comparison:  # fmt: skip
    """One comparison, its p-value not yet adjusted."""
    by_experiment: dict[str, list[float]] = {}
    for instance in sorted(a_episodes.keys() & b_episodes.keys()):
        difference = _difference(metric, a_episodes[instance], b_episodes[instance])
        if not math.isnan(difference):
            by_experiment.setdefault(instance[0], []).append(difference)
    differences = [d for values in by_experiment.values() for d in values]
    if metric == "% Played":
        # McNemar on the discordant pairs: one played where the other aborted.
        p_value = mcnemar_p_value(differences.count(100.0), differences.count(-100.0))
        p_value = p_value if differences else math.nan
    else:
        p_value = sign_flip_p_value(differences, resamples, seed)
    return Comparison(
        model_a=a,
        model_b=b,
        metric=metric,
        pairs=len(differences),
        experiments=len(by_experiment),
        mean_difference=math.fsum(differences) / len(differences) if differences else math.nan,
        ci95=mean_interval(list(by_experiment.values()), resamples, seed),
        p_value=p_value,
        p_holm=math.nan,
        a_ahead=sum(d > 0 for d in differences),
        b_ahead=sum(d < 0 for d in differences),
        difference_std=float(np.std(differences, ddof=1)) if len(differences) > 1 else math.nan,
    )


def compare_models(
    episodes: Sequence[EpisodeRecord], resamples: int, seed: int = SEED
) -> tuple[Comparison, ...]:
    """Compare every two models of `episodes` on each metric, model_a before model_b by name,
    Main Score first; every pair of models is listed, also one without a common instance
    (pairs 0, NaN)."""
    outcomes = _outcomes(episodes)
    compared: list[Comparison] = []
    for metric in COMPARED:
        family = [
            _compare(metric, a, b, outcomes[a], outcomes[b], resamples, seed)
            for a, b in combinations(sorted(outcomes), 2)
        ]
        adjusted = holm([comparison.p_value for comparison in family])
        compared += [
            c.model_copy(update={"p_holm": p}) for c, p in zip(family, adjusted, strict=True)
        ]
    return tuple(compared)
