"""Faults of the endpoint: retried until success, or an errored episode that says why.

Each test injects faults into the fake OpenAI-compatible server at chosen chat requests and
plays one episode through the real model path (the openai SDK, over HTTP).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from privateshared.agents.llm import ChatModelPlayer, ModelSpec, retry_delay
from privateshared.agents.registry import resolve_answerer
from privateshared.bench.cli import main
from privateshared.bench.reporting.evaluate import collect, evaluate
from privateshared.bench.running.episodes import play_episode, save_episode
from privateshared.bench.testing.fake_endpoint import FakeOpenAI, Fault, FaultPlan, past_the_check
from privateshared.bench.testing.fake_players import answerer_for, default_answerer
from privateshared.domains.instances import GameInstance
from privateshared.graph.context import GameContext

SECRET = "sk-test-secret-0123456789"


@pytest.fixture(autouse=True)
def environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)


def player(server: FakeOpenAI, **settings: float) -> ChatModelPlayer:
    spec = ModelSpec.model_validate(
        {"model": "fake-model", "base_url": server.base_url, "retry_backoff": 0.01,
         "timeout": 1.0, **settings}
    )  # fmt: skip
    built = resolve_answerer(spec)
    assert isinstance(built, ChatModelPlayer)
    return built


async def play(
    instance: GameInstance, faults: dict[int, Fault] | FaultPlan, folder: Path, **settings: float
) -> tuple[FakeOpenAI, str]:
    """Play `instance` against a perfect answerer with `faults`; return the server and the
    name of the file that ended the episode (scores.json or error.json)."""
    with FakeOpenAI(answerer_for(instance), faults=faults) as server:
        # Probes one by one, so that request numbers map to known calls.
        answerer = player(server, **settings)
        context = GameContext(answerer=answerer, sequential_probes=True)
        state = await play_episode(instance, context)
        save_episode(folder, instance.model_dump(mode="json"), state, context)
        await answerer.aclose()
    ended = [name for name in ("scores.json", "error.json") if (folder / name).is_file()]
    assert len(ended) == 1
    return server, ended[0]


@pytest.mark.parametrize(
    "fault",
    [
        Fault("status", 500),
        Fault("status", 503),
        Fault("status", 429),
        Fault("hang"),
        Fault("reset"),
        Fault("malformed"),
    ],
    ids=["500", "503", "429", "hang", "reset", "malformed"],
)
async def test_transient_fault_is_retried_to_success(
    instance: GameInstance, tmp_path: Path, fault: Fault
) -> None:
    server, ended = await play(instance, {1: fault, 2: fault}, tmp_path, timeout=0.5)
    assert ended == "scores.json"
    scores = json.loads((tmp_path / "scores.json").read_text())["episode scores"]
    assert scores["Main Score"] == 100
    # Two faults, then the first probe's third call succeeds: 15 answered calls in all.
    assert len(server.requests) == 15 + 2
    assert [r["fault"] for r in server.requests[:3]] == [fault, fault, None]
    assert len(json.loads((tmp_path / "requests.json").read_text())) == 15


async def test_retry_after_is_honoured(instance: GameInstance, tmp_path: Path) -> None:
    busy = Fault("status", 429, {"Retry-After": "1"})
    server, ended = await play(instance, {1: busy}, tmp_path)
    assert ended == "scores.json"
    first, second = server.requests[:2]
    assert second["arrived"] - first["arrived"] >= 1.0  # not the 0.01 s backoff


def test_retry_delay_reads_the_server() -> None:
    class Response:
        def __init__(self, headers: dict[str, str]) -> None:
            self.headers = headers

    class Busy(Exception):
        def __init__(self, headers: dict[str, str]) -> None:
            self.response = Response(headers)

    assert retry_delay(Busy({"retry-after": "3"}), 1, 0.5) == 3.0
    assert retry_delay(Busy({"retry-after-ms": "250"}), 1, 0.5) == 0.25
    assert retry_delay(Busy({}), 1, 0.5) == 0.5
    assert retry_delay(Busy({}), 3, 0.5) == 2.0  # doubled for each further try
    assert retry_delay(ValueError("malformed"), 2, 0.5) == 1.0


async def test_persistent_fault_ends_the_episode_as_errored(
    instance: GameInstance, tmp_path: Path
) -> None:
    # Rounds 0 and 1 and the first answer go through; the second answer keeps failing.
    failing = lambda number: Fault("status", 502) if number > 3 + 1 + 3 else None  # noqa: E731
    server, ended = await play(instance, failing, tmp_path, max_retries=2)
    assert ended == "error.json"
    failure = json.loads((tmp_path / "error.json").read_text())
    assert failure["kind"] == "InternalServerError"
    assert failure["tries"] == 3  # the call and its two retries
    assert failure["player"] == "Player 1"
    assert failure["request"] == {"kind": "question", "turn": 2, "slot": "by", "attempt": 1}
    assert SECRET not in json.dumps(failure)
    assert len(server.requests) == 7 + 3
    # What happened before the failure is kept, and says how it ended.
    interactions = json.loads((tmp_path / "interactions.json").read_text())
    assert len(interactions["probes"]) == 2
    assert interactions["turns"][-1][-2]["action"]["type"] == "error"
    assert len(json.loads((tmp_path / "requests.json").read_text())) == 7


async def test_failure_during_probing_keeps_the_round_so_far(
    instance: GameInstance, tmp_path: Path
) -> None:
    # Round 0 probes from, to, by one by one: the first succeeds, the second fails for good.
    failing = lambda number: Fault("status", 500) if number >= 2 else None  # noqa: E731
    _, ended = await play(instance, failing, tmp_path, max_retries=1)
    assert ended == "error.json"
    failure = json.loads((tmp_path / "error.json").read_text())
    assert failure["request"] == {"kind": "probe", "round": 0, "slot": "to", "attempt": 1}
    interactions = json.loads((tmp_path / "interactions.json").read_text())
    assert [p["target"] for p in interactions["probes"][0]] == ["FROM"]
    assert interactions["Request Count"][0] == 1


async def test_refused_key_is_not_retried(instance: GameInstance, tmp_path: Path) -> None:
    server, ended = await play(instance, lambda number: Fault("status", 401), tmp_path)
    assert ended == "error.json"
    failure = json.loads((tmp_path / "error.json").read_text())
    assert (failure["kind"], failure["tries"]) == ("AuthenticationError", 1)
    assert len(server.requests) == 1


def test_errored_episodes_are_counted_apart_and_played_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An errored episode is neither played nor aborted, and the next run plays it again."""
    results = tmp_path / "records"
    argv = ["run", "--model", "fake-model", "--experiment", "travel-booking",
            "--results-dir", str(results), "--max-retries", "0"]  # fmt: skip
    healthy, broken = default_answerer(), (lambda number: Fault("status", 500))
    with FakeOpenAI(healthy) as server:
        assert main([*argv, "--base-url", server.base_url]) == 0
    episodes = sorted(results.glob("*/privateshared/*/episode_*"))
    (episodes[4] / "scores.json").unlink()  # as if the run had stopped there
    capsys.readouterr()

    with FakeOpenAI(healthy, faults=past_the_check(broken)) as server:
        assert main([*argv, "--base-url", server.base_url]) == 1
    err = capsys.readouterr().err
    assert "1 episodes errored" in err and "InternalServerError x1" in err
    assert "run the same command again" in err  # a server error: a later run may get past it
    assert (episodes[4] / "error.json").is_file()
    evaluation = evaluate(collect(results))
    [model] = evaluation.models
    assert (model.played, model.aborted, model.errored) == (9, 0, 1)
    assert model.percent_played == 100.0  # errored episodes count neither way
    assert "1 episode errored" in (results / "results.md").read_text()

    with FakeOpenAI(healthy) as server:
        assert main([*argv, "--base-url", server.base_url]) == 0
        # Only the errored episode is played again (35 calls), after the check call.
        assert len(server.requests) == 1 + 35
    assert not (episodes[4] / "error.json").exists()
    assert (episodes[4] / "scores.json").is_file()
