"""Intervals, tests and corrections (bench/reporting/statistics.py and uncertainty.py): small
cases whose answers are known by hand or from published tables, every routine of ours checked
against scipy's, and the bootstrap's coverage in a simulation.

scipy is a development dependency only: the package writes these routines itself rather than
import scipy.stats on every report (statistics.py says why), so they are compared here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest
from scipy import stats

from privateshared.bench.reporting.evaluate import EpisodeRecord
from privateshared.bench.reporting.statistics import (
    NO_INTERVAL,
    SEED,
    holm,
    mcnemar_p_value,
    mean_interval,
    pairs_for_power,
    resampled_totals,
    sign_flip_p_value,
    wilson_interval,
)
from privateshared.bench.reporting.uncertainty import (
    Comparison,
    aggregate_intervals,
    compare_models,
)

NAN = float("nan")


def same(actual: Sequence[float], expected: Sequence[float], tolerance: float = 1e-12) -> bool:
    """Equal within `tolerance`, NaN equal to NaN."""
    return len(actual) == len(expected) and all(
        (math.isnan(a) and math.isnan(e)) or abs(a - e) <= tolerance
        for a, e in zip(actual, expected, strict=True)
    )


# Wilson's interval


@pytest.mark.parametrize(
    ("successes", "trials", "low", "high"),
    [
        # Newcombe (1998), "Two-sided confidence intervals for the single proportion",
        # Statistics in Medicine 17, Table I, method 3 (score, no continuity correction).
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0000, 0.1611),  # none: the interval still reaches up
        (1, 29, 0.0061, 0.1718),
        # All successes: (0, 20) mirrored
        (20, 20, 0.8389, 1.0000),
    ],
    ids=["81-of-263", "15-of-148", "0-of-20", "1-of-29", "20-of-20"],
)
def test_wilson_interval_matches_newcombes_table(
    successes: int, trials: int, low: float, high: float
) -> None:
    interval = wilson_interval(successes, trials)
    assert same(interval, (low, high), tolerance=5e-5)


def test_wilson_interval_without_trials_is_none() -> None:
    assert same(wilson_interval(0, 0), NO_INTERVAL)


@pytest.mark.parametrize("trials", [1, 2, 7, 10, 50, 263])
def test_wilson_interval_is_scipys(trials: int) -> None:
    for successes in range(trials + 1):
        scipys = stats.binomtest(successes, trials).proportion_ci(0.95, method="wilson")
        assert same(wilson_interval(successes, trials), (scipys.low, scipys.high), 1e-12)


# The paired permutation (sign-flip) test


def test_identical_models_differ_by_nothing_with_p_1() -> None:
    assert sign_flip_p_value([0.0] * 50, resamples=9999) == 1.0  # random flips
    assert sign_flip_p_value([0.0] * 5, resamples=9999) == 1.0  # every flip


@pytest.mark.parametrize("pairs", [1, 2, 3, 6, 8, 10, 13])
def test_a_model_winning_every_pair_gets_the_exact_value(pairs: int) -> None:
    """Of the 2^n sign assignments only all-plus is as high as observed, only all-minus as
    low: p = 2 / 2^n (1 for a single pair)."""
    wins = [10.0 + k for k in range(pairs)]  # different margins: still only one extreme
    assert sign_flip_p_value(wins, resamples=9999) == min(1.0, 2 / 2**pairs)
    assert sign_flip_p_value([-w for w in wins], resamples=9999) == min(1.0, 2 / 2**pairs)


def test_sign_flip_by_hand() -> None:
    """Differences 1, 2, -3 (mean 0): the eight assignments sum to 6, 4, 2, 0, 0, -2, -4, -6,
    five at or above 0 and five at or below, so p = 2 x 5/8, capped at 1. Differences 3, 1:
    the means are 2, 1, -1, -2; one is as high as the observed 2, so p = 2 x 1/4."""
    assert sign_flip_p_value([1.0, 2.0, -3.0], resamples=100) == 1.0
    assert sign_flip_p_value([3.0, 1.0], resamples=100) == 0.5


@pytest.mark.parametrize("seed", range(6))
def test_sign_flip_is_scipys_permutation_test(seed: int) -> None:
    """Exact (2^n <= resamples): the same p-value as scipy's; random: close to it."""
    rng = np.random.default_rng(seed)
    exact = rng.normal(2, 5, size=9).round(1)  # ties and zeros happen, as in Main Scores

    def mean(x: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.mean(x, axis=axis)

    scipys = stats.permutation_test(
        (exact,), mean, permutation_type="samples", n_resamples=9999, vectorized=True
    )
    assert sign_flip_p_value(list(exact), resamples=9999) == pytest.approx(scipys.pvalue, 1e-12)
    drawn = rng.normal(4, 20, size=40)
    scipys = stats.permutation_test(
        (drawn,), mean, permutation_type="samples", n_resamples=9999, vectorized=True, rng=seed
    )
    ours = sign_flip_p_value(list(drawn), resamples=9999)
    # Both estimate the same p from 9999 random assignments each.
    spread = math.sqrt(scipys.pvalue * (1 - scipys.pvalue) / 9999) * 2
    assert abs(ours - scipys.pvalue) <= 5 * spread + 1e-3


def test_sign_flip_is_reproducible_and_nan_without_pairs() -> None:
    drawn = list(np.random.default_rng(1).normal(3, 20, size=30))
    assert sign_flip_p_value(drawn, 999) == sign_flip_p_value(drawn, 999)
    assert sign_flip_p_value(drawn, 999, seed=1) != sign_flip_p_value(drawn, 999, seed=2)
    assert math.isnan(sign_flip_p_value([], 999))


# McNemar's exact test


@pytest.mark.parametrize(
    ("only_first", "only_second", "expected"),
    [
        (0, 0, 1.0),  # no discordant pair: nothing speaks against equal
        (3, 3, 1.0),  # as many each way
        (5, 0, 2 / 2**5),  # one way every time: 2 x (1/2)^5
        (6, 0, 2 / 2**6),  # the fewest discordant pairs below 0.05
        (0, 6, 2 / 2**6),
        (4, 1, 2 * 6 / 2**5),  # 2 x P(X <= 1), X ~ Bin(5, 1/2) = 2 x (1 + 5) / 32
    ],
    ids=["none", "even", "five-nil", "six-nil", "nil-six", "four-one"],
)
def test_mcnemar_by_hand(only_first: int, only_second: int, expected: float) -> None:
    assert mcnemar_p_value(only_first, only_second) == expected


def test_mcnemar_is_scipys_binomtest() -> None:
    for only_first in range(0, 40, 3):
        for only_second in range(0, 40, 7):
            if only_first + only_second:
                scipys = stats.binomtest(only_first, only_first + only_second, 0.5).pvalue
                assert mcnemar_p_value(only_first, only_second) == pytest.approx(scipys, 1e-12)


# Holm's correction


@pytest.mark.parametrize(
    ("raw", "adjusted"),
    [
        # Sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1: 0.02, 0.03, 0.06, 0.04, and the
        # last raised to the one before it (step-down: never below an earlier one).
        ([0.01, 0.04, 0.03, 0.005], [0.03, 0.06, 0.06, 0.02]),
        ([0.5], [0.5]),  # one comparison: nothing to adjust
        ([0.4, 0.6], [0.8, 0.8]),  # capped at 1 and kept in order: 0.8, min(1, 0.6)
        ([0.01, NAN, 0.02], [0.02, NAN, 0.02]),  # NaN (no pairs) is not counted in m
        ([], []),
    ],
    ids=["four", "one", "ordered", "nan", "none"],
)
def test_holm(raw: list[float], adjusted: list[float]) -> None:
    assert same(holm(raw), adjusted)


# The bootstrap


def test_a_bootstrap_of_two_values_by_hand() -> None:
    """Two values 1 and 3 resampled: means 1 (1/4), 2 (1/2), 3 (1/4), so the 2.5th percentile
    is 1 and the 97.5th is 3."""
    assert mean_interval([[1.0, 3.0]], resamples=9999) == (1.0, 3.0)


@pytest.mark.parametrize(
    ("strata", "expected"),
    [
        ([[4.0]], NO_INTERVAL),  # one unit is redrawn as itself: no interval
        ([[4.0], [6.0]], NO_INTERVAL),  # one per stratum: the same
        ([[], [7.0, 7.0, 7.0]], (7.0, 7.0)),  # nothing varies: a point
        ([], NO_INTERVAL),
    ],
    ids=["one", "one-per-stratum", "constant", "empty"],
)
def test_a_bootstrap_without_spread(
    strata: list[list[float]], expected: tuple[float, float]
) -> None:
    assert same(mean_interval(strata, resamples=999), expected)


def test_resampling_keeps_each_stratum_whole() -> None:
    """Each resample draws as many units from each stratum as it has: the count column of a
    stratum of 3 and one of 5 totals 8 in every resample."""
    strata = [np.array([[1.0, 1.0]] * 3), np.array([[2.0, 1.0]] * 5)]
    totals = resampled_totals(strata, resamples=200)
    assert totals.shape == (200, 2)
    assert np.all(totals[:, 1] == 8) and np.all(totals[:, 0] == 3 + 10)


def test_the_bootstrap_is_reproducible_under_its_seed() -> None:
    values = [list(np.random.default_rng(k).normal(50, 20, size=10)) for k in range(5)]
    first = mean_interval(values, resamples=999)
    assert mean_interval(values, resamples=999) == first
    assert mean_interval(values, resamples=999, seed=SEED) == first
    assert mean_interval(values, resamples=999, seed=SEED + 1) != first


def test_the_bootstrap_covers_the_true_mean_at_about_the_nominal_rate() -> None:
    """Five experiments of ten episodes, each experiment with its own mean and a skewed,
    bounded score (as Main Scores are): the stratified percentile interval of the overall mean
    covers the true one in about 95% of 400 runs (a percentile interval runs a little short
    at this size; 95% +- 3.5 standard errors of a coverage over 400 runs)."""
    rng = np.random.default_rng(2024)
    means = np.array([0.2, 0.35, 0.5, 0.65, 0.8])
    truth = 100 * means.mean()
    runs, covered = 400, 0
    for _ in range(runs):
        strata = [list(100 * rng.beta(4 * m, 4 * (1 - m), size=10)) for m in means]
        low, high = mean_interval(strata, resamples=999, seed=int(rng.integers(1 << 30)))
        covered += low <= truth <= high
    assert 0.95 - 3.5 * math.sqrt(0.95 * 0.05 / runs) <= covered / runs <= 0.99


# How many pairs


@pytest.mark.parametrize(
    ("spread", "difference", "expected"),
    [
        (20.0, 5.0, 126),  # ((1.95996 + 0.84162) x 20 / 5)^2 = 125.58
        (5.0, 5.0, 8),  # 7.85
        (0.0, 5.0, 6),  # no spread: the sign-flip test's floor, 2 / 2^6 < 0.05
        (40.0, 5.0, 503),  # twice the spread, four times the pairs: 502.3
    ],
    ids=["sd-20", "sd-5", "no-spread", "sd-40"],
)
def test_pairs_for_power(spread: float, difference: float, expected: int) -> None:
    assert pairs_for_power(spread, difference) == expected


# Episodes: intervals of an aggregate, comparisons of models


def _episode(model: str, experiment: str, game_id: int, main: float | None) -> EpisodeRecord:
    """Played with Main Score `main`, aborted when None."""
    played = main is not None
    return EpisodeRecord(
        model=model, experiment_folder=f"0_{experiment}", experiment=experiment,
        episode=f"episode_{game_id}", game_id=game_id,
        status="played" if played else "aborted",
        scores={"Main Score": main if played else NAN, "Accuracy": 0.5 if played else NAN,
                "Kappa": NAN, "Aborted": 0 if played else 1},
    )  # fmt: skip


def test_aggregate_intervals_by_hand() -> None:
    """Three played (0, 50, 100) and one aborted in one experiment: % Played is Wilson's 3 of
    4; a resample whose played episodes are all the 0 (or all the 100) has a Quality Score of
    0 (100), 15/256 of resamples each, more than 2.5%, so those are the ends; accuracy is 0.5
    throughout; kappa is never defined."""
    episodes = [_episode("a", "x", k, main) for k, main in enumerate([0.0, 50.0, 100.0, None])]
    intervals = aggregate_intervals(episodes, resamples=9999)
    low, high = wilson_interval(3, 4)
    assert same(intervals.played, (100 * low, 100 * high))
    assert intervals.quality_score == (0.0, 100.0)
    # 0 when only the 0 and the abort are drawn (1/16 of resamples); 100 would need all four
    # draws the 100 (1/256), so the upper end falls short of it.
    assert intervals.clemscore[0] == 0.0 and 75.0 <= intervals.clemscore[1] < 100.0
    assert intervals.accuracy == (0.5, 0.5)
    assert same(intervals.kappa, NO_INTERVAL)


def test_one_played_episode_gives_no_quality_interval() -> None:
    """As its std: one Main Score says nothing about the spread; the clemscore still varies
    with how many resampled episodes were played (0 when none: % Played 0)."""
    episodes = [_episode("a", "x", k, main) for k, main in enumerate([80.0, None, None])]
    intervals = aggregate_intervals(episodes, resamples=999)
    assert same(intervals.quality_score, NO_INTERVAL)
    assert intervals.clemscore == (0.0, 80.0)


def test_over_several_models_an_instance_is_resampled_whole() -> None:
    """Two models scoring alike on every instance: resampling instances (each with both its
    episodes) gives the interval over both exactly that of either alone, from the same draws;
    resampling the episodes apart would make it narrower, as if twice the instances. (Wilson's
    interval of % Played counts episodes.)"""
    scores = [0.0, 50.0, 100.0, 30.0, None, 70.0, 90.0, 10.0]
    alone = [_episode("a", "x", k, main) for k, main in enumerate(scores)]
    both = alone + [_episode("b", "x", k, main) for k, main in enumerate(scores)]
    over_both, over_one = aggregate_intervals(both, 999), aggregate_intervals(alone, 999)
    assert over_both.quality_score == over_one.quality_score
    assert over_both.clemscore == over_one.clemscore
    assert over_both.quality_score[0] > 0  # the draws vary: not a case of no spread


def _comparison(compared: Sequence[Comparison], metric: str, a: str, b: str) -> Comparison:
    (found,) = [c for c in compared if (c.metric, c.model_a, c.model_b) == (metric, a, b)]
    return found


def test_identical_models_compare_equal() -> None:
    scores = [10.0, 20.0, None, 90.0, 35.0, 35.0, None, 60.0]
    episodes = [
        _episode(model, experiment, k, main)
        for model in ("a", "b")
        for experiment in ("x", "y")
        for k, main in enumerate(scores)
    ]
    compared = compare_models(episodes, resamples=999)
    main = _comparison(compared, "Main Score", "a", "b")
    assert (main.pairs, main.experiments, main.mean_difference, main.ci95) == (12, 2, 0.0, (0, 0))
    assert (main.p_value, main.p_holm, main.a_ahead, main.b_ahead) == (1.0, 1.0, 0, 0)
    played = _comparison(compared, "% Played", "a", "b")
    assert (played.pairs, played.mean_difference, played.p_value) == (16, 0.0, 1.0)


def test_a_model_winning_every_pair() -> None:
    """a beats b by 10 to 80 points on each of 8 instances, and plays one that b aborts; c never
    played: no Main Score pair with it, but % Played pairs on every instance."""
    episodes = [_episode("a", "x", k, 90.0) for k in range(9)]
    episodes += [_episode("b", "x", k, 10.0 * (k + 1) if k < 8 else None) for k in range(9)]
    episodes += [_episode("c", "x", k, None) for k in range(9)]
    compared = compare_models(episodes, resamples=9999)
    main = _comparison(compared, "Main Score", "a", "b")
    assert (main.pairs, main.a_ahead, main.b_ahead) == (8, 8, 0)
    assert main.mean_difference == 90.0 - 45.0
    assert main.p_value == 2 / 2**8  # exact: 256 assignments
    assert main.difference_std == pytest.approx(np.std([80 - 10 * k for k in range(8)], ddof=1))
    # Holm over the family with a p: (a, b) alone, since no other pair both played.
    assert main.p_holm == main.p_value
    assert math.isnan(_comparison(compared, "Main Score", "a", "c").p_value)
    assert _comparison(compared, "Main Score", "a", "c").pairs == 0
    played = _comparison(compared, "% Played", "a", "b")
    assert (played.pairs, played.a_ahead, played.b_ahead) == (9, 1, 0)
    assert played.mean_difference == pytest.approx(100 / 9)
    assert played.p_value == 1.0  # one discordant pair
    a_c = _comparison(compared, "% Played", "a", "c")
    assert (a_c.mean_difference, a_c.p_value) == (100.0, 2 / 2**9)
    # Holm over the three % Played comparisons, raw 2/2^9 (a, c), 2/2^8 (b, c) and 1 (a, b):
    # 3 x 2/2^9, then max(that, 2 x 2/2^8) = 8/2^9, then 1.
    b_c = _comparison(compared, "% Played", "b", "c")
    assert (a_c.p_holm, b_c.p_holm, played.p_holm) == (3 * 2 / 2**9, 8 / 2**9, 1.0)
