"""Runs at scale: concurrency that changes nothing, resume after any interruption, call limits."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from privateshared.agents.registry import resolve_answerer, resolve_questioner
from privateshared.bench.cli import main
from privateshared.bench.running.plan import plan_episodes
from privateshared.bench.testing.fake_endpoint import FakeOpenAI
from privateshared.bench.testing.fake_players import default_answerer
from privateshared.domains.instances import (
    default_instances_path,
    playable_instances,
    read_instances,
)
from privateshared.domains.loader import load_domains
from tests.conftest import hear_ctrl_c

PRIVATESHARED = Path(sys.executable).parent / "privateshared"
RECORD_FILES = ("instance.json", "interactions.json", "requests.json", "scores.json")


def without_times(data: Any) -> Any:
    """`data` with every timestamp removed, the one thing concurrency may change."""
    if isinstance(data, dict):
        return {k: without_times(v) for k, v in data.items() if k not in ("timestamp", "at")}
    if isinstance(data, list):
        return [without_times(item) for item in data]
    return data


def records(results: Path) -> dict[str, Any]:
    """Every record and results file of a run, timestamps removed, by relative path."""
    found: dict[str, Any] = {}
    for path in sorted(results.rglob("*")):
        if path.suffix == ".json":
            found[str(path.relative_to(results))] = without_times(json.loads(path.read_text()))
        elif path.suffix in (".csv", ".md"):
            found[str(path.relative_to(results))] = path.read_text()
    return found


def test_concurrency_changes_no_result(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Deterministic players give the same records and scores one by one or 32 at once."""
    runs = {}
    for concurrency in ("1", "32"):
        results = tmp_path / concurrency
        argv = ["run", "--model", "oracle", "--model", "mock", "--model", "mock:3",
                "--experiment", "travel-booking", "--experiment", "things-places",
                "--concurrency", concurrency, "--results-dir", str(results)]  # fmt: skip
        assert main(argv) == 0
        runs[concurrency] = records(results)
    capsys.readouterr()
    assert len([name for name in runs["1"] if name.endswith("scores.json")]) == 60
    assert runs["1"].keys() == runs["32"].keys()
    for name, content in runs["1"].items():
        assert content == runs["32"][name], name


def modified(results: Path) -> dict[Path, int]:
    """Every file's modification time, in nanoseconds."""
    return {path: path.stat().st_mtime_ns for path in results.rglob("*") if path.is_file()}


def test_rerun_plays_only_what_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "records"
    argv = ["run", "--model", "oracle", "--experiment", "travel-booking",
            "--results-dir", str(results)]  # fmt: skip
    assert main(argv) == 0
    episodes = sorted(results.glob("*/privateshared/*/episode_*"))
    (episodes[3] / "scores.json").unlink()  # stopped before its last file
    for path in episodes[7].iterdir():  # stopped before any file
        path.unlink()
    before = modified(results)
    time.sleep(0.01)
    capsys.readouterr()

    assert main(argv) == 0
    assert "8 of 10 episodes are already done; playing the other 2" in capsys.readouterr().out
    after = modified(results)
    for folder in episodes:
        replayed = folder in (episodes[3], episodes[7])
        for name in RECORD_FILES:
            path = folder / name
            assert path.is_file()
            assert (after[path] != before.get(path)) is replayed, path

    assert main(argv) == 0  # nothing is left
    printed = capsys.readouterr().out
    assert "all 10 episodes of this run are already done; nothing to play" in printed
    assert modified(results).keys() == after.keys()

    assert main([*argv, "--rerun"]) == 0
    rerun = modified(results)
    assert all(
        rerun[folder / "scores.json"] != after[folder / "scores.json"] for folder in episodes
    )


@pytest.fixture
def slow_endpoint() -> Iterator[FakeOpenAI]:
    """A perfect answerer for the default instances, 20 ms per call."""
    with FakeOpenAI(default_answerer(), delay=0.02) as server:
        yield server


def start_run(server: FakeOpenAI, results: Path) -> subprocess.Popen[bytes]:
    """`privateshared run` against `server`, as a user would start it."""
    return subprocess.Popen(
        [str(PRIVATESHARED), "run", "--model", "fake-model", "--base-url", server.base_url,
         "--concurrency", "3", "--results-dir", str(results),
         "--experiment", "travel-booking", "--experiment", "job-interview"],
        env={**os.environ, "OPENAI_API_KEY": "sk-test"},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=hear_ctrl_c,
    )  # fmt: skip


def wait_for_finished(results: Path, count: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while len(list(results.rglob("scores.json"))) < count:
        assert process.poll() is None, "the run ended before it could be interrupted"
        assert time.monotonic() < deadline, "the run is too slow to be interrupted in time"
        time.sleep(0.02)


def check_no_half_written_file(results: Path) -> None:
    """Every record file parses; a finished episode has all its files."""
    for path in results.rglob("*.json"):
        if not path.name.startswith("."):
            json.loads(path.read_text())  # raises on a half-written file
    for scores in results.rglob("scores.json"):
        for name in RECORD_FILES:
            assert (scores.parent / name).is_file(), scores.parent


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "SIGINT"])
def test_interrupted_run_resumes_without_loss_or_replay(
    tmp_path: Path, slow_endpoint: FakeOpenAI, how: signal.Signals
) -> None:
    results = tmp_path / "records"
    first = start_run(slow_endpoint, results)
    wait_for_finished(results, 4, first)
    first.send_signal(how)
    _, err = first.communicate(timeout=30)
    if how == signal.SIGINT:
        assert first.returncode == 130
        assert b"interrupted; finished episodes are kept" in err
    check_no_half_written_file(results)
    finished = {path.parent: path.read_bytes() for path in results.rglob("scores.json")}
    finished_times = {folder: (folder / "scores.json").stat().st_mtime_ns for folder in finished}
    assert 4 <= len(finished) < 20
    asked_before = len(slow_endpoint.requests)

    second = start_run(slow_endpoint, results)
    _, err = second.communicate(timeout=120)
    assert second.returncode == 0, err.decode()
    check_no_half_written_file(results)
    assert len(list(results.rglob("scores.json"))) == 20
    assert list(results.rglob(".*.tmp")) == []  # leftovers of a killed write are swept away
    for folder, content in finished.items():  # no finished episode was played again
        assert (folder / "scores.json").read_bytes() == content
        assert (folder / "scores.json").stat().st_mtime_ns == finished_times[folder]
    prompts = {
        json.loads((folder / "instance.json").read_text())["initial_prompt"] for folder in finished
    }
    replayed = [
        request for request in slow_endpoint.requests[asked_before:]
        if request["body"]["messages"][0]["content"] in prompts
    ]  # fmt: skip
    assert replayed == []


def test_calls_per_model_can_be_capped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    for cap, expected in (("2", lambda most: most == 2), (None, lambda most: most > 2)):
        with FakeOpenAI(default_answerer(), delay=0.02) as server:
            argv = ["run", "--model", "fake-model", "--base-url", server.base_url,
                    "--concurrency", "4", "--experiment", "travel-booking",
                    "--results-dir", str(tmp_path / str(cap))]  # fmt: skip
            if cap is not None:
                argv += ["--max-concurrent-calls", cap]
            assert main(argv) == 0
        assert expected(server.max_in_flight), (cap, server.max_in_flight)
    capsys.readouterr()


def test_progress_bar_on_a_terminal_only(tmp_path: Path) -> None:
    """A terminal gets a progress bar with the run's counts; a pipe gets none."""
    import pty

    argv = [str(PRIVATESHARED), "run", "--model", "mock", "--experiment", "travel-booking"]
    leader, follower = pty.openpty()
    on_terminal = subprocess.run(
        [*argv, "--results-dir", str(tmp_path / "tty")],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=follower, timeout=120,
    )  # fmt: skip
    os.close(follower)
    shown = b""
    with contextlib.suppress(OSError):  # EIO once everything written has been read
        while chunk := os.read(leader, 65536):
            shown += chunk
    os.close(leader)
    assert on_terminal.returncode == 0
    bar = shown.decode(errors="replace")
    assert "10/10" in bar and "episode" in bar
    assert "aborted=" in bar and "errored=0" in bar and "calls=" in bar

    piped = subprocess.run(
        [*argv, "--results-dir", str(tmp_path / "pipe")], capture_output=True, timeout=120
    )
    assert piped.returncode == 0 and piped.stderr == b""


def test_an_answerer_can_be_kept_to_short_experiments(tmp_path: Path) -> None:
    """The default run keeps SmolLM2 to the 5-slot experiments; every other answerer plays all."""
    playable = playable_instances(read_instances(default_instances_path()), load_domains())
    answerers = [resolve_answerer("oracle"), resolve_answerer("mock")]
    planned = plan_episodes(
        answerers, resolve_questioner("programmatic"), playable, tmp_path, max_slots={"oracle": 5}
    )
    played = {
        name: sorted({e.experiment.name for e in planned if e.answerer.name == name})
        for name in ("oracle", "mock")
    }
    assert played == {
        "oracle": ["job-interview", "restaurant", "travel-booking"],
        "mock": ["job-interview", "letter-number", "restaurant", "things-places", "travel-booking"],
    }
    assert [e.answerer.name for e in planned].count("oracle") == 30
