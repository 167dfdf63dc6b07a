"""The paired comparisons as the terminal and results.md show them, and how many instances a
difference needs (results.py places them).

uncertainty.py compares every two models of a benchmark; here they become a table of rows
(metric, model A, model B, pairs, the mean difference with its interval, p and Holm's p), and
the spread of their paired differences becomes the number of instances per experiment that
tell apart a 5-point difference in Main Score with 80% power.
"""

from __future__ import annotations

import math

from privateshared.bench.reporting.cells import aligned, interval_cell, markdown_table, p_cell
from privateshared.bench.reporting.evaluate import Evaluation
from privateshared.bench.reporting.statistics import POWER, pairs_for_power
from privateshared.bench.reporting.uncertainty import Comparison


def comparison_lines(evaluation: Evaluation) -> list[str]:
    """The terminal's comparisons: one row per metric and two models with pairs; none when
    there are none. Each row starts with the metric, not a model, so that a model's last row
    in the terminal stays its headline result."""
    compared = [comparison for comparison in _compared(evaluation) if comparison.pairs]
    if not compared:
        return []
    header = ["compared", "model a", "model b", "pairs", "a - b [95% ci]", "p (holm)"]
    rows = [
        [c.metric.lower(), c.model_a, c.model_b, str(c.pairs),
         f"{_difference(c)} {interval_cell(c.ci95, 1)}".removesuffix(" n/a"), p_cell(c.p_holm)]
        for c in compared
    ]  # fmt: skip
    return aligned(header, rows, left=3)


def _compared(evaluation: Evaluation) -> list[Comparison]:
    """The comparisons of the models that share an instance both played or aborted (a
    % Played pair): the others have nothing to say."""
    sharing = {(c.model_a, c.model_b) for c in evaluation.comparisons
               if c.metric == "% Played" and c.pairs}  # fmt: skip
    return [c for c in evaluation.comparisons if (c.model_a, c.model_b) in sharing]


def _families(evaluation: Evaluation) -> str:
    """e.g. `With 3 comparisons of Main Score and 3 of % Played`: those with a p, which
    Holm's method adjusts together, metric by metric."""
    sizes = [
        (sum(c.metric == metric and not math.isnan(c.p_value) for c in evaluation.comparisons),
         metric)
        for metric in ("Main Score", "% Played")
    ]  # fmt: skip
    said = [f"{size} of {metric}" for size, metric in sizes if size]
    if not said:
        return "With no comparison"
    first = next(size for size, _ in sizes if size)
    said[0] = said[0].replace(" of ", f" comparison{'' if first == 1 else 's'} of ", 1)
    return "With " + " and ".join(said)


def _difference(comparison: Comparison) -> str:
    """The mean difference: Main Score to two decimals, % Played (points) to one, signed."""
    digits = 2 if comparison.metric == "Main Score" else 1
    value = comparison.mean_difference
    return "n/a" if math.isnan(value) else f"{value:+.{digits}f}"


DETECTABLE = 5.0
"""The difference in Main Score points the power sentence of results.md is about."""


def comparisons_section(evaluation: Evaluation) -> str:
    """results.md's paired comparisons, and how many instances a 5-point difference needs."""
    title = "## Paired comparisons"
    compared = _compared(evaluation)
    models = len(evaluation.models)
    if models < 2:
        return f"{title}\n\nOne model: nothing to compare.{_one_model_power(evaluation)}"
    text = (
        "Every two models on the instances both played, model A minus model B: the mean "
        "difference in Main Score over the episodes both played (p from a paired permutation "
        "test, the signs of the differences flipped: exact over every assignment up to "
        f"{evaluation.resamples} of them, else over {evaluation.resamples} random ones), and in "
        "% Played over the episodes both played or aborted (p from McNemar's exact test on the "
        "pairs where one played and the other aborted); the interval is a 95% percentile "
        "bootstrap of the pairs, resampled within each experiment. Main Score is compared only "
        "where both played: a model that aborts its hard instances is compared on its easy "
        "ones, which % Played's row shows. "
        f"{_families(evaluation)}, some would come out below 0.05 by chance alone: p (Holm) "
        "is adjusted for the others of its metric by Holm's method, and is the one to read; p is "
        "each comparison's own."
    )
    header = ["model A", "model B", "metric", "pairs", "A ahead", "B ahead", "A - B", "95% CI",
              "p", "p (Holm)", "instances / experiment for 5 points"]  # fmt: skip
    needed = _instances_needed(evaluation)
    rows = [
        [c.model_a, c.model_b, c.metric, str(c.pairs), str(c.a_ahead), str(c.b_ahead),
         _difference(c), interval_cell(c.ci95, 2 if c.metric == "Main Score" else 1),
         p_cell(c.p_value), p_cell(c.p_holm), _needed(needed.get((c.model_a, c.model_b, c.metric)))]
        for c in compared
    ]  # fmt: skip
    # Each pair of models is listed once per metric.
    apart = (len(evaluation.comparisons) - len(compared)) // 2
    parts = [title, text, markdown_table(header, rows, left=3) if rows else ""]
    if apart:
        parts.append(
            f"{apart} pair{'' if apart == 1 else 's'} of models share no instance both played "
            "or aborted and are not compared (results.json lists them, with 0 pairs)."
        )
    parts.append(_power_sentence(evaluation, needed))
    return "\n\n".join(part for part in parts if part)


def _instances_needed(evaluation: Evaluation) -> dict[tuple[str, str, str], int]:
    """(model A, model B, Main Score) -> instances per experiment for 80% power at a 5-point
    difference, from the spread of the pair's Main Score differences; for pairs with it.

    The pairs a test needs (`pairs_for_power`) come from instances both played, so the
    instances are scaled up by the share of the pair's instances both played, and shared out
    over the experiments the pair played."""
    decided = {(c.model_a, c.model_b): c.pairs for c in evaluation.comparisons
               if c.metric == "% Played"}  # fmt: skip
    needed: dict[tuple[str, str, str], int] = {}
    for c in evaluation.comparisons:
        if c.metric != "Main Score" or math.isnan(c.difference_std) or not c.pairs:
            continue
        pairs = pairs_for_power(c.difference_std, DETECTABLE)
        instances = pairs * decided.get((c.model_a, c.model_b), c.pairs) / c.pairs
        needed[c.model_a, c.model_b, c.metric] = math.ceil(instances / c.experiments)
    return needed


def _needed(value: int | None) -> str:
    return "" if value is None else str(value)


def _per_experiment(evaluation: Evaluation) -> int:
    """Instances per experiment in this benchmark's run: the most any model played."""
    counts = [row.episodes for row in evaluation.experiments]
    return max(counts, default=0)


def _power_sentence(evaluation: Evaluation, needed: dict[tuple[str, str, str], int]) -> str:
    """How many instances per experiment tell apart a 5-point difference, from this run."""
    if not needed:
        return ""
    (a, b, _), most = max(needed.items(), key=lambda item: item[1])
    return (
        f"**How many instances.** To tell apart a true difference of {DETECTABLE:g} points in "
        f"Main Score with {POWER:.0%} power (two-sided test at the 5% level), the spread of "
        f"this run's paired differences asks for about {most} instances per experiment for "
        f"{a} against {b} (the last column for each pair; a normal approximation of the paired "
        f"test, from instances both played); this run has {_per_experiment(evaluation)}. "
        "`privateshared instances --per-domain N --out FILE` makes N per experiment, and "
        "`privateshared run --instances FILE` plays them."
    )


def _one_model_power(evaluation: Evaluation) -> str:
    """With one model: how many instances a 5-point difference would need against a model
    whose Main Scores were as spread and unrelated, the differences' SD sqrt(2) x the std."""
    row = evaluation.models[0] if evaluation.models else None
    if row is None or math.isnan(row.quality_score_std) or row.quality_score_std == 0:
        return ""
    experiments = len({r.experiment for r in evaluation.experiments})
    pairs = pairs_for_power(math.sqrt(2) * row.quality_score_std, DETECTABLE)
    instances = math.ceil(pairs / (row.played / (row.played + row.aborted)) / experiments)
    return (
        f" **How many instances.** Against a second model whose Main Scores were as spread "
        f"as this one's (std {row.quality_score_std:.2f}) and unrelated to them, telling apart "
        f"a true difference of {DETECTABLE:g} points with {POWER:.0%} power (two-sided test at "
        f"the 5% level, normal approximation) would take about {instances} instances per "
        f"experiment, fewer the more the two models' scores go together; this run has "
        f"{_per_experiment(evaluation)}. `privateshared instances --per-domain N --out FILE` "
        "makes N per experiment, and `privateshared run --instances FILE` plays them."
    )
