"""One episode's diagnostics, counted from its records: where its errors lie, not how many.

Every count here is a pure function of the records (`Interactions`, and for the answers the
instance's values), so the same functions count our runs and replayed clembench records. The
probe-based counts read only each probe entry's truth (`gt`) and parsed reply (`value`), and
count a probe when its reply was a valid yes or no (`value` 0 or 1), aborted episodes included:

- over-attribution: a probe whose truth is private (0) answered yes (1): shared taken for
  granted;
- under-attribution: a probe whose truth is shared (1) answered no (0): a value said and not
  counted; split by the rounds since the slot became shared for the listener asked (the first
  round whose probe of the slot has truth 1; truths never go back), 0, 1, 2, 3 or more;
- per listener, with two: the listener of the episode's first probe is the 1st (the questioner),
  the other the 2nd, as the two-listener scores name them (graph/perspective.py);
- early disclosures: probes of a slot whose value an answer gave before it was asked (the
  `shared_early` events), from that answer until the slot's own question, and whose truth is
  shared: how many were answered yes. After its own question a probe no longer tests whether
  the answerer counts what it volunteered, so it is left out;
- position in the round: accuracy of the probes by their place in the round's list (1 the first
  asked);
- the answers: each valid answer that does not hold its slot's value (a slot-filling failure) is
  one of: another slot's value given; a value not in the instance (another one the domain offers
  for the slot); the value missing (neither). Without the domain's values the last two cannot be
  told apart: `unclassified`. Containment decides, as for slot filling, so the right value in
  other words ("none" for `None`) counts as missing;
- the questioner's action types, per turn, as MAS4CS's Action-Type Accuracy: the set of kinds
  of its valid calls against the set the turn called for (record while a value heard is not
  recorded right; ask while a slot's value is still unheard, else finish; a farewell turn before
  a handover only records), right only when the two sets are equal.

bench/reporting/diagnostics/rates.py turns the counts of many episodes into rates with
intervals, resampling episodes.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict

from privateshared.graph.dialogue import is_slot_filled, revealed_slots
from privateshared.graph.perspective import listener_of
from privateshared.graph.questioner_metrics import QuestionerTurn, belief_after, questioner_turns
from privateshared.graph.records import GM, Interactions, ProbeEntry

Listener = Literal["1st", "2nd"]
"""A listener by when it was first probed, as the two-listener scores name them."""
LagBucket = Literal["0", "1", "2", "3+"]
"""Rounds since the slot became shared: 0 is the round right after the answer that shared it."""
LAGS: tuple[LagBucket, ...] = ("0", "1", "2", "3+")
FailureKind = Literal["other_slot_value", "value_not_in_instance", "value_missing", "unclassified"]
"""What a slot-filling failure gave instead of the value asked for."""
FAILURE_KINDS: tuple[FailureKind, ...] = (
    "other_slot_value", "value_not_in_instance", "value_missing", "unclassified",
)  # fmt: skip
ActType = Literal["ask", "record", "finish"]
"""The kinds of the questioner's calls (graph/questioning.py)."""

YES, NO = 1, 0
"""A probe's truth and parsed reply, as the records hold them (INVALID_PROBE_VALUE aside)."""
_Key = TypeVar("_Key")


class Tally(BaseModel):
    """`count` of `total`: what a rate is made of, summed over probes, answers or turns."""

    model_config = ConfigDict(frozen=True)

    count: int = 0
    total: int = 0

    def __add__(self, other: Tally) -> Tally:
        return Tally(count=self.count + other.count, total=self.total + other.total)


class Attribution(BaseModel):
    """Over- and under-attribution of one group of probes."""

    model_config = ConfigDict(frozen=True)

    over_attribution: Tally = Tally()
    """Probes whose truth is private answered yes, of the private ones answered yes or no."""
    under_attribution: Tally = Tally()
    """Probes whose truth is shared answered no, of the shared ones answered yes or no."""


class EpisodeDiagnostics(BaseModel):
    """The counts of one episode that the diagnostics' rates are made of."""

    model_config = ConfigDict(frozen=True)

    attribution: Attribution
    by_listener: dict[Listener, Attribution] = {}
    """Two listeners only."""
    under_attribution_by_lag: dict[LagBucket, Tally] = {}
    early_disclosures: Tally = Tally()
    """Probes on slots given early (until asked) whose truth is shared: answered yes, of those
    answered yes or no."""
    accuracy_by_position: dict[int, Tally] = {}
    """Position in the round (1 the first probe) -> right, of those answered yes or no."""
    slot_filling_failures: Tally = Tally()
    """Valid answers without their slot's value, of the valid answers; empty without the
    instance's values."""
    failure_kinds: dict[FailureKind, int] = {}
    """Those failures by kind."""
    action_types: dict[int, Tally] = {}
    """Questioner turn -> turns whose action types were right, of the turns (two after a
    handover, the leaving questioner's farewell and the next one's first); empty without a
    questioner acting through functions."""


def is_answered(entry: ProbeEntry) -> bool:
    """Whether a probe got a valid yes or no (never asked, or invalid after every try: not)."""
    return entry.value in (YES, NO)


def attribution(entries: Iterable[ProbeEntry]) -> Attribution:
    """Count over- and under-attribution over `entries` answered yes or no."""
    answered = [entry for entry in entries if is_answered(entry)]
    private = [entry for entry in answered if entry.gt == NO]
    shared = [entry for entry in answered if entry.gt == YES]
    return Attribution(
        over_attribution=Tally(count=sum(e.value == YES for e in private), total=len(private)),
        under_attribution=Tally(count=sum(e.value == NO for e in shared), total=len(shared)),
    )


def listener_ranks(rounds: Sequence[Sequence[ProbeEntry]]) -> dict[str, Listener]:
    """Each listener probed, by its rank: the first probed is the 1st; empty in the classic
    game, whose probe entries name no listener."""
    order: list[str] = []
    for entry in (entry for probes in rounds for entry in probes):
        listener = listener_of(entry)
        if listener is not None and listener not in order:
            order.append(listener)
    ranks: tuple[Listener, ...] = ("1st", "2nd")
    return dict(zip(order, ranks, strict=False))


def by_listener(rounds: Sequence[Sequence[ProbeEntry]]) -> dict[Listener, Attribution]:
    """Over- and under-attribution per listener; empty in the classic game."""
    ranks = listener_ranks(rounds)
    entries = [entry for probes in rounds for entry in probes]
    return {
        rank: attribution(e for e in entries if listener_of(e) == listener)
        for listener, rank in ranks.items()
    }


def shared_from(rounds: Sequence[Sequence[ProbeEntry]]) -> dict[tuple[str | None, str], int]:
    """(listener, slot) -> the first round whose probe of the slot about that listener has truth
    shared."""
    first: dict[tuple[str | None, str], int] = {}
    for k, probes in enumerate(rounds):
        for entry in probes:
            if entry.gt == YES:
                first.setdefault((listener_of(entry), entry.target.lower()), k)
    return first


def lag_bucket(lag: int) -> LagBucket:
    """The bucket of a lag in rounds: 0, 1, 2, or 3 and more together."""
    return LAGS[min(lag, len(LAGS) - 1)]


def _tallies(counted: Mapping[_Key, list[int]]) -> dict[_Key, Tally]:
    """[count, total] pairs as tallies (summed as plain lists: a model per probe was slow)."""
    return {key: Tally(count=count, total=total) for key, (count, total) in counted.items()}


def under_attribution_by_lag(rounds: Sequence[Sequence[ProbeEntry]]) -> dict[LagBucket, Tally]:
    """Under-attribution by the rounds since the slot became shared; a bucket without a probe
    answered yes or no is left out."""
    since = shared_from(rounds)
    by_lag: dict[LagBucket, list[int]] = {}
    for k, probes in enumerate(rounds):
        for entry in probes:
            if entry.gt == YES and is_answered(entry):
                bucket = lag_bucket(k - since[listener_of(entry), entry.target.lower()])
                tally = by_lag.setdefault(bucket, [0, 0])
                tally[0] += entry.value == NO
                tally[1] += 1
    return _tallies({bucket: by_lag[bucket] for bucket in LAGS if bucket in by_lag})


def accuracy_by_position(rounds: Sequence[Sequence[ProbeEntry]]) -> dict[int, Tally]:
    """Right answers by position in the round (1 the first), of the probes answered yes or no."""
    by_position: dict[int, list[int]] = {}
    for probes in rounds:
        for position, entry in enumerate(probes, start=1):
            if is_answered(entry):
                tally = by_position.setdefault(position, [0, 0])
                tally[0] += entry.value == entry.gt
                tally[1] += 1
    return _tallies(dict(sorted(by_position.items())))


def _game_master_notes(interactions: Interactions, key: str) -> Iterable[tuple[int, str]]:
    """(turn, value of `key`) of each game master's `metadata` event carrying `key`."""
    for turn, events in enumerate(interactions.turns):
        for event in events:
            extra = event.action.model_extra or {}
            if event.sender == GM and event.action.type == "metadata" and key in extra:
                yield turn, str(extra[key])


def early_disclosures(interactions: Interactions) -> dict[str, tuple[int, int | None]]:
    """Slot given before it was asked -> (the turn whose answer gave it, the turn that asked
    for it, None if none did). Turn k's answer is followed by probing round k."""
    asked = {slot: turn for turn, slot in _game_master_notes(interactions, "slot")}
    return {
        slot: (turn, asked.get(slot))
        for turn, slot in _game_master_notes(interactions, "shared_early")
    }


def early_disclosure_tally(
    rounds: Sequence[Sequence[ProbeEntry]], disclosed: Mapping[str, tuple[int, int | None]]
) -> Tally:
    """Probes of slots given early, from the round after the answer that gave them until the
    round before their own question, whose truth is shared: answered yes, of those answered."""
    count = total = 0
    for k, probes in enumerate(rounds):
        for entry in probes:
            slot = entry.target.lower()
            if slot not in disclosed or entry.gt != YES or not is_answered(entry):
                continue
            given, asked = disclosed[slot]
            if given <= k and (asked is None or k < asked):
                count += entry.value == YES
                total += 1
    return Tally(count=count, total=total)


def answers(interactions: Interactions) -> list[tuple[str, str]]:
    """(slot asked, answer without its tag) of each valid answer, in order: the game master's
    `parse` event of the answer, then its `metadata` event naming the slot (recorder.py)."""
    found: list[tuple[str, str]] = []
    for events in interactions.turns:
        parsed: str | None = None
        for event in events:
            action = event.action
            if event.sender != GM:
                continue
            if action.type == "parse":
                parsed = str(action.content)
            elif action.type == "metadata" and "slot" in (action.model_extra or {}):
                if parsed is not None:
                    found.append((str((action.model_extra or {})["slot"]), parsed))
                parsed = None
    return found


def failure_kind(
    answer: str, slot: str, slots: Mapping[str, str],
    values: Mapping[str, Collection[str]] | None,
) -> FailureKind | None:  # fmt: skip
    """What an answer gave instead of its slot's value; None when it gave that value.

    By the game's containment rule (graph/dialogue.py): another slot's value of the instance
    first (the answerer mixed up its own facts), then another value the domain offers for the
    slot asked (`values`, slot -> pool), else none at all; `unclassified` when the slot's values
    are not known, so that a wrong value and a missing one cannot be told apart. Only the slot's
    own pool: short values of other slots occur in many sentences (`First`, a class, in "the
    first week")."""
    if is_slot_filled(answer, slots[slot]):
        return None
    if revealed_slots(answer, slots):
        return "other_slot_value"
    if values is None or slot not in values:
        return "unclassified"
    if any(is_slot_filled(answer, value) for value in values[slot]):
        return "value_not_in_instance"  # the instance's own value is not in the answer
    return "value_missing"


def expected_act_types(
    turn: QuestionerTurn, belief: Mapping[str, bool], slots: Collection[str]
) -> frozenset[ActType]:
    """The kinds of call a turn called for, given the belief state before it: record while a
    value heard is not recorded with its true value; ask while a slot's value is unheard, else
    finish; a farewell before a handover only records."""
    expected: set[ActType] = set()
    if any(not belief.get(slot, False) for slot in turn.revealed):
        expected.add("record")
    if not turn.farewell:
        expected.add("ask" if set(slots) - turn.revealed else "finish")
    return frozenset(expected)


def act_types(turn: QuestionerTurn) -> frozenset[str]:
    """The kinds of the turn's valid calls: what the game master carried out."""
    return frozenset(call.name for call in turn.calls if call.valid)


def action_types(interactions: Interactions) -> dict[int, Tally]:
    """Per questioner turn, whether its action types were the ones called for; empty without a
    questioner acting through functions (clembench's records)."""
    slots = list(interactions.realised_slots)
    by_turn: dict[int, list[int]] = {}
    for turns in questioner_turns(interactions).values():
        belief: dict[str, bool] = {}
        for turn in turns:
            tally = by_turn.setdefault(turn.turn, [0, 0])
            tally[0] += act_types(turn) == expected_act_types(turn, belief, slots)
            tally[1] += 1
            belief = belief_after(belief, turn.calls)
    return _tallies(dict(sorted(by_turn.items())))


def episode_diagnostics(
    interactions: Interactions, slots: Mapping[str, str] | None,
    values: Mapping[str, Collection[str]] | None = None,
) -> EpisodeDiagnostics:  # fmt: skip
    """Count one episode's diagnostics from its records, given the instance's values (`slots`,
    slot -> value; None leaves the answers uncounted) and the domain's (`values`, slot -> pool;
    None leaves wrong and missing values apart unclassified)."""
    rounds = interactions.probes
    failures: list[FailureKind] = []
    answered = answers(interactions) if slots is not None else []
    for slot, answer in answered:
        assert slots is not None
        if slot in slots and (kind := failure_kind(answer, slot, slots, values)) is not None:
            failures.append(kind)
    return EpisodeDiagnostics(
        attribution=attribution(entry for probes in rounds for entry in probes),
        by_listener=by_listener(rounds),
        under_attribution_by_lag=under_attribution_by_lag(rounds),
        early_disclosures=early_disclosure_tally(rounds, early_disclosures(interactions)),
        accuracy_by_position=accuracy_by_position(rounds),
        slot_filling_failures=Tally(count=len(failures), total=len(answered)),
        failure_kinds={kind: failures.count(kind) for kind in FAILURE_KINDS if kind in failures},
        action_types=action_types(interactions),
    )
