"""Agreement of probe answers with the truth: accuracy and Cohen's kappa, as clembench's scorer
computes them, and clembench's way of making a Main Score of a kappa. Pure functions, shared by
the classic scores (scoring.py) and the two-listener ones (perspective.py)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

NAN = float("nan")


def accuracy(gold: Sequence[int], predicted: Sequence[int]) -> float:
    """Share of probes answered correctly."""
    return sum(g == p for g, p in zip(gold, predicted, strict=True)) / len(gold)


def kappa(gold: Sequence[int], predicted: Sequence[int]) -> float:
    """Cohen's kappa of the probe answers against the truth; NaN when chance agreement is total.

    The arithmetic is scikit-learn's `cohen_kappa_score`, step for step (clembench scores with
    it; tests/test_scoring.py checks the two agree), without importing scikit-learn, which would
    add most of a second of CPU to the start of every run.
    """
    labels = sorted(set(gold) | set(predicted))
    index = {label: i for i, label in enumerate(labels)}
    confusion = np.zeros((len(labels), len(labels)))
    for truth, guess in zip(gold, predicted, strict=True):
        confusion[index[truth], index[guess]] += 1
    sum0, sum1 = confusion.sum(axis=0), confusion.sum(axis=1)
    expected = np.outer(sum0, sum1) / sum0.sum()
    disagreement = 1 - np.eye(len(labels))
    chance = float(np.sum(disagreement * expected))
    if chance == 0:
        return NAN
    return 1 - float(np.sum(disagreement * confusion)) / chance


def truncated_kappa(value: float) -> float:
    """Kappa below chance counts as no agreement at all."""
    return max(0.0, value)


def main_score(slot_filling_accuracy: float, truncated: float) -> float:
    """100 x the harmonic mean of slot-filling accuracy and truncated kappa; 0 when both are 0;
    NaN when either is NaN."""
    if slot_filling_accuracy + truncated == 0:
        return 0.0
    return 100 * (2 * slot_filling_accuracy * truncated / (slot_filling_accuracy + truncated))


def harmonic_mean(values: Sequence[float]) -> float:
    """The harmonic mean of values in [0, 1]: 0 as soon as one is 0; NaN for none."""
    if not values:
        return NAN
    if any(value == 0 for value in values):
        return 0.0
    return len(values) / math.fsum(1 / value for value in values)
