"""A perfect answerer for the fake endpoint: plays any known instance from the messages alone.

It reads what a model would read (the initial prompt, the questions, the probes) and never the
game master's ground truth, so a Main Score of 100 through the fake endpoint checks the whole
path: context, transport, parsing and scoring.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from privateshared.domains.instances import (
    GameInstance,
    default_instances_path,
    playable_instances,
    read_instances,
)
from privateshared.domains.loader import load_domains

ReplyFunction = Callable[[list[dict[str, Any]]], "str | dict[str, Any]"]
"""Messages as the server received them -> the reply's text, or a dict with `content` and
`tool_calls` (a list of {name, arguments}; arguments a dict, or a string sent as it is)."""

# The game's protocol, spelled out here rather than imported: the fake model reads it the way a
# model does, from what the game master sends, so a wrong constant in the package shows up as a
# failing test instead of agreeing with itself.
ANSWER = "ANSWER:"
ASIDE = "ASIDE:"
PROBE = "ME:"


def _text(message: dict[str, Any]) -> str:
    """A message's text, also when content comes as a list of parts."""
    content = message.get("content", "")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


def answerer_for(*instances: GameInstance) -> ReplyFunction:
    """A reply function that plays the answerer of any of `instances` perfectly.

    The instance is recognised by its initial prompt (the first message). A question
    `TAG: <request>` gets `ANSWER: <value>.`; a probe (a last message starting with `ME:`) gets
    `ASIDE: yes` if the probed slot was asked for earlier in the context or its value occurs in
    an earlier answer, else `ASIDE: no`. It never looks at the game master's ground truth, so a
    Main Score of 100 checks the whole path: context, transport, parsing and scoring.
    """
    by_prompt = {instance.initial_prompt: instance for instance in instances}

    def reply(messages: list[dict[str, Any]]) -> str:
        instance = by_prompt.get(_text(messages[0])) if messages else None
        if instance is None:
            raise LookupError("the first message is not the initial prompt of a known instance")
        *earlier, last = [(message.get("role"), _text(message)) for message in messages]
        if last[0] != "user":
            raise LookupError(f"the last message comes from {last[0]!r}, not the user")
        if last[1].startswith(PROBE):
            # Round k follows the k-th answer; the first assistant message is the pseudo "Ok.".
            round_index = sum(role == "assistant" for role, _ in earlier) - 1
            slot = _probed_slot(instance, round_index, last[1])
            known = _is_known(instance, slot, earlier)
            return f"{ASIDE} {'yes' if known else 'no'}"
        return f"{ANSWER} {instance.slots[_asked_slot(instance, last[1])]}."

    return reply


def _probed_slot(instance: GameInstance, round_index: int, probe: str) -> str:
    """The slot whose probe text of this round occurs in the probe message."""
    if not 0 <= round_index < len(instance.probes):
        raise LookupError(f"no probing round {round_index} in this instance")
    slots = [slot for slot, text in instance.probes[round_index].items() if text in probe]
    if len(slots) != 1:
        raise LookupError(f"probe matches slots {slots} of round {round_index}: {probe!r}")
    return slots[0]


def _asked_slot(instance: GameInstance, question: str) -> str:
    """The slot whose request is the question, as `TAG: <request>`."""
    for slot, request in instance.requests.items():
        if question == f"{instance.tag}: {request}":
            return slot
    raise LookupError(f"not a question of this instance: {question!r}")


def _is_known(instance: GameInstance, slot: str, earlier: list[tuple[Any, str]]) -> bool:
    """Whether the questioner asked for `slot`, or heard its value, in the earlier messages."""
    question = f"{instance.tag}: {instance.requests[slot]}"
    value = instance.slots[slot].lower()
    return any(
        (role == "user" and text == question) or (role == "assistant" and value in text.lower())
        for role, text in earlier
    )


def default_answerer() -> ReplyFunction:
    """A perfect answerer for every instance of the default instances file."""
    file = read_instances(default_instances_path())
    playable = playable_instances(file, load_domains())
    return answerer_for(*(instance for _, _, instances in playable for instance in instances))
