"""The two-listener scores: scorekeeping per listener, and on the probes that need a perspective.

Read from the records, as every score is (probe entries name their `listener`; the `note` event
says what a handover carried). With two listeners the classic episode scores (accuracy, kappa)
are computed over every (listener, slot) probe; these come beside them:

- First / Second Listener Accuracy and Kappa: the same, over one listener's probes;
- Perspective Accuracy: over the (round, slot) pairs where the two listeners' truths differ,
  the share answered right for both listeners. An answerer blind to who heard what gives both
  probes of a pair the same answer, so it gets none of them: 0, where the oracle gets 1 and a
  coin 0.25. NaN when the episode has no such pair; Perspective Pairs counts them;
- Perspective Kappa: Cohen's kappa over the probes of those pairs. Each pair holds one yes and
  one no, so a blind answerer's answers there are independent of the truth: exactly 0, and a
  coin's about 0. NaN without a pair, and only then (the truth is never one-sided there);
- Transfer Completeness (handover): the share of the values given before the handover that the
  note carries (NaN when none was given);
- Redundant Questions (handover): the second questioner's questions about a slot the note gave.

The headline. The classic Main Score rewards the many probes where the listeners agree, so a
perspective-blind answerer keeps most of it (85 of 100 for `one-listener`). Here the Main Score
is instead 100 x the harmonic mean of slot-filling accuracy and the Two-Listener Kappa, the
harmonic mean of three truncated kappas: the first listener's, the second's and Perspective
Kappa. Each term is 0 for one way of not keeping score per listener: a constant answer to one
listener (its kappa; "the colleague knows nothing" gets every late-join pair right, since those
all point one way), answering both listeners alike (Perspective Kappa). Kappa, not accuracy,
so that chance earns nothing. Without a perspective pair the episode cannot measure perspective:
its Main Score is NaN (left out of the Quality Score, as clembench leaves out a NaN Main Score).
A listener's kappa is undefined only when every probe about it had one truth and was answered
right: it is left out, neither reward nor penalty. The classic Main Score stays in scores.json
as Classic Main Score. docs/two-listeners.md gives the argument and the reference players.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence

from privateshared.graph.agreement import (
    accuracy,
    harmonic_mean,
    kappa,
    main_score,
    truncated_kappa,
)
from privateshared.graph.questioner_metrics import TOOL_CALL
from privateshared.graph.records import (
    MAIN_SCORE,
    SLOT_FILLING_ACCURACY,
    Interactions,
    ProbeEntry,
    ScoreValue,
)

NAN = float("nan")
FIRST_LISTENER_ACCURACY = "First Listener Accuracy"
FIRST_LISTENER_KAPPA = "First Listener Kappa"
SECOND_LISTENER_ACCURACY = "Second Listener Accuracy"
SECOND_LISTENER_KAPPA = "Second Listener Kappa"
PERSPECTIVE_ACCURACY = "Perspective Accuracy"
PERSPECTIVE_PAIRS = "Perspective Pairs"
PERSPECTIVE_KAPPA = "Perspective Kappa"
TWO_LISTENER_KAPPA = "Two-Listener Kappa"
"""The scorekeeping half of the two-listener Main Score, as Truncated Kappa is of the classic."""
CLASSIC_MAIN_SCORE = "Classic Main Score"
"""The Main Score as the classic game computes it, over every (listener, slot) probe."""
TRANSFER_COMPLETENESS = "Transfer Completeness"
REDUNDANT_QUESTIONS = "Redundant Questions"
LISTENER_SCORES = (
    CLASSIC_MAIN_SCORE, FIRST_LISTENER_ACCURACY, FIRST_LISTENER_KAPPA, SECOND_LISTENER_ACCURACY,
    SECOND_LISTENER_KAPPA, PERSPECTIVE_ACCURACY, PERSPECTIVE_PAIRS, PERSPECTIVE_KAPPA,
    TWO_LISTENER_KAPPA,
)  # fmt: skip
"""The two-listener episode scores besides the Main Score, in the order scores.json lists them."""
HANDOVER_SCORES = (TRANSFER_COMPLETENESS, REDUNDANT_QUESTIONS)


def listener_of(entry: ProbeEntry) -> str | None:
    """The listener a probe entry is about; None in the classic game."""
    listener = (entry.model_extra or {}).get("listener")
    return listener if isinstance(listener, str) else None


def _value(entry: ProbeEntry) -> int:
    return entry.value if entry.value is not None else -1


def _rates(entries: Sequence[ProbeEntry]) -> tuple[float, float]:
    if not entries:
        return NAN, NAN
    gold = [entry.gt for entry in entries]
    predicted = [_value(entry) for entry in entries]
    return accuracy(gold, predicted), kappa(gold, predicted)


def perspective_pairs(rounds: Sequence[Sequence[ProbeEntry]]) -> list[tuple[ProbeEntry, ...]]:
    """The probes of one slot in one round, about two listeners whose truths differ."""
    pairs = []
    for probes in rounds:
        by_slot: dict[str, list[ProbeEntry]] = defaultdict(list)
        for entry in probes:
            by_slot[entry.target].append(entry)
        for entries in by_slot.values():
            if len(entries) == 2 and entries[0].gt != entries[1].gt:
                pairs.append(tuple(entries))
    return pairs


def two_listener_kappa(first: float, second: float, perspective: float) -> float:
    """The harmonic mean of the truncated kappas of the first listener, the second and the
    perspective pairs; NaN without perspective pairs (`perspective` NaN). A listener's kappa
    that is undefined (NaN) is left out."""
    if math.isnan(perspective):
        return NAN
    # Left out before truncating: max(0.0, nan) is 0.0, which would count "every answer right,
    # nothing to correct for chance" as no agreement at all.
    kappas = [truncated_kappa(k) for k in (first, second, perspective) if not math.isnan(k)]
    return harmonic_mean(kappas)


def _handover_scores(interactions: Interactions) -> dict[str, ScoreValue]:
    """Transfer completeness and redundant questions, from the `note` event and the second
    questioner's `tool call` events."""
    events = [event for turn in interactions.turns for event in turn]
    note = next((event.action for event in events if event.action.type == "note"), None)
    if note is None:
        return {}
    extra = note.model_extra or {}
    carried = {str(slot) for slot in extra.get("carried") or []}
    second = str(extra.get("to"))
    given: set[str] = set()
    for event in events:
        if event.action.type == "note":
            break
        revealed = (event.action.model_extra or {}).get("revealed")
        if isinstance(revealed, dict):
            given |= set(revealed)
    redundant = 0
    for event in events:
        action = event.action.model_extra or {}
        arguments = action.get("arguments")
        if (
            event.action.type == TOOL_CALL
            and action.get("questioner") == second
            and action.get("name") == "ask"
            and action.get("valid")
            and isinstance(arguments, dict)
            and arguments.get("slot") in carried
        ):
            redundant += 1
    completeness = len(carried & given) / len(given) if given else NAN
    return {TRANSFER_COMPLETENESS: completeness, REDUNDANT_QUESTIONS: redundant}


def listener_round_scores(interactions: Interactions) -> dict[int, dict[str, ScoreValue]]:
    """Per probing round scored, the accuracy of each listener probed in it (turn scores);
    empty for a classic episode."""
    rounds: dict[int, dict[str, ScoreValue]] = {}
    for k, probes in enumerate(interactions.probes[: interactions.played_probe_rounds]):
        listeners = [listener_of(entry) for entry in probes]
        if not probes or listeners[0] is None:
            return {}
        first = listener_of(interactions.probes[0][0])
        for name, mine in ((FIRST_LISTENER_ACCURACY, True), (SECOND_LISTENER_ACCURACY, False)):
            entries = [e for e in probes if (listener_of(e) == first) == mine]
            if entries:
                rounds.setdefault(k, {})[name] = _rates(entries)[0]
    return rounds


def listener_scores(
    interactions: Interactions, classic: Mapping[str, ScoreValue]
) -> dict[str, ScoreValue] | None:
    """The two-listener episode scores, from `classic`, the episode scores as the classic game
    computes them: first the Main Score that replaces the classic one, which stays as Classic
    Main Score. None for a classic episode, whose scores stay clembench's. Over the probing
    rounds scored, as the classic scores; NaN when aborted."""
    rounds = interactions.probes[: interactions.played_probe_rounds]
    listeners = [listener_of(entry) for probes in interactions.probes for entry in probes]
    if not listeners or listeners[0] is None:
        return None
    if interactions.aborted:
        return dict.fromkeys((MAIN_SCORE, *LISTENER_SCORES, *HANDOVER_SCORES), NAN)
    first = listeners[0]  # the questioner: round 0 probes only it
    entries = [entry for probes in rounds for entry in probes]
    first_accuracy, first_kappa = _rates([e for e in entries if listener_of(e) == first])
    second_accuracy, second_kappa = _rates([e for e in entries if listener_of(e) != first])
    pairs = perspective_pairs(rounds)
    right = sum(all(_value(entry) == entry.gt for entry in pair) for pair in pairs)
    perspective_kappa = _rates([entry for pair in pairs for entry in pair])[1]
    combined = two_listener_kappa(first_kappa, second_kappa, perspective_kappa)
    scores: dict[str, ScoreValue] = {
        MAIN_SCORE: main_score(float(classic[SLOT_FILLING_ACCURACY]), combined),
        CLASSIC_MAIN_SCORE: classic[MAIN_SCORE],
        FIRST_LISTENER_ACCURACY: first_accuracy,
        FIRST_LISTENER_KAPPA: first_kappa,
        SECOND_LISTENER_ACCURACY: second_accuracy,
        SECOND_LISTENER_KAPPA: second_kappa,
        PERSPECTIVE_ACCURACY: right / len(pairs) if pairs else NAN,
        PERSPECTIVE_PAIRS: len(pairs),
        PERSPECTIVE_KAPPA: perspective_kappa,
        TWO_LISTENER_KAPPA: combined,
    }
    return scores | _handover_scores(interactions)
