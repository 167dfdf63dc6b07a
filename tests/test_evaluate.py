"""Evaluating a run from its records: collecting episodes, aggregating, and the files written.

Most tests read a results folder built by hand with known scores: two models, two experiments,
aborted episodes, one errored and one unscored. One test evaluates a real oracle and mock run,
one a folder holding both benchmarks (classic and two-listener) against each played alone.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import shutil
from pathlib import Path

import pytest

from privateshared.bench.cli import main
from privateshared.bench.reporting.evaluate import (
    Aggregate,
    Evaluation,
    ResultsError,
    collect,
    evaluate,
    evaluate_benchmarks,
)
from privateshared.bench.reporting.results import format_markdown, format_table, write_results
from privateshared.domains.audience import Benchmark, benchmark_of_name
from privateshared.graph.records import (
    QUESTIONER_CALL_VALIDITY,
    QUESTIONER_HALLUCINATION_RATE,
    QUESTIONER_JOINT_GOAL_ACCURACY,
    QUESTIONER_POLICY_VIOLATIONS,
    QUESTIONER_SLOT_ACCURACY,
    QUESTIONER_TASK_COMPLETION,
    QUESTIONS_ASKED,
)

ALPHA = "alpha-t0.0--alpha-t0.0"
BETA = "beta-t0.0--beta-t0.0"
TRAVEL = "0_travel-booking"
JOBS = "1_job-interview"
NAN = float("nan")
WARNING = (
    "1 episode errored and 1 unscored: these scores cover 7 of 9 episodes; "
    "run the same command again to play them"
)


def _episode(results: Path, model: str, experiment: str, game_id: int) -> Path:
    folder = results / model / "privateshared" / experiment / f"episode_{game_id}"
    folder.mkdir(parents=True)
    (folder / "interactions.json").write_text("{}")  # never read by the evaluation
    return folder


def _scored(
    results: Path, model: str, experiment: str, game_id: int, main: float | None,
    rounds: list[float],
) -> None:  # fmt: skip
    """An episode with scores.json: played with Main Score `main`, aborted if `main` is None."""
    folder = _episode(results, model, experiment, game_id)
    played = main is not None
    game = {
        "Middle-Accuracy": 1.0, "Accuracy": 0.9, "Kappa": 0.8, "Truncated Kappa": 0.8,
        "Slot-Filling-Accuracy": 0.75, "Main Score": main,
    } if played else dict.fromkeys(
        ["Middle-Accuracy", "Accuracy", "Kappa", "Truncated Kappa", "Slot-Filling-Accuracy",
         "Main Score"], NAN,
    )  # fmt: skip
    scores = {
        "turn scores": {
            str(k): {"Request Count": 5, "Accuracy": accuracy} for k, accuracy in enumerate(rounds)
        },
        "episode scores": {
            **game, "Aborted": 0 if played else 1, "Lose": 1, "Success": 0, "Request Count": 7,
            "Parsed Request Count": 6, "Violated Request Count": 1, "Request Success Ratio": 6 / 7,
        },
    }  # fmt: skip
    (folder / "scores.json").write_text(json.dumps(scores, allow_nan=True))


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """alpha: 3 played (80, 60, 100), 1 aborted, 1 errored, 1 unscored; beta: 1 played (40),
    2 aborted."""
    _scored(tmp_path, ALPHA, TRAVEL, 0, 80.0, [1.0, 0.75])
    _scored(tmp_path, ALPHA, TRAVEL, 1, 60.0, [0.5, 0.25])
    _scored(tmp_path, ALPHA, TRAVEL, 2, None, [0.25])  # aborted in round 1
    _scored(tmp_path, ALPHA, JOBS, 0, 100.0, [1.0, 1.0, 1.0])
    failure = {
        "player": "Player 1", "model": "alpha", "kind": "APITimeoutError",
        "message": "Request timed out.", "tries": 3, "at": "2025-01-01T00:00:00",
        "request": {"kind": "probe", "round": 0, "slot": "from", "attempt": 1},
    }  # fmt: skip
    (_episode(tmp_path, ALPHA, JOBS, 1) / "error.json").write_text(json.dumps(failure))
    _episode(tmp_path, ALPHA, JOBS, 2)  # interrupted: neither scores nor error
    _scored(tmp_path, BETA, TRAVEL, 0, None, [])  # aborted in round 0
    _scored(tmp_path, BETA, TRAVEL, 1, None, [0.5])
    _scored(tmp_path, BETA, JOBS, 0, 40.0, [0.0, 1.0])
    return tmp_path


@pytest.fixture
def evaluation(results: Path) -> Evaluation:
    return evaluate(collect(results))


def _row(rows: tuple[Aggregate, ...], model: str, experiment: str | None = None) -> Aggregate:
    (row,) = [row for row in rows if row.model == model and row.experiment == experiment]
    return row


def test_collect_reads_every_episode_and_its_status(results: Path) -> None:
    episodes = collect(results)
    assert [(e.model, e.experiment_folder, e.episode, e.status) for e in episodes] == [
        (ALPHA, TRAVEL, "episode_0", "played"),
        (ALPHA, TRAVEL, "episode_1", "played"),
        (ALPHA, TRAVEL, "episode_2", "aborted"),
        (ALPHA, JOBS, "episode_0", "played"),
        (ALPHA, JOBS, "episode_1", "errored"),
        (ALPHA, JOBS, "episode_2", "unscored"),
        (BETA, TRAVEL, "episode_0", "aborted"),
        (BETA, TRAVEL, "episode_1", "aborted"),
        (BETA, JOBS, "episode_0", "played"),
    ]
    errored = episodes[4]
    assert errored.experiment == "job-interview" and errored.game_id == 1
    assert errored.error is not None and errored.error.kind == "APITimeoutError"
    assert errored.scores is None and math.isnan(errored.score("Main Score"))
    assert episodes[2].round_accuracy == {0: 0.25}


def test_played_excludes_errored_and_unscored_from_the_denominator(
    evaluation: Evaluation,
) -> None:
    alpha = _row(evaluation.models, ALPHA)
    counts = (alpha.episodes, alpha.played, alpha.aborted, alpha.errored, alpha.unscored)
    assert counts == (6, 3, 1, 1, 1)
    assert alpha.percent_played == 75.0  # 3 of 4 decided, not 3 of 6
    assert alpha.quality_score == 80.0
    assert alpha.quality_score_std == 20.0  # sample std of 80, 60, 100 (population: 16.33)
    assert alpha.clemscore == 60.0
    assert (alpha.accuracy, alpha.kappa, alpha.slot_filling_accuracy) == pytest.approx(
        (0.9, 0.8, 0.75)
    )
    assert alpha.middle_accuracy == 1.0


def test_aggregates_per_experiment_and_overall(evaluation: Evaluation) -> None:
    beta = _row(evaluation.models, BETA)
    assert beta.percent_played == pytest.approx(100 / 3)
    assert beta.quality_score == 40.0
    assert math.isnan(beta.quality_score_std)  # one played episode
    assert beta.clemscore == pytest.approx(40 / 3)
    travel = _row(evaluation.experiments, ALPHA, "travel-booking")
    assert (travel.played, travel.aborted, travel.quality_score) == (2, 1, 70.0)
    assert travel.quality_score_std == pytest.approx(math.sqrt(200))
    jobs = _row(evaluation.experiments, ALPHA, "job-interview")
    assert (jobs.episodes, jobs.percent_played, jobs.clemscore) == (3, 100.0, 100.0)
    nothing_played = _row(evaluation.experiments, BETA, "travel-booking")
    assert nothing_played.percent_played == 0.0
    assert math.isnan(nothing_played.quality_score) and math.isnan(nothing_played.clemscore)
    overall = evaluation.overall
    assert (overall.episodes, overall.played, overall.aborted) == (9, 4, 3)
    assert overall.percent_played == pytest.approx(400 / 7)
    assert overall.quality_score == 70.0
    assert overall.clemscore == pytest.approx(40.0)


def test_round_accuracy_counts_the_rounds_each_episode_completed(evaluation: Evaluation) -> None:
    (alpha,) = [line for line in evaluation.rounds_by_model if line.model == ALPHA]
    means = [(mean.probe_round, mean.accuracy, mean.episodes) for mean in alpha.rounds]
    assert means == [(0, 0.6875, 4), (1, 2 / 3, 3), (2, 1.0, 1)]
    (beta_travel,) = [
        line for line in evaluation.rounds_by_experiment
        if (line.model, line.experiment) == (BETA, "travel-booking")
    ]  # fmt: skip
    assert [(mean.probe_round, mean.accuracy) for mean in beta_travel.rounds] == [(0, 0.5)]


def test_raw_csv_has_clemevals_shape(results: Path, evaluation: Evaluation) -> None:
    write_results(results, evaluation)
    lines = (results / "raw.csv").read_text().splitlines()
    assert lines[0] == ",game,model,experiment,episode,metric,value"
    assert lines[1] == f"0,privateshared,{ALPHA},{TRAVEL},episode_0,Middle-Accuracy,1.0"
    assert lines[6] == f"5,privateshared,{ALPHA},{TRAVEL},episode_0,Main Score,80.0"
    assert lines[7] == f"6,privateshared,{ALPHA},{TRAVEL},episode_0,Aborted,0.0"
    # The aborted episode: its NaN Main Score is an empty field.
    assert lines[32] == f"31,privateshared,{ALPHA},{TRAVEL},episode_2,Main Score,"
    # 7 scored episodes x 13 scores, then clemeval's inferred Played rows, one per episode.
    assert lines[92] == f"91,privateshared,{ALPHA},{TRAVEL},episode_0,Played,1.0"
    assert lines[94] == f"93,privateshared,{ALPHA},{TRAVEL},episode_2,Played,0.0"
    assert len(lines) == 1 + 7 * 14
    assert f"{JOBS},episode_1," not in "\n".join(lines)  # errored: no scores, as in clembench
    assert f"{JOBS},episode_2," not in "\n".join(lines)  # unscored


def test_results_csv_has_clemevals_shape(results: Path, evaluation: Evaluation) -> None:
    write_results(results, evaluation)
    assert (results / "results.csv").read_text().splitlines() == [
        ',"-, clemscore","all, Average % Played","all, Average Quality Score",'
        '"privateshared, % Played","privateshared, Quality Score"',
        f"{ALPHA},60.0,75.0,80.0,75.0,80.0",
        f"{BETA},13.33,33.33,40.0,33.33,40.0",
    ]


def test_episodes_csv_keeps_errored_and_unscored_episodes(
    results: Path, evaluation: Evaluation
) -> None:
    write_results(results, evaluation)
    lines = (results / "episodes.csv").read_text().splitlines()
    assert lines[0] == (
        "model,experiment,episode,status,Main Score,Accuracy,Kappa,Slot-Filling-Accuracy,"
        "Questioner Slot Accuracy,Questioner Task Completion,error kind,prompt_tokens,"
        "completion_tokens,cached_tokens,reasoning_tokens,cost_usd"
    )
    assert len(lines) == 1 + 9
    # No questioner scores in these records (as in clembench's): empty fields.
    # No questioner scores in these records (as in clembench's), no usage: empty fields.
    assert f"{ALPHA},{TRAVEL},episode_0,played,80.0,0.9,0.8,0.75,,,,,,,," in lines
    assert f"{ALPHA},{JOBS},episode_1,errored,,,,,,,APITimeoutError,,,,," in lines
    assert f"{ALPHA},{JOBS},episode_2,unscored,,,,,,,,,,,," in lines


def test_results_md_and_table_warn_about_missing_episodes(
    results: Path, evaluation: Evaluation
) -> None:
    written = write_results(results, evaluation)
    assert [path.name for path in written] == [
        "results.json", "results.md", "episodes.csv", "raw.csv", "results.csv",
        "accuracy_by_round.svg",
    ]  # fmt: skip
    markdown = (results / "results.md").read_text()
    assert f"> **Warning:** {WARNING}" in markdown
    assert markdown.index(WARNING) < markdown.index("| model |")
    # clembench's Quality Score (std) as it always was, each interval beside its number.
    assert (
        f"| {ALPHA} | 6 | 3 | 1 | 1 | 1 | 75.0 | [30.1, 95.4] | 80.00 ± 20.00 | [70.00, 100.00] "
        "| 60.00 | [25.00, 85.00] |"
    ) in markdown
    # Per round and experiment; beta never reached round 2.
    assert f"| {BETA} | travel-booking | 0.50 |  |  |" in markdown
    assert f"| {BETA} | job-interview | 0.00 | 1.00 |  |" in markdown
    table = format_table(evaluation).splitlines()
    per_model = table[table.index("") + 1 :]
    assert per_model[1].split() == [ALPHA, "6", "3", "1", "1", "1", "75.0", "[30.1,", "95.4]",
                                    "80.00", "±", "20.00", "[70.0,", "100.0]", "60.00", "[25.0,",
                                    "85.0]"]  # fmt: skip
    # beta: one played episode, no Quality Score interval (as no std); its clemscore cannot
    # vary (two aborts in one experiment, its one played episode alone in the other).
    assert per_model[2].split() == [BETA, "3", "1", "2", "0", "0", "33.3", "[6.1,", "79.2]",
                                    "40.00", "13.33", "[13.3,", "13.3]"]  # fmt: skip
    assert table[-1] == f"warning: {WARNING}"


def test_no_warning_when_every_episode_is_scored(results: Path) -> None:
    complete = evaluate([e for e in collect(results) if e.status in ("played", "aborted")])
    assert "warning" not in format_table(complete)
    write_results(results, complete)
    assert "Warning" not in (results / "results.md").read_text()


def test_results_json_and_png(results: Path, evaluation: Evaluation) -> None:
    write_results(results, evaluation)
    saved = json.loads((results / "results.json").read_text())
    assert Evaluation.model_validate(saved).models[0].quality_score_std == 20.0
    assert math.isnan(saved["models"][1]["quality_score_std"])  # NaN kept, as in scores.json
    assert (results / "accuracy_by_round.svg").read_text().startswith("<svg ")
    assert not [path.name for path in results.iterdir() if path.name.endswith(".tmp")]


def test_intervals_of_the_fixture_by_hand(evaluation: Evaluation) -> None:
    """alpha's decided episodes: travel-booking 80, 60 and an abort; job-interview 100, alone in
    its experiment and so in every resample. Each of travel-booking's 27 equally likely
    resamples has probability 1/27 = 3.7%, above the 2.5% of each tail, so the interval's ends
    are extreme resamples. Quality Score: all 60 gives (3 x 60 + 100) / 4 = 70, all aborts
    leave the 100 alone. Clemscore: all aborts give 1 of 4 played x 100 = 25, all 80 give
    4/4 x (3 x 80 + 100) / 4 = 85."""
    alpha = _row(evaluation.models, ALPHA)
    assert alpha.played_ci95 == pytest.approx((30.0642, 95.4413), abs=1e-4)  # Wilson, 3 of 4
    assert alpha.quality_score_ci95 == (70.0, 100.0)
    assert alpha.clemscore_ci95 == (25.0, 85.0)
    # On travel-booking alone: the played ones all 60 or all 80 (with or without the abort)
    # are 7/27 of resamples each.
    travel = _row(evaluation.experiments, ALPHA, "travel-booking")
    assert travel.quality_score_ci95 == (60.0, 80.0)
    # One played episode: no interval, as no std; nothing decided: none at all.
    beta = _row(evaluation.models, BETA)
    assert all(math.isnan(end) for end in beta.quality_score_ci95)
    nothing_played = _row(evaluation.experiments, BETA, "travel-booking")
    assert all(math.isnan(end) for end in nothing_played.clemscore_ci95)
    # Accuracy per round, episodes resampled: alpha's round 1 over 0.75, 0.25 (travel-booking)
    # and 1.0 (job-interview, alone): the means (2 x 0.75 + 1) / 3 and (2 x 0.25 + 1) / 3 at
    # the ends, 1/4 of resamples each.
    (alpha_rounds,) = [line for line in evaluation.rounds_by_model if line.model == ALPHA]
    assert alpha_rounds.rounds[1].ci95 == pytest.approx((0.5, 2.5 / 3))


def test_results_json_keeps_each_interval_beside_its_number(
    results: Path, evaluation: Evaluation
) -> None:
    write_results(results, evaluation)
    saved = json.loads((results / "results.json").read_text())
    keys = list(saved["models"][0])
    for value, interval in (("percent_played", "played_ci95"),
                            ("quality_score", "quality_score_ci95"),
                            ("clemscore", "clemscore_ci95")):  # fmt: skip
        assert keys.index(interval) == keys.index(value) + 1
    assert saved["models"][0]["quality_score_ci95"] == [70.0, 100.0]
    assert saved["overall"]["clemscore_ci95"][0] <= saved["overall"]["clemscore"]
    (main, played) = saved["comparisons"]
    assert {"model_a", "model_b", "metric", "pairs", "mean_difference", "ci95", "p_value"} <= set(
        main
    )
    # alpha and beta both played job-interview's game 0 only: 100 against 40.
    assert (main["model_a"], main["model_b"], main["metric"]) == (ALPHA, BETA, "Main Score")
    assert (main["pairs"], main["mean_difference"], main["p_value"]) == (1, 60.0, 1.0)
    # Both decided three instances; alpha played two that beta aborted.
    assert (played["metric"], played["pairs"], played["a_ahead"]) == ("% Played", 3, 2)
    assert (saved["resamples"], saved["seed"]) == (evaluation.resamples, evaluation.seed)


def test_fewer_resamples_are_said_and_the_same_each_time(results: Path) -> None:
    episodes = collect(results)
    assert evaluate(episodes, 200).model_dump_json() == evaluate(episodes, 200).model_dump_json()
    assert "200 resamples, seed" in format_markdown(evaluate(episodes, 200))
    with pytest.raises(ValueError, match="at least 1"):
        evaluate(episodes, 0)


def test_one_model_has_nothing_to_compare_but_says_what_instances_would(results: Path) -> None:
    """alpha alone: Main Score std 20; against an unrelated model as spread, the differences'
    SD is 20 x sqrt(2), so ((1.96 + 0.84) x 28.28 / 5)^2 = 251.2, 252 pairs; with 3 of 4
    instances played, 336 instances over 2 experiments: 168 each."""
    alone = evaluate([e for e in collect(results) if e.model == ALPHA])
    assert alone.comparisons == ()
    markdown = format_markdown(alone)
    assert "One model: nothing to compare." in markdown
    assert "would take about 168 instances per experiment" in markdown


def test_no_plot_without_a_completed_round(tmp_path: Path) -> None:
    _scored(tmp_path, BETA, TRAVEL, 0, None, [])
    written = write_results(tmp_path, evaluate(collect(tmp_path)))
    assert "accuracy_by_round.svg" not in [path.name for path in written]
    assert not (tmp_path / "accuracy_by_round.svg").exists()


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json", "cannot read it"),
        ('{"episode scores": {}}', "turn scores: Field required"),
        ('{"turn scores": {}, "episode scores": {"Main Score": 1}}', 'no "Aborted" of 0 or 1'),
    ],
    ids=["not-json", "no-turn-scores", "no-aborted"],
)
def test_a_bad_scores_file_names_itself_in_one_line(
    results: Path, content: str, expected: str
) -> None:
    broken = results / BETA / "privateshared" / JOBS / "episode_0" / "scores.json"
    broken.write_text(content)
    with pytest.raises(ResultsError) as caught:
        collect(results)
    message = str(caught.value)
    assert message.startswith(f"{broken}: ") and expected in message and "\n" not in message


def test_a_bad_error_file_names_itself(results: Path) -> None:
    broken = results / ALPHA / "privateshared" / JOBS / "episode_1" / "error.json"
    broken.write_text('{"player": "Player 1"}')
    with pytest.raises(ResultsError, match=r"error\.json: model: Field required"):
        collect(results)


@pytest.mark.parametrize("make", ["empty", "missing", "other-game"])
def test_a_folder_without_episodes_gives_one_line(tmp_path: Path, make: str) -> None:
    folder = tmp_path / "records"
    if make != "missing":
        folder.mkdir()
    if make == "other-game":  # episodes of another clembench game are not ours
        (folder / ALPHA / "taboo" / "0_high" / "episode_0").mkdir(parents=True)
    with pytest.raises(ResultsError) as caught:
        collect(folder)
    message = str(caught.value)
    assert message.startswith(f"{folder}: ") and "\n" not in message


def test_a_real_run_evaluates_oracle_perfectly(tmp_path: Path) -> None:
    records = tmp_path / "records"
    with contextlib.redirect_stdout(io.StringIO()):
        assert (
            main(["run", "--model", "oracle", "--model", "mock", "--results-dir", str(records)])
            == 0
        )
    evaluation = evaluate(collect(records))
    oracle = _row(evaluation.models, "oracle-t0.0--oracle-t0.0")
    assert (oracle.episodes, oracle.played, oracle.errored, oracle.unscored) == (50, 50, 0, 0)
    assert (oracle.percent_played, oracle.quality_score, oracle.clemscore) == (100, 100, 100)
    (rounds,) = [line for line in evaluation.rounds_by_model if line.model == oracle.model]
    assert len(rounds.rounds) == 16 and all(mean.accuracy == 1.0 for mean in rounds.rounds)
    by_experiment = {
        line.experiment: len(line.rounds)
        for line in evaluation.rounds_by_experiment if line.model == oracle.model
    }  # fmt: skip
    assert by_experiment == {
        "job-interview": 6, "letter-number": 11, "restaurant": 6, "things-places": 16,
        "travel-booking": 6,
    }  # fmt: skip
    mock = _row(evaluation.models, "mock-t0.0--mock-t0.0")
    assert mock.played + mock.aborted == 50 and 0 < mock.aborted < 50
    write_results(records, evaluation)
    assert (
        "oracle-t0.0--oracle-t0.0,100.0,100.0,100.0,100.0,100.0"
        in (records / "results.csv").read_text().splitlines()
    )


ORACLE, MOCK, ALWAYS_YES = (
    f"{name}-t0.0--{name}-t0.0" for name in ("oracle", "mock", "always-yes")
)


def test_eval_of_oracle_mock_and_always_yes_shows_intervals_and_comparisons(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real run of three reference players, evaluated by `privateshared eval`: intervals in
    the terminal, results.md and results.json, and a comparison of every two players."""
    records = tmp_path / "records"
    models = ["--model", "oracle", "--model", "mock", "--model", "always-yes"]
    assert main(["run", *models, "--results-dir", str(records)]) == 0
    capsys.readouterr()
    assert main(["eval", str(records), "--resamples", "2000"]) == 0
    printed = capsys.readouterr().out.splitlines()

    # The terminal: the comparisons, then the per-model table with its intervals.
    header = printed.index(next(line for line in printed if line.startswith("compared")))
    compared = [line.split() for line in printed[header + 1 : printed.index("", header)]]
    # Main Score: every p the floor of 2000 random sign flips, 2/2001, so Holm's 3x, 2x and 1x
    # step down to 0.003 each; % Played: McNemar's, the mock's 18 aborts against none.
    assert [(" ".join(row[:2]), row[2], row[3], row[-1]) for row in compared] == [
        ("main score", ALWAYS_YES, MOCK, "0.003"),
        ("main score", ALWAYS_YES, ORACLE, "0.003"),
        ("main score", MOCK, ORACLE, "0.003"),
        ("% played", ALWAYS_YES, MOCK, "0.001"),  # "< 0.001"
        ("% played", ALWAYS_YES, ORACLE, "1.000"),
        ("% played", MOCK, ORACLE, "0.001"),
    ]
    rows = {line.split()[0]: line.split() for line in printed if line.startswith(ORACLE)}
    # Wilson's interval of 50 of 50; the oracle's every resample is 100.
    assert rows[ORACLE][6:] == ["100.0", "[92.9,", "100.0]", "100.00", "±", "0.00", "[100.0,",
                                "100.0]", "100.00", "[100.0,", "100.0]"]  # fmt: skip

    saved = json.loads((records / "results.json").read_text())
    comparisons = {(c["metric"], c["model_a"], c["model_b"]): c for c in saved["comparisons"]}
    assert len(comparisons) == 6
    # The oracle beats always-yes on all 50 instances by 100 points; both play every one.
    versus = comparisons["Main Score", ALWAYS_YES, ORACLE]
    assert (versus["pairs"], versus["mean_difference"], versus["ci95"]) == (
        50,
        -100.0,
        [-100.0, -100.0],
    )
    # 2^50 sign flips are too many: 2000 random ones, the observed counted once more.
    assert versus["p_value"] == 2 / 2001 and versus["p_holm"] == 3 * 2 / 2001
    same = comparisons["% Played", ALWAYS_YES, ORACLE]
    assert (same["mean_difference"], same["p_value"], same["p_holm"]) == (0.0, 1.0, 1.0)
    # The mock aborts 18 episodes the oracle plays: McNemar, 2 x (1/2)^18.
    aborts = comparisons["% Played", MOCK, ORACLE]
    assert (aborts["pairs"], aborts["b_ahead"], aborts["p_value"]) == (50, 18, 2 / 2**18)
    mock = next(row for row in saved["models"] if row["model"] == MOCK)
    low, high = mock["quality_score_ci95"]
    assert low < mock["quality_score"] < high and high - low < 20

    markdown = (records / "results.md").read_text()
    assert "2000 resamples, seed 20251121" in markdown
    assert "## Paired comparisons" in markdown and "Holm's method" in markdown
    # The last column: differences that never vary need the sign-flip test's 6 pairs, 2 of
    # the 50 instances per experiment (all played by both).
    assert (
        f"| {ALWAYS_YES} | {ORACLE} | Main Score | 50 | 0 | 50 | -100.00 | [-100.00, -100.00] "
        "| < 0.001 | 0.003 | 2 |"
    ) in markdown
    # The mock against a constant player: differences with SD 20.02 over the 32 instances both
    # played; ((1.96 + 0.84) x 20.02 / 5)^2 = 125.9, so 126 pairs, 126 x 50/32 = 197
    # instances, 40 per experiment.
    assert (
        f"**How many instances.** To tell apart a true difference of 5 points in Main Score "
        "with 80% power (two-sided test at the 5% level), the spread of this run's paired "
        f"differences asks for about 40 instances per experiment for {ALWAYS_YES} against "
        f"{MOCK}"
    ) in markdown
    assert "`privateshared instances --per-domain N --out FILE`" in markdown
    # The plot: a band per model in each experiment's panel, under the lines.
    plot = (records / "accuracy_by_round.svg").read_text()
    assert plot.count(f"<title>{MOCK}: 95% interval</title>") == 5
    for panel in plot.split("<g transform=")[1:6]:  # the five panels, the legend after them
        assert panel.rindex('class="band"') < panel.index("<polyline")
    # clembench's own files know nothing of intervals.
    with (records / "results.csv").open(newline="") as results_csv:
        assert next(csv.reader(results_csv))[1:] == [
            "-, clemscore", "all, Average % Played", "all, Average Quality Score",
            "privateshared, % Played", "privateshared, Quality Score",
        ]  # fmt: skip


def _questioned(
    results: Path, experiment: str, game_id: int, main: float | None,
    scores: tuple[float, float, float, int, float, int, int], slot_accuracy: list[float],
) -> None:  # fmt: skip
    """An alpha episode with the questioner's episode scores (slot accuracy, JGA, hallucination,
    violations, validity, task completion, questions) and its slot accuracy per probing round."""
    rounds = [1.0] * len(slot_accuracy)
    _scored(results, ALPHA, experiment, game_id, main, rounds)
    path = results / ALPHA / "privateshared" / experiment / f"episode_{game_id}" / "scores.json"
    recorded = json.loads(path.read_text())
    names = [QUESTIONER_SLOT_ACCURACY, QUESTIONER_JOINT_GOAL_ACCURACY,
             QUESTIONER_HALLUCINATION_RATE, QUESTIONER_POLICY_VIOLATIONS,
             QUESTIONER_CALL_VALIDITY, QUESTIONER_TASK_COMPLETION, QUESTIONS_ASKED]  # fmt: skip
    recorded["episode scores"] |= dict(zip(names, scores, strict=True))
    for k, value in enumerate(slot_accuracy):
        recorded["turn scores"][str(k)][QUESTIONER_SLOT_ACCURACY] = value
    path.write_text(json.dumps(recorded, allow_nan=True))


def test_questioner_table_and_plot(tmp_path: Path, results: Path) -> None:
    folder = tmp_path / "questioned"  # beside the fixture's results, which have none
    # alpha: a perfect questioner; one whose every call was broken (aborted); a middling one.
    _questioned(folder, TRAVEL, 0, 80.0, (1.0, 1.0, 0.0, 0, 1.0, 1, 3), [NAN, 1.0, 1.0, 1.0])
    _questioned(folder, TRAVEL, 1, None, (NAN, 1.0, NAN, 0, 0.0, 0, 0), [NAN])
    _questioned(folder, JOBS, 0, 60.0, (0.5, 0.5, 0.5, 2, 0.8, 0, 4), [NAN, 0.0, 1.0])
    _scored(folder, BETA, TRAVEL, 0, 40.0, [1.0])  # clembench's records: no questioner scores
    evaluation = evaluate(collect(folder))
    alpha = _row(evaluation.models, ALPHA)
    assert alpha.questioner_episodes == 3
    # Means over the episodes defining each: slot accuracy (1 + 0.5) / 2, hallucination
    # (0 + 0.5) / 2; the rest over all three.
    assert (alpha.questioner_slot_accuracy, alpha.questioner_hallucination_rate) == (0.75, 0.25)
    assert alpha.questioner_joint_goal_accuracy == pytest.approx(2.5 / 3)
    assert alpha.questioner_policy_violations == pytest.approx(2 / 3)
    assert alpha.questioner_call_validity == pytest.approx(0.6)
    assert alpha.questioner_task_completion == pytest.approx(1 / 3)
    assert alpha.questions_asked == pytest.approx(7 / 3)
    beta = _row(evaluation.models, BETA)
    assert beta.questioner_episodes == 0 and math.isnan(beta.questioner_slot_accuracy)
    assert evaluation.overall.questioner_episodes == 3
    # Turn t is probing round t - 1: turn 2 is (1 + 0) / 2, turns 3 and 4 all 1; turn 1 never
    # defined (nothing revealed yet).
    (alpha_turns, beta_turns) = evaluation.questioner_by_model
    assert alpha_turns.slot_accuracy == {2: 0.5, 3: 1.0, 4: 1.0}
    assert alpha_turns.episodes == {2: 2, 3: 2, 4: 1}
    assert beta_turns.slot_accuracy == {}

    written = [path.name for path in write_results(folder, evaluation)]
    assert written[-2:] == ["accuracy_by_round.svg", "questioner_by_turn.svg"]
    assert (folder / "questioner_by_turn.svg").read_text().startswith("<svg ")
    markdown = (folder / "results.md").read_text()
    table = markdown[markdown.index("## Questioner") :]
    assert table.splitlines()[4:] == [
        "| model | experiment | questioner | episodes | slot accuracy | JGA | hallucination rate "
        "| violations / episode | call validity | task completion | questions / episode |",
        "| --- | --- | --- | --: | --: | --: | --: | --: | --: | --: | --: |",
        f"| {ALPHA} | all | ? | 3 | 0.75 | 0.83 | 0.25 | 0.67 | 0.60 | 0.33 | 2.33 |",
        f"| {ALPHA} | travel-booking | ? | 2 | 1.00 | 1.00 | 0.00 | 0.00 | 0.50 | 0.50 | 1.50 |",
        f"| {ALPHA} | job-interview | ? | 1 | 0.50 | 0.50 | 0.50 | 2.00 | 0.80 | 0.00 | 4.00 |",
        "| all | all | ? | 3 | 0.75 | 0.83 | 0.25 | 0.67 | 0.60 | 0.33 | 2.33 |",
    ]  # beta has no questioner scores: no row; no experiment.json names the questioner: "?"
    episodes = (folder / "episodes.csv").read_text().splitlines()
    # No usage.json here: no tokens, no cost (empty, never 0).
    assert f"{ALPHA},{TRAVEL},episode_0,played,80.0,0.9,0.8,0.75,1.0,1.0,,,,,," in episodes
    assert f"{ALPHA},{TRAVEL},episode_1,aborted,,,,,,0.0,,,,,," in episodes
    assert f"{BETA},{TRAVEL},episode_0,played,40.0,0.9,0.8,0.75,,,,,,,," in episodes
    raw = (folder / "raw.csv").read_text()
    assert f"{ALPHA},{JOBS},episode_0,Questions Asked,4.0" in raw
    # In the terminal, the questioner's table comes first, then the comparisons: the per-model
    # one stays last.
    lines = format_table(evaluation).splitlines()
    questioner, compared, per_model = "\n".join(lines).split("\n\n")
    questioner, per_model = questioner.splitlines(), per_model.splitlines()
    assert compared.splitlines()[0].split()[0] == "compared"
    assert questioner[0].split()[:4] == ["model", "questioner", "episodes", "slot"]
    assert questioner[1].split() == [ALPHA, "?", "3", "0.75", "0.83", "0.25", "0.67", "0.60",
                                     "0.33", "2.33"]  # fmt: skip
    assert len(questioner) == 2
    assert per_model[0].split()[0] == "model" and len(per_model) == 3

    # Records without questioner scores (the fixture's) get neither table nor plot.
    plain = evaluate(collect(results))
    assert "Questioner" not in format_markdown(plain)
    assert "questioner" not in format_table(plain)
    assert "questioner_by_turn.svg" not in [path.name for path in write_results(results, plain)]


# Two benchmarks in one folder: the classic one and the two-listener experiments

HANDOVER = "3_travel-booking-handover"


@pytest.mark.parametrize(
    ("experiment", "expected"),
    [
        ("travel-booking", "classic"),
        ("travel-booking-handover", "two-listeners"),
        ("job-interview-late-joiner", "two-listeners"),
        ("handover", "classic"),  # a kind alone is no `<domain>-<kind>` name
        ("late-joiner-practice", "classic"),  # the kind must end the name
    ],
    ids=["classic", "handover", "late-joiner", "bare-kind", "kind-first"],
)
def test_benchmark_of_name(experiment: str, expected: Benchmark) -> None:
    assert benchmark_of_name(experiment) == expected


def test_the_benchmark_comes_from_experiment_json_else_from_the_name(tmp_path: Path) -> None:
    named = {  # experiment folder -> its experiment.json, None for none (clembench's records)
        TRAVEL: {"name": "travel-booking"},  # written before experiment.json said its benchmark
        HANDOVER: None,
        "4_night-shift": {"benchmark": "two-listeners"},  # a name that tells nothing
        "5_restaurant-late-joiner": {"benchmark": "classic"},  # the file wins over the name
    }
    for folder, recorded in named.items():
        _scored(tmp_path, ALPHA, folder, 0, 50.0, [1.0])
        if recorded is not None:
            (tmp_path / ALPHA / "privateshared" / folder / "experiment.json").write_text(
                json.dumps(recorded)
            )
    benchmarks = {e.experiment_folder: e.benchmark for e in collect(tmp_path)}
    assert benchmarks == {
        TRAVEL: "classic", HANDOVER: "two-listeners", "4_night-shift": "two-listeners",
        "5_restaurant-late-joiner": "classic",
    }  # fmt: skip


def test_evaluate_never_averages_two_benchmarks(results: Path) -> None:
    _scored(results, ALPHA, HANDOVER, 0, 50.0, [1.0, 0.5])
    _scored(results, BETA, HANDOVER, 0, None, [0.0])
    episodes = collect(results)
    with pytest.raises(ValueError, match="two-listeners evaluated together"):
        evaluate(episodes)
    classic, two_listeners = evaluate_benchmarks(episodes)
    assert (classic.benchmark, two_listeners.benchmark) == ("classic", "two-listeners")
    # Each as if alone: the fixture's classic numbers, and the two handover episodes.
    alone = evaluate([e for e in episodes if e.experiment_folder != HANDOVER])
    assert classic.model_dump_json() == alone.model_dump_json()
    alpha, beta = two_listeners.models
    assert (alpha.model, alpha.episodes, alpha.played, alpha.quality_score) == (ALPHA, 1, 1, 50.0)
    assert (beta.model, beta.episodes, beta.aborted) == (BETA, 1, 1)
    assert math.isnan(beta.quality_score)

    # In the terminal: a titled table per benchmark, the classic one last so that its rows are
    # each model's last; the warning, over both, stays the last line.
    lines = format_table(classic, two_listeners).splitlines()
    assert lines[0] == (
        "two-listener experiments (1 experiment; a separate benchmark, never averaged with the "
        "classic one)"
    )
    classic_title = lines.index("classic benchmark (2 experiments)")
    alone_lines = format_table(alone).splitlines()
    assert lines[classic_title + 1 :] == [
        *alone_lines[:-1],
        "warning: 1 episode errored and 1 unscored: these scores cover 9 of 11 episodes; run the "
        "same command again to play them",
    ]
    assert lines[1 : classic_title - 1] == format_table(two_listeners).splitlines()


def _run_quietly(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """Run the command line and return what it printed."""
    assert main(argv) == 0
    return capsys.readouterr().out


def test_a_folder_of_both_benchmarks_reports_each_as_if_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The classic benchmark and a two-listener experiment played by the same model into one
    folder give, for each benchmark, the numbers of a folder holding it alone."""
    classic, two, both = tmp_path / "classic", tmp_path / "two", tmp_path / "both"
    handover = ["--experiment", "travel-booking-handover", "--model", "mock"]
    first = _run_quietly(capsys, ["run", "--model", "mock", "--results-dir", str(classic)])
    _run_quietly(capsys, ["run", *handover, "--results-dir", str(two)])
    shutil.copytree(classic, both)
    second = _run_quietly(capsys, ["run", *handover, "--results-dir", str(both)]).splitlines()
    again = _run_quietly(capsys, ["run", "--model", "mock", "--results-dir", str(classic)])

    # What the tables cover, said when the folder holds more than this run's episodes.
    note = (
        f"{both}/ holds 60 episodes; the tables cover all of them (this run: 10). Pass "
        "--results-dir to keep runs apart."
    )
    assert note in second
    assert second.index(note) < second.index("classic benchmark (5 experiments)")
    assert "the tables cover all" not in first  # only this run's episodes in the folder
    assert "the tables cover all" not in again  # every one of this run's episodes already done
    assert (
        "two-listener experiments (1 experiment; a separate benchmark, never averaged with the "
        "classic one)"
    ) in second
    mock_rows = [line for line in second if line.startswith("mock-t0.0")]
    alone_rows = [line for line in first.splitlines() if line.startswith("mock-t0.0")]
    # The model's last row is its classic result, the one of the classic run alone.
    assert mock_rows[-1] == alone_rows[-1] and mock_rows[-1].split()[1] == "50"

    # experiment.json names the benchmark of the two-listener experiments only.
    (recorded,) = both.glob("*/privateshared/*_travel-booking-handover/experiment.json")
    assert json.loads(recorded.read_text())["benchmark"] == "two-listeners"
    (restaurant,) = both.glob("*/privateshared/*_restaurant/experiment.json")
    assert "benchmark" not in json.loads(restaurant.read_text())

    # results.json: the classic evaluation on top, the two-listener one under two_listeners.
    mixed = json.loads((both / "results.json").read_text())
    under = mixed.pop("two_listeners")
    assert [row["episodes"] for row in mixed["models"]] == [50]
    assert [row["episodes"] for row in under["models"]] == [10]

    def text(data: object) -> str:  # NaN != NaN: compare the JSON text
        return json.dumps(data, sort_keys=True)

    assert text(mixed) == text(json.loads((classic / "results.json").read_text()))
    assert text(under) == text(json.loads((two / "results.json").read_text()))

    # results.md: a part per benchmark, each what the benchmark's own results.md holds.
    title = "# privateshared results\n\n"
    markdown = (both / "results.md").read_text()
    classic_md, two_md = (
        (f / "results.md").read_text().removeprefix(title) for f in (classic, two)
    )
    assert markdown.startswith(
        f"{title}This folder holds two benchmarks, the classic benchmark (5 experiments) and the "
        "two-listener experiments (1 experiment)"
    )
    assert "never averaged together" in markdown
    assert markdown.endswith(
        f"\n\n# Classic benchmark\n\n{classic_md.rstrip()}\n\n"
        f"# Two-listener experiments (a separate benchmark)\n\n{two_md}"
    )

    # clembench's files hold the classic benchmark only; episodes.csv holds every episode.
    for name in ("raw.csv", "results.csv"):
        assert (both / name).read_text() == (classic / name).read_text()
    assert "handover" not in (both / "raw.csv").read_text()
    episodes = (both / "episodes.csv").read_text().splitlines()
    alone = [(f / "episodes.csv").read_text().splitlines() for f in (classic, two)]
    assert episodes == alone[0] + alone[1][1:]
    plot = (both / "accuracy_by_round.svg").read_text()
    assert ">travel-booking<" in plot and ">travel-booking-handover, 2nd listener<" in plot
