"""One episode's transcript page, drawn after a run over that episode's records.

A transcript is drawn from an episode's records after the game (interactions.json, scores.json
or error.json, instance.json), ours or clembench's: a header with the scores (or why there are
none), the answerer's private values and what the questioner recorded of them, then the dialogue
as chat bubbles, the questioner's function calls in its bubbles (calls.py draws
them), each turn's probing round folded under it (probes.py draws the rounds).
index.py reads the episode folders and writes the pages; this module only turns records
into HTML.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Literal

from pydantic import JsonValue

from privateshared.bench.reporting.transcripts.calls import (
    TOOL_CALL,
    asked_slot,
    belief,
    calls_in,
    is_step,
    render_step,
    step_turn,
)
from privateshared.bench.reporting.transcripts.html import (
    CSS,
    escape_text,
    event_extra,
    event_text,
    format_score,
)
from privateshared.bench.reporting.transcripts.probes import render_round
from privateshared.graph.perspective import (
    CLASSIC_MAIN_SCORE,
    PERSPECTIVE_ACCURACY,
    PERSPECTIVE_KAPPA,
    TRANSFER_COMPLETENESS,
    listener_of,
)
from privateshared.graph.questioning import is_true_value
from privateshared.graph.records import (
    ABORTED,
    ACCURACY,
    ANSWERER,
    GM,
    KAPPA,
    MAIN_SCORE,
    QUESTIONER,
    SLOT_FILLING_ACCURACY,
    CallFailure,
    EpisodeScores,
    Event,
    Interactions,
)

HEADER_SCORES = (MAIN_SCORE, CLASSIC_MAIN_SCORE, ACCURACY, KAPPA, SLOT_FILLING_ACCURACY, ABORTED,
                 PERSPECTIVE_KAPPA, PERSPECTIVE_ACCURACY, TRANSFER_COMPLETENESS)  # fmt: skip
"""Those an episode has: a two-listener one's Main Score is its own, the classic one beside."""
AUDIENCE_EVENTS = {"arrival": "Arrives:", "departure": "Leaves:", "note": "Note, heard by all:"}
PRESENT = "[Present: "
PROBE_EVENTS = frozenset({"probe question", "probe answer", "parse", "metadata", "check"})
# clembench logs an anticipated value as plain text: "Value for BACHELOR anticipated; ...".
CLEMBENCH_EARLY = re.compile(r"Value for (.+?) anticipated", re.IGNORECASE)

Status = Literal["played", "aborted", "errored", "unscored"]


def _role_name(players: Mapping[str, str], player: str) -> str:
    """`Answerer: mock` -> `mock`."""
    described = players.get(player, player)
    return described.split(": ", 1)[1] if ": " in described else described


def episode_status(scores: EpisodeScores | None, error: CallFailure | None) -> Status:
    """Classify an episode as the index shows it."""
    if error is not None:
        return "errored"
    if scores is None:
        return "unscored"
    return "aborted" if scores.episode_scores.get(ABORTED, 0) else "played"


# --- the dialogue -------------------------------------------------------------------------


def _bubble(side: str, who: str, kind: str, text: str, note: str = "") -> str:
    return (
        f'<div class="row {side}"><div class="bubble {side}">'
        f'<div class="who">{escape_text(who)}</div>'
        f'<div class="say {kind}">{escape_text(text)}</div>{note}</div></div>'
    )


def _banner(kind: str, title: str, text: str) -> str:
    return (
        f'<div class="banner {kind}"><strong>{escape_text(title)}</strong> '
        f"{escape_text(text)}</div>"
    )


def _metadata_item(event: Event, answerer: str) -> str:
    extra, content = event_extra(event), event_text(event.action.content)
    if "pseudo_answer" in extra:
        note = '<div class="note">added by the game master</div>'
        return _bubble("a", f"Answerer · {answerer}", "pseudo", str(extra["pseudo_answer"]), note)
    if isinstance(revealed := extra.get("revealed"), Mapping):
        given = ", ".join(f"{slot} = {value}" for slot, value in revealed.items())
        note = f"in the answer: {escape_text(given)}"
        return f'<div class="row a"><div class="fill revealed">{note}</div></div>'
    if "shared_early" in extra or CLEMBENCH_EARLY.search(content):
        return _banner("early", "Value given early:", content)
    if content.startswith("Slot filled:"):
        filled = content.removeprefix("Slot filled:").strip().lower() == "true"
        slot = f" ({escape_text(extra['slot'])})" if "slot" in extra else ""
        state = ("filled", "&#10003; value given") if filled else ("unfilled", "&#10007; no value")
        return f'<div class="row a"><div class="fill {state[0]}">{state[1]}{slot}</div></div>'
    return f'<div class="gm-note">{escape_text(content)}</div>'


def _dialogue_item(event: Event, players: Mapping[str, str], question: str | None) -> str:
    """The HTML for one dialogue event; "" for the game master's bookkeeping.

    `question` is the turn's question so far: the answerer's message before it is the
    instructions, and after it the question as sent, shown only if it says more.
    """
    kind, content = event.action.type, event_text(event.action.content)
    route = (event.sender, event.to)
    if kind == "get message" and event.sender == ANSWERER:
        answerer = f"Answerer · {_role_name(players, ANSWERER)}"
        if event_extra(event).get("label") == "pseudo":  # clembench's newer layout logs `Ok.`
            note = '<div class="note">added by the game master</div>'
            return _bubble("a", answerer, "pseudo", content, note)
        return _bubble("a", answerer, "answer", content)
    if kind == "send message" and route == (GM, ANSWERER):
        if question is None:
            return _bubble("gm", "Game master → answerer · instructions", "instructions", content)
        if content == question or content.endswith(f": {question}"):
            return ""  # "TAG: question", as the instructions announce
        return f'<div class="row q"><div class="relay">sent as: {escape_text(content)}</div></div>'
    if kind == "metadata":
        return _metadata_item(event, _role_name(players, ANSWERER))
    if kind in AUDIENCE_EVENTS:  # two listeners: who arrives, who leaves, the note
        return _banner("audience", AUDIENCE_EVENTS[kind], content)
    if kind == "invalid format":
        return _banner("abort", "Aborted:", content.removeprefix("Abort: "))
    if kind == "error":
        return _banner("error", "Call failed:", content)
    if kind == "end":
        return f'<div class="end">{escape_text(content)}</div>'
    if kind in {"parse", "send message"}:
        return ""  # the parsed answer, and what the questioner is told: shown by the bubbles
    return f'<div class="gm-note">{escape_text(kind)}: {escape_text(content)}</div>'


def _blocks(events: Sequence[Event]) -> Iterator[tuple[str, list[Event]]]:
    """Split a turn into dialogue events, questioner replies with their calls ("step"), and
    probing rounds ("Begin probing" ... "End probing", or a run of probe events)."""
    index = 0
    while index < len(events):
        event = events[index]
        if is_step(event):
            end = index + 1
            while end < len(events) and events[end].action.type == TOOL_CALL:
                end += 1
            yield "step", list(events[index:end])
            index = end
        elif (event.action.type, event.action.content) == ("info", "Begin probing"):
            end = index + 1
            while end < len(events) and events[end].action.type in PROBE_EVENTS:
                end += 1
            closes = end < len(events) and events[end].action.content == "End probing"
            yield "round", list(events[index + 1 : end])
            index = end + closes
        elif event.action.type == "probe question":  # clembench's newer layout: no info events
            end = index + 1
            while end < len(events) and events[end].action.type in PROBE_EVENTS:
                end += 1
            yield "round", list(events[index:end])
            index = end
        else:
            yield "event", [event]
            index += 1


def _render_turn(
    number: int, events: Sequence[Event], interactions: Interactions, rounds: Iterator[int]
) -> str:
    """One turn: its dialogue events in order, its probing round folded where it was played."""
    parts: list[str] = []
    question: str | None = None
    questioner = _role_name(interactions.players, QUESTIONER)
    sent, asked_for = _sent_question(events), asked_slot(calls_in(events))
    for kind, block in _blocks(events):
        if kind == "round":
            index = next(rounds)  # the k-th probing round of the episode is `probes[k]`
            entries = interactions.probes[index] if index < len(interactions.probes) else []
            parts.append(render_round(index, block, entries))
        elif kind == "step":
            step, asked = render_step(block, questioner, sent)
            question = asked or question
            parts.append(step)
        else:
            revealed = event_extra(block[0]).get("revealed")
            if isinstance(revealed, Mapping) and set(revealed) == {asked_for}:
                continue  # only the value asked for: the "value given" line says it
            parts.append(_dialogue_item(block[0], interactions.players, question))
    present = _presence(events)
    if present:
        present = f' <span class="present">· present: {escape_text(present)}</span>'
    return (
        f'<section class="turn"><h2>{escape_text(_turn_title(number, events))}{present}</h2>'
        f"{''.join(parts)}</section>"
    )


def _sent_question(events: Sequence[Event]) -> str | None:
    """The turn's question as the game master sent it to the answerer, without its tag."""
    sent = [
        event_text(e.action.content) for e in events
        if e.action.type == "send message" and (e.sender, e.to) == (GM, ANSWERER)
    ]  # fmt: skip
    return sent[0].split(": ", 1)[-1] if sent else None


def _presence(events: Sequence[Event]) -> str:
    """Who heard the turn, from the `[Present: ...]` line of its message (two listeners)."""
    for event in events:
        if event.action.type == "send message" and (event.sender, event.to) == (GM, ANSWERER):
            for line in event_text(event.action.content).splitlines():
                if line.startswith(PRESENT):
                    return line.removeprefix(PRESENT).rstrip("]")
    return ""


def _turn_title(number: int, events: Sequence[Event]) -> str:
    """ "Turn 2 · asks for BY" where our records name the slot asked for."""
    if number == 0:
        return "Turn 0 · instructions"
    calls = calls_in(events)
    slot = asked_slot(calls) or next(  # records older than the function calls: from metadata
        (
            str(event_extra(e)["slot"])
            for e in events
            if e.action.type == "metadata" and "slot" in event_extra(e)
        ),
        None,
    )
    if slot:
        return f"Turn {number} · asks for {slot.upper()}"
    if any(call.valid and call.name == "finish" for call in calls):
        return f"Turn {number} · finishes"
    tried = any(is_step(event) and step_turn(event) is not None for event in events)  # ours
    return f"Turn {number} · no valid question" if tried else f"Turn {number}"


def _sections(turns: Sequence[Sequence[Event]]) -> Iterator[tuple[int, Sequence[Event]]]:
    """Each turn's events, numbered. The questioner's replies of a turn that brought no
    question (its last, finishing move, or the failed tries of a questioner out of tries) are
    logged after the last turn's probing round; they get a section of their own."""
    for number, events in enumerate(turns):
        cut = next(
            (i for i, e in enumerate(events) if is_step(e) and (step_turn(e) or 0) > number),
            len(events),
        )
        yield number, events[:cut]
        if cut < len(events):
            yield step_turn(events[cut]) or number + 1, events[cut:]


# --- the header ---------------------------------------------------------------------------


def _early_slots(interactions: Interactions) -> set[str]:
    """Slots (upper-case) whose value an answer gave before it was asked."""
    early: set[str] = set()
    for event in (event for turn in interactions.turns for event in turn):
        if event.action.type != "metadata":
            continue
        if "shared_early" in event_extra(event):
            early.add(str(event_extra(event)["shared_early"]).upper())
        elif match := CLEMBENCH_EARLY.search(event_text(event.action.content)):
            early.add(match.group(1).upper())
    return early


def _shared_from(interactions: Interactions) -> dict[str, dict[str, int]]:
    """Slot (upper-case) -> listener ("" in the classic game) -> the first probing round in
    which the listener knew it."""
    shared: dict[str, dict[str, int]] = {}
    for index, entries in enumerate(interactions.probes):
        for entry in entries:
            if entry.gt:
                known = shared.setdefault(entry.target.upper(), {})
                known.setdefault(listener_of(entry) or "", index)
    return shared


def _when_shared(since: Mapping[str, int]) -> str:
    if not since:
        return "private in every probing round"
    if list(since) == [""]:
        return f"shared from round {since['']}"
    return "; ".join(f"{listener} knows from round {k}" for listener, k in since.items())


def _belief_cell(
    recorded: tuple[str, bool | None] | None, slot: str, values: Mapping[str, str] | None
) -> str:
    """What the questioner recorded for a slot, ✓/✗ against the true values (the instance's, as
    the game master checks them; None without instance.json: then its check in the records)."""
    if recorded is None:
        return '<td class="belief wrong">\u2014 <span class="mark">\u2717</span></td>'
    text, checked = recorded
    true = is_true_value(text, slot, values) if values is not None else checked
    state, mark = ("", "") if true is None else ("right", "\u2713") if true else ("wrong", "\u2717")
    return f'<td class="belief {state}">{escape_text(text)} <span class="mark">{mark}</span></td>'


def _render_slots(instance: Mapping[str, JsonValue] | None, interactions: Interactions) -> str:
    """The answerer's private values, when each became shared, and what the questioner recorded
    of them (only when it acted through function calls)."""
    slots = instance.get("slots") if instance is not None else None
    if isinstance(slots, dict):
        values = {str(slot): event_text(value) for slot, value in slots.items()}
        missing = ""
    else:
        targets = [entry.target for entries in interactions.probes[:1] for entry in entries]
        values = {target: "?" for target in targets}
        missing = '<p class="muted">No instance.json: the values are unknown.</p>'
    early, shared = _early_slots(interactions), _shared_from(interactions)
    recorded = belief([event for turn in interactions.turns for event in turn])
    head = "<th>questioner recorded</th>" if recorded is not None else ""
    rows = [f'<tr class="head"><th></th><th>value</th><th>probes</th>{head}</tr>']
    for slot, value in values.items():
        when = _when_shared(shared.get(slot.upper(), {}))
        tag = ' <span class="tag early">given early</span>' if slot.upper() in early else ""
        css = ' class="early"' if tag else ""
        mind = ""
        if recorded is not None:
            mind = _belief_cell(recorded.get(slot.lower()), slot, values if not missing else None)
        rows.append(
            f'<tr{css}><th class="slot">{escape_text(slot)}</th><td>{escape_text(value)}</td>'
            f"<td>{when}{tag}</td>{mind}</tr>"
        )
    return (
        f'<table class="slots"><caption>The answerer\'s private values</caption>'
        f"{''.join(rows)}</table>{missing}"
    )


def _render_outcome(scores: EpisodeScores | None, error: CallFailure | None) -> str:
    """The episode scores, or why there are none."""
    if error is not None:
        request = ", ".join(f"{key} {value}" for key, value in error.request.items())
        return _banner(
            "error",
            f"Errored: {error.player} ({error.model}) failed.",
            f"{error.kind}: {error.message} — after {error.tries} tries, last at {error.at}; "
            f"request: {request}.",
        )
    if scores is None:
        return _banner("unscored", "Unscored:", "no scores.json; the episode was interrupted.")
    cards = "".join(
        f'<div class="score"><dt>{escape_text(name)}</dt>'
        f"<dd>{escape_text(format_score(scores.episode_scores[name]))}</dd></div>"
        for name in HEADER_SCORES
        if name in scores.episode_scores
    )
    aborted = scores.episode_scores.get(ABORTED, 0)
    banner = _banner("abort", "Aborted:", "the game scores are NaN.") if aborted else ""
    return f'<dl class="scores">{cards}</dl>{banner}'


def render_transcript(
    interactions: Interactions,
    scores: EpisodeScores | None,
    error: CallFailure | None,
    instance: Mapping[str, JsonValue] | None,
    *,
    experiment: str = "",
    episode: str = "",
    index_href: str | None = None,
) -> str:
    """Render one episode's records as a self-contained HTML page."""
    model = _role_name(interactions.players, ANSWERER)
    if not episode and instance is not None and "game_id" in instance:
        episode = f"episode {instance['game_id']}"
    where = " · ".join(part for part in (experiment, episode) if part)
    status = episode_status(scores, error)
    back = (
        f'<a class="back" href="{escape_text(index_href)}">&larr; all episodes</a>'
        if index_href
        else ""
    )
    rounds = itertools.count()
    turns = "".join(
        _render_turn(number, events, interactions, rounds)
        for number, events in _sections(interactions.turns)
    )
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape_text(model)} · {escape_text(where)}</title>"
        f"<style>{CSS}</style></head><body>"
        f'<header>{back}<h1>{escape_text(model)} <span class="where">{escape_text(where)}</span> '
        f'<span class="status {status}">{status}</span></h1>'
        f'<p class="muted">Questioner: '
        f"{escape_text(_role_name(interactions.players, QUESTIONER))}. "
        f"Probes are private side questions to the answerer; they never enter the dialogue."
        f"</p>{_render_outcome(scores, error)}{_render_slots(instance, interactions)}</header>"
        f"<main>{turns}</main></body></html>\n"
    )
