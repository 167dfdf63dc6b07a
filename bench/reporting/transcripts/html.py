"""What every transcript page and the index share, drawn after a run over its records.

The pages are self-contained (inline CSS, no JavaScript) and every recorded text goes through
`escape_text`: records hold model output. Besides the stylesheet this holds how a record's event
and score are turned into text, the same on the transcript pages (page.py,
calls.py and probes.py) and on the index (index.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from html import escape

from pydantic import JsonValue

from privateshared.graph.records import Event


def escape_text(text: object) -> str:
    """Escape any recorded text for HTML, quotes included."""
    return escape(str(text), quote=True)


def event_text(content: JsonValue) -> str:
    """Return an event's content as text."""
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def event_extra(event: Event) -> Mapping[str, object]:
    """Return the event-specific keys of an action (ours; clembench's records have none)."""
    return event.action.model_extra or {}


def format_score(value: float) -> str:
    """Write a score as the pages show it: two decimals, integers as they are, NaN as NaN."""
    if value != value:  # aborted episodes score NaN, written as clembench writes it
        return "NaN"
    if isinstance(value, int):
        return str(value)
    return f"{value:.2f}"


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
.banner.audience { background: #ddf4ff; border-color: #0969da; }
.present { font-size: 13px; font-weight: normal; color: var(--muted); }
li.listener-group > .listener { font-weight: 600; margin: 8px 0 4px; }
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
.bubble.q.failed { background: #fff6f5; box-shadow: inset 0 0 0 1px #ffcecb; }
.say.remark { font-size: 13px; font-style: italic; color: var(--muted); }
.say.remark::before { content: "text, sent to no one: "; font-style: normal; font-size: 11px; }
ul.calls { list-style: none; margin: 5px 0 0; padding: 0; }
li.call { display: flex; flex-wrap: wrap; gap: 2px 8px; align-items: baseline; font-size: 12px;
  margin: 2px 0; }
li.call .sig { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12px;
  background: rgba(255, 255, 255, .75); border-radius: 5px; padding: 0 6px;
  white-space: pre-wrap; overflow-wrap: anywhere; }
li.call.invalid .sig { background: #ffebe9; color: var(--wrong); }
.verdict.right { color: var(--right); }
.verdict.wrong { color: var(--wrong); }
.check { color: var(--muted); }
span.violation { background: var(--wrong); color: #fff; border-radius: 8px; padding: 0 7px;
  font-size: 11px; font-weight: 600; }
table.slots tr.head th { font-size: 11px; color: var(--muted); font-weight: 600;
  text-transform: uppercase; letter-spacing: .04em; }
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
