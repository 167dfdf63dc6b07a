"""A paid run a lab can plan: tokens and cost from the calls' own usage, budgets, the dry run,
reasoning models that take no temperature, and the check call before the first episode.

The fake endpoint reports usage on every completion (words standing in for tokens), cached
tokens with `cached_prompts`, and serves `o-fake` as OpenAI's reasoning models act: any
temperature but 1 refused with OpenAI's own HTTP 400, reasoning tokens reported. Every total
the results show is checked against sums worked out here from requests.json, call by call.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any

import pytest

from privateshared.agents.refusals import CHECK_MESSAGE
from privateshared.agents.usage import Price, Usage, usage_of
from privateshared.bench.cli import main
from privateshared.bench.running.budget import Budget
from privateshared.bench.testing.fake_endpoint import FakeOpenAI, Fault
from privateshared.bench.testing.fake_players import default_players
from tests.test_model_concurrency import digests

PRICES = {
    "o-fake": {"input": 2.5, "cached_input": 1.25, "output": 10.0},
    "fake-model": {"input": 1.0, "output": 4.0},
}
"""US dollars per million tokens, by the model id each completion names."""
PAIR = "o-fake-tdefault--asker-t0.0"


def registry(folder: Path, server: FakeOpenAI, *, temperature: bool = False, **extra: Any) -> Path:
    """A reasoning model sent no temperature (or 0.0 with `temperature`) as answerer, and a
    priced model questioner, both at `server`."""
    answerer: dict[str, Any] = {"name": "o-fake", "model": "o-fake", "base_url": server.base_url,
                                "price": PRICES["o-fake"], **extra}  # fmt: skip
    if not temperature:
        answerer["temperature"] = None
    asker = {"name": "asker", "model": "fake-model", "base_url": server.base_url,
             "price": PRICES["fake-model"]}  # fmt: skip
    path = folder / "models.json"
    path.write_text(json.dumps({"models": [answerer, asker]}))
    return path


def run(models: Path, results: Path, *options: str) -> int:
    return main(["run", "--models", str(models), "--model", "o-fake", "--questioner", "asker",
                 "--experiment", "travel-booking", "--results-dir", str(results), "--workers",
                 "1", *options])  # fmt: skip


def by_hand(folder: Path) -> tuple[Usage, float]:
    """An episode's tokens and cost, summed here from its requests.json, each call priced by
    the model its completion names."""
    tokens = [0, 0, 0, 0]
    cost = 0.0
    for call in json.loads((folder / "requests.json").read_text()):
        raw = call["raw_response_obj"]
        usage = raw["usage"]
        cached = usage.get("prompt_tokens_details", {}).get("cached_tokens", 0)
        reasoning = usage.get("completion_tokens_details", {}).get("reasoning_tokens", 0)
        price = PRICES[raw["model"]]
        cost += ((usage["prompt_tokens"] - cached) * price["input"]
                 + cached * price.get("cached_input", price["input"])
                 + usage["completion_tokens"] * price["output"]) / 1e6  # fmt: skip
        for index, count in enumerate(
            (usage["prompt_tokens"], usage["completion_tokens"], cached, reasoning)
        ):
            tokens[index] += count
    prompt, completion, cached, reasoning = tokens
    return Usage(prompt_tokens=prompt, completion_tokens=completion, cached_tokens=cached,
                 reasoning_tokens=reasoning), cost  # fmt: skip


def episode_folders(results: Path) -> list[Path]:
    return sorted(path.parent for path in results.rglob("requests.json"))


FIELDS = ("prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens")


def test_tokens_and_costs_in_every_table_are_the_sums_of_the_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    results = tmp_path / "records"
    with FakeOpenAI(default_players(), reasoning_models=["o-fake"], cached_prompts=True) as server:
        assert run(registry(tmp_path, server), results) == 0
    terminal = capsys.readouterr().out
    folders = episode_folders(results)
    assert len(folders) == 10
    hand = {folder.name: by_hand(folder) for folder in folders}
    total = Usage(prompt_tokens=0, completion_tokens=0, cached_tokens=0, reasoning_tokens=0)
    for used, _ in hand.values():
        total = total + used
    cost = math.fsum(spent for _, spent in hand.values())
    assert total.reasoning_tokens and total.cached_tokens  # the endpoint did report both
    assert total.prompt_tokens > total.cached_tokens
    assert total.completion_tokens > total.reasoning_tokens

    summary = json.loads((results / "results.json").read_text())
    for episode in summary["episodes"]:
        used, spent = hand[episode["episode"]]
        assert [episode[field] for field in FIELDS] == [getattr(used, f) for f in FIELDS]
        assert episode["cost_usd"] == pytest.approx(spent, rel=1e-12)
        # usage.json splits it by seat: the answerer's calls are o-fake's, the questioner's
        # fake-model's
        folder = results / PAIR / "privateshared" / "0_travel-booking" / episode["episode"]
        seats = json.loads((folder / "usage.json").read_text())
        assert seats["answerer"]["model"] == "o-fake" and seats["questioner"]["model"] == "asker"
        assert seats["answerer"]["reasoning_tokens"] == used.reasoning_tokens
        assert seats["questioner"]["reasoning_tokens"] is None  # fake-model reports none
    for row in (summary["models"][0], summary["experiments"][0], summary["overall"]):
        assert [row[field] for field in FIELDS] == [getattr(total, f) for f in FIELDS]
        assert row["cost_usd"] == pytest.approx(cost, rel=1e-12)

    rows = list(csv.DictReader(io.StringIO((results / "episodes.csv").read_text())))
    assert len(rows) == 10
    for row in rows:
        used, spent = hand[row["episode"]]
        assert [int(row[field]) for field in FIELDS] == [getattr(used, f) for f in FIELDS]
        assert float(row["cost_usd"]) == pytest.approx(spent, rel=1e-12)

    cells = [f"{getattr(total, field):,}" for field in FIELDS] + [f"{cost:.4f}"]
    markdown = (results / "results.md").read_text()
    section = markdown.split("## Tokens and cost")[1]
    assert f"| {PAIR} | {' | '.join(cells)} |" in section
    assert f"| {PAIR} | travel-booking | {' | '.join(cells)} |" in section
    line = next(line for line in terminal.splitlines() if line.startswith(PAIR) and "," in line)
    assert line.split()[1:] == cells


def test_a_model_that_reports_no_usage_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "records"
    assert main(["run", "--model", "oracle", "--experiment", "travel-booking",
                 "--results-dir", str(results)]) == 0  # fmt: skip
    assert not list(results.rglob("usage.json"))
    summary = json.loads((results / "results.json").read_text())
    assert summary["overall"]["prompt_tokens"] is None and summary["overall"]["cost_usd"] is None
    row = next(csv.DictReader(io.StringIO((results / "episodes.csv").read_text())))
    assert [row[field] for field in (*FIELDS, "cost_usd")] == ["", "", "", "", ""]
    # No usage anywhere: no tokens section, and no column of zeros.
    assert "## Tokens and cost" not in (results / "results.md").read_text()
    assert "prompt tokens" not in capsys.readouterr().out


def test_without_a_price_there_is_no_cost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    results = tmp_path / "records"
    with FakeOpenAI(default_players()) as server:
        assert (
            main(
                [
                    "run",
                    "--model",
                    "fake-model",
                    "--base-url",
                    server.base_url,
                    "--experiment",
                    "travel-booking",
                    "--results-dir",
                    str(results),
                ]
            )
            == 0
        )
    summary = json.loads((results / "results.json").read_text())
    assert summary["overall"]["prompt_tokens"] > 0
    assert summary["overall"]["cost_usd"] is None
    assert summary["overall"]["cached_tokens"] is None  # never reported: not 0
    section = (results / "results.md").read_text().split("## Tokens and cost")[1]
    assert "cost" not in section.split("\n\n")[2].splitlines()[0]  # the table has no cost column
    assert "not reported" in section
    assert "cost usd" not in capsys.readouterr().out


def test_temperature_null_plays_a_reasoning_model_and_without_it_nothing_is_played(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeOpenAI(default_players(), reasoning_models=["o-fake"]) as server:
        refused = tmp_path / "refused"
        assert run(registry(tmp_path, server, temperature=True), refused) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err
        assert "Unsupported value: 'temperature' does not support 0.0 with this model" in err
        assert "temperature: null" in err and "--temperature default" in err
        assert not list(refused.rglob("episode_*"))
        # The check calls (the answerer's, the questioner's), and not one episode's call.
        assert {request["body"]["messages"][0]["content"] for request in server.requests} == {
            CHECK_MESSAGE
        }

        played = tmp_path / "played"
        before = len(server.requests)
        assert run(registry(tmp_path, server), played) == 0
        sent = [request["body"] for request in server.requests[before:]
                if request["body"]["model"] == "o-fake"]  # fmt: skip
        assert sent and all("temperature" not in body for body in sent)
        statuses = [json.loads(path.read_text())["episode scores"]["Aborted"]
                    for path in played.rglob("scores.json")]  # fmt: skip
        assert statuses == [0] * 10
        settings = json.loads(next(played.rglob("experiment.json")).read_text())["settings"]
        assert settings["answerer"]["temperature"] is None

        # The command line's way to say the same: --temperature default.
        again = tmp_path / "cli"
        assert main(["run", "--model", "o-fake", "--base-url", server.base_url, "--temperature",
                     "default", "--experiment", "travel-booking", "--results-dir",
                     str(again)]) == 0  # fmt: skip
        assert len(list((again / "o-fake-tdefault--o-fake-tdefault").rglob("scores.json"))) == 10
    capsys.readouterr()


def test_a_refusal_during_a_run_is_not_advised_a_rerun(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A request refused mid-run (here the 5th, after the check call) errors its episode with
    the setting to change; the run says a re-run gets the same refusal."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    results = tmp_path / "records"
    faults = {5: Fault("status", 400)}
    with FakeOpenAI(default_players(), faults=faults) as server:
        code = main(["run", "--model", "fake-model", "--base-url", server.base_url,
                     "--experiment", "travel-booking", "--concurrency", "1",
                     "--results-dir", str(results)])  # fmt: skip
    assert code == 1
    err = capsys.readouterr().err
    assert "1 episodes errored because the endpoint refused their requests" in err
    assert "playing them again gets the same refusal" in err
    assert "run the same command again" not in err
    error = json.loads(next(results.rglob("error.json")).read_text())
    assert error["fix"]


def test_a_budget_stops_at_the_right_episode_and_a_larger_one_finishes_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeOpenAI(default_players(), reasoning_models=["o-fake"], cached_prompts=True) as server:
        models = registry(tmp_path, server)
        whole = tmp_path / "whole"
        assert run(models, whole, "--concurrency", "1") == 0
        costs = [by_hand(folder)[1] for folder in episode_folders(whole)]
        # The dry run's estimate of one episode (every instance of travel-booking is of the
        # same length): what the budget counts an episode at before it is played.
        capsys.readouterr()
        assert run(models, tmp_path / "dry", "--dry-run", "--rerun") == 0
        plan = capsys.readouterr().out
        estimates = {
            line.split()[0]: float(line.split()[-1]) / 10
            for line in plan.splitlines()
            if line.startswith(("o-fake", "asker"))
        }
        estimate = sum(estimates.values())
        assert estimate > 0
        # A limit where the third episode fits (what the first two cost, and its estimate)
        # and the fourth does not (what the first three cost, and its estimate).
        limit = math.fsum(costs[:2]) + estimate + costs[2] / 2

        budgeted = tmp_path / "budgeted"
        assert run(models, budgeted, "--concurrency", "1", "--budget", f"{limit:.6f}") == 0
        out = capsys.readouterr()
        assert len(list(budgeted.rglob("scores.json"))) == 3
        assert "budget: stopped before passing --budget" in out.err
        assert "7 episodes not started" in out.err and "larger --budget" in out.err
        # Which three: the first of the plan.
        assert [p.name for p in episode_folders(budgeted)] == [
            p.name for p in episode_folders(whole)[:3]
        ]
        calls = len(server.requests)
        assert run(models, budgeted, "--concurrency", "1", "--budget", "100") == 0
        assert len(list(budgeted.rglob("scores.json"))) == 10
        # It played only what was missing: the 7 episodes' calls, after a check call per seat.
        missing = episode_folders(whole)[3:]
        made = sum(len(json.loads((f / "requests.json").read_text())) for f in missing)
        assert len(server.requests) - calls == 2 + made
        assert digests(budgeted) == digests(whole)
    capsys.readouterr()


def test_a_model_s_max_cost_caps_that_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeOpenAI(default_players(), reasoning_models=["o-fake"]) as server:
        results = tmp_path / "records"
        assert run(registry(tmp_path, server, max_cost=1e-9), results, "--concurrency", "1") == 0
    err = capsys.readouterr().err
    assert "o-fake stopped before passing its max_cost" in err
    assert not list(results.rglob("scores.json"))


def test_the_dry_run_calls_nothing_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # No key either: a plan reads none, so a run can be priced before the keys are at hand.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    results = tmp_path / "records"
    with FakeOpenAI(default_players(), reasoning_models=["o-fake"]) as server:
        assert run(registry(tmp_path, server), results, "--dry-run", "--budget", "1") == 0
        assert server.requests == []
    out = capsys.readouterr().out
    assert not results.exists()
    assert "dry run: no model is called, no file is written" in out
    assert "plan: 10 episodes to play of 10" in out
    assert "an estimate, not a bill" in out
    header = next(line for line in out.splitlines() if line.startswith("model"))
    assert header.split("  ")[0] == "model" and "cost (USD)" in header
    assert "budget: about 10 of the 10 episodes fit" in out


def test_prices_count_cached_tokens_at_their_own_rate_and_reasoning_as_output() -> None:
    used = Usage(prompt_tokens=1_000_000, completion_tokens=200_000, cached_tokens=400_000,
                 reasoning_tokens=150_000)  # fmt: skip
    price = Price(input=2.5, cached_input=1.25, output=10.0)
    assert price.cost(used) == pytest.approx(0.6 * 2.5 + 0.4 * 1.25 + 0.2 * 10.0)
    assert Price(input=2.5, output=10.0).cost(used) == pytest.approx(2.5 + 2.0)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"usage": {"prompt_tokens": 10, "completion_tokens": 3}}, Usage(prompt_tokens=10,
          completion_tokens=3)),
        ({"usage": {"prompt_tokens": 10, "completion_tokens": 3,
                    "prompt_tokens_details": {"cached_tokens": 4},
                    "completion_tokens_details": {"reasoning_tokens": 2}}},
         Usage(prompt_tokens=10, completion_tokens=3, cached_tokens=4, reasoning_tokens=2)),
        ({"usage_metadata": {"input_tokens": 7, "output_tokens": 2,
                             "input_token_details": {"cache_read": 5},
                             "output_token_details": {"reasoning": 1}}},
         Usage(prompt_tokens=7, completion_tokens=2, cached_tokens=5, reasoning_tokens=1)),
        ({"usage": None}, None),
        (None, None),
    ],
    ids=["openai", "openai-details", "langchain", "null-usage", "program"],
)  # fmt: skip
def test_usage_is_read_from_openai_and_langchain_responses(raw: Any, expected: Any) -> None:
    assert usage_of(raw) == expected


def test_a_budget_counts_the_episodes_under_way() -> None:
    budget = Budget(limit=1.0)
    assert budget.start(Path("a"), {"m": 0.4})
    assert budget.start(Path("b"), {"m": 0.4})
    assert not budget.start(Path("c"), {"m": 0.4})  # 0.4 + 0.4 under way: 1.2 would pass 1.0
    assert not budget.start(Path("d"), {"m": 0.1})  # stopped: no later episode starts either
    budget.finish(Path("a"), {"m": 0.3})
    assert budget.spent() == {"m": 0.3}
    assert budget.start(Path("e"), {}), "an episode that bills nothing always starts"
