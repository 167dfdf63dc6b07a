"""After a run, over its records: read every episode folder back and evaluate the benchmark.

`collect` reads what a run left in each episode folder (scores.json, error.json or neither) and
`evaluate` aggregates the episodes at clembench's three levels (dataset, episode, turn: here a
probing round) into an `Evaluation`. This module holds the reading and the numbers;
results.py writes them out as tables, ours and clembench's.

A results folder may hold two benchmarks, the classic one and the two-listener experiments
(domains/audience.py): `evaluate_benchmarks` evaluates each on its own, since an average over
both would be neither benchmark's score.

An errored episode (the infrastructure failed) or an unscored one (the run was interrupted) is
neither played nor aborted: it stays out of % Played, but is always counted and shown.

Every headline number carries its 95% interval, and every two models of a benchmark are
compared paired on the instances both played; uncertainty.py computes both (statistics.py
holds the statistics), with a fixed seed and `resamples` bootstrap resamples.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
)

from privateshared.agents.usage import Price, Usage, total_usage
from privateshared.bench.defaults import DEFAULT_RESAMPLES
from privateshared.bench.reporting.diagnostics import (
    Diagnostics,
    EpisodeDiagnostics,
    diagnose,
    read_episode_diagnostics,
)
from privateshared.bench.reporting.statistics import SEED, mean_interval
from privateshared.bench.reporting.uncertainty import (
    Comparison,
    aggregate_intervals,
    compare_models,
)
from privateshared.domains.audience import BENCHMARKS, Benchmark, benchmark_of_name
from privateshared.graph.perspective import (
    CLASSIC_MAIN_SCORE,
    FIRST_LISTENER_ACCURACY,
    FIRST_LISTENER_KAPPA,
    PERSPECTIVE_ACCURACY,
    PERSPECTIVE_KAPPA,
    PERSPECTIVE_PAIRS,
    REDUNDANT_QUESTIONS,
    SECOND_LISTENER_ACCURACY,
    SECOND_LISTENER_KAPPA,
    TRANSFER_COMPLETENESS,
    TWO_LISTENER_KAPPA,
)
from privateshared.graph.records import (
    ABORTED,
    ACCURACY,
    GAME_NAME,
    KAPPA,
    MAIN_SCORE,
    MIDDLE_ACCURACY,
    QUESTIONER_CALL_VALIDITY,
    QUESTIONER_HALLUCINATION_RATE,
    QUESTIONER_JOINT_GOAL_ACCURACY,
    QUESTIONER_JUDGE_SCORE,
    QUESTIONER_POLICY_VIOLATIONS,
    QUESTIONER_SLOT_ACCURACY,
    QUESTIONER_TASK_COMPLETION,
    QUESTIONS_ASKED,
    SLOT_FILLING_ACCURACY,
    CallFailure,
    EpisodeScores,
    ScoreValue,
)
from privateshared.graph.usage import USAGE_FILE, EpisodeUsage, Seat, SeatUsage

EpisodeStatus = Literal["played", "aborted", "errored", "unscored"]

SCORES_FILE = "scores.json"
ERROR_FILE = "error.json"
ALL_MODELS = "all"
NAN = float("nan")


class ResultsError(ValueError):
    """A results folder or record file that cannot be evaluated; the message is one line."""


class EpisodeRecord(BaseModel):
    """One episode folder of a run, as read back from its records."""

    model_config = ConfigDict(frozen=True)

    model: str
    """The dialogue pair's folder, e.g. `oracle-t0.0--oracle-t0.0` (clembench's "model")."""
    experiment_folder: str
    """The experiment's folder, e.g. `0_travel-booking` (clembench's "experiment")."""
    experiment: str
    """The experiment's name, e.g. `travel-booking`."""
    episode: str
    """The episode's folder, e.g. `episode_3`."""
    game_id: int
    """The instance's game_id, from the folder name."""
    status: EpisodeStatus
    """played or aborted (scores.json's Aborted), errored (error.json only) or unscored."""
    scores: dict[str, ScoreValue] | None = None
    """The episode scores of scores.json, in file order; None when errored or unscored."""
    round_accuracy: dict[int, float] = {}
    """Accuracy of each probing round in the turn scores, by round; empty when not scored."""
    listener_round_accuracy: dict[str, dict[int, float]] = {}
    """Two listeners only: `1st` / `2nd` listener -> its accuracy in each probing round."""
    turn_slot_accuracy: dict[int, float] = {}
    """Questioner Slot Accuracy of each questioner turn where it is defined, by turn (1 prepares
    the first question); empty without questioner scores."""
    error: CallFailure | None = None
    """Why the episode could not finish; set only when errored."""
    questioner: str = ""
    """Who asked (`programmatic` or a model), from experiment.json; empty when not recorded."""
    benchmark: Benchmark = "classic"
    """The benchmark the experiment belongs to, from experiment.json, else from its name."""
    guided: str | None = None
    """The form the answerer's replies were held to (agents/guided.py), from experiment.json;
    None when they were not."""

    usage: dict[Seat, SeatUsage] = {}
    """The tokens each seat's calls used (its usage.json), errored episodes' too: their calls
    were made. Empty when no call reported usage (programs, or a server that reports none)."""
    cost_usd: float | None = None
    """What those tokens cost at the prices experiment.json records for each seat's model (US
    dollars); None without usage, or when a seat that used tokens has no price."""
    diagnostics: EpisodeDiagnostics | None = Field(default=None, exclude=True)
    """The counts behind the diagnostics (diagnostics/), from interactions.json; None unless
    played or aborted with readable records. Not in results.json: its aggregates hold the
    rates."""

    def score(self, name: str) -> float:
        """Return the episode score `name`, NaN when the episode has no such score."""
        return NAN if self.scores is None else float(self.scores.get(name, NAN))

    def tokens(self) -> Usage | None:
        """The tokens of every seat together; None when no call reported usage."""
        return total_usage(self.usage.values())

    def token_count(self, field: str) -> int | None:
        """One count of `tokens()` (`prompt_tokens`, `completion_tokens`, `cached_tokens`,
        `reasoning_tokens`); None where no call reported it."""
        used = self.tokens()
        return None if used is None else getattr(used, field)

    @model_serializer(mode="wrap")
    def _with_token_counts(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        """results.json gives each episode's counts over every seat beside `usage`, derived
        from it when dumped (as episodes.csv does), never kept apart from it."""
        dumped: dict[str, object] = handler(self)
        return dumped | {field: self.token_count(field) for field in Usage.model_fields}


class Aggregate(BaseModel):
    """Dataset level: one model, one model on one experiment, or every model together."""

    model_config = ConfigDict(frozen=True)

    model: str
    """The pair folder, or `all` over every model."""
    experiment: str | None
    """The experiment's name; None over every experiment."""
    episodes: int
    """Every episode folder, whatever its status."""
    played: int
    aborted: int
    errored: int
    """Episodes the infrastructure could not finish (error.json)."""
    unscored: int
    """Episodes with neither scores.json nor error.json: the run was interrupted."""
    percent_played: float
    """100 x played / (played + aborted): errored and unscored episodes count as neither."""
    played_ci95: tuple[float, float]
    """95% Wilson interval of % Played, in percent; NaN without a played or aborted episode."""
    quality_score: float
    """Mean Main Score over played episodes; NaN when none was played."""
    quality_score_ci95: tuple[float, float]
    """95% bootstrap interval of the Quality Score: played and aborted episodes resampled
    within each experiment (over every model, instances with all their episodes); NaN for fewer
    than two played episodes (uncertainty.py)."""
    quality_score_std: float
    """Sample standard deviation (ddof=1, as pandas' std in clembench) of those Main Scores;
    NaN for fewer than two."""
    clemscore: float
    """% Played / 100 x Quality Score; NaN when no episode was played."""
    clemscore_ci95: tuple[float, float]
    """95% bootstrap interval of the clemscore, from the same resamples; NaN when no episode
    was played."""
    accuracy: float
    """Mean Accuracy over played episodes."""
    accuracy_ci95: tuple[float, float]
    """95% bootstrap interval of that mean, episodes (never probes) resampled; NaN for fewer
    than two."""
    kappa: float
    """Mean Kappa (not truncated) over played episodes."""
    kappa_ci95: tuple[float, float]
    """95% bootstrap interval of that mean, as accuracy's."""
    slot_filling_accuracy: float
    """Mean Slot-Filling-Accuracy over played episodes."""
    middle_accuracy: float
    """Mean Middle-Accuracy over played episodes."""
    # The questioner's scores, averaged over the scored episodes (played or aborted: they
    # measure the questioner) that have them, each where it is defined; NaN when none has.
    questioner: str
    """Who asked in these episodes (`programmatic`, a model; several joined by commas)."""
    questioner_episodes: int
    """Scored episodes with questioner scores (a questioner acting through functions)."""
    questioner_slot_accuracy: float
    questioner_joint_goal_accuracy: float
    questioner_hallucination_rate: float
    questioner_policy_violations: float
    """Mean violations per episode."""
    questioner_call_validity: float
    questioner_task_completion: float
    """Share of those episodes the questioner completed."""
    questions_asked: float
    """Mean questions per episode."""
    questioner_judge_score: float
    """Mean of the episodes' mean judge ratings (1 to 5); NaN without a judge."""
    # Tokens and cost, summed over every episode (errored ones too: their calls were made).
    prompt_tokens: int | None = None
    """None when no episode's calls reported usage."""
    completion_tokens: int | None = None
    """Reasoning tokens included; None when no episode's calls reported usage."""
    cached_tokens: int | None = None
    """The part of the prompt tokens read from a cache; None where none was reported."""
    reasoning_tokens: int | None = None
    """The part of the completion tokens spent reasoning; None where none was reported."""
    cost_usd: float | None = None
    """US dollars, at the prices experiment.json records; None when no episode reported usage or
    one that did has no price (never part of a cost)."""
    diagnostics: Diagnostics | None = None
    """Where the errors lie (diagnostics/rates.py): over- and under-attribution and their
    breakdowns, each with its interval. None over every model together, and without a played or
    aborted episode whose records could be read."""


class RoundMean(BaseModel):
    """Turn level: the mean accuracy of one probing round."""

    model_config = ConfigDict(frozen=True)

    probe_round: int
    accuracy: float
    """Mean of the round's Accuracy turn score."""
    ci95: tuple[float, float]
    """95% bootstrap interval of that mean, the episodes resampled (within each experiment
    where the line covers several), never their probes; NaN unless an experiment has two."""
    episodes: int
    """Scored episodes that completed this round (aborted ones count the rounds they finished)."""


class QuestionerByTurn(BaseModel):
    """Turn level: one model's questioner, its mean slot accuracy at each of its turns."""

    model_config = ConfigDict(frozen=True)

    model: str
    experiment: str | None = None
    """The experiment's name; None over every experiment."""
    slot_accuracy: dict[int, float]
    """Turn (1 prepares the first question) -> mean Questioner Slot Accuracy over the episodes
    where it is defined at that turn; first turn first, empty without questioner scores."""
    episodes: dict[int, int]
    """Turn -> how many episodes that mean is over."""


class RoundAccuracy(BaseModel):
    """Turn level: mean accuracy per probing round of one model, or one model on one experiment."""

    model_config = ConfigDict(frozen=True)

    model: str
    """The pair folder."""
    experiment: str | None
    """The experiment's name; None over every experiment."""
    rounds: tuple[RoundMean, ...]
    """Round 0 first; empty when no episode completed a round."""


class ListenerAggregate(BaseModel):
    """The two-listener scores (graph/perspective.py) of one model on one experiment, each the
    mean over the played episodes where it is defined; their headline, the Main Score, is the
    experiment's Quality Score (`Aggregate`)."""

    model_config = ConfigDict(frozen=True)

    model: str
    experiment: str
    episodes: int
    """Played episodes with two-listener scores."""
    classic_main_score: float
    """The Main Score as the classic game computes it, over every (listener, slot) probe."""
    two_listener_kappa: float
    """The harmonic mean of the truncated first-listener, second-listener and perspective
    kappas: the Main Score's scorekeeping half."""
    first_listener_accuracy: float
    first_listener_kappa: float
    second_listener_accuracy: float
    second_listener_kappa: float
    perspective_kappa: float
    """Kappa over the probes of the pairs where the listeners' truths differ."""
    perspective_accuracy: float
    perspective_pairs: float
    """Mean number of (round, slot) pairs per episode where the listeners' truths differ."""
    transfer_completeness: float
    """Handover only; NaN in late-joiner experiments."""
    redundant_questions: float
    """Handover only; NaN in late-joiner experiments."""


def listener_aggregate(
    episodes: Sequence[EpisodeRecord], model: str, experiment: str
) -> ListenerAggregate | None:
    """The two-listener means of a model on an experiment; None for a classic experiment."""
    played = [e for e in episodes if e.status == "played" and e.scores is not None
              and PERSPECTIVE_PAIRS in e.scores]  # fmt: skip
    if not played:
        return None

    def mean_of(name: str) -> float:
        return mean(finite(e.score(name) for e in played if e.scores and name in e.scores))

    return ListenerAggregate(
        model=model,
        experiment=experiment,
        episodes=len(played),
        classic_main_score=mean_of(CLASSIC_MAIN_SCORE),
        two_listener_kappa=mean_of(TWO_LISTENER_KAPPA),
        first_listener_accuracy=mean_of(FIRST_LISTENER_ACCURACY),
        first_listener_kappa=mean_of(FIRST_LISTENER_KAPPA),
        second_listener_accuracy=mean_of(SECOND_LISTENER_ACCURACY),
        second_listener_kappa=mean_of(SECOND_LISTENER_KAPPA),
        perspective_kappa=mean_of(PERSPECTIVE_KAPPA),
        perspective_accuracy=mean_of(PERSPECTIVE_ACCURACY),
        perspective_pairs=mean_of(PERSPECTIVE_PAIRS),
        transfer_completeness=mean_of(TRANSFER_COMPLETENESS),
        redundant_questions=mean_of(REDUNDANT_QUESTIONS),
    )


class Evaluation(BaseModel):
    """One benchmark's episodes evaluated at the dataset, episode and turn levels; models sorted
    by name."""

    model_config = ConfigDict(frozen=True)

    benchmark: Benchmark = "classic"
    """The benchmark every episode here belongs to."""
    models: tuple[Aggregate, ...]
    """One per model, over all its experiments."""
    experiments: tuple[Aggregate, ...]
    """One per model and experiment."""
    overall: Aggregate
    """Every model together."""
    episodes: tuple[EpisodeRecord, ...]
    """Episode level: every episode, by model, experiment and game id."""
    rounds_by_model: tuple[RoundAccuracy, ...]
    """Turn level, per model."""
    rounds_by_experiment: tuple[RoundAccuracy, ...]
    """Turn level, per model and experiment."""
    questioner_by_model: tuple[QuestionerByTurn, ...]
    """Turn level, the questioner's slot accuracy, per model."""
    questioner_by_experiment: tuple[QuestionerByTurn, ...]
    """Turn level, the questioner's slot accuracy, per model and experiment: episodes of
    different lengths are not mixed."""
    listeners: tuple[ListenerAggregate, ...] = ()
    """The two-listener experiments' own scores, per model and experiment; none for a classic
    run, whose results.json then keeps its keys."""
    rounds_by_listener: tuple[RoundAccuracy, ...] = ()
    """Turn level, two listeners only: per model, experiment and listener (the experiment named
    `<experiment>, 1st listener`)."""
    comparisons: tuple[Comparison, ...] = ()
    """Every two models compared, paired on the instances both played, per metric (Main Score,
    then % Played); none with one model."""
    resamples: int = DEFAULT_RESAMPLES
    """Bootstrap resamples (and random sign flips) behind every interval and p-value."""
    seed: int = SEED
    """The seed of every resampling: the same records give the same intervals."""


# Reading the records


_Record = TypeVar("_Record", bound=BaseModel)

_FIXES = {
    SCORES_FILE: "re-score the run with `privateshared score`",
    ERROR_FILE: "this is not a privateshared error.json; delete it to play the episode again",
}


def _read(path: Path, model: type[_Record]) -> _Record:
    fix = _FIXES[path.name]
    try:
        return model.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        reason = " ".join(str(error).split())
        raise ResultsError(f"{path}: cannot read it ({reason}); {fix}") from None
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "top level"
        raise ResultsError(f"{path}: {where}: {first['msg']}; {fix}") from None


def _by_round(path: Path, scores: EpisodeScores, name: str) -> dict[int, float]:
    """The turn score `name` of each probing round where it is defined, by round."""
    rounds: dict[int, float] = {}
    for key, turn in scores.turn_scores.items():
        if not key.isdigit():
            raise ResultsError(
                f"{path}: turn scores: {key!r} is not a probing round; {_FIXES[path.name]}"
            )
        if name in turn and not math.isnan(turn[name]):
            rounds[int(key)] = float(turn[name])
    return dict(sorted(rounds.items()))


@cache
def _experiment_file(path: Path) -> Mapping[str, object]:
    """An experiment folder's experiment.json; empty when there is none (clembench's) or it is
    not a JSON object."""
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    return recorded if isinstance(recorded, dict) else {}


def _questioner(path: Path) -> str:
    """The questioner an experiment folder's experiment.json names ("" for clembench's)."""
    named = _experiment_file(path).get("questioner", "")
    return named if isinstance(named, str) else ""


def _benchmark(path: Path, experiment: str) -> Benchmark:
    """The benchmark an experiment folder's experiment.json names; where it names none (older
    records, clembench's), the one the experiment's name implies."""
    named = _experiment_file(path).get("benchmark")
    return next((known for known in BENCHMARKS if known == named), benchmark_of_name(experiment))


def _guided(path: Path) -> str | None:
    """The constraint an experiment folder's experiment.json records for the answerer."""
    settings = _experiment_file(path).get("settings")
    answerer = settings.get("answerer") if isinstance(settings, dict) else None
    form = answerer.get("guided") if isinstance(answerer, dict) else None
    return form if isinstance(form, str) else None


def _prices(path: Path) -> dict[Seat, Price]:
    """The price of each seat's model an experiment folder's experiment.json records."""
    settings = _experiment_file(path).get("settings")
    prices: dict[Seat, Price] = {}
    for seat in ("answerer", "questioner", "judge"):
        spec = settings.get(seat) if isinstance(settings, dict) else None
        price = spec.get("price") if isinstance(spec, dict) else None
        if price is not None:
            try:
                prices[seat] = Price.model_validate(price)
            except ValidationError:
                raise ResultsError(
                    f"{path}: settings.{seat}.price is not a price; fix it as a registry entry's "
                    "(price: {input: ..., output: ...})"
                ) from None
    return prices


def _usage(folder: Path) -> dict[Seat, SeatUsage]:
    """An episode's usage.json by seat; empty when it has none."""
    path = folder / USAGE_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise ResultsError(f"{path}: cannot read it ({error.strerror}); check it") from None
    try:
        return EpisodeUsage.model_validate_json(text).root
    except ValidationError as error:
        where = ".".join(str(part) for part in error.errors()[0]["loc"]) or "top level"
        raise ResultsError(
            f"{path}: {where}: {error.errors()[0]['msg']}; delete it, or play the episode again "
            "(--rerun)"
        ) from None


def episode_cost(usage: Mapping[Seat, Usage], prices: Mapping[Seat, Price]) -> float | None:
    """What an episode's calls cost, seat by seat at its model's price; None without usage or
    when a seat that used tokens has no price."""
    if not usage or any(seat not in prices for seat in usage):
        return None
    return math.fsum(prices[seat].cost(used) for seat, used in usage.items())


def read_episode(folder: Path) -> EpisodeRecord:
    """Read one episode folder: its scores, else its error, else nothing (unscored)."""
    index, _, name = folder.parent.name.partition("_")
    number = folder.name.removeprefix("episode_")
    if not number.isdigit():
        raise ResultsError(f"{folder}: not an episode folder; episode folders are episode_<id>")
    scores_path, error_path = folder / SCORES_FILE, folder / ERROR_FILE
    status: EpisodeStatus = "unscored"
    scores: dict[str, ScoreValue] | None = None
    rounds: dict[int, float] = {}
    listener_rounds: dict[str, dict[int, float]] = {}
    turns: dict[int, float] = {}
    error: CallFailure | None = None
    if scores_path.is_file():  # scores.json is written last: it marks a finished episode
        recorded = _read(scores_path, EpisodeScores)
        scores = recorded.episode_scores
        if scores.get(ABORTED) not in (0, 1):
            raise ResultsError(
                f'{scores_path}: "episode scores" has no "{ABORTED}" of 0 or 1; '
                f"{_FIXES[SCORES_FILE]}"
            )
        status = "aborted" if scores[ABORTED] else "played"
        rounds = _by_round(scores_path, recorded, ACCURACY)
        listener_rounds = {
            which: by_round
            for which, name in LISTENER_ROUND_SCORES.items()
            if (by_round := _by_round(scores_path, recorded, name))
        }
        # Questioner turn t is scored with probing round t - 1.
        turns = {
            k + 1: value
            for k, value in _by_round(scores_path, recorded, QUESTIONER_SLOT_ACCURACY).items()
        }
    elif error_path.is_file():
        error = _read(error_path, CallFailure)
        status = "errored"
    counted = read_episode_diagnostics(folder) if status in ("played", "aborted") else None
    experiment = name if index.isdigit() and name else folder.parent.name
    usage = _usage(folder)
    return EpisodeRecord(
        model=folder.parents[2].name,
        experiment_folder=folder.parent.name,
        experiment=experiment,
        episode=folder.name,
        game_id=int(number),
        status=status,
        scores=scores,
        round_accuracy=rounds,
        listener_round_accuracy=listener_rounds,
        turn_slot_accuracy=turns,
        error=error,
        questioner=_questioner(folder.parent / "experiment.json"),
        benchmark=_benchmark(folder.parent / "experiment.json", experiment),
        usage=usage,
        cost_usd=episode_cost(usage, _prices(folder.parent / "experiment.json")) if usage else None,
        guided=_guided(folder.parent / "experiment.json"),
        diagnostics=counted,
    )


def episode_order(episode: EpisodeRecord) -> tuple[str, int, str, int]:
    """Sort key: model, then experiment index, experiment name and game id."""
    index = episode.experiment_folder.partition("_")[0]
    return episode.model, int(index) if index.isdigit() else -1, episode.experiment, episode.game_id


def collect(results_dir: Path) -> list[EpisodeRecord]:
    """Read every episode folder of a results folder, by model, experiment and game id."""
    if not results_dir.is_dir():
        raise ResultsError(f"{results_dir}: not a folder; pass the --results-dir of a run")
    pattern = f"*/{GAME_NAME}/*/episode_*"
    folders = [path for path in results_dir.glob(pattern) if path.is_dir()]
    if not folders:
        raise ResultsError(
            f"{results_dir}: no episode folders ({pattern}); pass the --results-dir of a run"
        )
    return sorted((read_episode(folder) for folder in folders), key=episode_order)


# Aggregating


def finite(values: Iterable[float]) -> list[float]:
    """Leave out the NaNs."""
    return [value for value in values if not math.isnan(value)]


def mean(values: Sequence[float]) -> float:
    """Average `values`; NaN when there are none."""
    # fsum: as exact as pandas' compensated (Kahan) group means, so roundings agree with clembench
    return math.fsum(values) / len(values) if values else NAN


def aggregate(
    episodes: Sequence[EpisodeRecord], model: str, experiment: str | None,
    resamples: int = DEFAULT_RESAMPLES,
) -> Aggregate:  # fmt: skip
    """Aggregate a group of episodes at the dataset level, each number with its interval from
    `resamples` bootstrap resamples."""
    count = {status: 0 for status in ("played", "aborted", "errored", "unscored")}
    for episode in episodes:
        count[episode.status] += 1
    played = [episode for episode in episodes if episode.status == "played"]

    def mean_of(name: str) -> float:
        return mean(finite(episode.score(name) for episode in played))

    main_scores = finite(episode.score(MAIN_SCORE) for episode in played)
    questioned = [
        episode for episode in episodes
        if episode.scores is not None and QUESTIONER_TASK_COMPLETION in episode.scores
    ]  # fmt: skip

    def questioner_mean(name: str) -> float:
        return mean(finite(episode.score(name) for episode in questioned))

    decided = count["played"] + count["aborted"]
    percent_played = 100 * count["played"] / decided if decided else NAN
    tokens = total_usage(episode.tokens() for episode in episodes)
    used = [episode for episode in episodes if episode.usage]
    costs = [episode.cost_usd for episode in used]
    cost = None if not costs or None in costs else math.fsum(c for c in costs if c is not None)
    quality = mean(main_scores)
    intervals = aggregate_intervals(episodes, resamples)
    return Aggregate(
        model=model,
        experiment=experiment,
        episodes=len(episodes),
        played=count["played"],
        aborted=count["aborted"],
        errored=count["errored"],
        unscored=count["unscored"],
        percent_played=percent_played,
        played_ci95=intervals.played,
        quality_score=quality,
        quality_score_ci95=intervals.quality_score,
        quality_score_std=statistics.stdev(main_scores) if len(main_scores) > 1 else NAN,
        clemscore=percent_played / 100 * quality,
        clemscore_ci95=intervals.clemscore,
        accuracy=mean_of(ACCURACY),
        accuracy_ci95=intervals.accuracy,
        kappa=mean_of(KAPPA),
        kappa_ci95=intervals.kappa,
        slot_filling_accuracy=mean_of(SLOT_FILLING_ACCURACY),
        middle_accuracy=mean_of(MIDDLE_ACCURACY),
        questioner=", ".join(sorted({e.questioner for e in episodes if e.questioner})),
        questioner_episodes=len(questioned),
        questioner_slot_accuracy=questioner_mean(QUESTIONER_SLOT_ACCURACY),
        questioner_joint_goal_accuracy=questioner_mean(QUESTIONER_JOINT_GOAL_ACCURACY),
        questioner_hallucination_rate=questioner_mean(QUESTIONER_HALLUCINATION_RATE),
        questioner_policy_violations=questioner_mean(QUESTIONER_POLICY_VIOLATIONS),
        questioner_call_validity=questioner_mean(QUESTIONER_CALL_VALIDITY),
        questioner_task_completion=questioner_mean(QUESTIONER_TASK_COMPLETION),
        questions_asked=questioner_mean(QUESTIONS_ASKED),
        questioner_judge_score=questioner_mean(QUESTIONER_JUDGE_SCORE),
        **(tokens.model_dump() if tokens is not None else {}),
        cost_usd=cost,
        # Over every model the units would be instances, and a rate over several models'
        # errors says nothing of any of them.
        diagnostics=None if model == ALL_MODELS else diagnose(episodes, resamples),
    )


LISTENER_ROUND_SCORES = {"1st": FIRST_LISTENER_ACCURACY, "2nd": SECOND_LISTENER_ACCURACY}
"""Turn scores of the two-listener experiments, by the listener they are about."""


def round_accuracy(
    episodes: Sequence[EpisodeRecord],
    model: str,
    experiment: str | None,
    listener: str | None = None,
    resamples: int = DEFAULT_RESAMPLES,
) -> RoundAccuracy:
    """Average each probing round's accuracy over the group's episodes that completed it, with
    its interval from `resamples` bootstrap resamples of those episodes; with `listener` (1st or
    2nd), the accuracy on that listener's probes, as `<experiment>, <listener> listener`."""
    by_round: dict[int, dict[str, list[float]]] = {}
    for episode in episodes:
        accuracies = (
            episode.round_accuracy
            if listener is None
            else episode.listener_round_accuracy.get(listener, {})
        )
        for probe_round, value in accuracies.items():
            by_round.setdefault(probe_round, {}).setdefault(episode.experiment, []).append(value)
    rounds = tuple(
        RoundMean(
            probe_round=k,
            accuracy=mean([value for values in strata.values() for value in values]),
            ci95=mean_interval(list(strata.values()), resamples),
            episodes=sum(map(len, strata.values())),
        )
        for k, strata in sorted(by_round.items())
    )
    if listener is not None:
        experiment = f"{experiment}, {listener} listener"
    return RoundAccuracy(model=model, experiment=experiment, rounds=rounds)


def questioner_by_turn(
    episodes: Sequence[EpisodeRecord], model: str, experiment: str | None = None
) -> QuestionerByTurn:
    """Average the questioner's slot accuracy at each turn over the episodes defining it."""
    by_turn: dict[int, list[float]] = {}
    for episode in episodes:
        for turn, value in episode.turn_slot_accuracy.items():
            by_turn.setdefault(turn, []).append(value)
    ordered = sorted(by_turn.items())
    return QuestionerByTurn(
        model=model,
        experiment=experiment,
        slot_accuracy={turn: mean(values) for turn, values in ordered},
        episodes={turn: len(values) for turn, values in ordered},
    )


_Key = TypeVar("_Key", bound=Hashable)


def group_episodes(
    episodes: Sequence[EpisodeRecord], key: Callable[[EpisodeRecord], _Key]
) -> dict[_Key, list[EpisodeRecord]]:
    """Group episodes by `key`, each group in the given order, groups in order of first sight."""
    groups: dict[_Key, list[EpisodeRecord]] = {}
    for episode in episodes:
        groups.setdefault(key(episode), []).append(episode)
    return groups


def evaluate_benchmarks(
    episodes: Sequence[EpisodeRecord], resamples: int = DEFAULT_RESAMPLES
) -> tuple[Evaluation, ...]:
    """Evaluate each benchmark's episodes on their own, the classic benchmark first; one
    evaluation per benchmark the episodes belong to (none for no episodes)."""
    by_benchmark = group_episodes(episodes, lambda episode: episode.benchmark)
    return tuple(
        evaluate(by_benchmark[name], resamples) for name in BENCHMARKS if name in by_benchmark
    )


def evaluate(episodes: Sequence[EpisodeRecord], resamples: int = DEFAULT_RESAMPLES) -> Evaluation:
    """Evaluate one benchmark's episodes per model, per model and experiment, and over all
    models, with intervals and paired comparisons from `resamples` bootstrap resamples (at
    least 1); ValueError for episodes of several benchmarks (`evaluate_benchmarks` splits
    them)."""
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    benchmarks = {episode.benchmark for episode in episodes}
    if len(benchmarks) > 1:
        raise ValueError(
            f"episodes of {' and '.join(sorted(benchmarks))} evaluated together; evaluate each "
            "benchmark on its own (evaluate_benchmarks)"
        )
    ordered = sorted(episodes, key=episode_order)
    by_model = group_episodes(ordered, lambda episode: episode.model)
    by_experiment = group_episodes(ordered, lambda episode: (episode.model, episode.experiment))
    return Evaluation(
        benchmark=benchmarks.pop() if benchmarks else "classic",
        models=tuple(aggregate(group, model, None, resamples) for model, group in by_model.items()),
        experiments=tuple(
            aggregate(group, model, experiment, resamples)
            for (model, experiment), group in by_experiment.items()
        ),
        overall=aggregate(ordered, ALL_MODELS, None, resamples),
        episodes=tuple(ordered),
        rounds_by_model=tuple(
            round_accuracy(group, m, None, resamples=resamples) for m, group in by_model.items()
        ),
        rounds_by_experiment=tuple(
            round_accuracy(group, model, experiment, resamples=resamples)
            for (model, experiment), group in by_experiment.items()
        ),
        questioner_by_model=tuple(
            questioner_by_turn(group, model) for model, group in by_model.items()
        ),
        questioner_by_experiment=tuple(
            questioner_by_turn(group, model, experiment)
            for (model, experiment), group in by_experiment.items()
        ),
        rounds_by_listener=tuple(
            round_accuracy(group, model, experiment, listener, resamples)
            for (model, experiment), group in by_experiment.items()
            for listener in LISTENER_ROUND_SCORES
            if any(listener in episode.listener_round_accuracy for episode in group)
        ),
        listeners=tuple(
            means
            for (model, experiment), group in by_experiment.items()
            if (means := listener_aggregate(group, model, experiment)) is not None
        ),
        comparisons=compare_models(ordered, resamples),
        resamples=resamples,
        seed=SEED,
    )
