"""The model player over real HTTP: the openai SDK's fast path against a fake endpoint.

A perfect answerer behind the server (`answerer_for`) must score 100 whichever way the episode
is played: `play_episode`, the compiled graph streamed in messages mode, or `privateshared run`.
The records must hold exactly the calls the server saw, and never the API key.
"""

from __future__ import annotations

import json
import signal
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import openai
import pytest

from privateshared.agents.llm import ChatModelPlayer, ModelSpec
from privateshared.agents.refusals import CHECK_MESSAGE
from privateshared.agents.registry import resolve_answerer
from privateshared.bench.cli import main
from privateshared.bench.running.episodes import play_episode, save_episode
from privateshared.bench.testing.fake_endpoint import FakeOpenAI, Fault, past_the_check
from privateshared.bench.testing.fake_players import answerer_for
from privateshared.domains.instances import GameInstance, default_instance
from privateshared.graph.builder import graph
from privateshared.graph.context import GameContext
from privateshared.graph.recorder import build_records, describe_players
from privateshared.graph.records import ABORTED, MAIN_SCORE
from privateshared.graph.state import EpisodeState

SECRET = "sk-test-secret-0123456789"
EPISODE_FILES = ("instance.json", "interactions.json", "requests.json", "scores.json")
DEFAULT_GAME_IDS = range(10)
"""The shipped instances file has game ids 0-9 per experiment."""


@pytest.fixture(autouse=True)
def environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A known key, to check that it reaches the server and nothing else."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)


def model_player(server: FakeOpenAI) -> ChatModelPlayer:
    """The player the registry builds for `fake-model` at the server."""
    player = resolve_answerer(ModelSpec(model="fake-model", base_url=server.base_url))
    assert isinstance(player, ChatModelPlayer)
    return player


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def is_probe(message: dict[str, Any]) -> bool:
    return message["role"] == "user" and str(message["content"]).startswith("ME:")


def check_probes_stay_private(requests: list[dict[str, Any]]) -> int:
    """Assert that a probe is only ever the last message of its own request; return how many
    probe requests there were."""
    probes = 0
    for request in requests:
        *context, last = request["body"]["messages"]
        assert not any(is_probe(message) for message in context), context
        probes += is_probe(last)
    return probes


def assert_secret_absent(folder: Path) -> None:
    """No file written under `folder` holds the API key (a plain-bytes search: the key has no
    characters that JSON would escape)."""
    files = [path for path in folder.rglob("*") if path.is_file()]
    assert {path.name for path in files} >= set(EPISODE_FILES)  # the records were written
    for path in files:
        assert SECRET.encode() not in path.read_bytes(), path


def played_instances(experiment: str) -> list[GameInstance]:
    return [default_instance(experiment, game_id) for game_id in DEFAULT_GAME_IDS]


def closed_port() -> int:
    """A port nothing listens on: bound by us, then released."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class DeadlineExceeded(Exception):
    """Not a TimeoutError: the CLI reports those as a failed player, which would hide a hang."""


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Interrupt the block with `DeadlineExceeded` if it runs longer than `seconds`.

    A SIGALRM handler raises in the main thread, where `main` runs its event loop, so even a
    command stuck waiting on the network ends, and ends in a test failure.
    """

    def expire(signum: int, frame: object) -> None:
        raise DeadlineExceeded(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def one_error_line(text: str) -> str:
    """The CLI's error output must be one line, without a traceback."""
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


async def test_llm_episode_scores_and_records(instance: GameInstance, tmp_path: Path) -> None:
    with FakeOpenAI(answerer_for(instance)) as server:
        player = model_player(server)
        context = GameContext(answerer=player)
        state = await play_episode(instance, context)
        folder = tmp_path / "episode_7"
        save_episode(folder, instance.model_dump(mode="json"), state, context)
        await player.aclose()
    received = server.requests

    scores = read_json(folder / "scores.json")["episode scores"]
    assert scores[MAIN_SCORE] == 100
    assert scores[ABORTED] == 0

    # 3 questions, and 4 probing rounds (before the first question and after each) of 3 probes.
    assert len(received) == 3 + 4 * 3
    assert check_probes_stay_private(received) == 4 * 3
    calls = read_json(folder / "requests.json")
    assert len(calls) == len(received)

    # Pair each record with the server's request through the completion id the response carried
    # (probes run concurrently, so neither order nor timestamps identify them).
    by_id = {request["completion_id"]: request for request in received}
    recorded_ids = [call["raw_response_obj"]["id"] for call in calls]
    assert sorted(recorded_ids) == sorted(by_id)
    for call, completion_id in zip(calls, recorded_ids, strict=True):
        request = by_id[completion_id]
        assert call["manipulated_prompt_obj"] == request["body"]["messages"]
        assert call["raw_response_obj"]["choices"][0]["message"]["content"] == request["reply"]

    # The key reached the server, and nowhere else.
    assert {request["headers"]["authorization"] for request in received} == {f"Bearer {SECRET}"}
    assert_secret_absent(tmp_path)


async def test_llm_episode_watched_in_messages_mode(instance: GameInstance) -> None:
    chunks: list[Any] = []
    values: dict[str, Any] = {}
    with FakeOpenAI(answerer_for(instance)) as server:
        player = model_player(server)
        context = GameContext(answerer=player)
        start = EpisodeState(instance=instance, experiment=instance.experiment, game_id=7)
        async for mode, payload in graph.astream(
            start, context=context, stream_mode=["messages", "values"]
        ):
            if mode == "messages":
                chunks.append(payload)
            else:
                values = payload
        await player.aclose()
    received = server.requests

    # Watching changes nothing: the player never streams, whoever watches, and calls the
    # endpoint through the openai SDK rather than a LangChain chat model, so the messages stream
    # carries none of its replies; the state (values) holds every one, as the records do.
    assert len(received) == 3 + 4 * 3
    assert not any(request["body"].get("stream") for request in received)
    assert check_probes_stay_private(received) == 4 * 3
    assert chunks == []

    final = EpisodeState.model_validate(values)
    assert final.scores is not None
    assert final.scores.episode_scores[MAIN_SCORE] == 100
    _, calls = build_records(final, describe_players(context))
    by_id = {request["completion_id"]: request for request in received}
    for call in calls:
        assert isinstance(call.raw_response_obj, dict)
        request = by_id[call.raw_response_obj["id"]]
        assert call.manipulated_prompt_obj == request["body"]["messages"]
        assert call.raw_response_obj["choices"][0]["message"]["content"] == request["reply"]
    assert len(calls) == len(by_id)


async def test_fake_server_streams_usage_when_asked() -> None:
    """The fake honours stream_options.include_usage, as OpenAI does (our player never
    streams; a client that does gets OpenAI's chunks)."""
    with FakeOpenAI(lambda messages: "ASIDE: yes") as server:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key=SECRET, max_retries=0)
        stream = await client.chat.completions.create(
            model="fake-model", messages=[{"role": "user", "content": "Is it shared?"}],
            stream=True, stream_options={"include_usage": True},
        )  # fmt: skip
        chunks = [chunk async for chunk in stream]
    assert server.requests[0]["body"]["stream_options"] == {"include_usage": True}
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "ASIDE: yes"
    # Words stand in for tokens: 3 in the question, 2 in the reply.
    usage = [chunk.usage for chunk in chunks if chunk.usage]
    assert [(u.prompt_tokens, u.completion_tokens, u.total_tokens) for u in usage] == [(3, 2, 5)]


def test_cli_run_against_fake_endpoint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "records"
    answerer = answerer_for(*played_instances("travel-booking"))
    with FakeOpenAI(answerer, models=["fake-model"]) as server:
        code = main(
            ["run", "--model", "fake-model", "--base-url", server.base_url,
             "--results-dir", str(results), "--experiment", "travel-booking"]
        )  # fmt: skip
    output = capsys.readouterr()
    assert code == 0, output.err

    episodes = sorted(path for path in results.rglob("episode_*") if path.is_dir())
    assert [path.name for path in episodes] == [f"episode_{k}" for k in DEFAULT_GAME_IDS]
    recorded = 0
    for episode in episodes:
        assert sorted(path.name for path in episode.iterdir()) == sorted(
            [*EPISODE_FILES, "transcript.html", "usage.json"]
        )
        assert read_json(episode / "scores.json")["episode scores"][MAIN_SCORE] == 100
        recorded += len(read_json(episode / "requests.json"))
    # Every call the server answered is in some episode's requests.json, and nothing else is
    # but the check call before the first episode.
    assert recorded + 1 == len(server.requests)
    assert server.requests[0]["body"]["messages"] == [{"role": "user", "content": CHECK_MESSAGE}]
    assert check_probes_stay_private(server.requests) > 0
    assert_secret_absent(tmp_path)


def test_cli_unknown_model_fails_before_playing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAI(answerer_for(), models=["fake-model"]) as server:
        code = main(
            ["run", "--model", "no-such-model", "--base-url", server.base_url,
             "--results-dir", str(tmp_path), "--experiment", "travel-booking"]
        )  # fmt: skip
    line = one_error_line(capsys.readouterr().err)
    assert code == 2
    assert "no-such-model" in line
    assert server.requests == []  # the preflight check stopped it before any episode


def test_cli_unreachable_endpoint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    code = main(
        ["run", "--model", "fake-model", "--base-url", url, "--results-dir", str(tmp_path),
         "--experiment", "travel-booking"]
    )  # fmt: skip
    line = one_error_line(capsys.readouterr().err)
    assert code == 2
    assert "cannot reach" in line
    assert url in line


def test_cli_model_timeout_errors_the_episodes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "records"
    instances = played_instances("travel-booking")
    # Should --timeout be lost on the way, every call would wait out the delay and the run would
    # take minutes: the deadline turns that into a quick failure.
    # The check call is answered; every call after it hangs.
    hang = past_the_check(lambda number: Fault("hang"))
    with FakeOpenAI(answerer_for(*instances), faults=hang) as server, deadline(10.0):
        code = main(
            ["run", "--model", "fake-model", "--base-url", server.base_url,
             "--results-dir", str(results), "--experiment", "travel-booking",
             "--timeout", "0.5", "--max-retries", "0"]
        )  # fmt: skip
    line = one_error_line(capsys.readouterr().err)
    assert code == 1
    assert "10 episodes errored" in line and "APITimeoutError" in line, line
    # Round 0 of every episode probes every slot at once, and --max-retries 0 sends each probe
    # once: a retry would show up here as an extra request.
    assert len(server.requests) == 1 + sum(len(instance.probes[0]) for instance in instances)
    # No episode may look finished; each says why it is not.
    assert list(results.rglob("scores.json")) == []
    failures = [read_json(path) for path in results.rglob("error.json")]
    assert len(failures) == 10
    assert {(f["kind"], f["tries"], f["player"]) for f in failures} == {
        ("APITimeoutError", 1, "Player 1")
    }
