"""The questioner's scores: how well its belief state keeps up with what the answers gave.

Read from the records, as every score is. A questioner that acts through functions
(questioning.py) leaves per reply a `get message` event with the `turn` it prepares and one
`tool call` event per call, whose intermediate results hold what the game master checked; after
each valid answer a `metadata` event with `revealed` lists the values the answer gave. From these,
at MAS4CS's three levels (turn, dialogue, dataset), with the belief state standing for its
predicted slots and the revealed values for the ground truth:

- turn t: all replies preparing question t together (the finishing turn is n + 1), after their
  calls. revealed(t) are the slots whose values the answers before turn t gave; belief(t) holds
  each slot's latest valid `record` up to turn t and whether it contains the true value.
  - Slot Accuracy: revealed slots recorded true / revealed slots (recall; NaN if none revealed);
  - Joint Goal Accuracy: 1 if the recorded slots are exactly the revealed ones, all true;
  - Hallucination Rate: recorded slots not revealed or not true / recorded slots (the precision
    complement; NaN if none recorded);
  - Policy Violations: the turn's calls that the game master marked with a `violation`;
  - Call Validity: valid calls / calls (NaN if the turn made none).
- episode: the mean of each turn rate over the turns where it is defined, the validity of all
  calls, the violations in all, Questions Asked (valid `ask` calls) and Task Completion (every
  slot recorded true at the end, and no violation: MAS4CS's policy gate);
- dataset: bench/reporting/evaluate.py averages the episode scores.

Turn t's scores join the turn scores of probing round t - 1, the last one before it.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet

from pydantic import BaseModel, ConfigDict, JsonValue

from privateshared.graph.records import (
    QUESTIONER,
    QUESTIONER_CALL_VALIDITY,
    QUESTIONER_HALLUCINATION_RATE,
    QUESTIONER_JOINT_GOAL_ACCURACY,
    QUESTIONER_JUDGE_MISSING,
    QUESTIONER_JUDGE_SCORE,
    QUESTIONER_POLICY_VIOLATIONS,
    QUESTIONER_SLOT_ACCURACY,
    QUESTIONER_TASK_COMPLETION,
    QUESTIONS_ASKED,
    EpisodeScores,
    Event,
    Interactions,
    ScoreValue,
)

NAN = float("nan")
TOOL_CALL = "tool call"
"""The event type recorder.py logs each function call under."""
_RATES = (QUESTIONER_SLOT_ACCURACY, QUESTIONER_JOINT_GOAL_ACCURACY, QUESTIONER_HALLUCINATION_RATE)
"""Turn scores whose episode score is their mean over the turns where they are defined."""


class CheckedCall(BaseModel):
    """One function call of the questioner, as the game master checked it."""

    model_config = ConfigDict(frozen=True)

    name: str
    valid: bool
    recorded: str | None = None
    """The slot a valid `record` wrote to; None for every other call."""
    true_value: bool = False
    """Whether that record contains the slot's true value."""
    violation: str | None = None
    """The rule the call broke, e.g. `question about a slot already recorded`."""


class QuestionerTurn(BaseModel):
    """Everything the questioner did to prepare one question, and what it had heard by then."""

    model_config = ConfigDict(frozen=True)

    turn: int
    """The question it prepares: 1 for the first; n + 1 for the finishing turn."""
    revealed: frozenset[str]
    """Slots whose values the answers before this turn gave."""
    calls: tuple[CheckedCall, ...]
    """Its calls, over every reply of the turn, in order."""
    farewell: bool = False
    """The leaving questioner's last turn before a handover: it may record, and asks nothing."""


class _Reply(BaseModel):
    turn: int


class _Revealed(BaseModel):
    revealed: dict[str, JsonValue]


class _ToolCallEvent(BaseModel):
    name: str
    valid: bool
    turn: int
    arguments: dict[str, JsonValue] | None = None
    intermediate_results: dict[str, JsonValue] = {}

    def checked(self) -> CheckedCall:
        checks = self.intermediate_results
        violation = checks.get("violation")
        slot = (self.arguments or {}).get("slot")
        writes = self.valid and self.name == "record" and isinstance(slot, str)
        return CheckedCall(
            name=self.name,
            valid=self.valid,
            # stripped, as the game master strips it before writing the belief state
            recorded=str(slot).strip() if writes else None,
            true_value=checks.get("true_value") is True,
            violation=violation if isinstance(violation, str) else None,
        )


def _turn_of_reply(event: Event) -> int | None:
    """The turn a questioner reply prepares; None for any other event, and for clembench's
    questioner, whose replies carry no turn."""
    extra = event.action.model_extra or {}
    if event.sender != QUESTIONER or event.action.type != "get message" or "turn" not in extra:
        return None
    return _Reply.model_validate(extra).turn


def questioner_turns(interactions: Interactions) -> dict[str | None, list[QuestionerTurn]]:
    """Each questioner's turns in the records, in order; empty for clembench's records.

    One questioner (None) in the classic game; with two listeners they are named by tag, and
    after a handover the second questioner has heard only the note and the answers since."""
    current: str | None = None
    heard: dict[str | None, set[str]] = {}
    turns: dict[tuple[str | None, int], tuple[frozenset[str], list[CheckedCall]]] = {}
    farewells: set[tuple[str | None, int]] = set()
    for event in (event for events in interactions.turns for event in events):
        action = event.action
        extra = action.model_extra or {}
        if action.type == "metadata" and "revealed" in extra:
            heard.setdefault(current, set()).update(_Revealed.model_validate(extra).revealed)
        elif action.type == "note":
            current = str(extra.get("to"))
            heard[current] = {str(slot) for slot in extra.get("carried") or []}
        elif (turn := _turn_of_reply(event)) is not None:
            # revealed(t) is what was heard before the turn's first reply
            asker = _questioner(extra)
            if current is None:  # the first questioner hears until a note names the next
                current = asker
            turns.setdefault((asker, turn), (frozenset(heard.get(asker, set())), []))
            if extra.get("farewell") is True:
                farewells.add((asker, turn))
        elif action.type == TOOL_CALL:
            call = _ToolCallEvent.model_validate(action.model_dump())
            asker = _questioner(extra)
            entry = turns.setdefault((asker, call.turn), (frozenset(heard.get(asker, set())), []))
            entry[1].append(call.checked())
    by_questioner: dict[str | None, list[QuestionerTurn]] = {}
    for (asker, turn), (revealed_then, calls) in turns.items():
        by_questioner.setdefault(asker, []).append(
            QuestionerTurn(
                turn=turn,
                revealed=revealed_then,
                calls=tuple(calls),
                farewell=(asker, turn) in farewells,
            )
        )
    return by_questioner


def _questioner(extra: Mapping[str, JsonValue]) -> str | None:
    asker = extra.get("questioner")
    return asker if isinstance(asker, str) else None


def belief_after(belief: Mapping[str, bool], calls: Iterable[CheckedCall]) -> dict[str, bool]:
    """The belief state after `calls`: each slot's latest valid record, true or not."""
    updated = dict(belief)
    for call in calls:
        if call.valid and call.recorded is not None:
            updated[call.recorded] = call.true_value
    return updated


def slot_accuracy(revealed: AbstractSet[str], belief: Mapping[str, bool]) -> float:
    """Share of the revealed slots recorded with their true value; NaN if none was revealed."""
    if not revealed:
        return NAN
    return sum(belief.get(slot, False) for slot in revealed) / len(revealed)


def joint_goal_accuracy(revealed: AbstractSet[str], belief: Mapping[str, bool]) -> int:
    """1 if the recorded slots are exactly the revealed ones and all true, else 0.

    Before any value is revealed an empty belief state is exactly right, as an empty state
    matches an empty goal in MultiWOZ."""
    return int(set(belief) == set(revealed) and all(belief.values()))


def hallucination_rate(revealed: AbstractSet[str], belief: Mapping[str, bool]) -> float:
    """Share of the recorded slots not revealed yet, or not true; NaN if none was recorded."""
    if not belief:
        return NAN
    return sum(slot not in revealed or not true for slot, true in belief.items()) / len(belief)


def policy_violations(calls: Iterable[CheckedCall]) -> int:
    """Calls that broke a rule of the game."""
    return sum(call.violation is not None for call in calls)


def call_validity(calls: Sequence[CheckedCall]) -> float:
    """Share of the calls the game master could carry out; NaN if there were none."""
    return sum(call.valid for call in calls) / len(calls) if calls else NAN


def questions_asked(calls: Iterable[CheckedCall]) -> int:
    """Valid `ask` calls: the questions that reached the answerer."""
    return sum(call.valid and call.name == "ask" for call in calls)


def task_completion(slots: Collection[str], belief: Mapping[str, bool], violations: int) -> int:
    """1 if every slot ends recorded with its true value and no rule was broken, else 0."""
    return int(violations == 0 and all(belief.get(slot, False) for slot in slots))


def _mean_defined(values: Iterable[ScoreValue]) -> float:
    defined = [float(value) for value in values if not math.isnan(value)]
    return math.fsum(defined) / len(defined) if defined else NAN


def turn_scores(turn: QuestionerTurn, belief: Mapping[str, bool]) -> dict[str, ScoreValue]:
    """One turn's scores, given the belief state after its calls."""
    return {
        QUESTIONER_SLOT_ACCURACY: slot_accuracy(turn.revealed, belief),
        QUESTIONER_JOINT_GOAL_ACCURACY: joint_goal_accuracy(turn.revealed, belief),
        QUESTIONER_HALLUCINATION_RATE: hallucination_rate(turn.revealed, belief),
        QUESTIONER_POLICY_VIOLATIONS: policy_violations(turn.calls),
        QUESTIONER_CALL_VALIDITY: call_validity(turn.calls),
    }


SECOND_QUESTIONER = "Second "
"""Prefix of the second questioner's scores after a handover, e.g. `Second Questioner Slot
Accuracy`; the unprefixed names are the first (or only) questioner's, as in the classic game."""


def questioner_scores(interactions: Interactions) -> EpisodeScores | None:
    """The questioner's turn scores (keyed by probing round) and episode scores; None when the
    records hold no questioner turn made through functions (clembench's records).

    Aborted episodes are scored too: these scores measure the questioner, whoever broke a rule.
    After a handover each questioner is scored on its own turns against what it heard, the
    second one under prefixed names; the one who hands over has no task completion (NaN): its
    part ends with the note, which Transfer Completeness scores.
    """
    by_questioner = questioner_turns(interactions)
    if not by_questioner:
        return None
    by_round: dict[str, dict[str, ScoreValue]] = {}
    episode: dict[str, ScoreValue] = {}
    hands_over = len(by_questioner) > 1
    for index, turns in enumerate(by_questioner.values()):
        prefix = SECOND_QUESTIONER if index else ""
        belief: dict[str, bool] = {}
        for turn in turns:
            belief = belief_after(belief, turn.calls)
            scores = turn_scores(turn, belief)
            by_round.setdefault(str(turn.turn - 1), {}).update(
                {prefix + name: value for name, value in scores.items()}
            )
        calls = [call for turn in turns for call in turn.calls]
        violations = policy_violations(calls)
        rates = {
            name: _mean_defined(by_round[str(turn.turn - 1)][prefix + name] for turn in turns)
            for name in _RATES
        }
        # realised_slots names every slot of the instance
        completion = task_completion(interactions.realised_slots, belief, violations)
        rates |= {
            QUESTIONER_POLICY_VIOLATIONS: violations,
            QUESTIONER_CALL_VALIDITY: call_validity(calls),
            QUESTIONER_TASK_COMPLETION: NAN if hands_over and index == 0 else completion,
            QUESTIONS_ASKED: questions_asked(calls),
        }
        episode |= {prefix + name: value for name, value in rates.items()}
    judged = judgments(interactions)
    if judged:
        for question, score in judged.items():
            by_round.setdefault(str(question - 1), {})[QUESTIONER_JUDGE_SCORE] = (
                NAN if score is None else score
            )
        readable = [score for score in judged.values() if score is not None]
        episode[QUESTIONER_JUDGE_SCORE] = math.fsum(readable) / len(readable) if readable else NAN
        episode[QUESTIONER_JUDGE_MISSING] = len(judged) - len(readable)
    return EpisodeScores(turn_scores=by_round, episode_scores=episode)


def judgments(interactions: Interactions) -> dict[int, int | None]:
    """The judge's rating of each question, by turn; None for a reply it could not read."""
    ratings: dict[int, int | None] = {}
    for events in interactions.turns:
        for event in events:
            extra = event.action.model_extra or {}
            if event.action.type == "judgment" and isinstance(extra.get("turn"), int):
                score = extra.get("score")
                ratings[int(extra["turn"])] = score if isinstance(score, int) else None
    return ratings
