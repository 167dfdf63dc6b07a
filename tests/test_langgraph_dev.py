"""The game runs under `langgraph dev`, the way LangGraph Studio and the server API serve it.

This starts the real `langgraph dev` server with our langgraph.json, offline, and plays episodes
through its HTTP API. It proves that:

- the server starts without internet and loads `privateshared.graph.builder:graph`;
- a run's runtime context (a JSON object) is validated into `GameContext` and reaches the
  players: the answerer named in it is the one that replies, also a user's program named by
  import path (a file where the server runs, or a module on its PYTHONPATH);
- our pydantic state (`EpisodeState`, its nested models and `EpisodeScores`) comes back as JSON,
  with the scores of a perfect episode for the oracle;
- a person plays on a thread through interrupts, one run per reply, the waiting episode kept by
  the server's checkpointer; the players the thread's episode started with stay with it, when a
  resume leaves the context out, and a resume naming others is refused.

One server serves the module (it takes seconds to start); each test plays on its own threads.
Most runs are stateless (`POST /runs/wait` without a thread); the person's are on threads. Each
run on the server takes about a second, mostly its queue's polling, so a person's episode costs
a second per turn.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client

from privateshared.bench.testing.fake_endpoint import FakeOpenAI
from privateshared.bench.testing.fake_players import default_players
from privateshared.domains.instances import GameInstance, default_instance
from tests.test_user_players import PROGRAMS

REPO = Path(__file__).resolve().parent.parent
LANGGRAPH = Path(sys.executable).parent / "langgraph"
GRAPH_ID = "privateshared"
"""The graph's id in langgraph.json; the server makes a default assistant of that name."""

STARTUP_TIMEOUT = 90.0
"""Seconds to wait for the server to announce its URL and answer its health check."""
RUN_TIMEOUT = 60.0
"""Seconds an episode may take; a programmatic one takes about a second."""
STOP_TIMEOUT = 15.0
"""Seconds the server gets to shut down after SIGTERM before it is killed."""

REFUSAL = (
    "this thread's episode is played with answerer 'human'; a run on the thread may repeat it or "
    "leave it out of its context, not change it to 'oracle' (start a new thread for a new episode)"
)
"""What the server says when a resume names another answerer than the thread's person."""

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_API_LINE = re.compile(r"API:\s*(https?://\S+)")


def _http() -> httpx.Client:
    """A client for the local server that ignores any proxy set in the environment."""
    return httpx.Client(trust_env=False)


def _free_port() -> int:
    """A port that is free right now (the CLI moves to another one if it is taken by then)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _read_log(log_path: Path) -> str:
    """The server's output so far, without its terminal colours."""
    if not log_path.exists():
        return ""
    return _ANSI.sub("", log_path.read_text(encoding="utf-8", errors="replace"))


def _log_tail(log_path: Path, lines: int = 60) -> str:
    """The end of the server's output, to explain a failure."""
    tail = "\n".join(_read_log(log_path).splitlines()[-lines:])
    return f"--- last {lines} lines of {log_path} ---\n{tail}"


def _server_env() -> dict[str, str]:
    """The caller's environment, with the server's calls home switched off."""
    env = dict(os.environ)
    env.update(
        LANGGRAPH_CLI_NO_ANALYTICS="1",  # the CLI reports usage to LangChain otherwise
        LANGGRAPH_NO_VERSION_CHECK="1",  # the server asks PyPI for newer versions otherwise
        LANGSMITH_TRACING="false",  # runs would be traced to LangSmith if a key is set
        PYTHONUNBUFFERED="1",  # so the banner reaches the log file as soon as it is printed
        PYTHONIOENCODING="utf-8",  # the banner has emoji; a C locale must not break it
    )
    return env


def _start_server(log_path: Path, port: int) -> subprocess.Popen[bytes]:
    """Start `langgraph dev` with the repository's langgraph.json in its own process group.

    It runs in the test's temporary folder, where it keeps its `.langgraph_api/` data, with the
    folder `lib/` there on its PYTHONPATH, for players named as `module:attr`.
    """
    lib = log_path.parent / "lib"
    lib.mkdir(exist_ok=True)
    env = _server_env()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(lib), env.get("PYTHONPATH")]))
    with log_path.open("wb") as log:  # the child keeps its own handle to the file
        return subprocess.Popen(
            [
                str(LANGGRAPH),
                "dev",
                "--config",
                str(REPO / "langgraph.json"),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--no-browser",
                "--no-reload",  # no file watcher, and no reloader child process
            ],
            cwd=log_path.parent,  # its `.langgraph_api/` data stays out of the repository
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so it can be stopped as a whole
        )


def _wait_for_api_url(proc: subprocess.Popen[bytes], log_path: Path) -> str:
    """The server's URL from the `API:` banner line, once the server answers on it.

    The banner is printed before the server binds its port, so the URL is polled until `/ok`
    answers. The URL is read from the output rather than assumed, since the CLI silently takes
    another port when the one asked for is in use.
    """
    deadline = time.monotonic() + STARTUP_TIMEOUT
    url: str | None = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(
                f"langgraph dev exited with code {proc.returncode} before it was ready\n"
                + _log_tail(log_path)
            )
        if url is None and (match := _API_LINE.search(_read_log(log_path))):
            url = match.group(1).rstrip("/")
        if url is not None:
            try:
                with _http() as client:
                    if client.get(f"{url}/ok", timeout=2.0).status_code == 200:
                        return url
            except httpx.TransportError:
                pass  # not listening yet
        time.sleep(0.25)
    what = "never answered on " + url if url else "never printed its `API:` line"
    raise AssertionError(
        f"langgraph dev {what} within {STARTUP_TIMEOUT:.0f} s\n" + _log_tail(log_path)
    )


def _group_alive(pgid: int) -> bool:
    """Whether any process of the group is still there."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _wait_until_group_gone(pgid: int, timeout: float) -> None:
    """Wait up to `timeout` seconds for the process group to empty."""
    deadline = time.monotonic() + timeout
    while _group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.1)


def _stop_server(proc: subprocess.Popen[bytes]) -> bool:
    """Stop the server's whole process group: SIGTERM, then SIGKILL if it lingers.

    Returns whether the group is gone. The group id is the server's pid, since it was started
    in a new session. (With --no-reload the server is a single process, but a reloader or a
    worker it might start would be in the group too.)
    """
    pgid = proc.pid
    if _group_alive(pgid):
        os.killpg(pgid, signal.SIGTERM)
    try:
        proc.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        pass
    else:
        _wait_until_group_gone(pgid, 5.0)  # children may take a moment longer than the leader
    if _group_alive(pgid):
        os.killpg(pgid, signal.SIGKILL)
        proc.wait(timeout=STOP_TIMEOUT)
        _wait_until_group_gone(pgid, 5.0)
    return proc.poll() is not None and not _group_alive(pgid)


@contextmanager
def _langgraph_dev(log_path: Path) -> Iterator[str]:
    """A running `langgraph dev` server for the block, by URL; stopped however the block ends."""
    proc = _start_server(log_path, _free_port())
    try:
        yield _wait_for_api_url(proc, log_path)
    finally:
        stopped = _stop_server(proc)
    # Checked only when the block succeeded, so that a failure inside it is not masked.
    assert stopped, f"langgraph dev (pid {proc.pid}) kept running\n" + _log_tail(log_path)


@dataclass(frozen=True)
class Server:
    """The module's `langgraph dev`."""

    url: str
    log_path: Path


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One `langgraph dev` for the module's tests, stopped after the last of them; its log,
    shutdown included, holds no error the tests did not ask for."""
    log_path = tmp_path_factory.mktemp("langgraph-dev") / "langgraph-dev.log"
    with _langgraph_dev(log_path) as url:
        yield Server(url, log_path)
    errors = _unexpected_errors(log_path)
    assert not errors, "errors in the server log:\n" + "\n".join(errors)


def _unexpected_errors(log_path: Path) -> list[str]:
    """Errors in the server's log, but the refusals a test asked for.

    Errors outside the runs (loading the graph, its schemas, the server's own tasks) are only
    logged; warnings are allowed (e.g. langgraph's UserWarning that `durability` has no effect
    without a checkpointer, which every stateless run logs)."""
    return [
        line
        for line in _read_log(log_path).splitlines()
        if ("[error" in line or line.startswith(("ERROR:", "CRITICAL:"))) and REFUSAL not in line
    ]


def _play(url: str, log_path: Path, episode: dict[str, Any], context: dict[str, Any]) -> Any:
    """Play one episode as a stateless run and return its final state, as JSON."""
    with _http() as client:
        response = client.post(
            f"{url}/runs/wait",
            json={"assistant_id": GRAPH_ID, "input": episode, "context": context},
            timeout=RUN_TIMEOUT,
        )
    assert response.status_code == 200, (
        f"POST /runs/wait: {response.status_code} {response.text}\n" + _log_tail(log_path)
    )
    state = response.json()
    # A run that fails in the graph still answers 200, with the error in the body.
    assert isinstance(state, dict), f"unexpected body {state!r}"
    assert "__error__" not in state, f"the run failed: {state['__error__']}\n" + _log_tail(log_path)
    return state


def _scores_part(scores: dict[str, Any], alias: str, name: str) -> dict[str, Any]:
    """One part of the serialized `EpisodeScores`, under its alias or its Python name.

    `EpisodeScores` serializes by alias ("turn scores", "episode scores"), and the server does
    return the aliases today; the Python name is accepted too, should its serializer change.
    """
    assert alias in scores or name in scores, f"no {alias!r} in scores {sorted(scores)}"
    part = scores[alias] if alias in scores else scores[name]
    assert isinstance(part, dict)
    return part


def _answering_players(state: dict[str, Any]) -> set[str]:
    """Names of the players who answered the questions (turns after the instructions)."""
    exchanges = state["dialogue"][1:]
    return {exchange["answer"]["raw"]["player"] for exchange in exchanges if exchange["answer"]}


def test_episodes_run_through_langgraph_dev(server: Server) -> None:
    """Two episodes, with two answerers named in the run's context, through a live server."""
    url, log_path = server.url, server.log_path
    oracle = _play(
        url, log_path, {"experiment": "travel-booking", "game_id": 0}, {"answerer": "oracle"}
    )
    # A perfect answerer on the default travel instance: five slots, all shared in turn.
    episode_scores = _scores_part(oracle["scores"], "episode scores", "episode_scores")
    assert episode_scores["Main Score"] == 100.0
    assert episode_scores["Aborted"] == 0
    assert len(_scores_part(oracle["scores"], "turn scores", "turn_scores")) == 6
    assert len(oracle["dialogue"]) == 6, "the instructions and five questions"
    assert len(oracle["probe_rounds"]) == 6, "one round before each question, one at the end"
    assert _answering_players(oracle) == {"oracle"}

    # The answerer named in the context is the one that plays: the context reaches the nodes.
    mock = _play(url, log_path, {"experiment": "job-interview", "game_id": 2}, {"answerer": "mock"})
    assert mock["instance"]["experiment"] == "job-interview"
    assert mock["scores"] is not None
    _scores_part(mock["scores"], "episode scores", "episode_scores")
    assert _answering_players(mock) == {"mock"}

    # The questioner is swapped in the run's context too: here a model behind an
    # OpenAI-compatible endpoint, playing through function calls.
    with FakeOpenAI(default_players()) as endpoint:
        questioner = {"model": "fake-model", "base_url": endpoint.base_url}
        swapped = _play(
            url, log_path, {"experiment": "travel-booking", "game_id": 3},
            {"answerer": "oracle", "questioner": questioner},
        )  # fmt: skip
        asked_the_model = len(endpoint.requests)
    episode_scores = _scores_part(swapped["scores"], "episode scores", "episode_scores")
    assert episode_scores["Main Score"] == 100.0
    assert episode_scores["Questioner Task Completion"] == 1
    assert asked_the_model == 6  # five questions and a finish
    assert swapped["belief"] == {
        slot: value.rstrip(".") for slot, value in swapped["instance"]["slots"].items()
    }

    # A two-listener episode by name: the state says who heard each turn, and the change.
    handover = _play(
        url, log_path, {"experiment": "travel-booking-handover", "game_id": 2},
        {"answerer": "oracle"},
    )  # fmt: skip
    present = [exchange["present"] for exchange in handover["dialogue"]]
    assert present == [["TRAVEL-AGENT"]] * 4 + [["COLLEAGUE"]] * 3
    assert handover["audience_change"]["kind"] == "handover"
    assert handover["audience_change"]["carried"] == ["by", "from"]
    episode_scores = _scores_part(handover["scores"], "episode scores", "episode_scores")
    assert episode_scores["Main Score"] == 100.0
    assert episode_scores["Perspective Accuracy"] == 1.0

    # Studio draws the change of audience as a node of its own, between probing and asking.
    with _http() as client:
        drawn = client.get(f"{url}/assistants/{GRAPH_ID}/graph", timeout=RUN_TIMEOUT)
    assert drawn.status_code == 200, drawn.text
    edges = {(edge["source"], edge["target"]) for edge in drawn.json()["edges"]}
    assert {("probe_round", "change_audience"), ("ask_question", "change_audience"),
            ("change_audience", "ask_question")} <= edges  # fmt: skip

    errors = _unexpected_errors(log_path)
    assert not errors, "errors in the server log:\n" + "\n".join(errors)


@pytest.mark.parametrize("where", ["./my_programs.py", "lib_programs"], ids=["file", "module"])
def test_programs_by_import_path_play_in_the_context(server: Server, where: str) -> None:
    """The ten-line programs of tests/test_user_players.py, named in a run's context as Studio
    names players: by a file where the server runs, or by a module on its PYTHONPATH. They play
    the episode under their names, the questions in the reverse of the request order, every
    answer written down; the thread keeps them as named."""
    (server.log_path.parent / "my_programs.py").write_text(PROGRAMS)
    (server.log_path.parent / "lib" / "lib_programs.py").write_text(PROGRAMS)
    context = {"answerer": f"{where}:SaidItAnswerer", "questioner": f"{where}:ReverseAsker"}
    state = _play(server.url, server.log_path, {"experiment": "travel-booking", "game_id": 0},
                  context)  # fmt: skip
    instance = default_instance("travel-booking", 0)
    scores = _scores_part(state["scores"], "episode scores", "episode_scores")
    assert (scores["Main Score"], scores["Questioner Task Completion"]) == (100.0, 1)
    asked = [exchange["slot"] for exchange in state["dialogue"][1:]]
    assert asked == list(reversed(instance.request_order))
    assert state["belief"] == {slot: f"{value}." for slot, value in instance.slots.items()}
    assert _answering_players(state) == {"said-it"}
    players = state["records"]["interactions"]["players"]
    assert (players["Player 1"], players["Player 2"]) == (
        "Answerer: said-it", "Questioner: reverse-asker",
    )  # fmt: skip
    assert state["setup"]["questioner"] == {"given": context["questioner"],
                                            "python_object": False}  # fmt: skip


def _wait(client: httpx.Client, url: str, thread: str, body: dict[str, Any]) -> Any:
    """One run on `thread`, waited for: the thread's state, with `__interrupt__` while a person
    is to reply."""
    response = client.post(
        f"{url}/threads/{thread}/runs/wait",
        json={"assistant_id": GRAPH_ID, **body},
        timeout=RUN_TIMEOUT,
    )
    assert response.status_code == 200, f"{response.status_code} {response.text}"
    return response.json()


def _person_reply(instance: GameInstance, payload: dict[str, Any], asked: list[str]) -> str:
    """The right reply to a person's turn, read off its interrupt: the value asked for, or
    whether the slot probed was asked already. Notes each slot asked in `asked`."""
    assert payload["private_values"] == instance.slots
    if payload["kind"] == "question":
        slot = next(s for s, r in instance.requests.items() if r in payload["message"])
        asked.append(slot)
        return f"ANSWER: {instance.slots[slot]}."
    probes = instance.probes[len(asked)].items()
    slot = next(s for s, q in probes if q in payload["message"])
    return f"ASIDE: {'yes' if slot in asked else 'no'}"


def test_a_person_answers_through_studio_interrupts(server: Server) -> None:
    """The human answerer over Studio's HTTP API: every turn an interrupt, read and resumed
    with a scripted reply, one of them broken on purpose; the episode ends scored."""
    instance = default_instance("travel-booking", 0)
    url = server.url
    context = {"answerer": "human"}
    payloads: list[dict[str, Any]] = []
    with _http() as client:
        thread = client.post(f"{url}/threads", json={}, timeout=RUN_TIMEOUT).json()["thread_id"]
        start = {"experiment": "travel-booking", "game_id": 0}
        state = _wait(client, url, thread, {"input": start, "context": context})
        asked: list[str] = []
        while "__interrupt__" in state:
            payload = state["__interrupt__"][0]["value"]
            payloads.append(payload)
            reply = _person_reply(instance, payload, asked)
            if len(payloads) == 1:
                reply = "No idea."  # broken on purpose: the probe is asked again
            state = _wait(client, url, thread, {"command": {"resume": reply}, "context": context})
    assert payloads[0]["side_question"] and payloads[0]["format"].startswith("one line: ASIDE:")
    assert payloads[1]["try"] == 2 and "did not follow the format" in payloads[1]["message"]
    questions = [p for p in payloads if p["kind"] == "question"]
    assert [p["message"] for p in questions] == [
        f"{instance.tag}: {instance.requests[slot]}" for slot in instance.request_order
    ]
    assert len(payloads) == 5 + 30 + 1  # answers, probes, one re-prompt
    scores = _scores_part(state["scores"], "episode scores", "episode_scores")
    # Every probe right at last and every value given: Main Score 100, one violated request.
    assert scores["Main Score"] == 100.0 and scores["Violated Request Count"] == 1
    assert state["dialogue"][1]["answer"]["raw"]["player"] == "human"
    # The records the scores came from: requests.json keeps what the person saw and typed.
    calls = state["records"]["calls"]
    assert len(calls) == 36
    assert calls[0]["manipulated_prompt_obj"] == payloads[0]
    assert calls[0]["raw_response_obj"] == {"player": "human", "text": "No idea."}


def _first_slots(instance: GameInstance, count: int) -> GameInstance:
    """`instance` cut to the first `count` slots it asks for: a whole episode in a few turns
    (its instructions still list every value; no one reads them here)."""
    kept = instance.request_order[:count]
    return instance.model_copy(
        update={
            "slots": {slot: instance.slots[slot] for slot in kept},
            "request_order": kept,
            "requests": {slot: instance.requests[slot] for slot in kept},
            "probes": tuple(
                {slot: question for slot, question in probes.items() if slot in kept}
                for probes in instance.probes[: count + 1]
            ),
            "slot_descriptions": {slot: instance.slot_descriptions[slot] for slot in kept},
        }
    )


def _waiting_at(state: dict[str, Any]) -> tuple[Any, ...]:
    """Where a thread's episode stands: its checkpoint, values, next node and pending interrupt."""
    return state["checkpoint"], state["values"], state["next"], state["interrupts"]


def test_a_thread_keeps_its_person_when_resumed_without_context(server: Server) -> None:
    """With LangGraph's own client, as an app would use it: a person's thread started with the
    context naming them and resumed with the replies alone stops at every one of the person's
    turns to the end, and its records name them; a resume naming another answerer is refused,
    and the thread waits at the same turn until the right resume comes."""
    instance = _first_slots(default_instance("travel-booking", 0), 2)
    with get_sync_client(url=server.url, timeout=RUN_TIMEOUT) as client:
        thread = client.threads.create()["thread_id"]
        start = {"instance": instance.model_dump(mode="json")}
        state: Any = client.runs.wait(thread, GRAPH_ID, input=start, context={"answerer": "human"})
        asked: list[str] = []
        turns = 0
        while "__interrupt__" in state:
            reply = _person_reply(instance, state["__interrupt__"][0]["value"], asked)
            if turns == 1:  # the second probe, about a slot nobody asked for: `no` is right
                assert reply == "ASIDE: no"
                before = client.threads.get_state(thread)
                refused: Any = client.runs.wait(
                    thread, GRAPH_ID, command={"resume": "ASIDE: yes"},
                    context={"answerer": "oracle"}, raise_error=False,
                )  # fmt: skip
                assert refused.get("__error__") == {"error": "ValueError", "message": REFUSAL}
                assert _waiting_at(client.threads.get_state(thread)) == _waiting_at(before)
            state = client.runs.wait(thread, GRAPH_ID, command={"resume": reply})
            turns += 1
    assert turns == 2 + 3 * 2  # two answers, three rounds of two probes
    # The refused reply was not taken: the second probe has the one reply that came after it.
    assert [a["reply"]["text"] for a in state["probe_rounds"][0][1]["attempts"]] == ["ASIDE: no"]
    assert _answering_players(state) == {"human"}
    assert state["records"]["interactions"]["players"]["Player 1"] == "Answerer: human"
    assert state["setup"]["answerer"] == {"given": "human", "python_object": False}
    scores = _scores_part(state["scores"], "episode scores", "episode_scores")
    assert scores["Main Score"] == 100.0 and scores["Aborted"] == 0
    errors = _unexpected_errors(server.log_path)
    assert not errors, "errors in the server log:\n" + "\n".join(errors)
