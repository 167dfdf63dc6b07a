"""Transcripts: play scripted episodes, render them, and read the HTML back with html.parser."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest

from privateshared.agents.base import PlayerFailure, PlayerReply, PlayerRequest
from privateshared.agents.baselines import OracleAnswerer
from privateshared.bench.cli import main
from privateshared.bench.reporting.record_files import read_interactions
from privateshared.bench.reporting.transcripts.index import TranscriptError, write_transcripts
from privateshared.bench.reporting.transcripts.page import render_transcript
from privateshared.bench.running.episodes import play_episode, save_episode
from privateshared.domains.instances import GameInstance
from privateshared.graph.context import GameContext
from privateshared.graph.files import write_json
from privateshared.graph.records import CallFailure, EpisodeScores, Interactions
from tests.conftest import REPO, SHARED_NEWER_RECORDS, SHARED_RECORDS

ORACLE = OracleAnswerer()
Script = Callable[[PlayerRequest], str | None]
SCRIPT_TAG = "<script>alert(1)</script>"
VOID_TAGS = frozenset({"meta", "br", "hr", "img", "input", "link", "wbr"})


# --- reading HTML back --------------------------------------------------------------------


@dataclass
class Node:
    """One element of a parsed page."""

    tag: str
    classes: frozenset[str]
    attrs: dict[str, str]
    children: list[Node | str] = field(default_factory=list)

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def walk(self) -> Iterator[Node]:
        yield self
        for child in self.children:
            if isinstance(child, Node):
                yield from child.walk()

    def find(self, tag: str = "", *classes: str) -> list[Node]:
        """Descendants (self included) with this tag (any if "") and all these classes."""
        return [
            node
            for node in self.walk()
            if (not tag or node.tag == tag) and set(classes) <= node.classes
        ]


class _TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("document", frozenset(), {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        node = Node(tag, frozenset(values.get("class", "").split()), values)
        self.stack[-1].children.append(node)
        if tag not in VOID_TAGS:
            self.stack.append(node)

    def handle_endtag(self, tag: str) -> None:
        assert self.stack[-1].tag == tag, f"</{tag}> closes <{self.stack[-1].tag}>"
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse(page: str) -> Node:
    """The page as a tree; fails on badly nested tags."""
    builder = _TreeBuilder()
    builder.feed(page)
    builder.close()
    assert builder.stack == [builder.root], "unclosed tags"
    return builder.root


# --- playing episodes ---------------------------------------------------------------------


@dataclass
class Scripted:
    """An answerer that replies with `script(request)`, or like the oracle when it returns None."""

    script: Script
    name: str = "scripted"
    temperature: float = 0.0

    async def respond(self, request: PlayerRequest) -> PlayerReply:
        text = self.script(request)
        if text is None:
            return await ORACLE.respond(request)
        return PlayerReply(text=text, prompt=[m.to_openai() for m in request.messages], raw=None)


def eventful(request: PlayerRequest) -> str | None:
    """Questions come in the order to, by, from. The first answer gives "from" away early, the
    second carries a script tag; in round 1 the probe about "by" needs three tries, in round 2
    the probe about "to" is answered wrong."""
    if request.kind == "question" and request.turn == 1:
        return "ANSWER: Budapest, leaving from Lisbon."
    if request.kind == "question" and request.turn == 2:
        return f"ANSWER: Night train {SCRIPT_TAG}"
    if (request.kind, request.turn, request.slot) == ("probe", 1, "by"):
        return {1: "No.", 2: "ASIDE: yes\nANSWER: more"}.get(request.attempt)
    if (request.kind, request.turn, request.slot) == ("probe", 2, "to"):
        return "ASIDE: no"
    return None


def untagged(request: PlayerRequest) -> str | None:
    """The second answer drops its tag: the episode aborts."""
    return "By night train." if request.kind == "question" and request.turn == 2 else None


async def play(instance: GameInstance, script: Script, folder: Path) -> Interactions:
    """Play and save one episode; return its interactions.json."""
    context = GameContext(answerer=Scripted(script))
    state = await play_episode(instance, context)
    save_episode(folder, instance.model_dump(mode="json"), state, context)
    return Interactions.model_validate_json((folder / "interactions.json").read_text())


def episode_folder(results: Path, name: str) -> Path:
    return results / "scripted-t0.0--scripted-t0.0" / "privateshared" / "0_travel-booking" / name


@dataclass(frozen=True)
class Rendered:
    """A played episode's transcript, parsed, with its source and records."""

    page: Node
    source: str
    interactions: Interactions
    folder: Path


async def render(instance: GameInstance, script: Script, results: Path) -> Rendered:
    """Play one episode into `results`, write the transcripts, and parse this one."""
    folder = episode_folder(results, f"episode_{instance.game_id}")
    interactions = await play(instance, script, folder)
    write_transcripts(results)
    source = (folder / "transcript.html").read_text(encoding="utf-8")
    return Rendered(parse(source), source, interactions, folder)


@pytest.fixture
async def eventful_episode(instance: GameInstance, tmp_path: Path) -> Rendered:
    return await render(instance, eventful, tmp_path)


def probe_replies(interactions: Interactions, round_index: int, slot: str) -> list[str]:
    """Every recorded reply to one probe, in order."""
    return [
        str(event.action.content)
        for turn in interactions.turns
        for event in turn
        if event.action.type == "probe answer"
        and (event.action.model_extra or {}).get("round") == round_index
        and (event.action.model_extra or {}).get("slot") == slot
    ]


def probes_shown(page: Node) -> list[tuple[int, str, Node]]:
    """Every probe on the page: its round, its slot and its element."""
    return [
        (index, probe.find("", "slot")[0].text(), probe)
        for index, details in enumerate(page.find("details", "round"))
        for probe in details.find("li", "probe")
    ]


def belief_column(page: Node) -> dict[str, tuple[str, str]]:
    """Slot -> the questioner's recorded value as the header shows it, and its mark's class."""
    return {
        row.find("th")[0].text(): (cell.text(), "right" if "right" in cell.classes else "wrong")
        for row in page.find("header")[0].find("tr")
        for cell in row.find("td", "belief")
    }


# --- the transcript -----------------------------------------------------------------------


async def test_header_names_the_model_values_and_scores(eventful_episode: Rendered) -> None:
    header = eventful_episode.page.find("header")[0]
    title = header.find("h1")[0].text()
    assert "scripted" in title and "travel-booking" in title and "episode 7" in title
    values = {
        row.find("th")[0].text(): row.find("td")[0].text()
        for row in header.find("tr")
        if "head" not in row.classes
    }
    assert values == {"from": "Lisbon", "to": "Budapest", "by": "Night train"}
    # The programmatic questioner records every value it asks for, and no other.
    assert belief_column(eventful_episode.page) == {
        "from": ("Lisbon \u2713", "right"),
        "to": ("Budapest \u2713", "right"),
        "by": ("Night train \u2713", "right"),
    }
    scores = {
        card.find("dt")[0].text(): card.find("dd")[0].text() for card in header.find("", "score")
    }
    assert list(scores) == ["Main Score", "Accuracy", "Kappa", "Slot-Filling-Accuracy", "Aborted"]
    assert scores["Aborted"] == "0" and scores["Slot-Filling-Accuracy"] == "1.00"


def dialogue(interactions: Interactions) -> list[tuple[str, str]]:
    """Every question (the questioner's valid `ask`) and answer of the records, in order."""
    said = []
    for event in (event for turn in interactions.turns for event in turn):
        extra = event.action.model_extra or {}
        if event.action.type == "tool call" and extra["name"] == "ask" and extra["valid"]:
            said.append(("q", str(extra["arguments"]["question"])))
        elif event.action.type == "get message" and event.sender == "Player 1":
            said.append(("a", str(event.action.content)))
    return said


def bubbles(page: Node) -> list[tuple[str, str]]:
    """Every question and answer bubble of a page, in order: its side and its text."""
    return [
        (side, say.text())
        for bubble in page.find("div", "bubble")
        for side in ("q", "a")
        if side in bubble.classes
        for say in bubble.find("", "say")
        if say.classes & {"question", "answer"}
    ]


async def test_every_question_and_answer_is_a_bubble_in_order(eventful_episode: Rendered) -> None:
    expected = dialogue(eventful_episode.interactions)
    assert expected == [
        ("q", "Where to?"), ("a", "ANSWER: Budapest, leaving from Lisbon."),
        ("q", "How?"), ("a", f"ANSWER: Night train {SCRIPT_TAG}"),
        ("q", "Where from?"), ("a", "ANSWER: Lisbon."),
    ]  # fmt: skip
    assert bubbles(eventful_episode.page) == expected
    # The questioner's text is empty: no empty bubble, no empty line in one.
    assert all(say.text().strip() for say in eventful_episode.page.find("", "say"))
    instructions = eventful_episode.page.find("div", "bubble", "gm")
    assert len(instructions) == 1
    assert instructions[0].text().endswith("Night train")  # the instance's prompt, in full


async def test_last_turn_records_the_last_value_and_finishes(eventful_episode: Rendered) -> None:
    last = eventful_episode.page.find("section", "turn")[-1]
    assert last.find("h2")[0].text() == "Turn 4 · finishes"
    lines = [line.text() for line in last.find("li", "call")]
    assert lines == ['record(from = "Lisbon")\u2713 true value', "finish()"]
    assert not last.find("details")  # after the last probing round


async def test_one_folded_round_per_probing_round(eventful_episode: Rendered) -> None:
    rounds = eventful_episode.page.find("details")
    assert len(rounds) == len(eventful_episode.interactions.probes) == 4
    summaries = [node.find("summary")[0].text() for node in rounds]
    assert summaries == [
        "Probing round 0: 3/3 correct",
        "Probing round 1: 3/3 correct (2 re-prompts)",
        "Probing round 2: 2/3 correct",  # the wrong probe about "to"
        "Probing round 3: 3/3 correct",
    ]
    # The counts agree with the scorer's accuracy per round.
    scores = EpisodeScores.model_validate(
        json.loads((eventful_episode.folder / "scores.json").read_text())
    )
    accuracy = [scores.turn_scores[str(k)]["Accuracy"] for k in range(4)]
    assert accuracy == [1.0, 1.0, 2 / 3, 1.0]


async def test_wrong_probe_reply_carries_the_wrong_mark(eventful_episode: Rendered) -> None:
    marks = {(k, slot): probe for k, slot, probe in probes_shown(eventful_episode.page)}
    assert len(marks) == 12
    wrong = [key for key, probe in marks.items() if "wrong" in probe.classes]
    assert wrong == [(2, "to")]
    assert marks[2, "to"].find("", "mark")[0].text() == "\u2717"
    assert "truth: shared" in marks[2, "to"].text() and "answer: private" in marks[2, "to"].text()
    right = [probe.find("", "mark")[0].text() for key, probe in marks.items() if key != (2, "to")]
    assert right == ["\u2713"] * 11


async def test_reprompted_probe_shows_every_try(eventful_episode: Rendered) -> None:
    replies = probe_replies(eventful_episode.interactions, 1, "by")
    assert replies[:2] == ["No.", "ASIDE: yes\nANSWER: more"] and len(replies) == 3
    (probe,) = [p for k, slot, p in probes_shown(eventful_episode.page) if (k, slot) == (1, "by")]
    tries = probe.find("li", "try")
    assert [t.find("", "reply")[0].text() for t in tries] == replies  # newline kept...
    assert re.search(r"\.reply \{[^}]*white-space: pre-wrap", eventful_episode.source)  # shown
    assert [sorted(t.classes) for t in tries] == [["invalid", "try"]] * 2 + [["try", "valid"]]
    assert len(probe.find("", "reprompt")) == 2  # the re-prompts' wording is shown too


async def test_early_value_is_highlighted(eventful_episode: Rendered) -> None:
    banners = eventful_episode.page.find("div", "banner", "early")
    assert len(banners) == 1 and "FROM" in banners[0].text()
    early_rows = eventful_episode.page.find("tr", "early")
    assert [row.find("th")[0].text() for row in early_rows] == ["from"]
    # The values an answer gave, listed when it gave more than the one asked for.
    notes = [node.text() for node in eventful_episode.page.find("div", "fill", "revealed")]
    assert notes == ["in the answer: from = Lisbon, to = Budapest"]


async def test_model_output_is_escaped(eventful_episode: Rendered) -> None:
    assert not eventful_episode.page.find("script")
    answers = [node.text() for node in eventful_episode.page.find("", "say", "answer")]
    assert f"ANSWER: Night train {SCRIPT_TAG}" in answers
    assert SCRIPT_TAG not in eventful_episode.source
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in eventful_episode.source


async def test_aborted_episode_shows_the_abort_banner(instance: GameInstance, tmp_path: Path):
    aborted = await render(instance, untagged, tmp_path / "aborted")
    banners = aborted.page.find("div", "banner", "abort")
    assert any("invalid format in slot filling" in banner.text() for banner in banners)
    assert aborted.page.find("", "status", "aborted")
    assert aborted.page.find("", "say", "answer")[-1].text() == "By night train."
    played = await render(instance, lambda request: None, tmp_path / "played")
    assert not played.page.find("div", "banner", "abort")


async def test_errored_episode_shows_the_error(instance: GameInstance, tmp_path: Path) -> None:
    folder = episode_folder(tmp_path, "episode_7")
    await play(instance, lambda request: None, folder)
    (folder / "scores.json").unlink()
    failure = CallFailure(
        player="Player 1", model="scripted", kind="APITimeoutError",
        message="Request timed out.", tries=3, at="2025-11-21T10:00:00",
        request={"kind": "probe", "round": 2, "slot": "to", "attempt": 1},
    )  # fmt: skip
    write_json(folder / "error.json", failure)
    write_transcripts(tmp_path)
    page = parse((folder / "transcript.html").read_text(encoding="utf-8"))
    (banner,) = page.find("div", "banner", "error")
    assert "APITimeoutError: Request timed out." in banner.text()
    assert "Player 1" in banner.text() and "3 tries" in banner.text()
    assert page.find("", "status", "errored") and not page.find("", "score")
    index = parse((tmp_path / "index.html").read_text(encoding="utf-8"))
    assert [node.text() for node in index.find("span", "status")] == ["errored"]


@dataclass
class TimingOut:
    """An answerer whose probes in round 2 fail for good, as a model call out of retries."""

    name: str = "timing-out"
    temperature: float = 0.0

    async def respond(self, request: PlayerRequest) -> PlayerReply:
        if request.kind == "probe" and request.turn == 2:
            raise PlayerFailure("APITimeoutError", "Request timed out.", 3)
        return await ORACLE.respond(request)


async def test_failed_call_is_a_banner_in_the_dialogue(instance: GameInstance, tmp_path: Path):
    folder = episode_folder(tmp_path, "episode_7")
    context = GameContext(answerer=TimingOut())
    state = await play_episode(instance, context)
    save_episode(folder, instance.model_dump(mode="json"), state, context)
    assert (folder / "error.json").exists() and not (folder / "scores.json").exists()
    write_transcripts(tmp_path)
    page = parse((folder / "transcript.html").read_text(encoding="utf-8"))
    banners = [banner.text() for banner in page.find("div", "banner", "error")]
    assert len(banners) == 2  # the header's, and the failed call where it happened
    assert all("APITimeoutError: Request timed out." in banner for banner in banners)
    assert page.find("section", "turn")[-1].find("div", "banner", "error")


async def test_broken_interactions_is_one_line_and_the_others_go_through(
    instance: GameInstance, tmp_path: Path
) -> None:
    broken, fine = episode_folder(tmp_path, "episode_7"), episode_folder(tmp_path, "episode_8")
    await play(instance, lambda request: None, broken)
    await play(instance, lambda request: None, fine)
    (broken / "interactions.json").write_text('{"players": ', encoding="utf-8")
    transcribed = write_transcripts(tmp_path)
    [line] = transcribed.unreadable
    assert str(broken / "interactions.json") in line and "\n" not in line
    assert transcribed.written == [fine / "transcript.html", tmp_path / "index.html"]
    index = (tmp_path / "index.html").read_text()
    assert "episode 7" in index and "not shown:" in index  # listed, with why it has no page


def test_a_folder_that_is_not_there_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(TranscriptError, match="not a folder"):
        write_transcripts(tmp_path / "missing")


# --- the index ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def run_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A default run of travel-booking (oracle and mock), with its transcripts."""
    results = tmp_path_factory.mktemp("transcripts") / "records"
    with contextlib.redirect_stdout(io.StringIO()):
        assert (
            main(
                [
                    "run",
                    "--model",
                    "oracle",
                    "--model",
                    "mock",
                    "--results-dir",
                    str(results),
                    "--experiment",
                    "travel-booking",
                ]
            )
            == 0
        )
    write_transcripts(results)
    return results


def test_index_links_every_transcript(run_results: Path) -> None:
    index = parse((run_results / "index.html").read_text(encoding="utf-8"))
    hrefs = [node.attrs["href"] for node in index.find("a")]
    assert all(not href.startswith(("/", "file:")) for href in hrefs)  # relative links
    linked = {(run_results / unquote(href)).resolve() for href in hrefs}
    assert all(path.is_file() for path in linked)
    on_disk = {
        path.resolve() for path in run_results.glob("*/privateshared/*/episode_*/transcript.html")
    }
    assert len(on_disk) == 20 and linked == on_disk


def test_index_status_follows_the_scores(run_results: Path) -> None:
    index = parse((run_results / "index.html").read_text(encoding="utf-8"))
    shown = {}
    for row in index.find("tr")[1:]:
        links = row.find("a")
        if links:
            folder = (run_results / unquote(links[0].attrs["href"])).parent
            shown[folder] = row.find("span", "status")[0].text()
    expected = {}
    for folder in shown:
        scores = json.loads((folder / "scores.json").read_text())
        expected[folder] = "aborted" if scores["episode scores"]["Aborted"] else "played"
    assert shown == expected
    assert "aborted" in shown.values() and "played" in shown.values()  # mock aborts some


def test_transcript_links_back_to_the_index(run_results: Path) -> None:
    transcript = next(run_results.glob("*/privateshared/*/episode_*/transcript.html"))
    page = parse(transcript.read_text(encoding="utf-8"))
    (back,) = page.find("a", "back")
    assert (transcript.parent / back.attrs["href"]).resolve() == (
        run_results / "index.html"
    ).resolve()


# --- clembench's records ------------------------------------------------------------------


CLEMBENCH_EPISODES = sorted(
    path
    for root in (SHARED_RECORDS, SHARED_NEWER_RECORDS)
    for path in root.glob("*/privateshared/*/episode_*/interactions.json")
)


@pytest.mark.skipif(not SHARED_RECORDS.is_dir(), reason=f"no clembench records at {SHARED_RECORDS}")
@pytest.mark.parametrize(
    "path", CLEMBENCH_EPISODES, ids=[str(p.parents[3].parent.name) for p in CLEMBENCH_EPISODES]
)
def test_clembench_records_render_with_their_answers(path: Path) -> None:
    """Both of clembench's layouts: every answer, question and probe shows, in order."""
    interactions = read_interactions(path)
    scores = EpisodeScores.model_validate(json.loads((path.parent / "scores.json").read_text()))
    instance_path = path.parent / "instance.json"
    instance = json.loads(instance_path.read_text()) if instance_path.exists() else None
    page = parse(render_transcript(interactions, scores, None, instance))

    def said(sender: str) -> list[str]:
        return [
            str(event.action.content)
            for turn in interactions.turns
            for event in turn
            if event.action.type == "get message" and event.sender == sender
            and getattr(event.action, "label", None) != "pseudo"
        ]  # fmt: skip

    assert [node.text() for node in page.find("", "say", "answer")] == said("Player 1")
    assert [node.text() for node in page.find("", "say", "question")] == said("Player 2")
    assert not page.find("td", "belief") and not page.find("li", "call")
    assert len(page.find("details")) == len(interactions.probes)  # one fold per probing round
    # Every probe clembench logged shows up, with its slot.
    slots = [slot for _, slot, _ in probes_shown(page)]
    assert slots == [entry.target for entries in interactions.probes for entry in entries]


BROWSER_CHECK = REPO / "scripts" / "check_transcripts_in_browser.py"


@pytest.mark.skipif(
    not any(shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome")),
    reason="no headless Chromium here (apt-get install -y chromium)",
)
def test_pages_render_in_a_headless_browser(run_results: Path, tmp_path: Path) -> None:
    """The script's browser check: a transcript, the index and the accuracy plot with its
    interval bands, rendered by Chromium."""
    results = run_results
    check = subprocess.run(
        [sys.executable, str(BROWSER_CHECK), str(results), "--screenshot",
         str(tmp_path / "page.png"), "--plot-screenshot", str(tmp_path / "plot.png")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert check.returncode == 0, check.stdout + check.stderr
    assert "all checks passed" in check.stdout
    # One panel (travel-booking), a band for each of the two models.
    assert "ok   2 interval bands drawn" in check.stdout
    assert (tmp_path / "page.png").read_bytes().startswith(b"\x89PNG")
    assert (tmp_path / "plot.png").read_bytes().startswith(b"\x89PNG")
