"""The game's pure rules: parsing replies, slot filling, probe texts."""

from __future__ import annotations

import pytest

from privateshared.domains.clembench_texts import clembench_probe_wording
from privateshared.domains.schema import OUR_PROBE_WORDING, REPROMPTS
from privateshared.graph.dialogue import (
    has_continuation,
    is_slot_filled,
    parse_answer,
    revealed_slots,
)
from privateshared.graph.probing import parse_probe_answer
from tests.conftest import SHARED_RESOURCES


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("ANSWER: Lisbon.", "Lisbon."),
        ("ANSWER: Lisbon.\n", "Lisbon."),  # trailing newlines are stripped before the check
        ("\nANSWER: Lisbon.", None),  # the tag must come first
        ("ANSWER:Lisbon", "Lisbon"),
        ("Lisbon.", None),  # tag missing
        ("answer: Lisbon.", None),  # the tag is case-sensitive, as in clembench
        ("**ANSWER:** Cheese, please.", None),  # markdown around the tag (deepseek-r1's record)
        ("ANSWER: Lisbon.\nAnything else?", None),  # a continuation line
        ("ANSWER: Lisbon.\n\n", "Lisbon."),
    ],
    ids=["plain", "trailing-newline", "leading-newline", "no-space", "untagged", "lower-case",
         "bold", "continuation", "trailing-blank-lines"],
)  # fmt: skip
def test_parse_answer(reply: str, expected: str | None) -> None:
    assert parse_answer(reply) == expected


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("ASIDE: yes", "yes"),
        ("ASIDE: No.", "no"),
        ("ASIDE: Yes, I told them.", "yes"),
        ("ASIDE: NO", "no"),  # case-insensitive after the tag
        ("ASIDE:no", "no"),
        ("ASIDE: Not yet.", "no"),  # "not" starts with "no": clembench reads it as no
        ("ASIDE: Maybe.", None),
        ("yes", None),  # tag missing
        ("NO.", None),  # Qwen2.5's untagged replies in the records
        ("ANSWER: No.", None),  # the wrong tag
        ("ASIDE: No, not yet.  \nANSWER: No.", None),  # a continuation line
        ("ASIDE: yes\n", "yes"),
    ],
    ids=["yes", "no-sentence", "yes-sentence", "upper", "no-space", "not-yet", "maybe", "no-tag",
         "untagged-upper", "answer-tag", "continuation", "trailing-newline"],
)  # fmt: skip
def test_parse_probe_answer(reply: str, expected: str | None) -> None:
    assert parse_probe_answer(reply) == expected


@pytest.mark.parametrize(
    ("reply", "expected"),
    [("one line", False), ("one line\n", False), ("\n\none line\n\n", False), ("a\nb", True),
     ("a\r\nb", True)],
    ids=["plain", "trailing", "surrounding", "two-lines", "crlf"],
)  # fmt: skip
def test_has_continuation(reply: str, expected: bool) -> None:
    assert has_continuation(reply) is expected


@pytest.mark.parametrize(
    ("answer", "value", "expected"),
    [
        ("ANSWER: Night train.", "Night train", True),
        ("ANSWER: night TRAIN please", "Night train", True),  # case-insensitive
        ("ANSWER: by train", "Night train", False),
        ("ANSWER: I have extensive research skills.", "Research", True),  # containment, not words
    ],
    ids=["exact", "case", "partial", "substring"],
)
def test_is_slot_filled(answer: str, value: str, expected: bool) -> None:
    assert is_slot_filled(answer, value) is expected


def test_revealed_slots_finds_every_value_in_an_answer() -> None:
    slots = {"from": "Lisbon", "to": "Budapest", "by": "Night train"}
    assert revealed_slots("ANSWER: From lisbon by night train.", slots) == {"from", "by"}
    assert revealed_slots("ANSWER: Somewhere.", slots) == frozenset()


def test_our_probe_wording_inserts_reprompt_words_after_the_tag() -> None:
    question = "Does the agent know where you go?"
    first = OUR_PROBE_WORDING.message(question, 1)
    assert first == f"ME: {question} Answer this question with yes or no and then stop."
    for attempt in range(2, 6):
        again = OUR_PROBE_WORDING.message(question, attempt)
        assert again.startswith(f"ME: {REPROMPTS[attempt - 2]} {question} ")
        assert again.endswith("Answer this question with yes or no and then stop.")
    assert len({OUR_PROBE_WORDING.message(question, attempt) for attempt in range(1, 6)}) == 5


def test_a_question_with_braces_is_sent_as_it_is() -> None:
    """The wording substitutes `{question}` once; braces in the question are not a template."""
    assert OUR_PROBE_WORDING.message("Is {x} known?", 1).startswith("ME: Is {x} known? ")


@pytest.mark.skipif(not SHARED_RESOURCES.is_dir(), reason="clembench's texts are not here")
def test_clembench_wording_keeps_the_empty_first_suffix_and_its_space() -> None:
    wording = clembench_probe_wording(SHARED_RESOURCES)
    question = "Does the travel agent know where you go?"
    instruction = "Answer this question with yes or no and then stop."
    assert wording.message(question, 1) == f"ME:  {question} {instruction}"  # two spaces
    assert wording.message(question, 2) == (
        f"ME: Please answer this question carefully. {question} {instruction}"
    )
    assert len(wording.tries) == 5
