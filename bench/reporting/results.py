"""After a run, over its evaluation: write the result files and the terminal table.

`write_results` writes what `evaluate` (evaluate.py) made of a run's records: our tables
(results.json, results.md, episodes.csv, accuracy_by_round.svg, and questioner_by_turn.svg when
the questioner has scores) and clembench's own raw.csv and results.csv, shaped as clemcore's
clemeval writes them, so a run can sit next to published clembench results. `format_table` lays
out the per-model tables the CLI prints. Both end with `coverage_warning` when errored or
unscored episodes are left out of the scores.

Each takes the evaluations of the benchmarks a folder holds (`evaluate_benchmarks`), classic
first, and keeps them apart: with one, the files are what they always were; with both, every
table comes once per benchmark, and clembench's files, made to merge with published clembench
runs, hold the classic benchmark only.

Our tables give every headline number its 95% interval beside clembench's columns, and compare
every two models of a benchmark paired (uncertainty.py computes both, comparisons.py lays out
the comparisons); clembench's raw.csv and results.csv stay exactly as clembench's own tools
write them, without either.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from privateshared.bench.reporting.cells import aligned, fixed, interval_cell, markdown_table
from privateshared.bench.reporting.comparisons import comparison_lines, comparisons_section
from privateshared.bench.reporting.conditions import guided_section
from privateshared.bench.reporting.costs import usage_lines, usage_section
from privateshared.bench.reporting.diagnostics.report import (
    diagnostics_section,
    has_action_types,
    mean_cell,
)
from privateshared.bench.reporting.evaluate import (
    Aggregate,
    EpisodeRecord,
    Evaluation,
    episode_order,
    finite,
    group_episodes,
    mean,
)
from privateshared.bench.reporting.plots import (
    plot_accuracy_by_round,
    plot_diagnostics,
    plot_questioner_by_turn,
)
from privateshared.bench.reporting.statistics import Interval
from privateshared.domains.audience import Benchmark
from privateshared.graph.files import write_json, write_text
from privateshared.graph.records import (
    ABORTED,
    ACCURACY,
    GAME_NAME,
    KAPPA,
    MAIN_SCORE,
    QUESTIONER_SLOT_ACCURACY,
    QUESTIONER_TASK_COMPLETION,
    SLOT_FILLING_ACCURACY,
)

ALL = "all"
"""The experiment column's word for every experiment together."""
PLAYED = "Played"
"""clemeval's metric inferred from Aborted (1 - Aborted); games never record it."""


BENCHMARK_NAMES: dict[Benchmark, str] = {
    "classic": "classic benchmark",
    "two-listeners": "two-listener experiments",
}
"""What titles each benchmark's part of the tables when a folder holds both."""
SEPARATE = "a separate benchmark"
"""Said of every benchmark but the classic one, in its title."""

TWO_LISTENER_TERMINAL = (
    "quality score: the two-listener Main Score (slot filling with the kappas of each listener "
    "and of the pairs where their truths differ; the classic one is in results.md)"
)
"""Said above the two-listener benchmark's headline table in the terminal."""
TWO_LISTENER_QUALITY = (
    "Here the Quality Score is the mean of the two-listener Main Score, not the classic one: see "
    "Two listeners below."
)
"""Said under the two-listener benchmark's per-model table."""
TWO_LISTENER_HEADLINE = (
    "**The headline.** These experiments' Main Score, hence their Quality Score and clemscore, "
    "is 100 x the harmonic mean of slot-filling accuracy and the two-listener kappa: the harmonic "
    "mean of three kappas, each truncated at 0, over the probes about the 1st listener (the "
    "questioner), about the 2nd (the one who joins or takes over), and of the perspective pairs, "
    "the (round, slot) pairs where the two listeners' truths differ. Answering both listeners "
    "alike scores 0 on the pairs, hence 0; so does a constant answer about either listener. An "
    "episode without a perspective pair has no Main Score. The classic Main Score, over every "
    "probe, is beside it. docs/two-listeners.md argues the choice."
)
"""What results.md says the two-listener headline is, above its table."""
TWO_LISTENER_MEANS = (
    "Means over played episodes, each where it is defined: the Main Score and the classic one, "
    "the kappas, accuracy per listener, perspective accuracy (the pairs answered right for both "
    "listeners), pairs per episode, the share of what was said that a handover note carried, "
    "and questions about what the note gave."
)


def coverage_warning(*evaluations: Evaluation) -> str | None:
    """Say how many episodes the scores of `evaluations` leave out, in one line; None when they
    cover all."""
    overalls = [evaluation.overall for evaluation in evaluations]

    def total(count: Callable[[Aggregate], int]) -> int:
        return sum(count(overall) for overall in overalls)

    errored, unscored = total(lambda o: o.errored), total(lambda o: o.unscored)
    missing = [(n, word) for n, word in ((errored, "errored"), (unscored, "unscored")) if n]
    if not missing:
        return None
    (first, word), *rest = missing
    text = f"{first} episode{'' if first == 1 else 's'} {word}"
    text += "".join(f" and {n} {other}" for n, other in rest)
    covered = total(lambda o: o.played + o.aborted)
    return (
        f"{text}: these scores cover {covered} of {total(lambda o: o.episodes)} episodes; "
        "run the same command again to play them"
    )


def _experiments(evaluation: Evaluation) -> str:
    """e.g. `5 experiments`."""
    count = len({row.experiment for row in evaluation.experiments})
    return f"{count} experiment{'' if count == 1 else 's'}"


def _one_benchmark(evaluations: Sequence[Evaluation]) -> None:
    """Check that `evaluations` are at least one, each of another benchmark (a bug otherwise)."""
    benchmarks = [evaluation.benchmark for evaluation in evaluations]
    if not benchmarks or len(set(benchmarks)) < len(benchmarks):
        raise ValueError(f"one evaluation per benchmark expected, got {benchmarks or 'none'}")


_COLUMNS = ["episodes", "played", "aborted", "errored", "unscored", "% Played",
            "% Played 95% CI", "Quality Score ± std", "Quality Score 95% CI", "clemscore",
            "clemscore 95% CI"]  # fmt: skip
_TERMINAL_COLUMNS = ["episodes", "played", "aborted", "errored", "unscored",
                     "% played [95% ci]", "quality score ± std [95% ci]",
                     "clemscore [95% ci]"]  # fmt: skip
"""The terminal's: each interval in brackets after its number, to one decimal."""


def _quality(row: Aggregate) -> str:
    """clembench's Quality Score (std); the std is left out where it is undefined (one played
    episode)."""
    quality = fixed(row.quality_score, 2)
    if not math.isnan(row.quality_score_std):
        quality += f" ± {row.quality_score_std:.2f}"
    return quality


def _counts(row: Aggregate) -> list[str]:
    return [str(n) for n in (row.episodes, row.played, row.aborted, row.errored, row.unscored)]


def _cells(row: Aggregate) -> list[str]:
    """The cells of `_COLUMNS`."""
    return [
        *_counts(row), fixed(row.percent_played, 1), interval_cell(row.played_ci95, 1),
        _quality(row), interval_cell(row.quality_score_ci95, 2), fixed(row.clemscore, 2),
        interval_cell(row.clemscore_ci95, 2),
    ]  # fmt: skip


def _terminal_cells(row: Aggregate) -> list[str]:
    """The cells of `_TERMINAL_COLUMNS`: an interval only where there is one."""

    def with_interval(text: str, interval: Interval) -> str:
        return text if math.isnan(interval[0]) else f"{text} {interval_cell(interval, 1)}"

    return [
        *_counts(row),
        with_interval(fixed(row.percent_played, 1), row.played_ci95),
        with_interval(_quality(row), row.quality_score_ci95),
        with_interval(fixed(row.clemscore, 2), row.clemscore_ci95),
    ]


_QUESTIONER_COLUMNS = ["episodes", "slot accuracy", "JGA", "hallucination rate",
                       "violations / episode", "call validity", "task completion",
                       "questions / episode"]  # fmt: skip
_JUDGE_COLUMN = "judge (1-5)"
"""Shown only when a judge rated the questions."""
_ACTION_COLUMN = "action types [95% CI]"
"""Shown only where the records hold the questioner's calls (diagnostics/)."""


def has_judge_scores(evaluation: Evaluation) -> bool:
    """Whether a judge rated any question."""
    return not math.isnan(evaluation.overall.questioner_judge_score)


def _questioner_cells(row: Aggregate, judged: bool) -> list[str]:
    """The cells of `_QUESTIONER_COLUMNS`, and of the judge's column when `judged`."""
    rates = [
        row.questioner_slot_accuracy, row.questioner_joint_goal_accuracy,
        row.questioner_hallucination_rate, row.questioner_policy_violations,
        row.questioner_call_validity, row.questioner_task_completion, row.questions_asked,
    ]  # fmt: skip
    if judged:
        rates.append(row.questioner_judge_score)
    return [str(row.questioner_episodes), *(fixed(value, 2) for value in rates)]


def has_questioner_scores(evaluation: Evaluation) -> bool:
    """Whether any scored episode has the questioner's scores."""
    return evaluation.overall.questioner_episodes > 0


def format_table(*evaluations: Evaluation) -> str:
    """Lay out the tables for the terminal, per benchmark: the questioner's if it has scores,
    then the per-model table; then the coverage warning if any. With several benchmarks, each
    part under a title line naming its benchmark, the classic benchmark last."""
    _one_benchmark(evaluations)
    if len(evaluations) == 1:
        lines = _table_lines(evaluations[0])
    else:
        # The classic part last, its headline table next to last as with one benchmark (see
        # _table_lines): a script taking a model's last row reads the classic result.
        lines = []
        for evaluation in reversed(evaluations):
            about = _experiments(evaluation)
            if evaluation.benchmark != "classic":
                about += f"; {SEPARATE}, never averaged with the classic one"
            title = f"{BENCHMARK_NAMES[evaluation.benchmark]} ({about})"
            lines += [*([""] if lines else []), title, *_table_lines(evaluation)]
    # Last, so it is the line a user sees above the prompt.
    warning = coverage_warning(*evaluations)
    return "\n".join(lines if warning is None else [*lines, "", f"warning: {warning}"])


def _table_lines(evaluation: Evaluation) -> list[str]:
    """One benchmark's terminal tables: the questioner's if it has scores, then the per-model
    table."""
    lines: list[str] = []
    if has_questioner_scores(evaluation):
        judged = has_judge_scores(evaluation)
        short = ["model", "questioner", "episodes", "slot acc", "jga", "halluc", "violations",
                 "validity", "completion", "questions", *(["judge"] if judged else [])]  # fmt: skip
        rows = [[row.model, row.questioner or "?", *_questioner_cells(row, judged)]
                for row in evaluation.models if row.questioner_episodes]  # fmt: skip
        lines += [*aligned(short, rows), ""]
    if compared := comparison_lines(evaluation):
        lines += [*compared, ""]
    if used := usage_lines(evaluation):
        lines += [*used, ""]
    # The headline table next to last: what a reader, or a script taking the last row that
    # starts with a model's name, reads as the model's result.
    if evaluation.benchmark == "two-listeners":
        lines.append(TWO_LISTENER_TERMINAL)
    header = ["model", *_TERMINAL_COLUMNS]
    rows = [[row.model, *_terminal_cells(row)] for row in evaluation.models]
    return lines + aligned(header, rows)


def format_markdown(*evaluations: Evaluation) -> str:
    """Lay out results.md: per benchmark, the coverage warning, then per model, per experiment,
    per round; with several benchmarks, each in a part of its own, the classic benchmark first."""
    _one_benchmark(evaluations)
    if len(evaluations) == 1:
        parts = _markdown_sections(evaluations[0])
    else:
        held = " and the ".join(
            f"{BENCHMARK_NAMES[e.benchmark]} ({_experiments(e)})" for e in evaluations
        )
        parts = [
            f"This folder holds two benchmarks, the {held}, each evaluated on its own: their "
            f"scores are never averaged together. raw.csv and results.csv, in clembench's "
            f"shapes, cover the {BENCHMARK_NAMES[evaluations[0].benchmark]} only."
        ]
        for evaluation in evaluations:
            name = BENCHMARK_NAMES[evaluation.benchmark]
            title = name[0].upper() + name[1:]
            if evaluation.benchmark != "classic":
                title += f" ({SEPARATE})"
            parts += [f"# {title}", *_markdown_sections(evaluation)]
    return "\n\n".join([f"# {GAME_NAME} results", *parts]) + "\n"


def _markdown_sections(evaluation: Evaluation) -> list[str]:
    """One benchmark's part of results.md, its sections in order."""
    per_model = markdown_table(
        ["model", *_COLUMNS],
        [[row.model, *_cells(row)] for row in (*evaluation.models, evaluation.overall)],
    )
    per_experiment = markdown_table(
        ["model", "experiment", *_COLUMNS],
        [[row.model, row.experiment or "", *_cells(row)] for row in evaluation.experiments],
        left=2,
    )
    # Per experiment: round k of a 5-slot episode is not round k of a 15-slot one.
    rounds = max((len(line.rounds) for line in evaluation.rounds_by_experiment), default=0)
    per_round = markdown_table(
        ["model", "experiment", *(f"round {k}" for k in range(rounds))],
        [
            [line.model, line.experiment or "", *(fixed(m.accuracy, 2) for m in line.rounds)]
            + [""] * (rounds - len(line.rounds))
            for line in evaluation.rounds_by_experiment
        ],
        left=2,
    )
    warning = coverage_warning(evaluation)
    intervals = (
        "Each number with its 95% interval: % Played Wilson's; Quality Score and clemscore a "
        "percentile bootstrap of the played and aborted episodes, resampled within each "
        "experiment (over all models, each instance with all its episodes), "
        f"{evaluation.resamples} resamples, seed {evaluation.seed} (`privateshared eval "
        "--resamples N`); n/a where there is nothing to resample (one episode per experiment) "
        "or, for the Quality Score as for its std, fewer than two played episodes. Quality "
        "Score ± std is clembench's, unchanged."
    )
    questioner: list[str] = []
    if has_questioner_scores(evaluation):
        # Each model over all its experiments, then on each; every model together last.
        groups = [
            [model, *(row for row in evaluation.experiments if row.model == model.model)]
            for model in evaluation.models
        ]
        rows = [row for group in groups for row in group] + [evaluation.overall]
        judged = has_judge_scores(evaluation)
        # Beside the belief state, what it did: MAS4CS's action-type accuracy, from the records.
        acted = has_action_types(evaluation)

        def action_types(row: Aggregate) -> list[str]:
            found = row.diagnostics
            return [mean_cell(found.action_type_accuracy) if found else "n/a"] if acted else []

        table = markdown_table(
            ["model", "experiment", "questioner", *_QUESTIONER_COLUMNS,
             *([_JUDGE_COLUMN] if judged else []), *([_ACTION_COLUMN] if acted else [])],
            [[row.model, row.experiment or ALL, row.questioner or "?",
              *_questioner_cells(row, judged), *action_types(row)]
             for row in rows if row.questioner_episodes],
            left=3,
        )  # fmt: skip
        questioner = [
            "## Questioner\n\nThe questioner's belief state against what the answers gave, "
            "averaged over the scored episodes (played or aborted) with questioner scores: slot "
            "accuracy (recall), joint goal accuracy, hallucination rate (the precision "
            "complement), rule violations and questions per episode, valid calls, completed "
            "tasks"
            + (
                "; and its action types, the share of turns whose kinds of call (ask, record, "
                "finish) were the ones called for, per turn under Diagnostics"
                if acted
                else ""
            )
            + f".\n\n{table}"
        ]
    listeners: list[str] = []
    if evaluation.listeners:
        quality = {(row.model, row.experiment): row.quality_score for row in evaluation.experiments}
        table = markdown_table(
            ["model", "experiment", "episodes", "Main Score", "classic Main Score",
             "two-listener kappa", "kappa 1st", "kappa 2nd", "perspective kappa", "accuracy 1st",
             "accuracy 2nd", "perspective accuracy", "pairs", "transfer", "redundant"],
            [[row.model, row.experiment, str(row.episodes),
              fixed(quality[row.model, row.experiment], 2), fixed(row.classic_main_score, 2),
              *(fixed(value, 2) for value in (
                  row.two_listener_kappa, row.first_listener_kappa, row.second_listener_kappa,
                  row.perspective_kappa, row.first_listener_accuracy,
                  row.second_listener_accuracy, row.perspective_accuracy, row.perspective_pairs,
                  row.transfer_completeness, row.redundant_questions))]
             for row in evaluation.listeners],
            left=2,
        )  # fmt: skip
        listeners = [
            f"## Two listeners\n\n{TWO_LISTENER_HEADLINE}\n\n{TWO_LISTENER_MEANS}\n\n{table}"
        ]
    if evaluation.benchmark == "two-listeners":
        intervals += f" {TWO_LISTENER_QUALITY}"
    return [
        *([] if warning is None else [f"> **Warning:** {warning}"]),
        f"## Per model\n\n{intervals}\n\n{per_model}",
        f"## Per model and experiment\n\n{per_experiment}",
        *filter(None, [guided_section(evaluation)]),
        comparisons_section(evaluation),
        *filter(None, [usage_section(evaluation)]),
        "## Accuracy per probing round\n\nMean accuracy of each probing round over the scored "
        "episodes that completed it (aborted ones included); results.json gives each its 95% "
        "interval (the episodes resampled, never their probes), and accuracy_by_round.svg "
        f"draws it as a band.\n\n{per_round}",
        *filter(None, [diagnostics_section(evaluation)]),
        *questioner,
        *listeners,
    ]


def _csv(rows: Iterable[Sequence[str]]) -> str:
    buffer = io.StringIO()
    # pandas' to_csv: minimal quoting, os.linesep ("\n" where clembench runs)
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    return buffer.getvalue()


def _number(value: float | None) -> str:
    # as pandas writes a float column: the shortest repr, NaN as an empty field
    return "" if value is None or math.isnan(value) else repr(float(value))


USAGE_FIELDS = ["prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens",
                "cost_usd"]  # fmt: skip
"""episodes.csv's last columns: each episode's tokens over every seat, and their cost."""


def episodes_csv(*evaluations: Evaluation) -> str:
    """Lay out episodes.csv: one row per episode of every benchmark, errored and unscored ones
    included (the experiment's folder tells the benchmark)."""
    names = [MAIN_SCORE, ACCURACY, KAPPA, SLOT_FILLING_ACCURACY, QUESTIONER_SLOT_ACCURACY,
             QUESTIONER_TASK_COMPLETION]  # fmt: skip
    rows = [["model", "experiment", "episode", "status", *names, "error kind", *USAGE_FIELDS]]
    for episode in (episode for evaluation in evaluations for episode in evaluation.episodes):
        values = [_number(episode.score(name)) for name in names]
        kind = episode.error.kind if episode.error is not None else ""
        # Empty where no call reported the count (or no price was given), never 0.
        counts = [episode.token_count(field) for field in USAGE_FIELDS[:-1]]
        used = ["" if value is None else str(value) for value in [*counts, episode.cost_usd]]
        rows.append([episode.model, episode.experiment_folder, episode.episode, episode.status,
                     *values, kind, *used])  # fmt: skip
    return _csv(rows)


def raw_csv(episodes: Sequence[EpisodeRecord]) -> str:
    """Lay out clemeval's raw.csv: each scored episode's scores, then each one's Played row."""
    scored = [
        episode for episode in sorted(episodes, key=episode_order) if episode.scores is not None
    ]
    cells = [
        (episode, metric, float(value))
        for episode in scored
        for metric, value in (episode.scores or {}).items()
    ]
    # clemeval appends the inferred Played rows after all recorded scores, not per episode
    cells += [(episode, PLAYED, 1.0 - episode.score(ABORTED)) for episode in scored]
    rows = [["", "game", "model", "experiment", "episode", "metric", "value"]]
    rows += [
        [str(index), GAME_NAME, episode.model, episode.experiment_folder, episode.episode, metric,
         _number(value)]
        for index, (episode, metric, value) in enumerate(cells)
    ]  # fmt: skip
    return _csv(rows)


def _round2(value: float) -> float:
    # numpy's rounding (scale, round half to even, unscale), which pandas' round uses
    return float(np.round(value, 2))


def results_csv(episodes: Sequence[EpisodeRecord]) -> str:
    """Lay out clemeval's results.csv: clemscore, % Played and Quality Score per model."""
    header = ["", "-, clemscore", "all, Average % Played", "all, Average Quality Score",
              f"{GAME_NAME}, % Played", f"{GAME_NAME}, Quality Score"]  # fmt: skip
    rows = [header]
    scored = [episode for episode in episodes if episode.scores is not None]
    for model, group in sorted(group_episodes(scored, lambda episode: episode.model).items()):
        # clembench's way: the mean of Played over every scored episode and of Main Score
        # wherever it is not NaN, each rounded; with one game, 'all' averages equal the game's.
        played = _round2(100 * mean([1.0 - episode.score(ABORTED) for episode in group]))
        quality = _round2(mean(finite(episode.score(MAIN_SCORE) for episode in group)))
        clemscore = _round2(played / 100 * quality)
        rows.append([model, *(_number(v) for v in (clemscore, played, quality, played, quality))])
    return _csv(rows)


def results_json(*evaluations: Evaluation) -> dict[str, Any]:
    """Lay out results.json: the first benchmark's evaluation, and each other one under its
    name (`two_listeners`) in the same shape as it has alone."""
    _one_benchmark(evaluations)
    first, *others = evaluations
    return _dump(first) | {other.benchmark.replace("-", "_"): _dump(other) for other in others}


def _dump(evaluation: Evaluation) -> dict[str, Any]:
    """One evaluation as results.json holds it: a classic run's without the two-listener
    experiments' keys or the name of its benchmark."""
    leave_out: dict[str, Any] = {}
    per_episode: set[str] = set()
    if not evaluation.listeners:
        leave_out |= {"listeners": True, "rounds_by_listener": True}
        per_episode.add("listener_round_accuracy")
    if evaluation.benchmark == "classic":
        leave_out["benchmark"] = True
        per_episode.add("benchmark")
    if per_episode:
        leave_out["episodes"] = {"__all__": per_episode}
    return evaluation.model_dump(mode="python", exclude=leave_out)


DIAGNOSTICS_PLOT = "diagnostics.svg"


def write_results(results_dir: Path, *evaluations: Evaluation) -> list[Path]:
    """Write the files of the benchmarks' evaluations (`evaluate_benchmarks`: classic first)
    into `results_dir`, each atomically; return their paths."""
    _one_benchmark(evaluations)
    # clembench's files sum up one benchmark, to merge with published clembench runs: the first.
    headline = evaluations[0].episodes
    texts = {
        "results.md": format_markdown(*evaluations),
        "episodes.csv": episodes_csv(*evaluations),
        "raw.csv": raw_csv(headline),
        "results.csv": results_csv(headline),
    }
    written = [results_dir / "results.json"]
    write_json(written[0], results_json(*evaluations))
    for name, text in texts.items():
        write_text(results_dir / name, text)
        written.append(results_dir / name)
    # Every benchmark on the plots: their lines are per model and experiment, so no line
    # averages over both. The plot skips models without a completed round, and draws nothing
    # without any.
    if any(line.rounds for e in evaluations for line in e.rounds_by_model):
        plot_accuracy_by_round(evaluations, results_dir / "accuracy_by_round.svg")
        written.append(results_dir / "accuracy_by_round.svg")
    if any(row.diagnostics for e in evaluations for row in e.models):
        plot_diagnostics(evaluations, results_dir / DIAGNOSTICS_PLOT)
        written.append(results_dir / DIAGNOSTICS_PLOT)
    if any(line.slot_accuracy for e in evaluations for line in e.questioner_by_model):
        plot_questioner_by_turn(evaluations, results_dir / "questioner_by_turn.svg")
        written.append(results_dir / "questioner_by_turn.svg")
    return written
