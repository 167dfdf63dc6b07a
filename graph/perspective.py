"""The two-listener scores: scorekeeping per listener, and on the probes that need a perspective.

Read from the records, as every score is (probe entries name their `listener`; the `note` event
says what a handover carried). With two listeners the classic episode scores (accuracy, kappa,
Main Score) are computed over every (listener, slot) probe; these come beside them:

- First / Second Listener Accuracy and Kappa: the same, over one listener's probes;
- Perspective Accuracy: over the (round, slot) pairs where the two listeners' truths differ,
  the share answered right for both listeners. An answerer blind to who heard what gives both
  probes of a pair the same answer, so it gets none of them: 0, where the oracle gets 1 and a
  coin 0.25. NaN when the episode has no such pair; Perspective Pairs counts them;
- Transfer Completeness (handover): the share of the values given before the handover that the
  note carries (NaN when none was given);
- Redundant Questions (handover): the second questioner's questions about a slot the note gave.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from privateshared.graph.agreement import accuracy, kappa
from privateshared.graph.questioner_metrics import TOOL_CALL
from privateshared.graph.records import Interactions, ProbeEntry, ScoreValue

NAN = float("nan")
FIRST_LISTENER_ACCURACY = "First Listener Accuracy"
FIRST_LISTENER_KAPPA = "First Listener Kappa"
SECOND_LISTENER_ACCURACY = "Second Listener Accuracy"
SECOND_LISTENER_KAPPA = "Second Listener Kappa"
PERSPECTIVE_ACCURACY = "Perspective Accuracy"
PERSPECTIVE_PAIRS = "Perspective Pairs"
TRANSFER_COMPLETENESS = "Transfer Completeness"
REDUNDANT_QUESTIONS = "Redundant Questions"
LISTENER_SCORES = (
    FIRST_LISTENER_ACCURACY, FIRST_LISTENER_KAPPA, SECOND_LISTENER_ACCURACY,
    SECOND_LISTENER_KAPPA, PERSPECTIVE_ACCURACY, PERSPECTIVE_PAIRS,
)  # fmt: skip
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


def listener_scores(interactions: Interactions) -> dict[str, ScoreValue] | None:
    """The two-listener episode scores; None for a classic episode, whose scores stay
    clembench's. Over the probing rounds scored, as the classic scores; NaN when aborted."""
    rounds = interactions.probes[: interactions.played_probe_rounds]
    listeners = [listener_of(entry) for probes in interactions.probes for entry in probes]
    if not listeners or listeners[0] is None:
        return None
    if interactions.aborted:
        return dict.fromkeys((*LISTENER_SCORES, *HANDOVER_SCORES), NAN)
    first = listeners[0]  # the questioner: round 0 probes only it
    entries = [entry for probes in rounds for entry in probes]
    first_accuracy, first_kappa = _rates([e for e in entries if listener_of(e) == first])
    second_accuracy, second_kappa = _rates([e for e in entries if listener_of(e) != first])
    pairs = perspective_pairs(rounds)
    right = sum(all(_value(entry) == entry.gt for entry in pair) for pair in pairs)
    scores: dict[str, ScoreValue] = {
        FIRST_LISTENER_ACCURACY: first_accuracy,
        FIRST_LISTENER_KAPPA: first_kappa,
        SECOND_LISTENER_ACCURACY: second_accuracy,
        SECOND_LISTENER_KAPPA: second_kappa,
        PERSPECTIVE_ACCURACY: right / len(pairs) if pairs else NAN,
        PERSPECTIVE_PAIRS: len(pairs),
    }
    return scores | _handover_scores(interactions)
