"""Prompt parity: are the messages our game master builds for the answerer the very bytes a
recorded clembench episode sent?

requests.json keeps every model call of an episode with the prompt as the backend took it, and
backends take prompts in different shapes: OpenAI-style message lists (content a string, or a
list of text parts as Anthropic's API has it), or one string with the model's chat template
applied (Hugging Face's `inputs`). Calls are matched to the answerer by their timestamp, which
is the timestamp of the answerer's event they produced; so a newer-layout file's calls of the
programmatic questioner are left aside, as are a model questioner's and a judge's in ours.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import JsonValue

from privateshared.graph.records import ANSWERER, CallRecord, Interactions

Message = tuple[str, str]
"""(role, text) of one chat message."""

SHOWN = 160
"""Characters of a differing text shown around the first difference."""


@dataclass(frozen=True)
class PromptComparison:
    """How the answerer's prompts of a replay compare with the recorded ones."""

    compared: int
    """Answerer calls compared."""
    difference: str | None
    """The first difference, one line; None when every message is identical."""
    unreadable: int = 0
    """Recorded prompts in a shape we cannot read, left out of the comparison."""


def answerer_calls(
    interactions: Interactions, calls: Sequence[CallRecord]
) -> list[tuple[int, CallRecord]]:
    """The calls that produced the answerer's events, in the order they were made, each with
    its index in requests.json."""
    stamps = {event.timestamp for turn in interactions.turns for event in turn
              if event.sender == ANSWERER}  # fmt: skip
    return [(index, call) for index, call in enumerate(calls) if call.timestamp in stamps]


def _text(content: JsonValue) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # text parts, as Anthropic's API takes them
        parts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        if len(parts) == len(content) and all(isinstance(part, str) for part in parts):
            return "".join(str(part) for part in parts)
    return None


def prompt_messages(prompt: JsonValue) -> list[Message] | str | None:
    """A recorded prompt as messages; as one string when a chat template was applied to it;
    None in a shape we do not read."""
    if isinstance(prompt, dict):
        if isinstance(prompt.get("inputs"), str):
            return str(prompt["inputs"])
        prompt = prompt.get("messages")
    if not isinstance(prompt, list):
        return None
    messages = []
    for message in prompt:
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            return None
        text = _text(message.get("content"))
        if text is None:
            return None
        messages.append((str(message["role"]), text))
    return messages


def _excerpt(text: str, at: int) -> str:
    """`text` around position `at`, quoted so that whitespace shows."""
    start = max(0, at - SHOWN // 2)
    shown = text[start : start + SHOWN]
    return ("…" if start else "") + repr(shown) + ("…" if start + SHOWN < len(text) else "")


def _first_mismatch(ours: str, theirs: str) -> int:
    return next((i for i, (a, b) in enumerate(zip(ours, theirs, strict=False)) if a != b),
                min(len(ours), len(theirs)))  # fmt: skip


def _compare_messages(ours: list[Message], theirs: list[Message]) -> str | None:
    for number, (mine, recorded) in enumerate(zip(ours, theirs, strict=False)):
        if mine != recorded:
            at = _first_mismatch(mine[1], recorded[1])
            return (
                f"message {number}: recorded {recorded[0]} {_excerpt(recorded[1], at)}, "
                f"ours {mine[0]} {_excerpt(mine[1], at)}"
            )
    if len(ours) != len(theirs):
        return f"recorded {len(theirs)} messages, ours {len(ours)}"
    return None


def _compare_template(ours: list[Message], templated: str) -> str | None:
    """Our messages must occur in the templated prompt in order, each exactly."""
    position = 0
    for number, (role, text) in enumerate(ours):
        found = templated.find(text, position)
        if found < 0:  # show where the longest prefix of ours that is there stops matching
            matched, where = 0, position
            while matched < len(text):
                at = templated.find(text[: matched + 1], position)
                if at < 0:
                    break
                matched, where = matched + 1, at
            return (
                f"message {number} ({role}) is not in the recorded prompt: recorded "
                f"{_excerpt(templated, where + matched)}, ours {_excerpt(text, matched)}"
            )
        position = found + len(text)
    return None


def compare_prompts(
    recorded: Sequence[tuple[int, CallRecord]],
    ours: Sequence[tuple[int, CallRecord]],
    source: str = "requests.json",
) -> PromptComparison:
    """Compare the answerer's calls one by one and report the first difference, naming the
    call by its index in the recorded file, `source`."""
    unreadable = 0
    for compared, ((index, theirs), (_, mine)) in enumerate(zip(recorded, ours, strict=False)):
        our_messages = prompt_messages(mine.manipulated_prompt_obj)
        their_messages = prompt_messages(theirs.manipulated_prompt_obj)
        assert isinstance(our_messages, list)  # we record OpenAI-style message lists
        if their_messages is None:
            unreadable += 1
            continue
        if isinstance(their_messages, str):
            difference = _compare_template(our_messages, their_messages)
        else:
            difference = _compare_messages(our_messages, their_messages)
        if difference is not None:
            where = f"{source} entry {index} (answerer call {compared})"
            return PromptComparison(compared + 1, f"{where}: {difference}", unreadable)
    if len(recorded) != len(ours):
        counts = f"recorded {len(recorded)} answerer requests, ours {len(ours)}"
        return PromptComparison(min(len(recorded), len(ours)), counts, unreadable)
    return PromptComparison(len(ours), None, unreadable)
