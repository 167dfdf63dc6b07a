"""Reading both of clembench's interactions.json layouts, and comparing recorded prompts: the
pure functions, on small hand-written records."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import JsonValue

from privateshared.bench.clembench.prompt_parity import (
    answerer_calls,
    compare_prompts,
    prompt_messages,
)
from privateshared.graph.record_formats import (
    RecordFormatError,
    parse_interactions,
    record_format,
)
from privateshared.graph.records import CallRecord

SCORER_KEYS: dict[str, Any] = {
    "probes": [[{"target": "FROM", "question": "ME: Q", "gt": 0, "answer": "ASIDE: no",
                 "value": 0, "tries": 1}]],
    "realised_slots": {"from": 0},
    "Request Count": [1, 0], "Parsed Request Count": [1, 0], "Violated Request Count": [0, 0],
    "Filled Slots": [], "Aborted": 1, "Played Probe Rounds": 1,
}  # fmt: skip


def event(sender: str, to: str, kind: str, content: str, at: str, **extra: str) -> dict[str, Any]:
    return {"from": sender, "to": to, "timestamp": at,
            "action": {"type": kind, "content": content, **extra}}  # fmt: skip


CLASSIC = {
    "players": {"GM": "Game master", "Player 1": "Answerer: m", "Player 2": "Questioner: p"},
    "turns": [[
        event("GM", "Player 1", "send message", "You are ...", "t0"),
        event("GM", "GM", "info", "Begin probing", "t1"),
        event("GM", "Player 1", "probe question", "ME:  Q", "t2"),
        event("Player 1", "GM", "probe answer", "ASIDE: no", "t3"),
        event("GM", "GM", "check", "Answer is correct.", "t4"),
        event("GM", "GM", "info", "End probing", "t5"),
    ]],
    **SCORER_KEYS,
}  # fmt: skip
NEWER = {
    "meta": {"experiment_name": "travel-booking", "game_id": 0, "dialogue_pair": "m--m"},
    "players": CLASSIC["players"],
    "turns": [[
        event("GM", "Player 1 (Answerer)", "send message", "You are ...", "t0", label="pseudo"),
        event("Player 1 (Answerer)", "GM", "get message", "Ok.", "t1", label="pseudo"),
        event("GM", "Player 1 (Answerer)", "send message", "ME:  Q", "t2", label="forget"),
        event("Player 1 (Answerer)", "GM", "get message", "ASIDE: no", "t3", label="forget"),
        event("GM", "GM", "check", "Answer is correct.", "t4"),
        event("GM", "Player 2 (Questioner)", "send message", "What is next?", "t5",
              label="context"),
    ]],
    **SCORER_KEYS,
}  # fmt: skip


def test_layouts_are_told_apart() -> None:
    assert record_format(CLASSIC) == "classic"
    assert record_format(NEWER) == "newer"
    # Either sign of the newer layout is enough: the named players without the meta block.
    assert record_format({k: v for k, v in NEWER.items() if k != "meta"}) == "newer"


def test_newer_layout_reads_in_classic_names() -> None:
    interactions = parse_interactions(NEWER)
    kinds = [(e.sender, e.to, e.action.type) for e in interactions.turns[0]]
    assert kinds == [
        ("GM", "Player 1", "send message"),
        ("Player 1", "GM", "get message"),  # the pseudo answer stays what it is
        ("GM", "Player 1", "probe question"),
        ("Player 1", "GM", "probe answer"),
        ("GM", "GM", "check"),
        ("GM", "Player 2", "send message"),  # a message to the questioner is not a probe
    ]
    assert interactions.aborted is True  # written as 1 there, read as written
    assert interactions.turns[0][2].action.model_extra == {"label": "forget"}  # kept


def test_classic_layout_reads_unchanged() -> None:
    interactions = parse_interactions(CLASSIC)
    assert interactions.model_dump(mode="json", by_alias=True)["turns"] == CLASSIC["turns"]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ([1, 2], "not a JSON object"),
        ({"players": {}, "turns": []}, "no 'probes', 'realised_slots', 'Request Count'"),
        ({**CLASSIC, "turns": "none"}, "turns: Input should be a valid list (classic format)"),
        ({**NEWER, "probes": [[{"gt": 0}]]}, "probes.0.0.target: Field required (newer format)"),
    ],
    ids=["not-an-object", "missing-keys", "turns-not-a-list", "probe-without-target"],
)
def test_a_file_in_neither_layout_says_what_it_lacks(raw: JsonValue, expected: str) -> None:
    with pytest.raises(RecordFormatError) as caught:
        parse_interactions(raw)
    assert expected in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ([{"role": "user", "content": "Hi"}], [("user", "Hi")]),
        ([{"role": "user", "content": [{"type": "text", "text": "H"},
                                       {"type": "text", "text": "i"}]}],
         [("user", "Hi")]),  # Anthropic's text parts, joined
        ({"messages": [{"role": "user", "content": "Hi"}], "model": "m"}, [("user", "Hi")]),
        ({"inputs": "<|user|>\nHi\n<|assistant|>\n", "max_new_tokens": 100},
         "<|user|>\nHi\n<|assistant|>\n"),  # a chat template applied
        ({"role": "user", "content": "What is the next request?"}, None),  # one message alone
        ([{"role": "user", "content": [{"type": "image", "url": "x"}]}], None),
    ],
    ids=["openai", "text-parts", "messages-key", "template", "single-message", "image"],
)  # fmt: skip
def test_prompt_shapes(prompt: JsonValue, expected: object) -> None:
    assert prompt_messages(prompt) == expected


def call(at: str, prompt: JsonValue) -> CallRecord:
    return CallRecord(timestamp=at, manipulated_prompt_obj=prompt, raw_response_obj={})


def messages(*texts: str) -> list[dict[str, str]]:
    roles = ("user", "assistant")
    return [{"role": roles[i % 2], "content": text} for i, text in enumerate(texts)]


def test_calls_belong_to_the_answerer_by_their_timestamp() -> None:
    """The newer layout also records its programmatic questioner's calls: they are left out."""
    interactions = parse_interactions(NEWER)
    calls = [call("t3", messages("A")), call("t5", {"role": "user", "content": "What is next?"})]
    assert answerer_calls(interactions, calls) == [(0, calls[0])]


@pytest.mark.parametrize(
    ("theirs", "ours", "difference"),
    [
        (messages("P", "Ok.", "ME:  Q"), messages("P", "Ok.", "ME:  Q"), None),
        (messages("P", "Ok.", "ME:  Q"), messages("P", "Ok.", "ME: Q"),
         "requests.json entry 4 (answerer call 0): "
         "message 2: recorded user 'ME:  Q', ours user 'ME: Q'"),
        (messages("P", "Ok."), messages("P", "Ok.", "ME: Q"),
         "requests.json entry 4 (answerer call 0): recorded 2 messages, ours 3"),
        ({"inputs": "<s>P</s><s>Ok.</s><s>ME:  Q</s>"}, messages("P", "Ok.", "ME:  Q"), None),
        ({"inputs": "<s>P</s><s>ME:  Q</s><s>Ok.</s>"}, messages("P", "Ok.", "ME:  Q"),
         "message 2 (user) is not in the recorded prompt"),  # out of order
    ],
    ids=["identical", "one-space", "one-message-more", "template", "template-order"],
)  # fmt: skip
def test_first_difference_of_a_prompt(
    theirs: JsonValue, ours: JsonValue, difference: str | None
) -> None:
    result = compare_prompts([(4, call("t", theirs))], [(0, call("t", ours))])
    assert result.compared == 1
    if difference is None:
        assert result.difference is None
    else:
        assert result.difference is not None and difference in result.difference


def test_a_missing_call_is_a_difference_and_an_unknown_shape_is_counted() -> None:
    theirs = [(0, call("a", {"weird": True})), (1, call("b", messages("P")))]
    ours = [(0, call("a", messages("P"))), (1, call("b", messages("P"))), (2, call("c", []))]
    result = compare_prompts(theirs, ours)
    assert result.unreadable == 1
    assert result.difference == "recorded 2 answerer requests, ours 3"
