"""The probing rounds of a transcript page, drawn after a run over an episode's records.

Each round is folded from its probing events ("probe question", "probe answer", "parse",
"check") into one entry per probe with its tries, then completed from interactions.json's
`probes` list: our records name each probe's slot, round and truth in extra keys, clembench's
do not, so those come from that list, in the order the probes were asked. page.py
places each rendered round under the turn in which it was played.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from privateshared.bench.reporting.transcripts.html import escape_text, event_extra, event_text
from privateshared.graph.records import Event, ProbeEntry

VALID_PROBE_ANSWERS = frozenset({"yes", "no"})


@dataclass
class _Try:
    question: str
    reply: str | None = None
    parsed: str | None = None


@dataclass
class _Probe:
    listener: str = ""
    """Whose knowledge it asks about, with two listeners; "" in the classic game."""
    slot: str = ""
    question: str = ""
    tries: list[_Try] = field(default_factory=list)
    gold: str | None = None
    answer: str | None = None
    correct: bool | None = None
    """None: never asked (the episode was aborted first)."""
    checked: bool = False


def _probe_step(probes: list[_Probe], event: Event) -> None:
    """Fold one probing event into the round's probes."""
    kind, content, extra = event.action.type, event_text(event.action.content), event_extra(event)
    current = probes[-1] if probes and not probes[-1].checked else None
    if kind == "probe question":
        listener = str(extra.get("listener", ""))
        if current is None or (
            "slot" in extra and (extra["slot"], listener) != (current.slot, current.listener)
        ):
            current = _Probe(listener=listener, slot=str(extra.get("slot", "")), question=content)
            probes.append(current)
        current.tries.append(_Try(question=content))
    elif current is None or not current.tries:
        return  # a stray event between probes: nothing to attach it to
    elif kind == "probe answer":
        current.tries[-1].reply = content
    elif kind == "parse" and current.tries[-1].parsed is None:
        current.tries[-1].parsed = content
    elif kind == "check":
        _close_probe(current, content, extra)


def _close_probe(probe: _Probe, verdict: str, extra: Mapping[str, object]) -> None:
    """Record a probe's truth, final answer and verdict from its `check` event."""
    probe.checked = True
    last = probe.tries[-1].parsed
    probe.answer = last if last in VALID_PROBE_ANSWERS else None
    if "gold" in extra:  # ours: the truth and the answer are logged
        probe.gold = str(extra["gold"])
        probe.answer = str(extra["answer"]) if extra.get("answer") else None
        probe.correct = probe.answer == probe.gold
    else:  # clembench's: "Answer is correct." or "Answer is incorrect."
        probe.correct = "incorrect" not in verdict.lower()


def _complete_round(probes: list[_Probe], entries: Sequence[ProbeEntry]) -> list[_Probe]:
    """Fill slot and truth from interactions.json's `probes`; add probes never asked."""
    for probe, entry in zip(probes, entries, strict=False):
        probe.slot = probe.slot or entry.target
        probe.listener = probe.listener or _listener(entry)
        probe.gold = probe.gold or ("yes" if entry.gt else "no")
        if not probe.checked and probe.tries:  # the episode stopped before its check
            last = probe.tries[-1].parsed
            probe.answer = last if last in VALID_PROBE_ANSWERS else None
            probe.correct = probe.answer == probe.gold if probe.answer else None
    unasked = [
        _Probe(listener=_listener(entry), slot=entry.target, question=entry.question,
               gold="yes" if entry.gt else "no")
        for entry in entries[len(probes) :]
    ]  # fmt: skip
    return [*probes, *unasked]


def _listener(entry: ProbeEntry) -> str:
    listener = (entry.model_extra or {}).get("listener")
    return listener if isinstance(listener, str) else ""


def _render_probes(probes: Sequence[_Probe]) -> str:
    """The probes in the order asked; with two listeners, grouped by whom they ask about."""
    listeners = list(dict.fromkeys(probe.listener for probe in probes))
    if listeners == [""]:
        return "".join(_render_probe(probe) for probe in probes)
    groups = (
        f'<li class="listener-group"><div class="listener">Does {escape_text(listener)} '
        f'know it?</div><ol class="probes">'
        f"{''.join(_render_probe(p) for p in probes if p.listener == listener)}</ol></li>"
        for listener in listeners
    )
    return "".join(groups)


def _render_try(number: int, attempt: _Try, first_question: str) -> str:
    valid = attempt.parsed in VALID_PROBE_ANSWERS
    reprompt = ""
    if attempt.question != first_question:
        reprompt = f'<div class="reprompt">re-prompt: {escape_text(attempt.question)}</div>'
    parsed = escape_text(attempt.parsed) if valid else "invalid format"
    reply = escape_text(attempt.reply) if attempt.reply is not None else "<i>no reply recorded</i>"
    return (
        f'<li class="try {"valid" if valid else "invalid"}">{reprompt}'
        f'<span class="try-n">try {number}</span><span class="reply">{reply}</span>'
        f'<span class="parsed">&rarr; {parsed}</span></li>'
    )


def _render_probe(probe: _Probe) -> str:
    if probe.correct is None:
        state, mark = "unasked", "&ndash;"
    else:
        state, mark = ("right", "&#10003;") if probe.correct else ("wrong", "&#10007;")
    truth = {"yes": "shared", "no": "private"}.get(probe.gold or "", "unknown")
    answer = {"yes": "shared", "no": "private"}.get(probe.answer or "", "no valid answer")
    if probe.correct is None:
        answer = (
            "no verdict: the episode stopped" if probe.tries else "not asked: the episode ended"
        )
    tries = "".join(_render_try(n, t, probe.question) for n, t in enumerate(probe.tries, 1))
    return (
        f'<li class="probe {state}"><div class="probe-head">'
        f'<span class="mark" title="{state}">{mark}</span>'
        f'<span class="slot">{escape_text(probe.slot)}</span>'
        f'<span class="truth {truth}">truth: {truth}</span>'
        f'<span class="given">answer: {escape_text(answer)}</span></div>'
        f'<div class="probe-q">{escape_text(probe.question)}</div>'
        f'<ol class="tries">{tries}</ol></li>'
    )


def render_round(index: int, events: Sequence[Event], entries: Sequence[ProbeEntry]) -> str:
    """Render one probing round, folded in a <details> element."""
    probes: list[_Probe] = []
    for event in events:
        _probe_step(probes, event)
    probes = _complete_round(probes, entries)
    asked = [probe for probe in probes if probe.correct is not None]
    right = sum(1 for probe in asked if probe.correct)
    reprompts = sum(max(len(probe.tries) - 1, 0) for probe in asked)
    notes = [f"{reprompts} re-prompt{'s' * (reprompts != 1)}"] if reprompts else []
    if len(asked) < len(probes):
        notes.append(f"{len(probes) - len(asked)} not asked")
    extra = f' <span class="notes">({", ".join(notes)})</span>' if notes else ""
    quality = "perfect" if asked and right == len(asked) else "flawed"
    count = f"{right}/{len(asked)} correct" if asked else "no probe answered"
    return (
        f'<details class="round {quality}"><summary>Probing round {index}: '
        f'<span class="count">{count}</span>{extra}</summary>'
        f'<ol class="probes">{_render_probes(probes)}</ol></details>'
    )
