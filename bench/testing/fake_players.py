"""Perfect players behind the fake endpoint: an answerer, a questioner and a judge.

Each reads only what a model would read: the answerer its instructions, questions and probes;
the questioner its own conversation of function calls and their results; the judge its rubric.
None looks at the game master's ground truth, so perfect scores through the fake endpoint check
the whole path: context, transport, function calls, parsing and scoring.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from privateshared.domains.instances import (
    GameInstance,
    default_playable,
    playable_instances,
    read_instances,
)
from privateshared.domains.registry import known_domains

ReplyFunction = Callable[[list[dict[str, Any]]], "str | dict[str, Any]"]
"""Messages as the server received them -> the reply's text, or a dict with `content` and
`tool_calls` (a list of {name, arguments}; arguments a dict, or a string sent as it is)."""

# The game's protocol, spelled out here rather than imported: the fake model reads it the way a
# model does, from what the game master sends, so a wrong constant in the package shows up as a
# failing test instead of agreeing with itself.
ANSWER = "ANSWER:"
ASIDE = "ASIDE:"
PROBE = "ME:"
PRESENT = "[Present: "
CHECK = "Reply with the single word OK."
"""The check call a run makes of each model before its first episode."""


def _text(message: dict[str, Any]) -> str:
    """A message's text, also when content comes as a list of parts."""
    content = message.get("content", "")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


def answerer_for(*instances: GameInstance) -> ReplyFunction:
    """A reply function that plays the answerer of any of `instances` perfectly.

    The check call before a run gets `OK`. The instance is recognised by its initial prompt
    (the first message). A question
    `TAG: <request>` gets `ANSWER: <value>.`; a probe (a last message starting with `ME:`) gets
    `ASIDE: yes` if the probed slot was asked for earlier in the context or its value occurs in
    an earlier answer, else `ASIDE: no`. It never looks at the game master's ground truth, so a
    Main Score of 100 checks the whole path: context, transport, parsing and scoring.
    """
    by_prompt: dict[str, list[GameInstance]] = {}
    for instance in instances:
        by_prompt.setdefault(instance.initial_prompt, []).append(instance)

    def reply(messages: list[dict[str, Any]]) -> str:
        if messages and _text(messages[-1]) == CHECK:
            return "OK"
        candidates = by_prompt.get(_text(messages[0]), []) if messages else []
        if not candidates:
            raise LookupError("the first message is not the initial prompt of a known instance")
        # Instances may share their values, hence their prompt: the one whose texts fit answers.
        for instance in candidates[:-1]:
            with contextlib.suppress(LookupError):
                return reply_as(instance, messages)
        return reply_as(candidates[-1], messages)

    return reply


def reply_as(instance: GameInstance, messages: list[dict[str, Any]]) -> str:
    """The perfect answerer's reply in `instance`, or LookupError if its texts do not fit."""
    *earlier, last = [(message.get("role"), _text(message)) for message in messages]
    if last[0] != "user":
        raise LookupError(f"the last message comes from {last[0]!r}, not the user")
    if last[1].startswith(PROBE):
        # Round k follows the k-th answer; the first assistant message is the pseudo "Ok.".
        round_index = sum(role == "assistant" for role, _ in earlier) - 1
        listener, slot = probed(instance, round_index, last[1])
        known = _is_known(instance, slot, earlier, listener)
        return f"{ASIDE} {'yes' if known else 'no'}"
    # With two listeners a question comes after lines saying who is present: it is the last.
    return f"{ANSWER} {instance.slots[asked_slot(instance, last[1].splitlines()[-1])]}."


def probed(instance: GameInstance, round_index: int, probe: str) -> tuple[str, str]:
    """The listener and slot whose probe text of this round occurs in the probe message."""
    if round_index < 0:
        raise LookupError(f"no probing round {round_index} in this instance")
    # A dialogue longer than n questions reuses the last round's texts, as the game master does.
    k = min(round_index, len(instance.probes) - 1)
    texts = [(instance.tag, instance.probes[k])]
    audience = instance.audience
    if audience is not None and k > audience.after_turn:
        texts.append((audience.listener, audience.probes[k - audience.after_turn - 1]))
    found = [(tag, slot) for tag, about in texts for slot, text in about.items() if text in probe]
    if len(found) != 1:
        raise LookupError(f"probe matches {found} of round {k}: {probe!r}")
    return found[0]


def probed_slot(instance: GameInstance, round_index: int, probe: str) -> str:
    """The slot whose probe text of this round occurs in the probe message."""
    return probed(instance, round_index, probe)[1]


def _tags(instance: GameInstance) -> list[str]:
    return [instance.tag] + ([instance.audience.listener] if instance.audience else [])


def asked_slot(instance: GameInstance, question: str) -> str:
    """The slot a question asks for: the instance's own request for it, or, from another
    questioner, a question that names the slot (the longest name that fits)."""
    for slot, request in instance.requests.items():
        if any(question == f"{tag}: {request}" for tag in _tags(instance)):
            return slot
    # Whole words only: slot `a` of letter-number is not named by "about".
    named = [
        slot for slot in instance.slots
        if re.search(rf"\b{re.escape(slot)}\b", question, flags=re.IGNORECASE)
    ]  # fmt: skip
    if named:
        return max(named, key=len)
    raise LookupError(f"not a question of this instance: {question!r}")


def _is_known(
    instance: GameInstance, slot: str, earlier: list[tuple[Any, str]], listener: str
) -> bool:
    """Whether `listener` heard the instance's own question for `slot`, or its value given, in
    the earlier messages: while present (the questioner alone is, until a `[Present: ...]` line
    says otherwise), or in a note `<TAG> to <listener>: ...`."""
    questions = {f"{tag}: {instance.requests[slot]}" for tag in _tags(instance)}
    value = instance.slots[slot].lower()
    present = [instance.tag]
    for role, text in earlier:
        if role == "user":
            lines = text.splitlines() or [""]
            for line in lines:
                if line.startswith(PRESENT):
                    present = line.removeprefix(PRESENT).rstrip("]").split(", ")
                elif line.startswith(f"{instance.tag} to {listener}:") and value in line.lower():
                    return True
            if listener in present and lines[-1] in questions:
                return True
        elif role == "assistant" and listener in present and value in text.lower():
            return True
    return False


def default_answerer(
    instances: Path | None = None, resources: Path | None = None, domains: Sequence[Path] = ()
) -> ReplyFunction:
    """A perfect answerer for every instance of an instances file (default: every instance a
    run can name without one: the shipped ones, classic and two-listener, and the default ones
    of every other known domain; clembench's with `resources`, its texts). `domains` adds domain
    folders to the known ones (domains/registry.py)."""
    known = known_domains(domains)
    playable = (
        playable_instances(read_instances(instances), known, resources)
        if instances else default_playable(known)
    )  # fmt: skip
    return answerer_for(*(instance for _, _, instances in playable for instance in instances))


JUDGE_RATING = {"score": 4, "reason": "A clear, relevant question."}
"""What the fake judge always replies."""


def perfect_questioner(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The questioner's next move, read off its own conversation: record the answer to its last
    question, then ask about the next slot its instructions list, or finish when none is left."""
    slots = [
        line[2:].split(":", 1)[0]
        for line in _text(messages[0]).splitlines()
        if line.startswith("- ")
    ]
    results = {m.get("tool_call_id"): _text(m) for m in messages if m.get("role") == "tool"}
    asked: list[tuple[str, str]] = []
    recorded: set[str] = set()
    for message in messages:
        for call in message.get("tool_calls") or []:
            arguments = json.loads(call["function"]["arguments"] or "{}")
            if call["function"]["name"] == "ask":
                asked.append((arguments["slot"], call["id"]))
            elif call["function"]["name"] == "record":
                recorded.add(arguments["slot"])
    calls: list[dict[str, Any]] = []
    if asked and asked[-1][0] not in recorded:
        slot, call_id = asked[-1]
        answer = results.get(call_id, "").removeprefix("Answer:").strip().rstrip(".")
        calls.append({"name": "record", "arguments": {"slot": slot, "value": answer}})
    last = _text(messages[-1]) if messages[-1].get("role") == "user" else ""
    if "hand the conversation over" in last:  # leaving: it records, and asks nothing more
        return {"content": "", "tool_calls": calls}
    # Taking over: the note, "SLOT: value; SLOT: value.", gives what need not be asked again.
    noted = {}
    if not asked and len(messages) > 1 and "saying to you:" in _text(messages[1]):
        for slot in slots:
            found = re.search(rf"\b{re.escape(slot.upper())}: ([^;\"]+?)[;.]", _text(messages[1]))
            if found:
                noted[slot] = found.group(1)
                calls.append({"name": "record", "arguments": {"slot": slot, "value": noted[slot]}})
    asked_or_noted = {slot for slot, _ in asked} | recorded | set(noted)
    remaining = [slot for slot in slots if slot not in asked_or_noted]
    if remaining:
        question = f"Could you tell me about your {remaining[0]}?"
        calls.append({"name": "ask", "arguments": {"slot": remaining[0], "question": question}})
    else:
        calls.append({"name": "finish", "arguments": {}})
    return {"content": "", "tool_calls": calls}


def default_players(
    instances: Path | None = None, resources: Path | None = None, domains: Sequence[Path] = ()
) -> ReplyFunction:
    """One endpoint for every role over the default instances: a request whose first message is
    a system prompt goes to the questioner or the judge, any other to the answerer."""
    answerer = default_answerer(instances, resources, domains)

    def reply(messages: list[dict[str, Any]]) -> str | dict[str, Any]:
        first = messages[0] if messages else {}
        if first.get("role") != "system":
            return answerer(messages)
        if _text(first).startswith("You judge"):
            return json.dumps(JUDGE_RATING)
        return perfect_questioner(messages)

    return reply
