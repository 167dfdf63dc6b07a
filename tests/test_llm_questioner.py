"""A model as questioner, and a model as judge, through the command line and real HTTP."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from privateshared.bench.cli import main
from privateshared.bench.testing.fake_endpoint import FakeOpenAI
from privateshared.bench.testing.fake_players import default_players
from privateshared.graph.judging import parse_rating


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-questioner")


def episodes(results: Path, pair: str) -> list[Path]:
    return sorted(results.glob(f"{pair}/privateshared/*/episode_*"))


def read(path: Path) -> Any:
    return json.loads(path.read_text())


@pytest.mark.parametrize(
    ("answerer", "pair"),
    [
        ("oracle", "oracle-t0.0--fake-model-t0.0"),
        ("fake-model", "fake-model-t0.0--fake-model-t0.0"),
    ],
    ids=["oracle-answers", "model-answers"],
)
def test_model_questioner_plays_full_episodes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], answerer: str, pair: str
) -> None:
    results = tmp_path / "records"
    with FakeOpenAI(default_players()) as server:
        code = main(["run", "--model", answerer, "--questioner", "fake-model", "--base-url",
                     server.base_url, "--experiment", "travel-booking",
                     "--results-dir", str(results)])  # fmt: skip
        received = server.requests
    assert code == 0, capsys.readouterr().err
    folders = episodes(results, pair)
    assert len(folders) == 10
    questioner_calls = [r for r in received if r["body"]["messages"][0]["role"] == "system"]
    assert questioner_calls and all(
        [tool["function"]["name"] for tool in r["body"]["tools"]] == ["ask", "record", "finish"]
        for r in questioner_calls
    )
    for folder in folders:
        scores = read(folder / "scores.json")["episode scores"]
        assert scores["Main Score"] == 100.0
        assert scores["Questioner Slot Accuracy"] == 1.0
        assert scores["Questioner Hallucination Rate"] == 0.0
        assert scores["Questioner Task Completion"] == 1
        assert scores["Questions Asked"] == 5
        interactions = read(folder / "interactions.json")
        assert interactions["players"]["Player 2"] == "Questioner: fake-model"
        calls = [e["action"] for turn in interactions["turns"] for e in turn
                 if e["action"]["type"] == "tool call"]  # fmt: skip
        assert [c["name"] for c in calls].count("record") == 5
        assert all(c["valid"] and "result" in c and "intermediate_results" in c for c in calls)
        # The questioner's own calls are in requests.json, with what it was sent.
        prompts = [r["manipulated_prompt_obj"] for r in read(folder / "requests.json")]
        assert sum(p[0]["role"] == "system" for p in prompts) == 6  # 5 questions and a finish
    table = (results / "results.md").read_text()
    assert "## Questioner" in table and pair in table
    assert (results / "questioner_by_turn.svg").is_file()


def test_judge_rates_every_question(tmp_path: Path) -> None:
    results = tmp_path / "records"
    with FakeOpenAI(default_players()) as server:
        assert main(["run", "--model", "oracle", "--judge", "fake-model", "--base-url",
                     server.base_url, "--experiment", "job-interview",
                     "--results-dir", str(results)]) == 0  # fmt: skip
    for folder in episodes(results, "oracle-t0.0--oracle-t0.0"):
        scores = read(folder / "scores.json")
        assert scores["episode scores"]["Questioner Judge Score"] == 4.0
        assert scores["episode scores"]["Questioner Judge Missing"] == 0
        assert scores["turn scores"]["0"]["Questioner Judge Score"] == 4
        interactions = read(folder / "interactions.json")
        assert interactions["players"]["Player 3"] == "Judge: fake-model"
        judged = [e for turn in interactions["turns"] for e in turn if e["from"] == "Player 3"]
        assert len(judged) == 5
        assert len(read(folder / "requests.json")) == 35 + 5  # the answerer's and the judge's
    assert "judge (1-5)" in (results / "results.md").read_text()


def test_unreadable_judgment_is_missing_not_zero(tmp_path: Path) -> None:
    players = default_players()

    def reply(messages: list[dict[str, Any]]) -> str | dict[str, Any]:
        if messages[0]["role"] == "system" and "judge" in messages[0]["content"]:
            question = messages[-1]["content"]
            # Every other question gets a reply that is not JSON.
            return "It is fine." if "degree" in question else '{"score": 2, "reason": "vague"}'
        return players(messages)

    results = tmp_path / "records"
    with FakeOpenAI(reply) as server:
        assert main(["run", "--model", "oracle", "--judge", "fake-model", "--base-url",
                     server.base_url, "--experiment", "job-interview",
                     "--results-dir", str(results)]) == 0  # fmt: skip
    seen_missing = False
    for folder in episodes(results, "oracle-t0.0--oracle-t0.0"):
        scores = read(folder / "scores.json")["episode scores"]
        missing = scores["Questioner Judge Missing"]
        seen_missing |= missing > 0
        if missing < 5:
            assert scores["Questioner Judge Score"] == 2.0  # the unreadable ones do not count
        else:
            assert math.isnan(scores["Questioner Judge Score"])
    assert seen_missing


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"score": 4, "reason": "clear"}', (4, "clear")),
        ('```json\n{"score": 5, "reason": "good"}\n```', (5, "good")),  # in a Markdown fence
        ('Rating: {"score": 3.0, "reason": "ok"} done', (3, "ok")),  # amid text, a whole float
        ('{"score": "4", "reason": "x"}', (None, None)),  # a string is not a score
        ('{"score": 7, "reason": "x"}', (None, None)),  # out of range
        ('{"score": 3.5}', (None, None)),  # not a whole rating
        ("no idea", (None, None)),
        ('{"score": 2}', (2, None)),  # a reason is optional
    ],
    ids=["plain", "fenced", "amid-text", "string", "out-of-range", "half", "no-json", "no-reason"],
)
def test_parse_rating(reply: str, expected: tuple[int | None, str | None]) -> None:
    assert parse_rating(reply) == expected


def test_programmatic_players_cannot_take_other_roles(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--model", "oracle", "--questioner", "mock",
                 "--results-dir", str(tmp_path)]) == 2  # fmt: skip
    assert "'mock' cannot be the questioner" in capsys.readouterr().err
    assert main(["run", "--model", "programmatic", "--results-dir", str(tmp_path)]) == 2
    assert "'programmatic' cannot be the answerer" in capsys.readouterr().err
