"""Intervals and tests over per-episode results: pure functions of numbers, seeded.

evaluate.py reads the episodes back and uncertainty.py turns them into numbers per unit; this
module holds the statistics themselves, over nothing but numbers:

- `wilson_interval`: Wilson's score interval of a proportion (% Played);
- `resampled_totals`, `percentile_interval`, `mean_interval`: a percentile bootstrap that
  resamples units within strata (episodes within experiments) and sums their columns, so that
  any ratio of sums (a mean over played episodes, % Played, their product) is recomputed per
  resample;
- `sign_flip_p_value`: a paired permutation test of a mean difference (Main Score);
- `mcnemar_p_value`: McNemar's exact test of paired yes/no outcomes (played or aborted);
- `holm`: Holm's step-down adjustment of a family of p-values;
- `pairs_for_power`: how many pairs tell apart a given mean difference.

The units are always episodes, or groups of episodes (an instance played by several models, the
two episodes of a pair), never single probes: a model's answers to the probes of one episode
depend on each other (one dialogue), so resampling probes would pretend to far more evidence
than the episodes hold (Miller, "Adding Error Bars to Evals", 2024).

Ours, not scipy's. scipy offers Wilson's interval (`binomtest(...).proportion_ci`), the exact
binomial test, the permutation test and the bootstrap, but importing `scipy.stats` takes 0.5 to
0.65 s (measured with `python -X importtime`, on top of the 1.4 s an `eval` already spends
importing, 2-core development machine): a third more on every `eval` and every run's final
report, for routines of a few lines here. So they are written on numpy and the standard library,
each with its formula and convention named, and tests/test_statistics.py checks every one
against scipy's (a development dependency). scipy has no stratified bootstrap, and neither
numpy nor scipy has Holm's correction, so those two would be ours anyway.
"""

from __future__ import annotations

import math
from collections.abc import Sequence, Sized
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

Interval = tuple[float, float]
"""(low, high); NaN at both ends where no interval can be given."""
NO_INTERVAL: Interval = (math.nan, math.nan)

CONFIDENCE = 0.95
"""The level of every interval."""
SEED = 20251121
"""The fixed seed of every resampling, so that a report is the same each time it is made."""

Floats = npt.NDArray[np.float64]


def wilson_interval(successes: int, trials: int, confidence: float = CONFIDENCE) -> Interval:
    """Return Wilson's score interval (no continuity correction) of `successes` in `trials`, as
    proportions; NO_INTERVAL without trials. The same as scipy's
    `binomtest(successes, trials).proportion_ci(confidence, method="wilson")`."""
    if trials <= 0:
        return NO_INTERVAL
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    z2 = z * z
    centre = (successes + z2 / 2) / (trials + z2)
    half = z / (trials + z2) * math.sqrt(successes * (trials - successes) / trials + z2 / 4)
    return max(0.0, centre - half), min(1.0, centre + half)


def has_spread(strata: Sequence[Sized]) -> bool:
    """Whether resampling `strata` can vary anything: some stratum has two units or more (a
    stratum of one unit is redrawn as itself every time)."""
    return any(len(units) >= 2 for units in strata)


def resampled_totals(strata: Sequence[Floats], resamples: int, seed: int = SEED) -> Floats:
    """Resample each stratum's units with replacement, as many as it has, and sum the units'
    columns over every stratum: one row of totals per resample, shape (resamples, columns).

    Each stratum is an array of shape (units, columns). A resample's totals are how often it
    drew each unit times the units, so the totals of all resamples are one matrix product
    (counting the draws with bincount is ten times faster than numpy's multinomial). scipy's
    bootstrap has no strata; this one keeps each experiment's number of units fixed, as the
    benchmark does."""
    rng = np.random.default_rng(seed)
    columns = strata[0].shape[1] if strata else 0
    totals = np.zeros((resamples, columns))
    for units in strata:
        count = len(units)
        if count:
            draws = rng.integers(0, count, size=(resamples, count))
            # Resample r's draws shifted by r x count: one bincount counts every resample's.
            draws += (np.arange(resamples) * count)[:, None]
            drawn = np.bincount(draws.ravel(), minlength=resamples * count)
            totals += drawn.reshape(resamples, count) @ units
    return totals


def percentile_interval(estimates: Floats, confidence: float = CONFIDENCE) -> Interval:
    """Return the percentile interval of bootstrap `estimates`, leaving out resamples where the
    statistic is undefined (NaN); NO_INTERVAL when none is defined."""
    defined = estimates[~np.isnan(estimates)]
    if not len(defined):
        return NO_INTERVAL
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(defined, [tail, 100 - tail])
    return float(low), float(high)


def ratio(numerator: Floats, denominator: Floats) -> Floats:
    """numerator / denominator, NaN where the denominator is 0 (no unit to average over)."""
    safe = np.where(denominator > 0, denominator, 1.0)
    return np.where(denominator > 0, numerator / safe, math.nan)


def mean_interval(
    strata: Sequence[Sequence[float]], resamples: int, seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> Interval:  # fmt: skip
    """Return the stratified percentile bootstrap interval of the mean of every value (each
    value one unit, resampled within its stratum); NO_INTERVAL unless some stratum has two."""
    if not has_spread(strata):
        return NO_INTERVAL
    distinct = {value for values in strata for value in values}
    if len(distinct) == 1:  # every resample's mean is that value: no need to draw them
        (value,) = distinct
        return value, value
    units = [np.column_stack([values, np.ones(len(values))]) for values in strata if len(values)]
    totals = resampled_totals(units, resamples, seed)
    return percentile_interval(ratio(totals[:, 0], totals[:, 1]), confidence)


def sign_flip_p_value(differences: Sequence[float], resamples: int, seed: int = SEED) -> float:
    """Return the two-sided p-value of a paired permutation test that the mean difference is 0.

    Under that hypothesis each pair's difference is as likely to have either sign; the p-value
    is the share of sign assignments whose mean difference is at least as far out as the one
    observed, on either side (twice the smaller tail, at most 1). Exact, over all 2^n
    assignments, when 2^n <= `resamples`; else over `resamples` random ones, the observed
    assignment counted once more above and below. That is scipy's
    `permutation_test((differences,), mean, permutation_type="samples")`, which decides exact or
    random the same way and compares within the same relative tolerance. NaN without pairs.
    """
    values = np.asarray(differences, dtype=float)
    n = len(values)
    if n == 0:
        return math.nan
    observed = float(values.mean())
    tolerance = abs(observed) * np.finfo(float).eps * 100
    exact = 2**n <= resamples
    rng = np.random.default_rng(seed)
    assignments = 2**n if exact else resamples
    at_least = at_most = 0 if exact else 1  # a random test counts the observed once more
    for start in range(0, assignments, _BATCH):  # batches: 2^n x n signs may not fit in memory
        rows = min(_BATCH, assignments - start)
        if exact:  # row i flips the pairs whose bit is set in i: every assignment once
            bits = (np.arange(start, start + rows)[:, None] >> np.arange(n)) & 1
            signs = 1 - 2 * bits
        else:
            signs = rng.choice(np.array([-1, 1]), size=(rows, n))
        null = (signs * values).mean(axis=1)
        at_least += int(np.count_nonzero(null >= observed - tolerance))
        at_most += int(np.count_nonzero(null <= observed + tolerance))
    total = assignments if exact else assignments + 1
    return min(1.0, 2 * min(at_least, at_most) / total)


_BATCH = 1 << 16
"""Sign assignments drawn or enumerated at a time."""


def mcnemar_p_value(only_first: int, only_second: int) -> float:
    """Return the two-sided p-value of McNemar's exact test: of the discordant pairs, did the
    first side win as often as the second? A binomial test of `only_first` successes in
    `only_first + only_second` tries at 1/2 (scipy's `binomtest(...).pvalue`; at 1/2 the
    binomial is symmetric, so it is twice the smaller tail, at most 1); 1 without a discordant
    pair."""
    tries = only_first + only_second
    if tries == 0:
        return 1.0
    tail = sum(math.comb(tries, k) for k in range(min(only_first, only_second) + 1))
    return min(1.0, 2 * tail / (1 << tries))  # exact integers, one rounding


def holm(p_values: Sequence[float]) -> list[float]:
    """Adjust a family of p-values by Holm's step-down method, in the given order: the i-th
    smallest of m is multiplied by m - i + 1, and each adjusted value is at least the one
    before it (at most 1). NaN stays NaN and is not counted in m."""
    adjusted = [math.nan] * len(p_values)
    ranked = sorted((p, i) for i, p in enumerate(p_values) if not math.isnan(p))
    highest = 0.0
    for rank, (p, i) in enumerate(ranked):
        highest = max(highest, min(1.0, (len(ranked) - rank) * p))
        adjusted[i] = highest
    return adjusted


POWER = 0.8
"""The power at which `pairs_for_power` tells a difference apart."""
SIGNIFICANCE = 0.05
"""The two-sided level of the test it is told apart by."""


def pairs_for_power(
    spread: float, difference: float, power: float = POWER, significance: float = SIGNIFICANCE
) -> int:
    """Return how many pairs a paired test needs to tell apart a true mean `difference` with
    `power` at two-sided level `significance`, when the paired differences have standard
    deviation `spread`: n = ((z(1 - significance/2) + z(power)) x spread / difference)^2,
    rounded up; the normal approximation of the paired t and sign-flip tests, which
    underestimates by a pair or two below about 20 pairs. But never fewer than the sign-flip
    test needs to reach `significance` at all, however clear the differences: its smallest
    p-value is 2 / 2^n (6 pairs at the 5% level)."""
    z = NormalDist().inv_cdf
    approximate = math.ceil(((z(1 - significance / 2) + z(power)) * spread / difference) ** 2)
    return max(approximate, math.ceil(math.log2(2 / significance)))
