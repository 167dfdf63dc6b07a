"""The two-listener headline (graph/perspective.py), worked out by hand on small episodes.

Each constructed episode has three slots a, b, c, asked in that order, and four probing rounds
(round 0 before any answer, round t after answer t). A round is written as listener -> the truth
(or the answers) of a, b and c, "1" for yes: {AGENT: "110", COLLEAGUE: "010"} says the agent
knows a and b, the colleague b only.

- Late joiner: the colleague joins after turn 1, so it never hears a. Pairs whose truths differ:
  a in rounds 2 and 3 (agent yes, colleague no).
- Handover: the agent asks for a, notes it down and leaves; the colleague, told a by the note,
  asks for b and c. Pairs: b in round 2, b and c in round 3 (agent no, colleague yes).

Kappa by hand: po the share right, pe = (gold yes x answered yes + gold no x answered no) / N²,
kappa = (po - pe) / (1 - pe). The Main Score is 100 x 2 SF K / (SF + K), with SF the slot
filling and K the Two-Listener Kappa, the harmonic mean of the truncated first-listener,
second-listener and perspective kappas.
"""

from __future__ import annotations

import math

import pytest

from privateshared.graph.perspective import two_listener_kappa
from privateshared.graph.records import Interactions, ProbeEntry
from privateshared.graph.scoring import score_interactions

AGENT, COLLEAGUE = "AGENT", "COLLEAGUE"
SLOTS = "abc"
Rounds = list[dict[str, str]]

LATE_JOINER: Rounds = [
    {AGENT: "000"},
    {AGENT: "100"},
    {AGENT: "110", COLLEAGUE: "010"},
    {AGENT: "111", COLLEAGUE: "011"},
]
HANDOVER: Rounds = [
    {AGENT: "000"},
    {AGENT: "100"},
    {AGENT: "100", COLLEAGUE: "110"},
    {AGENT: "100", COLLEAGUE: "111"},
]


def one_listener(truth: Rounds) -> Rounds:
    """`one-listener`'s answers: yes once anyone heard the slot, whoever the probe is about."""
    answers = []
    for known in truth:
        anyone = "".join(max(bits) for bits in zip(*known.values(), strict=True))
        answers.append(dict.fromkeys(known, anyone))
    return answers


def always_yes(truth: Rounds) -> Rounds:
    return [dict.fromkeys(known, "111") for known in truth]


def episode(
    truth: Rounds,
    answers: Rounds,
    filled: tuple[bool, ...] = (True, True, True),
    aborted: bool = False,
) -> Interactions:
    """The records of a constructed episode: its probes, slot filling and status; no turns."""
    probes = [
        [
            ProbeEntry(target=slot.upper(), question="?", gt=int(gold), value=int(answer), tries=1,
                       listener=listener)  # type: ignore[call-arg]
            for listener, known in round_truth.items()
            for slot, gold, answer in zip(SLOTS, known, round_answers[listener], strict=True)
        ]
        for round_truth, round_answers in zip(truth, answers, strict=True)
    ]  # fmt: skip
    counts = [len(probes_of_round) + 1 for probes_of_round in probes]
    return Interactions(
        players={},
        turns=[],
        probes=probes,
        realised_slots={slot: i for i, slot in enumerate(SLOTS)},
        request_count=counts,
        parsed_request_count=counts,
        violated_request_count=[0] * len(counts),
        filled_slots=list(filled),
        aborted=aborted,
        played_probe_rounds=len(probes) - 1 if aborted else len(probes),
    )


def headline(interactions: Interactions) -> dict[str, float]:
    scores = score_interactions(interactions).episode_scores
    return {name: float(value) for name, value in scores.items()}


# Late joiner. Agent: 12 probes, 6 gold yes. Colleague: 6 probes (rounds 2, 3), 3 gold yes.
# All 18: 9 gold yes.
@pytest.mark.parametrize(
    ("answers", "kappas", "main", "classic"),
    [
        # Every answer right: each kappa 1, K 1, SF 1.
        (LATE_JOINER, (1, 1, 1), 100, 100),
        # Says a is known to the colleague in rounds 2 and 3: 2 of 18 wrong, both on the
        # colleague. Colleague: 5 answered yes, 4 of 6 right: po 2/3, pe (3·5 + 3·1)/36 = 1/2,
        # kappa 1/3. Pairs: 4 probes, all answered yes: po 1/2, pe (2·4 + 2·0)/16 = 1/2,
        # kappa 0, so K 0 and Main 0. Classic: 11 answered yes, 16 right: po 8/9,
        # pe (9·11 + 9·7)/324 = 1/2, kappa 7/9, Main 100·(14/9)/(16/9) = 87.5.
        (one_listener(LATE_JOINER), (1, 1 / 3, 0), 0, 87.5),
        # Constant answers: every kappa 0 (po = pe), and so both scores.
        (always_yes(LATE_JOINER), (0, 0, 0), 0, 0),
        # The mock, one draw of its coin per probe. Agent: answered 101, 010, 110, 011 against
        # 000, 100, 110, 111: 7 right, 7 answered yes, po 7/12, pe (6·7 + 6·5)/144 = 1/2,
        # kappa 1/6. Colleague: 001, 110 against 010, 011: 2 right, 3 yes, po 1/3, pe 1/2,
        # kappa -1/3, truncated to 0. Pairs: a in round 2 right for both, a in round 3 wrong
        # for both: po 1/2, 2 yes, pe 1/2, kappa 0. Main 0. Classic: 9 right, 10 yes, po 1/2,
        # pe (9·10 + 9·8)/324 = 1/2, kappa 0: Main 0 as well.
        (
            [{AGENT: "101"}, {AGENT: "010"}, {AGENT: "110", COLLEAGUE: "001"},
             {AGENT: "011", COLLEAGUE: "110"}],
            (1 / 6, -1 / 3, 0), 0, 0,
        ),
        # "The colleague knows nothing": right about the agent, no to every colleague probe.
        # That gets every pair right (in a late join they all point one way): perspective
        # kappa 1, perspective accuracy 1. But its colleague answers are constant: kappa 0,
        # so K 0 and Main 0; the per-listener kappas are in K for this. Classic: 15 right,
        # 6 yes, po 5/6, pe (9·6 + 9·12)/324 = 1/2, kappa 2/3, Main 100·(4/3)/(5/3) = 80.
        (
            [{AGENT: "000"}, {AGENT: "100"}, {AGENT: "110", COLLEAGUE: "000"},
             {AGENT: "111", COLLEAGUE: "000"}],
            (1, 0, 1), 0, 80,
        ),
    ],
    ids=["oracle", "one-listener", "always-yes", "mock", "colleague-knows-nothing"],
)  # fmt: skip
def test_late_joiner_headline_by_hand(
    answers: Rounds, kappas: tuple[float, float, float], main: float, classic: float
) -> None:
    scores = headline(episode(LATE_JOINER, answers))
    got = (scores["First Listener Kappa"], scores["Second Listener Kappa"],
           scores["Perspective Kappa"])  # fmt: skip
    assert got == pytest.approx(kappas)
    assert scores["Perspective Pairs"] == 2
    assert scores["Main Score"] == pytest.approx(main)
    assert scores["Classic Main Score"] == pytest.approx(classic)


# Handover. Agent: 12 probes, 3 gold yes. Colleague: 6 probes, 5 gold yes. All 18: 8 gold yes.
@pytest.mark.parametrize(
    ("answers", "kappas", "main", "classic"),
    [
        (HANDOVER, (1, 1, 1), 100, 100),
        # Yes to b (round 2), b and c (round 3) for the agent, who left before they were said:
        # 3 of 18 wrong, all on the agent. Agent: 6 answered yes, 9 right, po 3/4,
        # pe (3·6 + 9·6)/144 = 1/2, kappa 1/2. Colleague: all right, kappa 1. Pairs: all 6
        # probes answered yes, kappa 0: Main 0. Classic: 11 yes, 15 right, po 5/6,
        # pe (8·11 + 10·7)/324 = 79/162, kappa 56/83, Main 100·(112/83)/(139/83) = 11200/139.
        (one_listener(HANDOVER), (1 / 2, 1, 0), 0, 11200 / 139),
        (always_yes(HANDOVER), (0, 0, 0), 0, 0),
        # The mock, one draw. Agent: 010, 100, 110, 001 against 000, 100, 100, 100: 8 right,
        # 5 yes, po 2/3, pe (3·5 + 9·7)/144 = 13/24, kappa (16/24 - 13/24)/(11/24) = 3/11.
        # Colleague: 100, 011 against 110, 111: 4 right, 3 yes, po 2/3, pe (5·3 + 1·3)/36 = 1/2,
        # kappa 1/3. Pairs (agent no, colleague yes): b in round 2 wrong for both, b in round 3
        # right for both, c in round 3 right for the colleague only: 3 of 6 right, 4 yes,
        # po 1/2, pe (3·4 + 3·2)/36 = 1/2, kappa 0: Main 0. Its classic score is a lucky
        # draw's: 12 right, 8 yes, po 2/3, pe (8·8 + 10·10)/324 = 41/81, kappa 13/40,
        # Main 100·(26/40)/(53/40) = 2600/53.
        (
            [{AGENT: "010"}, {AGENT: "100"}, {AGENT: "110", COLLEAGUE: "100"},
             {AGENT: "001", COLLEAGUE: "011"}],
            (3 / 11, 1 / 3, 0), 0, 2600 / 53,
        ),
        # Keeps score per listener but slips once: yes to c for the agent in round 3. Agent:
        # 4 yes, 11 right, po 11/12, pe (3·4 + 9·8)/144 = 7/12, kappa 4/5. Pairs: 5 of 6 right,
        # 4 yes, po 5/6, pe 1/2, kappa 2/3. K = 3 / (5/4 + 1 + 3/2) = 4/5, Main
        # 100·(8/5)/(9/5) = 800/9. Classic: 17 right, 9 yes, po 17/18, pe 1/2, kappa 8/9, Main
        # 100·(16/9)/(17/9) = 1600/17: a slip where perspective matters costs the headline more.
        (
            [{AGENT: "000"}, {AGENT: "100"}, {AGENT: "100", COLLEAGUE: "110"},
             {AGENT: "101", COLLEAGUE: "111"}],
            (4 / 5, 1, 2 / 3), 800 / 9, 1600 / 17,
        ),
    ],
    ids=["oracle", "one-listener", "always-yes", "mock", "one-slip"],
)  # fmt: skip
def test_handover_headline_by_hand(
    answers: Rounds, kappas: tuple[float, float, float], main: float, classic: float
) -> None:
    scores = headline(episode(HANDOVER, answers))
    got = (scores["First Listener Kappa"], scores["Second Listener Kappa"],
           scores["Perspective Kappa"])  # fmt: skip
    assert got == pytest.approx(kappas)
    assert scores["Perspective Pairs"] == 3
    assert scores["Main Score"] == pytest.approx(main)
    assert scores["Classic Main Score"] == pytest.approx(classic)


@pytest.mark.parametrize(
    ("answers", "expected"),
    [((1, 0), 1.0), ((0, 1), -1.0), ((1, 1), 0.0), ((0, 0), 0.0)],
    ids=["right", "inverted", "blind-yes", "blind-no"],
)
def test_one_pair_always_has_a_perspective_kappa(answers: tuple[int, int], expected: float) -> None:
    """A pair holds one yes and one no, so its kappa is defined whatever the answers; answering
    both listeners alike is exactly chance."""
    truth: Rounds = [{AGENT: "000"}, {AGENT: "100", COLLEAGUE: "000"}]
    answered: Rounds = [{AGENT: "000"}, {AGENT: f"{answers[0]}00", COLLEAGUE: f"{answers[1]}00"}]
    scores = headline(episode(truth, answered, filled=(True,)))
    assert scores["Perspective Pairs"] == 1
    assert scores["Perspective Kappa"] == expected


def test_without_a_differing_pair_the_headline_is_undefined() -> None:
    """The late joiner's first answer gave nothing away (not filled): both listeners know the
    same in every round, so nothing measures perspective. The Main Score is NaN, left out of the
    Quality Score; the classic one stays: slot filling 2/3, kappa 1, 100·(4/3)/(5/3) = 80."""
    truth: Rounds = [
        {AGENT: "000"},
        {AGENT: "000"},
        {AGENT: "010", COLLEAGUE: "010"},
        {AGENT: "011", COLLEAGUE: "011"},
    ]
    scores = headline(episode(truth, truth, filled=(False, True, True)))
    assert scores["Perspective Pairs"] == 0
    for name in ("Perspective Accuracy", "Perspective Kappa", "Two-Listener Kappa", "Main Score"):
        assert math.isnan(scores[name]), name
    assert scores["Classic Main Score"] == pytest.approx(80)


def test_an_undefined_listener_kappa_is_left_out() -> None:
    """Only the first answer gave its value: the colleague, who joined after it, knows nothing
    all along, and the oracle says no to all of its probes. With one truth and every answer
    right, the colleague's kappa is undefined (NaN); K is the harmonic mean of the other two,
    both 1. Slot filling 1/3: Main 100·(2/3)/(4/3) = 50, the classic one too."""
    truth: Rounds = [
        {AGENT: "000"},
        {AGENT: "100"},
        {AGENT: "100", COLLEAGUE: "000"},
        {AGENT: "100", COLLEAGUE: "000"},
    ]
    scores = headline(episode(truth, truth, filled=(True, False, False)))
    assert math.isnan(scores["Second Listener Kappa"])
    assert scores["Two-Listener Kappa"] == 1
    assert scores["Main Score"] == pytest.approx(50)
    assert scores["Classic Main Score"] == pytest.approx(50)


def test_an_aborted_episode_has_no_headline() -> None:
    """Aborted in round 3: every game score NaN, the classic Main Score too, as clembench's."""
    scores = headline(episode(LATE_JOINER, LATE_JOINER, aborted=True))
    assert scores["Aborted"] == 1
    for name in ("Main Score", "Classic Main Score", "Perspective Kappa", "Two-Listener Kappa",
                 "First Listener Kappa", "Second Listener Kappa"):  # fmt: skip
        assert math.isnan(scores[name]), name


def test_a_classic_episode_keeps_its_main_score() -> None:
    """No listener named in the probes: no two-listener scores, the Main Score clembench's."""
    interactions = episode(LATE_JOINER[:2], LATE_JOINER[:2], filled=(True,))
    classic = interactions.model_copy(update={"probes": [
        [ProbeEntry.model_validate(entry.model_dump(exclude={"listener"})) for entry in probes]
        for probes in interactions.probes
    ]})  # fmt: skip
    scores = headline(classic)
    assert "Classic Main Score" not in scores and "Perspective Kappa" not in scores
    assert scores["Main Score"] == 100


@pytest.mark.parametrize(
    ("first", "second", "perspective", "expected"),
    [
        (1.0, 1.0, 1.0, 1.0),
        (0.5, 1.0, 1.0, 0.75),  # 3 / (2 + 1 + 1)
        (1.0, 1.0, 0.0, 0.0),  # blind to perspective: nothing, however good per listener
        (1.0, -0.5, 1.0, 0.0),  # below chance for one listener counts as no agreement
        (1.0, math.nan, 0.5, 2 / 3),  # undefined for one listener: the other two, 2 / (1 + 2)
        (math.nan, math.nan, 1.0, 1.0),  # only the pairs say anything
        (1.0, 1.0, math.nan, math.nan),  # no pair: nothing measures perspective
    ],
    ids=["perfect", "one-weaker", "blind", "below-chance", "undefined-listener", "pairs-only",
         "no-pairs"],
)  # fmt: skip
def test_two_listener_kappa(first: float, second: float, perspective: float,
                            expected: float) -> None:  # fmt: skip
    got = two_listener_kappa(first, second, perspective)
    assert got == pytest.approx(expected, nan_ok=True)
