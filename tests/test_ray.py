"""Runs spread over a Ray cluster: a local cluster of 2 CPUs started here, the same records as a
local run, resume, a worker killed mid-run, and no Ray at all without --ray."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from privateshared.agents.llm import ChatModelPlayer
from privateshared.agents.refusals import CHECK_MESSAGE
from privateshared.bench.cli import main
from privateshared.bench.cli import run as cli_run
from privateshared.bench.running.claims import try_claim
from privateshared.bench.testing.fake_endpoint import FakeOpenAI
from privateshared.bench.testing.fake_players import default_players
from tests.test_golden_records import PICTURES, digest

ray = pytest.importorskip("ray")
PLAYERS = ["--model", "fake-model", "--model", "mock", "--experiment", "travel-booking"]


WORKER_KEY = "sk-worker-only-0123456789"
"""A key only the cluster's workers have (see `cluster`)."""


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    # The raylet starts its workers with the environment of this moment: they keep the key,
    # the driver loses it again.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LC_WORKER_KEY", WORKER_KEY)
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-ray")


def digests(results: Path) -> dict[str, str]:
    return {
        str(path.relative_to(results)): digest(path)
        for path in sorted(results.rglob("*"))
        if path.is_file() and path.suffix not in PICTURES and path.parent.name != "logs"
    }


def test_records_are_those_of_a_local_run(cluster: None, tmp_path: Path) -> None:
    with FakeOpenAI(default_players()) as server:
        common = [*PLAYERS, "--base-url", server.base_url]
        assert main(["run", *common, "--workers", "1", "--results-dir", str(tmp_path / "l")]) == 0
        assert main(["run", *common, "--ray", "auto", "--results-dir", str(tmp_path / "r")]) == 0
    local, spread = digests(tmp_path / "l"), digests(tmp_path / "r")
    assert len(local) > 20 * 4 and local == spread  # every file, clock readings aside
    # Resume as locally: what is on disk is kept, the rest is played.
    for path in sorted((tmp_path / "r").rglob("scores.json"))[:3]:
        path.unlink()
    with FakeOpenAI(default_players()) as server:
        assert main(["run", *PLAYERS, "--base-url", server.base_url, "--ray", "auto",
                     "--results-dir", str(tmp_path / "r")]) == 0  # fmt: skip
        # The three missing episodes' calls, after the driver's check call.
        assert len({r["body"]["messages"][0]["content"] for r in server.requests[1:]}) == 3
        assert server.requests[0]["body"]["messages"][0]["content"] == CHECK_MESSAGE
    assert digests(tmp_path / "r") == local


def _task_workers() -> list[int]:
    """Ray workers running an episode now: their process title names the task."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                title = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
            except OSError:
                continue
            if b"ray::_play_one" in title:
                pids.append(int(entry.name))
    return pids


def test_a_worker_killed_mid_episode_costs_only_that_episode(
    cluster: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    written: Counter[Path] = Counter()
    record = cli_run.record_episode

    def counted(episode: Any, *arguments: Any) -> Any:
        written[episode.folder] += 1
        return record(episode, *arguments)

    monkeypatch.setattr(cli_run, "record_episode", counted)
    killed: list[int] = []

    def kill_one() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not killed:
            busy = _task_workers()
            if busy:
                os.kill(busy[0], signal.SIGKILL)
                killed.append(busy[0])
            time.sleep(0.05)

    # Slow calls, so that episodes are under way when a worker is killed.
    with FakeOpenAI(default_players(), delay=0.02) as server:
        killer = threading.Thread(target=kill_one)
        killer.start()
        code = main(["run", *PLAYERS, "--base-url", server.base_url, "--ray", "auto",
                     "--concurrency", "4", "--results-dir", str(tmp_path)])  # fmt: skip
        killer.join()
    assert killed, "no worker was found running an episode"
    assert code == 0
    folders = sorted(tmp_path.glob("*/privateshared/*/episode_*"))
    assert len(folders) == 20 and all((f / "scores.json").is_file() for f in folders)
    assert set(written.values()) == {1} and len(written) == 20  # each written once


def test_the_driver_leaves_an_episode_to_the_run_that_holds_it(
    cluster: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another run (this test) holds one episode of the folder: the driver sends out the
    others, waits, and finds it played when the other run lets it go."""
    with FakeOpenAI(default_players()) as server:
        common = [*PLAYERS, "--base-url", server.base_url]
        assert main(["run", *common, "--workers", "1", "--results-dir", str(tmp_path / "l")]) == 0
    local = digests(tmp_path / "l")
    results = tmp_path / "r"
    theirs = sorted((tmp_path / "l").glob("fake-model*/privateshared/*/episode_*"))[0]
    folder = results / theirs.relative_to(tmp_path / "l")
    claim = try_claim(results, folder)
    assert claim is not None

    def play_it_elsewhere() -> None:
        """Once the driver has played every other episode, write this one's records (a local
        run's) and let it go."""
        deadline = time.monotonic() + 120
        while len(list(results.rglob("scores.json"))) < 19 and time.monotonic() < deadline:
            time.sleep(0.05)
        shutil.copytree(theirs, folder, dirs_exist_ok=True)
        claim.release()

    capsys.readouterr()
    with FakeOpenAI(default_players()) as server:
        other = threading.Thread(target=play_it_elsewhere)
        other.start()
        code = main(["run", *PLAYERS, "--base-url", server.base_url, "--ray", "auto",
                     "--results-dir", str(results)])  # fmt: skip
        other.join()
    assert code == 0
    assert "played 1 of the 20 episodes this run set out to play" in capsys.readouterr().out
    prompt = json.loads((theirs / "instance.json").read_text())["initial_prompt"]
    assert prompt not in {request["body"]["messages"][0]["content"] for request in server.requests}
    assert digests(results) == local  # and no .claims/ left


def test_nothing_of_ray_is_imported_without_it() -> None:
    # The run command's module, which imports ray_cluster.py: the package imports only the parser.
    code = "import sys, privateshared.bench.cli.run; print('ray' in sys.modules)"
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert shown.stdout.strip() == "False", shown.stderr


def test_a_worker_without_the_key_stops_the_run_in_one_line(
    cluster: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """Workers read keys from their own environment; one that lacks it says so, in one line.

    The key is set here after the cluster started, so the driver has it and the workers do not
    (the raylet started them with the environment of that moment)."""
    monkeypatch.setenv("DRIVER_ONLY_KEY", "sk-driver-only-123")
    monkeypatch.setattr(ChatModelPlayer, "check", lambda self, tools=(): None)  # no call
    registry = tmp_path / "models.json"
    registry.write_text(
        '{"models": [{"name": "remote", "model": "gpt-4o", "api_key_env": "DRIVER_ONLY_KEY"}]}'
    )
    code = main(["run", "--models", str(registry), "--model", "remote", "--experiment",
                 "travel-booking", "--ray", "auto",
                 "--results-dir", str(tmp_path / "r")])  # fmt: skip
    error = capsys.readouterr().err
    assert code == 2 and error.count("\n") == 1, error
    assert "failed on the cluster (PlayerConfigError" in error and "DRIVER_ONLY_KEY" in error
    assert "sk-driver-only-123" not in error


def test_a_models_call_cap_holds_across_the_cluster(cluster: None, tmp_path: Path) -> None:
    """Episodes in several workers, one model capped at 2 calls under way: never more."""
    with FakeOpenAI(default_players(), delay=0.02) as server:
        registry = tmp_path / "models.json"
        entry = {"name": "capped", "model": "fake-model", "base_url": server.base_url,
                 "max_concurrent_calls": 2}  # fmt: skip
        registry.write_text(json.dumps({"models": [entry]}))
        assert main(["run", "--models", str(registry), "--model", "capped", "--experiment",
                     "travel-booking", "--ray", "auto", "--concurrency", "6",
                     "--results-dir", str(tmp_path / "r")]) == 0  # fmt: skip
    assert server.max_in_flight == 2


def test_a_langchain_entry_is_built_again_on_each_worker(
    cluster: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A registry entry with `provider:` travels as its entry: each worker builds the chat model
    itself, with the key from its own environment (the driver's differs, and never travels)."""
    monkeypatch.setenv("LC_WORKER_KEY", "sk-driver-0123456789")
    with FakeOpenAI(default_players()) as server:
        registry = tmp_path / "models.json"
        entry = {"name": "lc", "provider": "openai", "model": "fake-model",
                 "base_url": server.base_url, "api_key_env": "LC_WORKER_KEY"}  # fmt: skip
        registry.write_text(json.dumps({"models": [entry]}))
        assert main(["run", "--models", str(registry), "--model", "lc", "--questioner", "lc",
                     "--experiment", "travel-booking", "--ray", "auto",
                     "--results-dir", str(tmp_path / "r")]) == 0  # fmt: skip
        # The driver makes the check calls with its key; the workers play with their own.
        checks = [r for r in server.requests
                  if r["body"]["messages"][0]["content"] == CHECK_MESSAGE]  # fmt: skip
        keys = {r["headers"]["authorization"] for r in server.requests if r not in checks}
    assert keys == {f"Bearer {WORKER_KEY}"}
    assert {r["headers"]["authorization"] for r in checks} == {"Bearer sk-driver-0123456789"}
    scores = [json.loads(path.read_text())["episode scores"]["Main Score"]
              for path in (tmp_path / "r").rglob("scores.json")]  # fmt: skip
    assert scores == [100] * 10
