"""Scores of an episode, computed from its records exactly as clembench's scorer computes them.

`score_interactions` is the one scoring function: the graph's last node calls it on the records it
derives from the state, and `privateshared score` calls it on `interactions.json` files, ours or
clembench's. Records of a questioner acting through functions also get the questioner's scores
(questioner_metrics.py); clembench's have none, and keep exactly clembench's scores. Records of
two listeners get scores of their own, and a Main Score of their own in place of the classic one,
which they keep as Classic Main Score (perspective.py).
"""

from __future__ import annotations

import math

from langgraph.runtime import Runtime

from privateshared.graph.agreement import accuracy, kappa, main_score, truncated_kappa
from privateshared.graph.context import GameContext, game_context
from privateshared.graph.perspective import listener_round_scores, listener_scores
from privateshared.graph.questioner_metrics import questioner_scores
from privateshared.graph.recorder import build_records, describe_players
from privateshared.graph.records import (
    ABORTED,
    ACCURACY,
    KAPPA,
    LOSE,
    MAIN_SCORE,
    MIDDLE_ACCURACY,
    PARSED_REQUEST_COUNT,
    REQUEST_COUNT,
    REQUEST_SUCCESS_RATIO,
    SLOT_FILLED,
    SLOT_FILLING_ACCURACY,
    SUCCESS,
    TRUNCATED_KAPPA,
    VIOLATED_REQUEST_COUNT,
    EpisodeScores,
    Interactions,
    ScoreValue,
)
from privateshared.graph.state import EpisodeRecords, EpisodeState

NAN = float("nan")


def middle_round(n_slots: int) -> int:
    """The middle probing round as clembench picks it, round floor((n + 1) / 2) - 1. Without
    values given early, round k has k slots shared: 2 of 5, 4 of 10, 7 of 15 (the third of six
    rounds, the fifth of eleven, the eighth of sixteen); balanced within one slot for odd n."""
    return int((n_slots + 1) / 2) - 1


def _round_truth(interactions: Interactions, k: int) -> tuple[list[int], list[int]]:
    probes = interactions.probes[k]
    return [probe.gt for probe in probes], [
        probe.value if probe.value is not None else -1 for probe in probes
    ]


def score_interactions(interactions: Interactions) -> EpisodeScores:
    """Turn and episode scores of one episode's records."""
    counts = (
        (REQUEST_COUNT, interactions.request_count),
        (PARSED_REQUEST_COUNT, interactions.parsed_request_count),
        (VIOLATED_REQUEST_COUNT, interactions.violated_request_count),
    )
    turn_scores: dict[str, dict[str, ScoreValue]] = {}
    gold: list[int] = []
    predicted: list[int] = []
    rounds: dict[int, float] = {}
    # Only rounds in which every probe got a valid reply are scored.
    for k in range(interactions.played_probe_rounds):
        round_gold, round_predicted = _round_truth(interactions, k)
        gold += round_gold
        predicted += round_predicted
        rounds[k] = accuracy(round_gold, round_predicted)
        scores: dict[str, ScoreValue] = {name: values[k] for name, values in counts}
        scores[ACCURACY] = rounds[k]
        if k > 0:  # round 0 follows no answer
            scores[SLOT_FILLED] = int(interactions.filled_slots[k - 1])
        turn_scores[str(k)] = scores

    totals = {name: sum(values) for name, values in counts}
    ratio = totals[PARSED_REQUEST_COUNT] / totals[REQUEST_COUNT] if totals[REQUEST_COUNT] else NAN
    if interactions.aborted:
        episode: dict[str, ScoreValue] = {
            MIDDLE_ACCURACY: NAN,
            ACCURACY: NAN,
            KAPPA: NAN,
            TRUNCATED_KAPPA: NAN,
            SLOT_FILLING_ACCURACY: NAN,
            MAIN_SCORE: NAN,
            ABORTED: 1,
            LOSE: 0,
            SUCCESS: 0,
        }
    else:
        filled = interactions.filled_slots
        episode_accuracy = accuracy(gold, predicted)
        episode_kappa = kappa(gold, predicted)
        # A questioner that finishes before asking anything (a person, a model) leaves no
        # answer to score: the answerer's slot filling, and with it the Main Score, is undefined.
        slot_filling = sum(filled) / len(filled) if filled else NAN
        success = int(episode_accuracy == 1.0 and slot_filling == 1.0)
        episode = {
            # NaN when the questioner finished before the middle round
            MIDDLE_ACCURACY: rounds.get(middle_round(len(interactions.realised_slots)), NAN),
            ACCURACY: episode_accuracy,
            KAPPA: episode_kappa,
            TRUNCATED_KAPPA: truncated_kappa(episode_kappa),
            SLOT_FILLING_ACCURACY: slot_filling,
            MAIN_SCORE: main_score(slot_filling, truncated_kappa(episode_kappa)),
            ABORTED: 0,
            LOSE: 1 - success,
            SUCCESS: success,
        }
    episode |= totals
    episode[REQUEST_SUCCESS_RATIO] = ratio
    # Only episodes with two listeners have these, their own Main Score among them (it keeps
    # its place; the classic one moves to Classic Main Score): the classic episodes keep
    # clembench's scores.
    episode |= listener_scores(interactions, episode) or {}
    for k, scores in listener_round_scores(interactions).items():
        turn_scores[str(k)].update(scores)
    # Only a questioner acting through functions has these: clembench's records stay as scored.
    questioner = questioner_scores(interactions)
    if questioner is not None:
        for key, scores in questioner.turn_scores.items():
            # An aborted episode may have no probing round scored before a questioner turn.
            turn_scores.setdefault(key, {}).update(scores)
        episode |= questioner.episode_scores
    return EpisodeScores(turn_scores=turn_scores, episode_scores=episode)


def is_nan(value: ScoreValue) -> bool:
    """Whether a score is NaN (clembench's mark of a score that does not apply)."""
    return isinstance(value, float) and math.isnan(value)


async def score_episode(state: EpisodeState, runtime: Runtime[GameContext]) -> dict[str, object]:
    """Build the finished episode's records and score them; the records stay in the state, so
    what is written is what was scored, built once.

    Async although it awaits nothing: a sync node would cost a thread-pool hop per episode."""
    interactions, calls = build_records(state, describe_players(game_context(state, runtime)))
    records = EpisodeRecords(interactions=interactions, calls=calls)
    return {"records": records, "scores": score_interactions(interactions)}
