"""The API key never leaks, not even when the endpoint echoes it in an error.

Some providers repeat the key they were sent in their error messages ("Incorrect API key
provided: sk-..."), and a failed call's message goes to error.json, the transcript pages and the
results. The fake endpoint answers every chat call with such an error (`Fault(echo_key=True)`);
the key must then appear in no file of the results folder and nowhere in the run's output.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from privateshared.bench.cli import main
from privateshared.bench.testing.fake_endpoint import FakeOpenAI, Fault, past_the_check
from privateshared.bench.testing.fake_players import default_answerer

KEY = "sk-canary-4be1c0de-9f27-leaks-here"
"""Distinctive: it occurs nowhere unless it leaked."""


@pytest.mark.parametrize(
    ("status", "kind", "tries"),
    [
        (503, "InternalServerError", 2),  # retried once, then the episode errors
        (401, "AuthenticationError", 1),  # a refused key is not retried
        (400, "BadRequestError", 1),
    ],
    ids=["persistent-503", "refused-401", "refused-400"],
)
def test_a_key_the_endpoint_echoes_leaks_nowhere(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    status: int,
    kind: str,
    tries: int,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    results = tmp_path / "records"
    echoing = Fault("status", status, echo_key=True)
    # Model listings and the check call answer; every other chat call fails, echoing the key.
    # All 10 episodes at once: the 503s' one-second backoff is waited once, not twice.
    with FakeOpenAI(default_answerer(), faults=past_the_check(lambda n: echoing)) as server:
        code = main(["run", "--model", "fake-model", "--base-url", server.base_url,
                     "--experiment", "travel-booking", "--max-retries", "1", "--concurrency", "10",
                     "--results-dir", str(results)])  # fmt: skip
    # capfd, not capsys: worker processes write to the same descriptors.
    out, err = capfd.readouterr()
    assert code == 1
    assert "10 episodes errored" in err
    files = [path for path in results.rglob("*") if path.is_file()]
    assert {path.name for path in files} >= {"error.json", "requests.json", "interactions.json",
                                              "transcript.html", "results.md"}  # fmt: skip
    leaked = [str(path.relative_to(results)) for path in files if KEY.encode() in path.read_bytes()]
    assert leaked == []
    assert KEY not in out
    assert KEY not in err
    # The key went out, and the endpoint sent it back: the error said it, blanked.
    assert server.requests[0]["headers"]["authorization"] == f"Bearer {KEY}"
    failures = [json.loads(path.read_text()) for path in results.rglob("error.json")]
    assert len(failures) == 10
    for failure in failures:
        assert (failure["kind"], failure["tries"]) == (kind, tries)
        assert "Incorrect API key provided: [key]" in failure["message"]
    if status in (400, 401):  # a refusal names the setting to change; a re-run would not help
        assert "playing them again gets the same refusal" in err
        assert "run the same command again" not in err


@pytest.mark.parametrize("status", [400, 401])
def test_a_key_echoed_by_a_refused_check_call_leaks_nowhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str],
    status: int,
) -> None:  # fmt: skip
    """The check call before the run is refused, its error echoing the key: the run stops in
    one line that gives the endpoint's words with the key blanked, and writes nothing."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    results = tmp_path / "records"
    echoing = Fault("status", status, echo_key=True)
    with FakeOpenAI(default_answerer(), faults=lambda number: echoing) as server:
        code = main(["run", "--model", "fake-model", "--base-url", server.base_url,
                     "--experiment", "travel-booking", "--results-dir", str(results)])  # fmt: skip
        assert len(server.requests) == 1
    out, err = capfd.readouterr()
    assert code == 2 and err.count("\n") == 1, err
    assert "refused the check call before the run" in err
    assert "Incorrect API key provided: [key]" in err
    assert KEY not in out + err
    assert not list(results.rglob("episode_*"))
