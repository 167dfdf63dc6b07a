"""The questioner's moves on a transcript page, drawn after a run over an episode's records.

Our questioner acts only through function calls (graph/questioning.py): each of its replies is
logged as a `get message` from the questioner (its text, often empty), followed by one `tool call`
event per call, saying whether the call was valid, what the questioner was told and what the game
master checked (the recorder's docstring lists the keys). A reply is drawn as one questioner
bubble: the question it asked, its text if it wrote any, and its calls, one compact line each
(`record(from = "Lisbon")  ✓ true value`). The belief state it recorded is read back for the
header. clembench's records have no tool calls: their questioner's message is the question.
page.py places the bubbles in the dialogue and the belief in the header.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from privateshared.agents.views import REFUSED
from privateshared.bench.reporting.transcripts.html import escape_text, event_extra, event_text
from privateshared.graph.records import QUESTIONER, Event

TOOL_CALL = "tool call"


@dataclass(frozen=True)
class Call:
    """One `tool call` event, read back."""

    name: str
    arguments: Mapping[str, object] | None
    """None when the model's arguments could not be read as an object."""
    valid: bool
    result: str
    """What the questioner was told."""
    checks: Mapping[str, object]
    """What the game master checked and did not tell (`intermediate_results`)."""

    def text(self, key: str) -> str | None:
        """A string argument, stripped as the game master strips it; None if absent."""
        value = self.arguments.get(key) if self.arguments is not None else None
        return value.strip() if isinstance(value, str) else None


def read_call(event: Event) -> Call:
    """Read one `tool call` event."""
    extra = event_extra(event)
    arguments, checks = extra.get("arguments"), extra.get("intermediate_results")
    return Call(
        name=str(extra.get("name", "")),
        arguments=arguments if isinstance(arguments, Mapping) else None,
        valid=extra.get("valid") is True,
        result=str(extra.get("result", "")),
        checks=checks if isinstance(checks, Mapping) else {},
    )


def is_step(event: Event) -> bool:
    """Whether an event is a reply of the questioner."""
    return event.action.type == "get message" and event.sender == QUESTIONER


def step_turn(event: Event) -> int | None:
    """The turn a questioner's reply prepares (ours; None in clembench's records)."""
    turn = event_extra(event).get("turn")
    return turn if isinstance(turn, int) else None


def calls_in(events: Sequence[Event]) -> list[Call]:
    """Every function call among `events`, in order."""
    return [read_call(event) for event in events if event.action.type == TOOL_CALL]


def asked_slot(calls: Sequence[Call]) -> str | None:
    """The slot of the valid `ask` among `calls`, if any."""
    return next((c.text("slot") for c in calls if c.valid and c.name == "ask"), None)


def makes_move(calls: Sequence[Call]) -> bool:
    """Whether a reply asks a valid question or validly finishes (as the game master rules)."""
    return any(call.valid and call.name in ("ask", "finish") for call in calls)


# --- one reply ----------------------------------------------------------------------------


def _value(value: object) -> str:
    """An argument as a call line shows it: strings in double quotes, anything else as JSON."""
    return json.dumps(value, ensure_ascii=False)


def _signature(call: Call) -> str:
    """`record(from = "Lisbon")`, `ask(to, "Where to?")`, `finish()`; other calls in full."""
    arguments, slot = call.arguments, call.text("slot")
    if arguments is None:
        return f"{call.name}(unreadable arguments)"
    if call.name == "record" and slot and set(arguments) == {"slot", "value"}:
        return f"record({slot} = {_value(arguments['value'])})"
    if call.name == "ask" and slot and set(arguments) == {"slot", "question"}:
        # A valid question is the bubble's text, right above the calls: not repeated here.
        return f"ask({slot})" if call.valid else f"ask({slot}, {_value(arguments['question'])})"
    return f"{call.name}({', '.join(f'{key} = {_value(v)}' for key, v in arguments.items())})"


def _tag(css: str, text: str) -> str:
    return f'<span class="{css}">{escape_text(text)}</span>'


def _verdicts(call: Call) -> list[str]:
    """What the game master found about one call, as tags after its line."""
    checks = call.checks
    if not call.valid:
        why = checks.get("error") or call.result.removeprefix(REFUSED)
        tags = [_tag("verdict wrong", f"\u2717 {why}")]
    elif call.name == "record":
        true = checks.get("true_value")
        tags = [_tag("verdict right", "\u2713 true value")] if true is True else []
        tags += [_tag("verdict wrong", "\u2717 not the true value")] if true is False else []
        if checks.get("revealed") is False:
            tags.append(_tag("check", "not said in the dialogue yet"))
    elif call.name == "ask" and checks.get("asked_before") is True:
        tags = [_tag("check", "asked before")]
    elif call.name == "finish" and isinstance(missing := checks.get("unrecorded"), list):
        unrecorded = ", ".join(str(slot) for slot in missing)
        tags = [_tag("check", f"unrecorded: {unrecorded}")] if unrecorded else []
    else:
        tags = []
    if "violation" in checks:
        tags.append(_tag("violation", f"\u26a0 {checks['violation']}"))
    return tags


def _render_call(call: Call) -> str:
    css = "call valid" if call.valid else "call invalid"
    css += " violation" if "violation" in call.checks else ""
    return (
        f'<li class="{css}"><code class="sig">{escape_text(_signature(call))}</code>'
        f"{''.join(_verdicts(call))}</li>"
    )


def render_step(
    block: Sequence[Event], questioner: str, sent: str | None
) -> tuple[str, str | None]:
    """One questioner reply as a bubble; with the question it asked, if any.

    Args:
        block: the questioner's `get message` and the `tool call` events after it.
        questioner: the questioner's name.
        sent: the question as the game master sent it on, after its tag; the bubble's text when
            the reply's valid `ask` holds no readable question.
    """
    message, calls = block[0], calls_in(block[1:])
    text = event_text(message.action.content)
    if not calls and step_turn(message) is None:  # clembench's: the message is the question
        question_only = f'<div class="say question">{escape_text(text)}</div>'
        return _say_bubble(questioner, "", question_only), text
    attempt = event_extra(message).get("attempt")
    who = f" · try {attempt}" if isinstance(attempt, int) and attempt > 1 else ""
    if event_extra(message).get("farewell"):  # its last turn before a handover: records only
        who = " · hands over"
        lines = "".join(_render_call(call) for call in calls) or (
            '<li class="call"><span class="verdict">nothing recorded</span></li>'
        )
        return _say_bubble(questioner, who, f'<ul class="calls">{lines}</ul>'), None
    asks = [call for call in calls if call.valid and call.name == "ask"]
    question = (asks[0].text("question") or sent) if asks else None
    parts = [f'<div class="say question">{escape_text(question)}</div>'] if question else []
    if text.strip():  # the text besides the calls; it goes to no one
        parts.append(f'<div class="say remark">{escape_text(text)}</div>')
    lines = "".join(_render_call(call) for call in calls) or (
        '<li class="call invalid"><span class="verdict wrong">\u2717 no function call</span></li>'
    )
    parts.append(f'<ul class="calls">{lines}</ul>')
    if not makes_move(calls):
        parts.append('<div class="note">no valid move: neither a question nor finish()</div>')
    failed = "" if makes_move(calls) else " failed"
    return _say_bubble(questioner, who, "".join(parts), failed), question


def _say_bubble(questioner: str, who: str, body: str, css: str = "") -> str:
    return (
        f'<div class="row q"><div class="bubble q{css}">'
        f'<div class="who">Questioner · {escape_text(questioner)}{escape_text(who)}</div>'
        f"{body}</div></div>"
    )


# --- the belief state ---------------------------------------------------------------------


def belief(events: Sequence[Event]) -> dict[str, tuple[str, bool | None]] | None:
    """Slot (lower-case) -> the value the questioner recorded last, and whether the game master
    found it true; None when the records hold no function calls (clembench's)."""
    calls = calls_in(events)
    if not calls:
        return None
    recorded: dict[str, tuple[str, bool | None]] = {}
    for call in calls:
        slot, value = call.text("slot"), call.text("value")
        if call.valid and call.name == "record" and slot and value is not None:
            true = call.checks.get("true_value")
            recorded[slot.lower()] = (value, true if isinstance(true, bool) else None)
    return recorded
