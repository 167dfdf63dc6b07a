"""Diagnostics: where the errors lie, counted from records and given intervals over episodes.

Episodes are built by hand, probe by probe, with every rate worked out in a comment; one run of
the constant players checks the numbers end to end, where they are known without counting (a
player that says yes to every probe over-attributes every private one); and the replayed
clembench records give the over- and under-attribution a count over their own probes gives.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import math
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from privateshared.bench.cli import main
from privateshared.bench.reporting.diagnostics import (
    EpisodeDiagnostics,
    Tally,
    diagnose,
    episode_diagnostics,
)
from privateshared.bench.reporting.diagnostics.episode import (
    Attribution,
    accuracy_by_position,
    action_types,
    attribution,
    by_listener,
    early_disclosure_tally,
    early_disclosures,
    expected_act_types,
    failure_kind,
    lag_bucket,
    under_attribution_by_lag,
)
from privateshared.bench.reporting.diagnostics.rates import _intervals
from privateshared.bench.reporting.evaluate import EpisodeRecord
from privateshared.bench.reporting.statistics import (
    SEED,
    percentile_interval,
    ratio,
    resampled_totals,
)
from privateshared.graph.questioner_metrics import CheckedCall, QuestionerTurn
from privateshared.graph.records import (
    GM,
    QUESTIONER,
    Action,
    Event,
    Interactions,
    ProbeEntry,
)
from tests.conftest import SHARED_NEWER_RECORDS, SHARED_RECORDS, SHARED_RESOURCES

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs" / "diagnostics.md"
EXAMPLE = REPO / "scripts" / "diagnostics_example.py"
AGENT, COLLEAGUE = "TRAVEL-AGENT", "COLLEAGUE"


def probe(slot: str, gt: int, value: int | None, listener: str | None = None) -> ProbeEntry:
    """A probe entry as the recorder writes it: value 2 is invalid after every try, None a probe
    never asked (an aborted round)."""
    about = {} if listener is None else {"listener": listener}
    return ProbeEntry(
        target=slot.upper(), question=f"Does the agent know {slot}?", gt=gt, value=value,
        tries=None if value is None else 1, **about,
    )  # fmt: skip


def note(kind: str, content: str, **extra: object) -> Event:
    """One game master's event of type `kind`."""
    return Event(sender=GM, to=GM, timestamp="t", action=Action(type=kind, content=content,
                                                                **extra))  # fmt: skip


def interactions(
    rounds: list[list[ProbeEntry]], turns: list[list[Event]] | None = None,
    slots: tuple[str, ...] = ("a", "b", "c"),
) -> Interactions:  # fmt: skip
    """An episode's records holding `rounds` of probes and, in turn order, `turns` of events."""
    return Interactions(
        players={}, turns=turns or [[] for _ in rounds], probes=rounds,
        realised_slots={slot: i for i, slot in enumerate(slots)},
        request_count=[], parsed_request_count=[], violated_request_count=[], filled_slots=[],
        aborted=False, played_probe_rounds=len(rounds),
    )  # fmt: skip


# A 3-slot episode, slots asked in the order a, b, c: a is shared from round 1, b from round 2,
# c from round 3. Each probe is (slot, truth, reply); 2 an invalid reply, never counted.
CLASSIC = [
    [probe("a", 0, 1), probe("b", 0, 0), probe("c", 0, 0)],  # a private, said shared: over
    [probe("a", 1, 1), probe("b", 0, 1), probe("c", 0, 2)],  # b over; c invalid
    [probe("a", 1, 0), probe("b", 1, 0), probe("c", 0, 0)],  # a (lag 1) and b (lag 0) under
    [probe("c", 1, 0), probe("a", 1, 1), probe("b", 1, 1)],  # c (lag 0) under
]


def test_over_and_under_attribution_count_every_probe_answered_yes_or_no() -> None:
    # Private and answered: round 0 three, round 1 one (b; c was invalid), round 2 one (c): 5,
    # two of them yes (a in round 0, b in round 1): 2/5. Shared: 1 + 2 + 3 = 6, three of them
    # no (a and b in round 2, c in round 3): 3/6.
    counted = attribution(entry for probes in CLASSIC for entry in probes)
    assert counted == Attribution(
        over_attribution=Tally(count=2, total=5), under_attribution=Tally(count=3, total=6)
    )


def test_a_probe_never_asked_is_not_counted() -> None:
    # An aborted round keeps its unasked probes (no reply, no value): neither private nor shared
    # answers to count. Only a's private "no" is: 0/1.
    counted = attribution([probe("a", 0, 0), probe("b", 0, None), probe("c", 1, None)])
    assert counted.over_attribution == Tally(count=0, total=1)
    assert counted.under_attribution == Tally(count=0, total=0)


@pytest.mark.parametrize(
    ("lag", "bucket"),
    [(0, "0"), (1, "1"), (2, "2"), (3, "3+"), (11, "3+")],
    ids=["right-after", "one-round", "two-rounds", "three", "many"],
)
def test_lag_bucket(lag: int, bucket: str) -> None:
    assert lag_bucket(lag) == bucket


def test_under_attribution_by_rounds_since_the_slot_became_shared() -> None:
    # Shared probes with their lag (round - the round the slot became shared):
    # a: round 1 lag 0 yes, round 2 lag 1 no, round 3 lag 2 yes;
    # b: round 2 lag 0 no, round 3 lag 1 yes;  c: round 3 lag 0 no.
    # lag 0: b and c wrong of a, b, c: 2/3; lag 1: a wrong, b right: 1/2; lag 2: 0/1; no 3+.
    assert under_attribution_by_lag(CLASSIC) == {
        "0": Tally(count=2, total=3), "1": Tally(count=1, total=2), "2": Tally(count=0, total=1),
    }  # fmt: skip


def test_a_model_that_never_updates_errs_at_every_lag() -> None:
    # One slot shared from round 0 on, always answered no: wrong at lag 0, 1, 2 and twice at 3+
    # (rounds 3 and 4).
    rounds = [[probe("a", 1, 0)] for _ in range(5)]
    assert under_attribution_by_lag(rounds) == {
        "0": Tally(count=1, total=1), "1": Tally(count=1, total=1), "2": Tally(count=1, total=1),
        "3+": Tally(count=2, total=2),
    }  # fmt: skip


def test_accuracy_by_position_in_the_round() -> None:
    # Position 1: a wrong, a right, a wrong, c wrong: 1/4. Position 2: b right, b wrong, b
    # wrong, a right: 2/4. Position 3: c right, c invalid (not counted), c right, b right: 3/3.
    assert accuracy_by_position(CLASSIC) == {
        1: Tally(count=1, total=4), 2: Tally(count=2, total=4), 3: Tally(count=3, total=3),
    }  # fmt: skip


# Two listeners, 2 slots: the colleague joins after turn 1, so it never heard a (said in turn 1)
# and hears b in turn 2. Each round probes both slots about both listeners.
TWO = [
    [probe("a", 0, 0, AGENT), probe("a", 0, 0, COLLEAGUE), probe("b", 0, 0, AGENT),
     probe("b", 0, 1, COLLEAGUE)],  # the colleague's b over-attributed
    [probe("a", 1, 1, AGENT), probe("a", 0, 1, COLLEAGUE), probe("b", 0, 0, AGENT),
     probe("b", 0, 0, COLLEAGUE)],  # a said before the colleague came: its yes is over
    [probe("a", 1, 1, AGENT), probe("a", 0, 1, COLLEAGUE), probe("b", 1, 0, AGENT),
     probe("b", 1, 1, COLLEAGUE)],  # again; and the agent's b under-attributed
]  # fmt: skip


def test_two_listeners_are_counted_apart_and_together() -> None:
    # The agent (probed first, the 1st): private a r0, b r0, b r1: 0 yes of 3; shared a r1, a r2,
    # b r2: b r2 no, 1/3. The colleague: private a r0, r1, r2 (yes twice) and b r0 (yes), r1:
    # 3/5; shared b r2 only, yes: 0/1. Together: over 3/8, under 1/4.
    assert by_listener(TWO) == {
        "1st": Attribution(over_attribution=Tally(count=0, total=3),
                           under_attribution=Tally(count=1, total=3)),
        "2nd": Attribution(over_attribution=Tally(count=3, total=5),
                           under_attribution=Tally(count=0, total=1)),
    }  # fmt: skip
    counted = episode_diagnostics(interactions(TWO, slots=("a", "b")), None)
    assert counted.attribution == Attribution(
        over_attribution=Tally(count=3, total=8), under_attribution=Tally(count=1, total=4)
    )
    # Lag is per listener: the agent's a shared from round 1, b from round 2; the colleague's b
    # from round 2. Lag 0: agent a r1 yes, agent b r2 no, colleague b r2 yes: 1/3; lag 1: a r2
    # yes: 0/1.
    assert counted.under_attribution_by_lag == {
        "0": Tally(count=1, total=3), "1": Tally(count=0, total=1),
    }  # fmt: skip
    # Position in the round over all four probes: 1: 3/3, 2: 1/3, 3: 2/3, 4: 2/3.
    assert counted.accuracy_by_position == {
        1: Tally(count=3, total=3), 2: Tally(count=1, total=3), 3: Tally(count=2, total=3),
        4: Tally(count=2, total=3),
    }  # fmt: skip
    # The classic game has no listeners to split.
    assert episode_diagnostics(interactions(CLASSIC), None).by_listener == {}


def test_early_disclosures_count_the_probes_until_the_slot_is_asked() -> None:
    # Asked in the order a, b, c, d over turns 1 to 4. Answer 1 gives c away too (shared from
    # round 1), answer 2 gives d away (shared from round 2); c is asked in turn 3, d in turn 4.
    turns = [
        [],
        [note("metadata", "Slot filled: True", slot="a"),
         note("metadata", "Value of C given early", shared_early="c")],
        [note("metadata", "Slot filled: True", slot="b"),
         note("metadata", "Value of D given early", shared_early="d")],
        [note("metadata", "Slot filled: True", slot="c")],
        [note("metadata", "Slot filled: True", slot="d")],
    ]  # fmt: skip
    records = interactions([[]] * 5, turns, slots=("a", "b", "c", "d"))
    assert early_disclosures(records) == {"c": (1, 3), "d": (2, 4)}
    rounds = [
        [probe("c", 0, 1), probe("d", 0, 0)],  # before any disclosure: not counted
        [probe("c", 1, 1), probe("d", 0, 0)],  # c counted: yes
        [probe("c", 1, 0), probe("d", 1, 0)],  # c: no; d: no
        [probe("c", 1, 1), probe("d", 1, 2)],  # c asked in turn 3: no longer; d invalid
        [probe("c", 1, 1), probe("d", 1, 1)],  # d asked in turn 4: no longer
    ]
    # c in rounds 1 and 2 (yes, no), d in round 2 (no; round 3 invalid): 1 yes of 3.
    assert early_disclosure_tally(rounds, early_disclosures(records)) == Tally(count=1, total=3)


def answer_turn(slot: str, answer: str) -> list[Event]:
    """A turn whose valid answer to the question about `slot` was `answer`, with a probe's
    parse after it (the recorder's order)."""
    return [note("parse", answer), note("metadata", "Slot filled", slot=slot),
            note("parse", "yes"), note("metadata", "Answer for A valid.")]  # fmt: skip


SLOTS = {"from": "Lisbon", "to": "Budapest", "class": "Economy"}
VALUES = {"from": ("Lisbon", "Paris"), "to": ("Budapest", "Rome"), "class": ("Economy", "First")}


@pytest.mark.parametrize(
    ("answer", "slot", "values", "kind"),
    [
        ("To Budapest, please.", "to", VALUES, None),
        ("Economy.", "from", VALUES, "other_slot_value"),
        ("From Paris.", "from", VALUES, "value_not_in_instance"),
        ("I would rather not say.", "from", VALUES, "value_missing"),
        ("In the first week.", "from", VALUES, "value_missing"),
        ("From Paris.", "from", None, "unclassified"),
        ("From Paris, and Economy.", "from", VALUES, "other_slot_value"),
    ],
    ids=["filled", "another-slots-value", "a-wrong-value", "nothing", "other-slots-pool-only",
         "no-pool", "confusion-first"],
)  # fmt: skip
def test_failure_kind(
    answer: str, slot: str, values: dict[str, tuple[str, ...]] | None, kind: str | None
) -> None:
    # other-slots-pool-only: "first" is a class value the instance does not hold, but the slot
    # asked was `from`: only its own pool tells a wrong value.
    assert failure_kind(answer, slot, SLOTS, values) == kind


def test_slot_filling_failures_are_split_by_kind() -> None:
    # Four valid answers, one right: failures 3/4, one of each kind.
    turns = [
        [],
        answer_turn("to", "Budapest."),
        answer_turn("from", "Economy class."),
        answer_turn("class", "First class."),
        answer_turn("from", "Somewhere nice."),
    ]
    counted = episode_diagnostics(interactions([[]] * 5, turns), SLOTS, VALUES)  # fmt: skip
    assert counted.slot_filling_failures == Tally(count=3, total=4)
    assert counted.failure_kinds == {
        "other_slot_value": 1, "value_not_in_instance": 1, "value_missing": 1,
    }  # fmt: skip
    # Without the instance's values the answers are not counted at all.
    assert episode_diagnostics(interactions([[]] * 5, turns), None).slot_filling_failures == Tally()


def checked(name: str, valid: bool = True, recorded: str | None = None) -> CheckedCall:
    return CheckedCall(name=name, valid=valid, recorded=recorded, true_value=recorded is not None)


@pytest.mark.parametrize(
    ("revealed", "belief", "farewell", "expected"),
    [
        ((), {}, False, {"ask"}),                              # the first turn: ask
        (("a",), {}, False, {"record", "ask"}),                # record what came, ask the next
        (("a",), {"a": True}, False, {"ask"}),                 # recorded already: only ask
        (("a",), {"a": False}, False, {"record", "ask"}),      # recorded wrong: record again
        (("a", "b", "c"), {"a": True, "b": True}, False, {"record", "finish"}),  # all heard
        (("a", "b", "c"), {"a": True, "b": True, "c": True}, False, {"finish"}),
        (("a",), {}, True, {"record"}),                        # a farewell only records
        (("a",), {"a": True}, True, set()),                    # nothing left to record
    ],
    ids=["first", "record-and-ask", "ask", "fix-a-wrong-record", "record-and-finish", "finish",
         "farewell", "farewell-nothing"],
)  # fmt: skip
def test_expected_act_types(
    revealed: tuple[str, ...], belief: dict[str, bool], farewell: bool, expected: set[str]
) -> None:
    turn = QuestionerTurn(turn=1, revealed=frozenset(revealed), calls=(), farewell=farewell)
    assert expected_act_types(turn, belief, ("a", "b", "c")) == expected


def reply(turn: int) -> Event:
    return Event(sender=QUESTIONER, to=GM, timestamp="t",
                 action=Action(type="get message", content="", turn=turn))  # fmt: skip


def call(turn: int, name: str, slot: str | None = None, valid: bool = True) -> Event:
    return note("tool call", name, name=name, valid=valid, turn=turn,
                arguments={"slot": slot} if slot else {},
                intermediate_results={"true_value": True} if name == "record" else {})  # fmt: skip


def test_action_types_per_turn() -> None:
    # Two slots. Turn 1 asks a: right. The answer gives a. Turn 2 records a and asks b (an
    # invalid ask first, not carried out): right. The answer fails, b is unheard. Turn 3
    # finishes: wrong, b was still to ask. 2 of 3 turns right.
    turns = [
        [reply(1), call(1, "ask", "a")],
        [note("metadata", "Values given", revealed={"a": "x"}), reply(2), call(2, "record", "a"),
         call(2, "ask", "zz", valid=False), call(2, "ask", "b")],
        [reply(3), call(3, "finish")],
    ]  # fmt: skip
    records = interactions([[]] * 3, turns, slots=("a", "b"))
    assert action_types(records) == {
        1: Tally(count=1, total=1), 2: Tally(count=1, total=1), 3: Tally(count=0, total=1),
    }  # fmt: skip
    assert action_types(interactions(CLASSIC)) == {}  # clembench's questioner made no calls


# Rates over episodes, with intervals


def record(experiment: str, counted: EpisodeDiagnostics, status: str = "played") -> EpisodeRecord:
    return EpisodeRecord(
        model="m", experiment_folder=f"0_{experiment}", experiment=experiment, episode="episode_0",
        game_id=0, status=status, diagnostics=counted,  # type: ignore[arg-type]
    )  # fmt: skip


def counts(
    over: tuple[int, int], under: tuple[int, int] = (0, 0), **extra: object
) -> EpisodeDiagnostics:
    return EpisodeDiagnostics(
        attribution=Attribution(over_attribution=Tally(count=over[0], total=over[1]),
                                under_attribution=Tally(count=under[0], total=under[1])),
        **extra,  # type: ignore[arg-type]
    )  # fmt: skip


def test_rates_pool_the_episodes_probes_and_resample_episodes() -> None:
    # Two episodes of one experiment, over-attribution 0/4 and 4/4: pooled 4/8 = 0.5. Resampling
    # the two episodes gives both of the first (0/8), one of each (4/8) or both of the second
    # (8/8), with chances 1/4, 1/2 and 1/4: the 95% interval is [0, 1].
    found = diagnose([record("x", counts((0, 4))), record("x", counts((4, 4)))], 2000)
    assert found is not None and found.episodes == 2
    assert (found.over_attribution.rate, found.over_attribution.count) == (0.5, 4)
    assert found.over_attribution.ci95 == (0.0, 1.0)
    # Under-attribution counted nothing: NaN, no interval.
    assert math.isnan(found.under_attribution.rate) and found.under_attribution.total == 0
    assert math.isnan(found.under_attribution.ci95[0])


def test_one_episode_gets_no_interval_nor_do_lone_episodes_of_several_experiments() -> None:
    alone = diagnose([record("x", counts((1, 3)))], 2000)
    assert alone is not None and alone.over_attribution.rate == pytest.approx(1 / 3)
    assert math.isnan(alone.over_attribution.ci95[0])
    # One episode in each of two experiments: each stratum redraws its one episode, nothing
    # varies.
    apart = diagnose([record("x", counts((1, 3))), record("y", counts((0, 3)))], 2000)
    assert apart is not None and apart.over_attribution.rate == pytest.approx(1 / 6)
    assert math.isnan(apart.over_attribution.ci95[0])


def test_same_share_in_every_episode_is_certain() -> None:
    # 1/2 and 3/6: every resample pools to one half.
    found = diagnose([record("x", counts((1, 2))), record("x", counts((3, 6)))], 2000)
    assert found is not None and found.over_attribution.ci95 == (0.5, 0.5)


def test_errored_and_unread_episodes_are_left_out() -> None:
    episodes = [record("x", counts((1, 1))), record("x", counts((0, 5)), status="errored")]
    found = diagnose(episodes, 100)
    assert found is not None and found.episodes == 1 and found.over_attribution.rate == 1.0
    assert diagnose([record("x", counts((0, 5)), status="unscored")], 100) is None


def test_action_type_accuracy_is_a_mean_of_episode_means() -> None:
    # MAS4CS's dataset level: episode 1 right in 1 of 4 turns (0.25), episode 2 in 1 of 1 (1.0):
    # (0.25 + 1.0) / 2 = 0.625, where pooling the turns would give 2/5. Per turn: turn 1 right
    # in both (2/2), turns 2 to 4 only in the first, wrong there (0/1 each).
    first = counts(
        (0, 0),
        action_types={
            1: Tally(count=1, total=1),
            2: Tally(count=0, total=1),
            3: Tally(count=0, total=1),
            4: Tally(count=0, total=1),
        },
    )
    second = counts((0, 0), action_types={1: Tally(count=1, total=1)})  # fmt: skip
    found = diagnose([record("x", first), record("x", second)], 2000)
    assert found is not None
    assert found.action_type_accuracy.mean == 0.625 and found.action_type_accuracy.episodes == 2
    assert found.action_type_accuracy_by_turn[1].rate == 1.0
    assert found.action_type_accuracy_by_turn[2].total == 1
    # Resampled: both first (0.25), both second (1.0), or one of each (0.625).
    low, high = found.action_type_accuracy.ci95
    assert (low, high) == (0.25, 1.0)
    no_questioner = diagnose([record("x", counts((0, 1)))], 100)
    assert no_questioner is not None and math.isnan(no_questioner.action_type_accuracy.mean)


def test_failure_kinds_are_shares_of_the_failures() -> None:
    # 2 failures of 5 answers and 1 of 5: 3/10; of those 3, two of another slot's value (2/3)
    # and one missing (1/3).
    first = counts(
        (0, 0), slot_filling_failures=Tally(count=2, total=5), failure_kinds={"other_slot_value": 2}
    )
    second = counts((0, 0), slot_filling_failures=Tally(count=1, total=5),
                    failure_kinds={"value_missing": 1})  # fmt: skip
    found = diagnose([record("x", first), record("x", second)], 100)
    assert found is not None and found.slot_filling_failures.rate == pytest.approx(0.3)
    shares = {kind: (rate.count, rate.total) for kind, rate in found.failure_kinds.items()}
    assert shares == {"other_slot_value": (2, 3), "value_not_in_instance": (0, 3),
                      "value_missing": (1, 3), "unclassified": (0, 3)}  # fmt: skip


# End to end


def test_constant_players_over_and_under_attribute_everything(tmp_path: Path) -> None:
    """always-yes answers yes to every probe: every private probe is over-attributed and no
    shared one under-attributed; always-no the other way round. Both give every value when
    asked, so the programmatic questioner's action types are right at every turn, and no answer
    fails."""
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(["run", "--model", "always-yes", "--model", "always-no", "--experiment",
                     "travel-booking", "--results-dir", str(tmp_path)])  # fmt: skip
    assert code == 0
    results = json.loads((tmp_path / "results.json").read_text())
    found = {row["model"]: row["diagnostics"] for row in results["models"]}
    yes, no = found["always-yes-t0.0--always-yes-t0.0"], found["always-no-t0.0--always-no-t0.0"]
    # 10 episodes of 5 slots, rounds 0 to 5: 5 + 4 + 3 + 2 + 1 + 0 = 15 private probes each.
    assert (yes["over_attribution"]["count"], yes["over_attribution"]["total"]) == (150, 150)
    assert yes["over_attribution"]["ci95"] == [1.0, 1.0]
    assert (yes["under_attribution"]["rate"], yes["under_attribution"]["total"]) == (0.0, 150)
    assert (no["over_attribution"]["rate"], no["under_attribution"]["rate"]) == (0.0, 1.0)
    assert set(no["under_attribution_by_lag"]) == {"0", "1", "2", "3+"}
    assert yes["slot_filling_failures"]["count"] == 0 and yes["failure_kinds"] == {}
    assert yes["action_type_accuracy"]["mean"] == 1.0
    assert yes["episodes"] == 10
    # Per experiment as well; over all models, none.
    assert [row["diagnostics"]["episodes"] for row in results["experiments"]] == [10, 10]
    assert results["overall"]["diagnostics"] is None
    markdown = (tmp_path / "results.md").read_text()
    assert "## Diagnostics" in markdown
    assert "| always-yes-t0.0--always-yes-t0.0 | all | 10 | 1.00 (150/150) [1.00, 1.00] |" in (
        markdown
    )
    assert (tmp_path / "diagnostics.svg").read_text().startswith("<svg ")


# Replayed clembench records

shared = pytest.mark.skipif(
    not (SHARED_RECORDS.is_dir() and SHARED_NEWER_RECORDS.is_dir() and SHARED_RESOURCES.is_dir()),
    reason="../shared/clembench-records or ../shared/clembench-resources is not on this machine",
)


def probe_counts(root: Path) -> dict[str, tuple[int, int, int, int]]:
    """Model pair -> (private answered yes, private answered yes or no, shared answered no,
    shared answered yes or no), counted straight from every interactions.json's `probes`."""
    found: dict[str, list[int]] = {}
    for path in root.glob("**/privateshared/*/*/interactions.json"):
        tally = found.setdefault(path.parents[3].name, [0, 0, 0, 0])
        for probes in json.loads(path.read_text())["probes"]:
            for entry in probes:
                if entry.get("value") not in (0, 1):
                    continue
                if entry["gt"] == 0:
                    tally[0] += entry["value"] == 1
                    tally[1] += 1
                else:
                    tally[2] += entry["value"] == 0
                    tally[3] += 1
    return {pair: (a, b, c, d) for pair, (a, b, c, d) in found.items()}


@shared
def test_replayed_records_over_and_under_attribute_as_their_own_probes_say(
    tmp_path: Path,
) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["replay", str(SHARED_RECORDS.parent), "--instances",
                     str(SHARED_RECORDS / "instances.json"), "--resources", str(SHARED_RESOURCES),
                     "--results-dir", str(tmp_path)]) == 0  # fmt: skip
        assert main(["eval", str(tmp_path)]) == 0
    expected = probe_counts(SHARED_RECORDS.parent)
    models = json.loads((tmp_path / "results.json").read_text())["models"]
    assert len(models) == len(expected) == 9
    for row in models:
        over, under = (
            row["diagnostics"]["over_attribution"],
            row["diagnostics"]["under_attribution"],
        )
        got = (over["count"], over["total"], under["count"], under["total"])
        assert got == expected[row["model"]], row["model"]
    # The illustration: gpt-4o takes shared for granted, mistral-large never updates.
    rates = {row["model"].split("-t0.0")[0]: row["diagnostics"] for row in models}
    assert round(rates["gpt-4o-2024-08-06"]["over_attribution"]["rate"], 2) == 0.33
    assert round(rates["mistral-large-2411"]["under_attribution"]["rate"], 2) == 0.92


def test_every_interval_at_once_equals_each_on_its_own() -> None:
    # Three column pairs over two experiments' episodes; the third pair's denominator is 0 in
    # the first experiment, so some resamples leave it undefined.
    rng = np.random.default_rng(7)
    strata = [rng.integers(0, 6, size=(5, 6)).astype(float) for _ in range(2)]
    strata[0][:, 5] = 0.0
    together = _intervals(strata, 500, SEED)
    totals = resampled_totals(strata, 500, SEED)
    for i in range(3):
        alone = percentile_interval(ratio(totals[:, 2 * i], totals[:, 2 * i + 1]))
        assert tuple(together[:, i]) == pytest.approx(alone)


def _example() -> ModuleType:
    """scripts/diagnostics_example.py, which makes the docs page's tables and plot."""
    spec = importlib.util.spec_from_file_location("diagnostics_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@shared
def test_the_docs_page_shows_what_its_script_makes(tmp_path: Path) -> None:
    """docs/diagnostics.md quotes the Diagnostics tables of the replayed clembench records, the
    plot of them and the mock's rates: each as scripts/diagnostics_example.py makes it now."""
    example, page = _example(), DOCS.read_text()
    example.replayed(tmp_path / "replayed")
    markdown = (tmp_path / "replayed" / "results.md").read_text()
    for heading in example.TABLES:
        rows = example.first_table(markdown, heading)
        assert len(rows) == 2 + 9  # header, rule, a row per model
        assert "\n".join(rows) in page, heading
    generated = (tmp_path / "replayed" / "diagnostics.svg").read_text()
    assert (DOCS.parent / "img" / "diagnostics-clembench.svg").read_text() == generated
    assert example.mock_line(tmp_path / "mock") in page
    # The README's replay commands, as the page repeats them.
    assert "privateshared replay ../shared/clembench-records/$records" in page
    assert "privateshared eval /tmp/replayed" in page


def test_two_listeners_early_disclosures_count_only_those_who_heard() -> None:
    # Answer 1 (to the agent's question about a) gives c away while only the agent listens: c is
    # shared for the agent from round 1, and stays private for the colleague, who joins later.
    # The agent's probes of c in rounds 1 and 2 count (yes, no), the colleague's do not: 1/2.
    turns = [
        [],
        [note("metadata", "Slot filled: True", slot="a"),
         note("metadata", "Value of C given early", shared_early="c")],
        [note("metadata", "Slot filled: True", slot="b")],
        [note("metadata", "Slot filled: True", slot="c")],
    ]  # fmt: skip
    rounds = [
        [probe("c", 0, 0, AGENT)],
        [probe("c", 1, 1, AGENT)],
        [probe("c", 1, 0, AGENT), probe("c", 0, 1, COLLEAGUE)],
        [probe("c", 1, 1, AGENT), probe("c", 1, 1, COLLEAGUE)],  # asked in turn 3: no longer
    ]
    counted = episode_diagnostics(interactions(rounds, turns), None)
    assert counted.early_disclosures == Tally(count=1, total=2)


def test_action_types_across_a_handover() -> None:
    # The agent asks a (turn 1: right), hears a, and in its farewell turn 2 records it and asks
    # nothing (right: a farewell only records). Its note carries a to the colleague, whose first
    # turn (also turn 2) records a and asks b (right), and who then hears b and, in turn 3,
    # records it and finishes (right). Turn 2 counts twice: 2 of 2.
    def said(turn: int, asker: str, farewell: bool = False) -> Event:
        extra = {"farewell": True} if farewell else {}
        return Event(sender=QUESTIONER, to=GM, timestamp="t", action=Action(
            type="get message", content="", turn=turn, questioner=asker, **extra))  # fmt: skip

    def done(turn: int, asker: str, name: str, slot: str | None = None) -> Event:
        event = call(turn, name, slot)
        return event.model_copy(update={"action": Action(
            **event.action.model_dump(), questioner=asker)})  # fmt: skip

    turns = [
        [said(1, AGENT), done(1, AGENT, "ask", "a")],
        [note("metadata", "Values given", revealed={"a": "x"}), said(2, AGENT, farewell=True),
         done(2, AGENT, "record", "a"), note("note", "a", to=COLLEAGUE, carried=["a"]),
         said(2, COLLEAGUE), done(2, COLLEAGUE, "record", "a"), done(2, COLLEAGUE, "ask", "b")],
        [note("metadata", "Values given", revealed={"b": "y"}), said(3, COLLEAGUE),
         done(3, COLLEAGUE, "record", "b"), done(3, COLLEAGUE, "finish")],
    ]  # fmt: skip
    assert action_types(interactions([[]] * 3, turns, slots=("a", "b"))) == {
        1: Tally(count=1, total=1), 2: Tally(count=2, total=2), 3: Tally(count=1, total=1),
    }  # fmt: skip


def test_one_listener_over_attributes_only_to_the_late_joiner(tmp_path: Path) -> None:
    """one-listener answers yes for every listener once anyone heard the slot. The agent hears
    everything, so about it the answers are all right (0 over, 0 under); the colleague joins
    late, so the slots said before it came are private to it and answered yes (over > 0), while
    what it heard is answered yes too (0 under). Played beside a classic experiment in one
    folder, the plot draws the model once per benchmark."""
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(["run", "--model", "one-listener", "--experiment", "travel-booking",
                     "--experiment", "travel-booking-late-joiner", "--results-dir",
                     str(tmp_path)])  # fmt: skip
    assert code == 0
    results = json.loads((tmp_path / "results.json").read_text())
    (joined,) = results["two_listeners"]["models"]
    first, second = (joined["diagnostics"]["by_listener"][rank] for rank in ("1st", "2nd"))
    assert (first["over_attribution"]["count"], first["under_attribution"]["count"]) == (0, 0)
    assert first["over_attribution"]["total"] > 0 and first["under_attribution"]["total"] > 0
    assert second["over_attribution"]["count"] > 0 and second["under_attribution"]["count"] == 0
    (classic,) = results["models"]
    assert classic["diagnostics"]["by_listener"] == {}
    assert "### Per listener" in (tmp_path / "results.md").read_text()
    plot = (tmp_path / "diagnostics.svg").read_text()
    assert "one-listener-t0.0--one-listener-t0.0 (classic)" in plot
    assert "one-listener-t0.0--one-listener-t0.0 (two-listeners)" in plot
