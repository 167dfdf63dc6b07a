"""Concurrency changes no record on the model path either.

tests/test_runs.py shows it for programmatic answerers, which answer before anything else can
run; a model's replies come back over HTTP in whatever order the endpoint finishes them, so the
probes of a round, and the episodes, finish in an order that changes from run to run. The
records must not follow that order. Three runs of the model player (agents/llm.py) against the
fake endpoint: one episode at a time, 32 at once in one process, and 32 at once over the
default worker processes.

What may differ, and is left out as in test_golden_records.py (`without_clock`): the clock
(`timestamp` of each event, `at` of a failure), the `created` time the endpoint stamps on each
completion, and `base_url` (each run has its own endpoint, on a free port). Completion ids stay
in: the fake endpoint derives them from the request, so the same request gets the same id
whenever it arrives (a real provider's ids would differ between any two runs).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from privateshared.agents.refusals import CHECK_MESSAGE
from privateshared.bench.cli import main
from privateshared.bench.testing.fake_endpoint import FakeOpenAI
from privateshared.bench.testing.fake_players import default_players
from tests.test_golden_records import PICTURES, digest

RUN = ["run", "--model", "fake-model", "--experiment", "travel-booking",
       "--experiment", "letter-number"]  # fmt: skip
"""20 episodes: 5 slots (5 probes a round) and 10 slots (10 probes a round)."""
RUNS = {
    "one-at-a-time": ["--concurrency", "1", "--workers", "1"],
    "32-at-once": ["--concurrency", "32", "--workers", "1"],
    "32-over-workers": ["--concurrency", "32"],
}


def digests(results: Path) -> dict[str, str]:
    """Every file of a run but its pictures and logs, clock readings taken out."""
    return {
        str(path.relative_to(results)): digest(path)
        for path in sorted(results.rglob("*"))
        if path.is_file() and path.suffix not in PICTURES and path.parent.name != "logs"
    }


def episode_switches(requests: list[dict[str, Any]]) -> int:
    """How often a call, in the order the endpoint received them, belongs to another episode
    than the call before it (an episode is known by its first message, its instance's prompt)."""
    episodes = [request["body"]["messages"][0]["content"] for request in requests
                if request["body"]["messages"][0]["content"] != CHECK_MESSAGE]  # fmt: skip
    return sum(1 for before, after in itertools.pairwise(episodes) if before != after)


def test_model_records_do_not_depend_on_concurrency(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    played: dict[str, dict[str, str]] = {}
    switches: dict[str, int] = {}
    for name, options in RUNS.items():
        results = tmp_path / name
        with FakeOpenAI(default_players()) as server:
            argv = [*RUN, "--base-url", server.base_url, *options, "--results-dir", str(results)]
            assert main(argv) == 0, name
        played[name] = digests(results)
        switches[name] = episode_switches(server.requests)
    capsys.readouterr()
    # The runs did differ: one at a time, each episode's calls arrive together (19 switches
    # between 20 episodes); 32 at once, the episodes' calls interleave.
    assert switches["one-at-a-time"] == 19
    assert switches["32-at-once"] > 100
    first = played["one-at-a-time"]
    assert len([path for path in first if path.endswith("scores.json")]) == 20
    for name, digested in played.items():
        assert digested.keys() == first.keys(), name
        changed = sorted(path for path in first if digested[path] != first[path])
        assert changed == [], f"{name}: {len(changed)} files differ, e.g. {changed[:3]}"
