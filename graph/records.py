"""The clembench record files as models: `interactions.json`, `requests.json`, `scores.json`.

The same models read clembench's published records and write ours, so one scorer serves both.
Names are spelled as clembench spells them; only `recorder.py` maps our state onto them.
"""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, JsonValue

GAME_NAME = "privateshared"
GM = "GM"
ANSWERER = "Player 1"
QUESTIONER = "Player 2"
JUDGE = "Player 3"

# Keys of interactions.json and names of scores, as clembench spells them.
REQUEST_COUNT = "Request Count"
PARSED_REQUEST_COUNT = "Parsed Request Count"
VIOLATED_REQUEST_COUNT = "Violated Request Count"
REQUEST_SUCCESS_RATIO = "Request Success Ratio"
FILLED_SLOTS = "Filled Slots"
ABORTED = "Aborted"
PLAYED_PROBE_ROUNDS = "Played Probe Rounds"
ACCURACY = "Accuracy"
SLOT_FILLED = "Slot Filled?"
MIDDLE_ACCURACY = "Middle-Accuracy"
KAPPA = "Kappa"
TRUNCATED_KAPPA = "Truncated Kappa"
SLOT_FILLING_ACCURACY = "Slot-Filling-Accuracy"
MAIN_SCORE = "Main Score"
LOSE = "Lose"
SUCCESS = "Success"

# The questioner's scores (questioner_metrics.py), ours alone: clembench's questioner made no
# function calls, so its records never have them.
QUESTIONER_SLOT_ACCURACY = "Questioner Slot Accuracy"
QUESTIONER_JOINT_GOAL_ACCURACY = "Questioner Joint Goal Accuracy"
QUESTIONER_HALLUCINATION_RATE = "Questioner Hallucination Rate"
QUESTIONER_POLICY_VIOLATIONS = "Questioner Policy Violations"
QUESTIONER_CALL_VALIDITY = "Questioner Call Validity"
QUESTIONER_TASK_COMPLETION = "Questioner Task Completion"
QUESTIONS_ASKED = "Questions Asked"
QUESTIONER_JUDGE_SCORE = "Questioner Judge Score"
"""Mean rating (1 to 5) of the questions by an LLM judge, over the ratings it could read."""
QUESTIONER_JUDGE_MISSING = "Questioner Judge Missing"
"""Ratings the judge gave that could not be read: missing, never counted as 0."""
QUESTIONER_SCORES = (
    QUESTIONER_SLOT_ACCURACY, QUESTIONER_JOINT_GOAL_ACCURACY, QUESTIONER_HALLUCINATION_RATE,
    QUESTIONER_POLICY_VIOLATIONS, QUESTIONER_CALL_VALIDITY, QUESTIONER_TASK_COMPLETION,
    QUESTIONS_ASKED,
)  # fmt: skip
"""Every questioner episode score, in the order scores.json lists them."""

INVALID_PROBE_VALUE = 2
"""A probe's `value` when no try gave a valid yes or no (clembench's INVALID_LABEL)."""

_RECORD = ConfigDict(
    extra="allow", validate_by_name=True, validate_by_alias=True, serialize_by_alias=True
)


def _key(name: str) -> Any:
    """A field stored under clembench's key `name` but built, in code, by its Python name."""
    return Field(validation_alias=AliasChoices(name), serialization_alias=name)


class Action(BaseModel):
    """What happened in one event; types beyond `type` and `content` are event-specific."""

    model_config = _RECORD

    type: str
    content: JsonValue


class Event(BaseModel):
    """One logged action of the game master."""

    model_config = _RECORD

    sender: str = _key("from")
    to: str
    timestamp: str
    action: Action


class ProbeEntry(BaseModel):
    """One probe as clembench's scorer reads it; probes never asked keep only the first three."""

    model_config = _RECORD

    target: str
    """The slot, upper-case."""
    question: str
    """The probe as first sent."""
    gt: int
    """Ground truth: 1 if the slot is shared at this round, else 0."""
    answer: str | None = None
    """The last reply."""
    value: int | None = None
    """1 yes, 0 no, 2 invalid after every try."""
    tries: int | None = None
    """How many times the probe was sent."""


class Interactions(BaseModel):
    """interactions.json: the game master's log of an episode and the keys its scorer reads."""

    model_config = _RECORD

    players: dict[str, str]
    turns: list[list[Event]]
    probes: list[list[ProbeEntry]]
    """Probing rounds in order, each with its probes in the order they were asked."""
    realised_slots: dict[str, int]
    """Slot -> index of the answer after which it became shared (its request's index if never)."""
    request_count: list[int] = _key(REQUEST_COUNT)
    parsed_request_count: list[int] = _key(PARSED_REQUEST_COUNT)
    violated_request_count: list[int] = _key(VIOLATED_REQUEST_COUNT)
    filled_slots: list[bool] = _key(FILLED_SLOTS)
    """One entry per valid answer: did it contain the value asked for?"""
    aborted: bool = _key(ABORTED)
    played_probe_rounds: int = _key(PLAYED_PROBE_ROUNDS)
    """Probing rounds completed with a valid reply to every probe."""


class CallRecord(BaseModel):
    """One entry of requests.json: a model call, stamped like the event it belongs to."""

    model_config = _RECORD

    timestamp: str
    manipulated_prompt_obj: JsonValue
    raw_response_obj: JsonValue


ScoreValue = int | float


class EpisodeScores(BaseModel):
    """scores.json: turn scores by probing round, and episode scores."""

    model_config = _RECORD

    turn_scores: dict[str, dict[str, ScoreValue]] = _key("turn scores")
    episode_scores: dict[str, ScoreValue] = _key("episode scores")


class CallFailure(BaseModel):
    """error.json: why an episode could not finish. The infrastructure failed (a model call
    still failing after its retries, or refused), not the model's play: such an episode is
    neither played nor aborted, and a new run plays it again."""

    model_config = _RECORD

    player: str
    """Who failed to answer: `Player 1` (answerer) or `Player 2` (questioner)."""
    model: str
    kind: str
    """The error's class, e.g. APITimeoutError, InternalServerError, RateLimitError."""
    message: str
    """What the client said, with any credential removed."""
    tries: int
    """Calls made for this request, the failed retries included."""
    at: str
    """ISO time the last try failed."""
    request: dict[str, JsonValue]
    """What was asked: kind (question or probe), turn or round, slot, attempt."""
    fix: str | None = None
    """For a request the endpoint refused (HTTP 400, 401, 403, 404, 422), which playing the
    episode again gets refused as well: the setting to change. None for a failure a later run
    may get past (a timeout, a rate limit, a server error)."""
