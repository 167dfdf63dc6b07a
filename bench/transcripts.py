"""Episode transcripts: one readable HTML page per episode, and an index of a results folder.

A transcript is drawn from an episode's records after the game (interactions.json, scores.json
or error.json, instance.json), ours or clembench's: the dialogue as chat bubbles, each turn's
probing round folded under it. Our records name each probe's slot, round and truth in extra
keys; clembench's do not, so those come from the `probes` list, in the order the probes were
asked. Pages are self-contained (inline CSS, no JavaScript), and every recorded text is
escaped: records hold model output.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Literal, TypeVar
from urllib.parse import quote

from pydantic import JsonValue, ValidationError

from privateshared.bench.rescore import RecordsError, read_interactions
from privateshared.graph.recorder import write_text
from privateshared.graph.records import (
    ABORTED,
    ACCURACY,
    ANSWERER,
    GAME_NAME,
    GM,
    KAPPA,
    MAIN_SCORE,
    QUESTIONER,
    SLOT_FILLING_ACCURACY,
    CallFailure,
    EpisodeScores,
    Event,
    Interactions,
    ProbeEntry,
)

TRANSCRIPT_FILE = "transcript.html"
INDEX_FILE = "index.html"
HEADER_SCORES = (MAIN_SCORE, ACCURACY, KAPPA, SLOT_FILLING_ACCURACY, ABORTED)
PROBE_EVENTS = frozenset({"probe question", "probe answer", "parse", "metadata", "check"})
VALID_PROBE_ANSWERS = frozenset({"yes", "no"})
# clembench logs an anticipated value as plain text: "Value for BACHELOR anticipated; ...".
CLEMBENCH_EARLY = re.compile(r"Value for (.+?) anticipated", re.IGNORECASE)

Status = Literal["played", "aborted", "errored", "unscored"]
_Record = TypeVar("_Record", EpisodeScores, CallFailure)


class TranscriptError(ValueError):
    """A record file that cannot be read; the message is one line naming the file."""


@dataclass
class _Try:
    question: str
    reply: str | None = None
    parsed: str | None = None


@dataclass
class _Probe:
    slot: str = ""
    question: str = ""
    tries: list[_Try] = field(default_factory=list)
    gold: str | None = None
    answer: str | None = None
    correct: bool | None = None
    """None: never asked (the episode was aborted first)."""
    checked: bool = False


def _e(text: object) -> str:
    """Escape any recorded text for HTML, quotes included."""
    return escape(str(text), quote=True)


def _text(content: JsonValue) -> str:
    """An event's content as text."""
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def _extra(event: Event) -> Mapping[str, object]:
    """The event-specific keys of an action (ours; clembench's records have none)."""
    return event.action.model_extra or {}


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


# --- probing rounds -----------------------------------------------------------------------


def _probe_step(probes: list[_Probe], event: Event) -> None:
    """Fold one probing event into the round's probes."""
    kind, content, extra = event.action.type, _text(event.action.content), _extra(event)
    current = probes[-1] if probes and not probes[-1].checked else None
    if kind == "probe question":
        if current is None or ("slot" in extra and extra["slot"] != current.slot):
            current = _Probe(slot=str(extra.get("slot", "")), question=content)
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
        probe.gold = probe.gold or ("yes" if entry.gt else "no")
        if not probe.checked and probe.tries:  # the episode stopped before its check
            last = probe.tries[-1].parsed
            probe.answer = last if last in VALID_PROBE_ANSWERS else None
            probe.correct = probe.answer == probe.gold if probe.answer else None
    unasked = [
        _Probe(slot=entry.target, question=entry.question, gold="yes" if entry.gt else "no")
        for entry in entries[len(probes) :]
    ]
    return [*probes, *unasked]


def _render_try(number: int, attempt: _Try, first_question: str) -> str:
    valid = attempt.parsed in VALID_PROBE_ANSWERS
    reprompt = ""
    if attempt.question != first_question:
        reprompt = f'<div class="reprompt">re-prompt: {_e(attempt.question)}</div>'
    parsed = _e(attempt.parsed) if valid else "invalid format"
    reply = _e(attempt.reply) if attempt.reply is not None else "<i>no reply recorded</i>"
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
        f'<span class="slot">{_e(probe.slot)}</span>'
        f'<span class="truth {truth}">truth: {truth}</span>'
        f'<span class="given">answer: {_e(answer)}</span></div>'
        f'<div class="probe-q">{_e(probe.question)}</div>'
        f'<ol class="tries">{tries}</ol></li>'
    )


def _render_round(index: int, events: Sequence[Event], entries: Sequence[ProbeEntry]) -> str:
    """One probing round, folded in a <details> element."""
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
        f'<ol class="probes">{"".join(_render_probe(probe) for probe in probes)}</ol></details>'
    )


# --- the dialogue -------------------------------------------------------------------------


def _bubble(side: str, who: str, kind: str, text: str, note: str = "") -> str:
    return (
        f'<div class="row {side}"><div class="bubble {side}"><div class="who">{_e(who)}</div>'
        f'<div class="say {kind}">{_e(text)}</div>{note}</div></div>'
    )


def _banner(kind: str, title: str, text: str) -> str:
    return f'<div class="banner {kind}"><strong>{_e(title)}</strong> {_e(text)}</div>'


def _metadata_item(event: Event, answerer: str) -> str:
    extra, content = _extra(event), _text(event.action.content)
    if "pseudo_answer" in extra:
        note = '<div class="note">added by the game master</div>'
        return _bubble("a", f"Answerer · {answerer}", "pseudo", str(extra["pseudo_answer"]), note)
    if "shared_early" in extra or CLEMBENCH_EARLY.search(content):
        return _banner("early", "Value given early:", content)
    if content.startswith("Slot filled:"):
        filled = content.removeprefix("Slot filled:").strip().lower() == "true"
        slot = f" ({_e(extra['slot'])})" if "slot" in extra else ""
        state = ("filled", "&#10003; value given") if filled else ("unfilled", "&#10007; no value")
        return f'<div class="row a"><div class="fill {state[0]}">{state[1]}{slot}</div></div>'
    return f'<div class="gm-note">{_e(content)}</div>'


def _dialogue_item(event: Event, players: Mapping[str, str], question: str | None) -> str:
    """The HTML for one dialogue event; "" for the game master's bookkeeping.

    `question` is the turn's question so far: the answerer's message before it is the
    instructions, and after it the question as sent, shown only if it says more.
    """
    kind, content = event.action.type, _text(event.action.content)
    route = (event.sender, event.to)
    if kind == "get message" and event.sender == QUESTIONER:
        return _bubble("q", f"Questioner · {_role_name(players, QUESTIONER)}", "question", content)
    if kind == "get message" and event.sender == ANSWERER:
        return _bubble("a", f"Answerer · {_role_name(players, ANSWERER)}", "answer", content)
    if kind == "send message" and route == (GM, ANSWERER):
        if question is None:
            return _bubble("gm", "Game master → answerer · instructions", "instructions", content)
        if content == question or content.endswith(f": {question}"):
            return ""  # "TAG: question", as the instructions announce
        return f'<div class="row q"><div class="relay">sent as: {_e(content)}</div></div>'
    if kind == "metadata":
        return _metadata_item(event, _role_name(players, ANSWERER))
    if kind == "invalid format":
        return _banner("abort", "Aborted:", content.removeprefix("Abort: "))
    if kind == "error":
        return _banner("error", "Call failed:", content)
    if kind == "end":
        return f'<div class="end">{_e(content)}</div>'
    if kind in {"parse", "send message"}:
        return ""  # the parsed answer, and what the questioner is told: shown by the bubbles
    return f'<div class="gm-note">{_e(kind)}: {_e(content)}</div>'


def _blocks(events: Sequence[Event]) -> Iterator[tuple[str, list[Event]]]:
    """Split a turn into dialogue events and probing rounds ("Begin probing" ... "End")."""
    index = 0
    while index < len(events):
        event = events[index]
        if event.action.type == "info" and event.action.content == "Begin probing":
            end = index + 1
            while end < len(events) and events[end].action.type in PROBE_EVENTS:
                end += 1
            closes = end < len(events) and events[end].action.content == "End probing"
            yield "round", list(events[index + 1 : end])
            index = end + closes
        else:
            yield "event", [event]
            index += 1


def _render_turn(
    number: int, events: Sequence[Event], interactions: Interactions, rounds: Iterator[int]
) -> str:
    """One turn: its dialogue events in order, its probing round folded where it was played."""
    parts: list[str] = []
    question: str | None = None
    for kind, block in _blocks(events):
        if kind == "round":
            index = next(rounds)  # the k-th probing round of the episode is `probes[k]`
            entries = interactions.probes[index] if index < len(interactions.probes) else []
            parts.append(_render_round(index, block, entries))
            continue
        event = block[0]
        if event.action.type == "get message" and event.sender == QUESTIONER:
            question = _text(event.action.content)
        parts.append(_dialogue_item(event, interactions.players, question))
    return (
        f'<section class="turn"><h2>{_e(_turn_title(number, events))}</h2>{"".join(parts)}'
        f"</section>"
    )


def _turn_title(number: int, events: Sequence[Event]) -> str:
    """ "Turn 2 · asks for BY" where our records name the slot asked for."""
    if number == 0:
        return "Turn 0 · instructions"
    slots = [
        _extra(e)["slot"] for e in events if e.action.type == "metadata" and "slot" in _extra(e)
    ]
    return f"Turn {number} · asks for {str(slots[0]).upper()}" if slots else f"Turn {number}"


# --- the header ---------------------------------------------------------------------------


def _early_slots(interactions: Interactions) -> set[str]:
    """Slots (upper-case) whose value an answer gave before it was asked."""
    early: set[str] = set()
    for event in (event for turn in interactions.turns for event in turn):
        if event.action.type != "metadata":
            continue
        if "shared_early" in _extra(event):
            early.add(str(_extra(event)["shared_early"]).upper())
        elif match := CLEMBENCH_EARLY.search(_text(event.action.content)):
            early.add(match.group(1).upper())
    return early


def _shared_from(interactions: Interactions) -> dict[str, int]:
    """Slot (upper-case) -> the first probing round in which it was shared."""
    shared: dict[str, int] = {}
    for index, entries in enumerate(interactions.probes):
        for entry in entries:
            if entry.gt:
                shared.setdefault(entry.target.upper(), index)
    return shared


def _render_slots(instance: Mapping[str, JsonValue] | None, interactions: Interactions) -> str:
    """The answerer's private values, and when each became shared."""
    slots = instance.get("slots") if instance is not None else None
    if isinstance(slots, dict):
        values = {str(slot): _text(value) for slot, value in slots.items()}
        missing = ""
    else:
        targets = [entry.target for entries in interactions.probes[:1] for entry in entries]
        values = {target: "?" for target in targets}
        missing = '<p class="muted">No instance.json: the values are unknown.</p>'
    early, shared = _early_slots(interactions), _shared_from(interactions)
    rows = []
    for slot, value in values.items():
        since = shared.get(slot.upper())
        when = "private in every probing round" if since is None else f"shared from round {since}"
        tag = ' <span class="tag early">given early</span>' if slot.upper() in early else ""
        css = ' class="early"' if tag else ""
        rows.append(
            f'<tr{css}><th class="slot">{_e(slot)}</th><td>{_e(value)}</td>'
            f"<td>{when}{tag}</td></tr>"
        )
    return (
        f'<table class="slots"><caption>The answerer\'s private values</caption>'
        f"{''.join(rows)}</table>{missing}"
    )


def _number(value: float) -> str:
    if value != value:  # aborted episodes score NaN, written as clembench writes it
        return "NaN"
    if isinstance(value, int):
        return str(value)
    return f"{value:.2f}"


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
        f'<div class="score"><dt>{_e(name)}</dt>'
        f"<dd>{_e(_number(scores.episode_scores[name]))}</dd></div>"
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
    back = f'<a class="back" href="{_e(index_href)}">&larr; all episodes</a>' if index_href else ""
    rounds = itertools.count()
    turns = "".join(
        _render_turn(number, events, interactions, rounds)
        for number, events in enumerate(interactions.turns)
    )
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(model)} · {_e(where)}</title><style>{CSS}</style></head><body>"
        f'<header>{back}<h1>{_e(model)} <span class="where">{_e(where)}</span> '
        f'<span class="status {status}">{status}</span></h1>'
        f'<p class="muted">Questioner: {_e(_role_name(interactions.players, QUESTIONER))}. '
        f"Probes are private side questions to the answerer; they never enter the dialogue."
        f"</p>{_render_outcome(scores, error)}{_render_slots(instance, interactions)}</header>"
        f"<main>{turns}</main></body></html>\n"
    )


# --- the results folder -------------------------------------------------------------------


@dataclass(frozen=True)
class _Episode:
    """One episode folder as the index lists it."""

    folder: Path
    model: str
    experiment: str
    status: Status
    main_score: float | None
    page: str | None
    """The transcript's HTML; None without interactions.json."""


def _read_json(path: Path) -> JsonValue:
    try:
        data: JsonValue = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as error:
        raise TranscriptError(f"{path}: cannot read it ({error}); re-run the episode") from None
    return data


def _read_record(path: Path, model: type[_Record]) -> _Record | None:
    if not path.exists():
        return None
    try:
        return model.model_validate(_read_json(path))
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise TranscriptError(f"{path}: {where}: {first['msg']}") from None


def _read_instance(path: Path) -> Mapping[str, JsonValue] | None:
    if not path.exists():
        return None
    data = _read_json(path)
    if not isinstance(data, dict):
        raise TranscriptError(f"{path}: not a JSON object; expected an instance")
    return data


def _sort_key(folder: Path) -> tuple[str, int, int]:
    """Model, then experiment index, then game id, numerically."""
    numbers = [re.match(r"\d+", part) for part in (folder.parent.name, folder.name[8:])]
    index, game = (int(match.group()) if match else -1 for match in numbers)
    return str(folder.parent.parent.parent), index, game


def _read_episode(results_dir: Path, folder: Path) -> _Episode:
    """Read one episode folder's records and render its transcript."""
    scores = _read_record(folder / "scores.json", EpisodeScores)
    error = _read_record(folder / "error.json", CallFailure)
    experiment = re.sub(r"^\d+_", "", folder.parent.name)
    page = None
    if (folder / "interactions.json").exists():
        try:
            interactions = read_interactions(folder / "interactions.json")
        except RecordsError as broken:
            raise TranscriptError(str(broken)) from None
        depth = len(folder.relative_to(results_dir).parts)
        page = render_transcript(
            interactions, scores, error, _read_instance(folder / "instance.json"),
            experiment=experiment, episode=folder.name.replace("_", " "),
            index_href="../" * depth + INDEX_FILE,
        )  # fmt: skip
    main_score = scores.episode_scores.get(MAIN_SCORE) if scores is not None else None
    return _Episode(
        folder=folder,
        model=folder.relative_to(results_dir).parts[0],
        experiment=experiment,
        status=episode_status(scores, error),
        main_score=main_score,
        page=page,
    )


def _render_model(results_dir: Path, model: str, episodes: Sequence[_Episode]) -> str:
    counts = {status: 0 for status in ("played", "aborted", "errored", "unscored")}
    for episode in episodes:
        counts[episode.status] += 1
    summary = ", ".join(f"{count} {status}" for status, count in counts.items() if count)
    rows = []
    for episode in episodes:
        href = (episode.folder / TRANSCRIPT_FILE).relative_to(results_dir).as_posix()
        name = episode.folder.name.replace("_", " ")
        link = f'<a href="{_e(quote(href))}">{_e(name)}</a>' if episode.page else _e(name)
        score = "" if episode.main_score is None else _number(episode.main_score)
        rows.append(
            f'<tr class="{episode.status}"><td>{_e(episode.experiment)}</td><td>{link}</td>'
            f'<td><span class="status {episode.status}">{episode.status}</span></td>'
            f'<td class="num">{_e(score)}</td></tr>'
        )
    return (
        f'<section class="model"><h2>{_e(model)}</h2><p class="muted">{len(episodes)} '
        f'episodes: {summary}</p><table class="episodes"><tr><th>experiment</th>'
        f'<th>episode</th><th>status</th><th class="num">Main Score</th></tr>'
        f"{''.join(rows)}</table></section>"
    )


def _render_index(results_dir: Path, episodes: Sequence[_Episode]) -> str:
    """Render the index page: every model's episodes, with status, score and transcript."""
    models = list(dict.fromkeys(episode.model for episode in episodes))
    sections = "".join(
        _render_model(results_dir, model, [e for e in episodes if e.model == model])
        for model in models
    )
    empty = "" if episodes else '<p class="muted">No episodes found.</p>'
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{GAME_NAME} transcripts</title><style>{CSS}</style></head><body>"
        f"<header><h1>{GAME_NAME} transcripts</h1></header><main>{sections}{empty}</main>"
        f"</body></html>\n"
    )


def write_transcripts(results_dir: Path) -> list[Path]:
    """Write transcript.html into every episode folder with records, and index.html at the top.

    Returns the files written, index.html last. Every episode is read before anything is
    written, so a broken record leaves the folder as it was.
    """
    if not results_dir.is_dir():
        raise TranscriptError(
            f"{results_dir}: not a folder; pass a results folder such as records/"
        )
    folders = sorted(
        (path for path in results_dir.glob(f"*/{GAME_NAME}/*/episode_*") if path.is_dir()),
        key=_sort_key,
    )
    episodes = [_read_episode(results_dir, folder) for folder in folders]
    written = []
    for episode in episodes:
        if episode.page is not None:
            write_text(episode.folder / TRANSCRIPT_FILE, episode.page)
            written.append(episode.folder / TRANSCRIPT_FILE)
    write_text(results_dir / INDEX_FILE, _render_index(results_dir, episodes))
    return [*written, results_dir / INDEX_FILE]


# --- style --------------------------------------------------------------------------------

CSS = """
:root { --q: #e8eef6; --a: #e3f4e6; --gm: #fff8e1; --ink: #1f2328; --muted: #636c76;
  --line: #d0d7de; --right: #1a7f37; --wrong: #cf222e; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 920px; padding: 16px 20px 48px; background: #f6f8fa;
  color: var(--ink); font: 15px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans",
  sans-serif; }
header { background: #fff; border: 1px solid var(--line); border-radius: 10px;
  padding: 14px 18px; }
h1 { font-size: 21px; margin: 0 0 4px; }
h1 .where { color: var(--muted); font-weight: 400; }
a.back { font-size: 13px; color: #0969da; text-decoration: none; }
.muted { color: var(--muted); font-size: 13px; margin: 4px 0; }
.status { font-size: 12px; font-weight: 600; padding: 2px 9px; border-radius: 10px;
  vertical-align: middle; background: #eaeef2; }
.status.played { background: #dafbe1; color: var(--right); }
.status.aborted { background: #ffebe9; color: var(--wrong); }
.status.errored { background: #fbefff; color: #8250df; }
dl.scores { display: flex; flex-wrap: wrap; gap: 8px; margin: 12px 0; }
.score { border: 1px solid var(--line); border-radius: 8px; padding: 6px 12px; min-width: 110px; }
.score dt { font-size: 11px; color: var(--muted); text-transform: uppercase; }
.score dd { margin: 0; font-size: 19px; font-weight: 600; }
table { border-collapse: collapse; }
table.slots { margin: 10px 0 2px; font-size: 14px; }
table.slots caption { text-align: left; font-size: 13px; color: var(--muted); padding-bottom: 4px; }
table.slots th, table.slots td { padding: 3px 14px 3px 0; text-align: left;
  vertical-align: baseline; }
th.slot, .slot { text-transform: uppercase; font-size: 12px; letter-spacing: .04em; }
tr.early td, tr.early th { background: #fff4d6; }
.tag.early { font-size: 11px; background: #d4a72c; color: #fff; border-radius: 8px;
  padding: 1px 7px; margin-left: 6px; }
.banner { margin: 10px 0; padding: 9px 14px; border-radius: 8px; border-left: 5px solid;
  white-space: pre-wrap; overflow-wrap: anywhere; }
.banner.abort { background: #ffebe9; border-color: var(--wrong); }
.banner.error { background: #fbefff; border-color: #8250df; }
.banner.early { background: #fff4d6; border-color: #d4a72c; }
.banner.unscored { background: #eaeef2; border-color: var(--muted); }
section.turn { margin: 26px 0 0; }
section.turn h2 { font-size: 12px; font-weight: 600; color: var(--muted); text-transform: uppercase;
  letter-spacing: .06em; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
.row { display: flex; margin: 6px 0; }
.row.q { justify-content: flex-start; }
.row.a { justify-content: flex-end; }
.bubble { max-width: 72%; padding: 7px 12px 8px; border-radius: 14px;
  box-shadow: 0 1px 1px rgba(31, 35, 40, .08); }
.bubble.q { background: var(--q); border-bottom-left-radius: 4px; }
.bubble.a { background: var(--a); border-bottom-right-radius: 4px; }
.bubble.gm { max-width: 100%; width: 100%; background: var(--gm); border: 1px dashed #d4a72c;
  border-radius: 8px; }
.who { font-size: 11px; color: var(--muted); text-transform: uppercase; letter-spacing: .04em; }
.say { white-space: pre-wrap; overflow-wrap: anywhere; }
.say.instructions { font-size: 13px; }
.say.pseudo { font-style: italic; }
.relay, .note, .fill { font-size: 12px; color: var(--muted); white-space: pre-wrap; }
.relay { margin: -2px 0 0 12px; }
.fill { margin: -2px 12px 0 0; }
.fill.filled { color: var(--right); }
.fill.unfilled { color: var(--wrong); }
.gm-note, .end { text-align: center; font-size: 12px; color: var(--muted); margin: 8px 0; }
details.round { background: #fff; border: 1px solid var(--line); border-radius: 8px;
  margin: 12px 0; }
details.round summary { cursor: pointer; padding: 7px 12px; font-size: 14px; font-weight: 600; }
details.round .count { padding: 1px 8px; border-radius: 10px; background: #dafbe1;
  color: var(--right); }
details.round.flawed .count { background: #ffebe9; color: var(--wrong); }
.notes { font-weight: 400; color: var(--muted); font-size: 13px; }
ol.probes { list-style: none; margin: 0; padding: 0 12px 8px; }
li.probe { border-top: 1px solid #eaeef2; padding: 7px 6px; }
li.probe.wrong { background: #fff6f5; }
li.probe.unasked { opacity: .6; }
.probe-head { display: flex; flex-wrap: wrap; gap: 10px; align-items: baseline; }
.mark { width: 1.1em; font-weight: 700; font-size: 16px; }
.right .mark { color: var(--right); }
.wrong .mark { color: var(--wrong); }
.probe-head .slot { font-weight: 600; min-width: 9em; }
.truth, .given { font-size: 12px; padding: 1px 8px; border-radius: 10px; background: #eaeef2; }
.truth.shared { background: #dafbe1; }
.truth.private { background: #ddf4ff; }
.probe-q { font-size: 13px; color: var(--muted); margin: 3px 0 3px 1.9em; white-space: pre-wrap; }
ol.tries { list-style: none; margin: 0 0 0 1.9em; padding: 0; }
li.try { display: flex; flex-wrap: wrap; gap: 8px; align-items: baseline; font-size: 13px;
  margin: 2px 0; }
.try-n { color: var(--muted); font-size: 11px; min-width: 3.4em; }
.reply { white-space: pre-wrap; overflow-wrap: anywhere; background: var(--a); border-radius: 6px;
  padding: 0 7px; font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12.5px; }
li.try.invalid .reply { background: #ffebe9; }
.parsed { color: var(--muted); font-size: 12px; }
li.try.invalid .parsed { color: var(--wrong); }
.reprompt { flex-basis: 100%; font-size: 12px; color: var(--muted); white-space: pre-wrap;
  margin-top: 4px; }
section.model { background: #fff; border: 1px solid var(--line); border-radius: 10px;
  padding: 10px 18px; margin: 16px 0; }
section.model h2 { font-size: 17px; margin: 4px 0; }
table.episodes { width: 100%; font-size: 14px; }
table.episodes th { text-align: left; font-size: 12px; color: var(--muted); font-weight: 600; }
table.episodes th, table.episodes td { padding: 4px 8px 4px 0; border-bottom: 1px solid #eaeef2; }
table.episodes { table-layout: fixed; }
table.episodes .num { text-align: right; font-variant-numeric: tabular-nums; }
"""
