"""Runs sharing a results folder (bench/running/claims.py): each episode played once, by one run.

The claim itself (held, refused, let go when its process dies, even by kill -9), the folder's
hold (a live run's temporary files are never swept), an episode another run finished meanwhile,
and whole runs: two `privateshared run` processes into one folder, a killed run's claims, two
`arun_benchmark` calls at once.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from privateshared.agents.base import PlayerReply, PlayerRequest
from privateshared.agents.baselines import OracleAnswerer
from privateshared.agents.refusals import CHECK_MESSAGE
from privateshared.agents.scripted import ProgrammaticQuestioner
from privateshared.bench import arun_benchmark
from privateshared.bench.cli import main
from privateshared.bench.running.benchmark import select_experiments
from privateshared.bench.running.claims import (
    CLAIMS_DIR,
    RUN_LOCK,
    claim_name,
    claim_path,
    hold_folder,
    try_claim,
)
from privateshared.bench.running.episodes import run_episodes
from privateshared.bench.running.plan import pending_episodes, plan_episodes
from privateshared.bench.testing.fake_endpoint import FakeOpenAI
from privateshared.bench.testing.fake_players import default_answerer
from privateshared.graph.files import temporary_path, write_text
from tests.conftest import hear_ctrl_c
from tests.test_golden_records import PICTURES, digest
from tests.test_runs import PRIVATESHARED, check_no_half_written_file

# The claim


@pytest.mark.parametrize(
    ("folder", "expected"),
    [
        (
            "m-t0.0--m-t0.0/privateshared/0_travel-booking/episode_3",
            "m-t0.0--m-t0.0%2Fprivateshared%2F0_travel-booking%2Fepisode_3.lock",
        ),
        # An experiment name with a `%` or a `+` of its own: quoted too, so no two episodes
        # share a lock file.
        ("m/privateshared/0_a%2Fb/episode_1", "m%2Fprivateshared%2F0_a%252Fb%2Fepisode_1.lock"),
        ("m/privateshared/0_a+b/episode_1", "m%2Fprivateshared%2F0_a%2Bb%2Fepisode_1.lock"),
    ],
    ids=["episode", "percent", "plus"],
)
def test_claim_name(tmp_path: Path, folder: str, expected: str) -> None:
    assert claim_name(tmp_path, tmp_path / folder) == expected


def test_a_claim_name_too_long_for_a_file_is_a_digest(tmp_path: Path) -> None:
    long, longer = (tmp_path / f"{'m' * 200}/privateshared/0_x/episode_{i}" for i in (1, 2))
    names = claim_name(tmp_path, long), claim_name(tmp_path, longer)
    assert all(len(name) <= 255 and name.endswith(".lock") for name in names)
    assert names[0] != names[1]


HOLDER = """
import sys
from pathlib import Path
from privateshared.bench.running.claims import try_claim

claim = try_claim(Path(sys.argv[1]), Path(sys.argv[2]))
print("held" if claim is not None else "refused", flush=True)
sys.stdin.read()  # until the test closes it, or kills this process
"""
"""Another run, as far as one episode goes: claims it and holds it."""


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """A process holding the claim on `tmp_path/episode_1`."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path), str(tmp_path / "episode_1")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    assert process.stdout.readline() == "held\n"
    yield process
    process.kill()
    process.communicate()


def test_a_claim_another_process_holds_is_refused_until_it_dies(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    folder = tmp_path / "episode_1"
    assert try_claim(tmp_path, folder) is None
    assert try_claim(tmp_path, tmp_path / "episode_2") is not None  # other episodes are free
    holder.send_signal(signal.SIGKILL)  # no chance to let anything go itself
    holder.communicate()
    # Its lock file is still there: a file is no claim, the kernel's lock was.
    assert claim_path(tmp_path, folder).is_file()
    claim = try_claim(tmp_path, folder)
    assert claim is not None
    claim.release()
    assert not claim_path(tmp_path, folder).exists()  # its holder removes it


def test_a_claim_is_held_against_this_process_too(tmp_path: Path) -> None:
    """Two runs in one process (two arun_benchmark calls) claim apart as two processes do."""
    folder = tmp_path / "episode_1"
    with try_claim(tmp_path, folder) as claim:  # type: ignore[union-attr]
        assert claim is not None
        assert try_claim(tmp_path, folder) is None
    again = try_claim(tmp_path, folder)
    assert again is not None
    again.release()
    again.release()  # a second release does nothing


# The folder


def test_only_a_run_alone_sweeps_and_the_last_out_tidies_up(tmp_path: Path) -> None:
    killed = temporary_path(tmp_path / "results.md")
    killed.write_text("a killed write's")
    stale = claim_path(tmp_path, tmp_path / "episode_1")  # a killed run's claim
    stale.parent.mkdir()
    stale.touch()
    with hold_folder(tmp_path) as first:
        assert first is True
        assert not killed.exists() and not stale.exists()
        under_way = temporary_path(tmp_path / "results.md")  # the first run's write
        under_way.write_text("being written")
        with try_claim(tmp_path, tmp_path / "episode_2"):  # the first run playing one
            with hold_folder(tmp_path) as second:
                assert second is False
                assert under_way.exists()  # not swept: the first run is alive
            # The second run left first: the first one's claim and hold stay.
            assert claim_path(tmp_path, tmp_path / "episode_2").is_file()
            assert (tmp_path / CLAIMS_DIR / RUN_LOCK).is_file()
    assert not (tmp_path / CLAIMS_DIR).exists()


# An episode another run finished meanwhile


@pytest.mark.parametrize("rerun", [False, True], ids=["new", "rerun"])
def test_an_episode_another_run_finished_meanwhile_is_not_played(
    tmp_path: Path, rerun: bool
) -> None:
    answerer, questioner = OracleAnswerer(), ProgrammaticQuestioner()
    planned = plan_episodes([answerer], questioner, select_experiments(
        experiments=["travel-booking"]), tmp_path)  # fmt: skip
    if rerun:  # every episode was played before, and this run plays them all again
        asyncio.run(run_episodes(planned, questioner, tmp_path))
    pending = pending_episodes(planned, rerun)
    assert len(pending) == 10
    theirs = pending[3].folder / "scores.json"
    # The other run claimed it first, played it and wrote its last record: a new file.
    write_text(theirs, json.dumps({"written by": "another run"}))

    finished = asyncio.run(run_episodes(pending, questioner, tmp_path))
    statuses = {result.episode.folder: (result.status, result.calls) for result in finished}
    assert statuses.pop(pending[3].folder) == ("another run", 0)
    assert sorted(status for status, _ in statuses.values()) == ["played"] * 9
    assert json.loads(theirs.read_text()) == {"written by": "another run"}
    assert list((tmp_path / CLAIMS_DIR).iterdir()) == []  # every claim let go, its file removed


# Whole runs


@pytest.fixture
def slow_endpoint() -> Iterator[FakeOpenAI]:
    """A perfect answerer for the default instances, 20 ms per call."""
    with FakeOpenAI(default_answerer(), delay=0.02) as server:
        yield server


def start_run(server: FakeOpenAI, results: Path) -> subprocess.Popen[str]:
    """`privateshared run` against `server`, in a process group of its own (it and its
    workers can be stopped together)."""
    return subprocess.Popen(
        [str(PRIVATESHARED), "run", "--model", "fake-model", "--base-url", server.base_url,
         "--concurrency", "3", "--results-dir", str(results),
         "--experiment", "travel-booking", "--experiment", "job-interview"],
        env={**os.environ, "OPENAI_API_KEY": "sk-test"}, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, process_group=0,
        preexec_fn=hear_ctrl_c,
    )  # fmt: skip


def wait_until(done: Any, what: str, *processes: subprocess.Popen[str]) -> None:
    """Wait for `done()`, while every process of `processes` is still running."""
    deadline = time.monotonic() + 120
    while not done():
        for process in processes:
            assert process.poll() is None, f"a run ended before {what}"
        assert time.monotonic() < deadline, f"no {what} in time"
        time.sleep(0.02)


def scored(results: Path) -> int:
    return len(list(results.rglob("scores.json")))


def held_claims(results: Path) -> list[Path]:
    """The episodes' lock files in `results` (a claim let go removes its file)."""
    return [path for path in (results / CLAIMS_DIR).glob("*.lock") if path.name != RUN_LOCK]


def episode_calls(requests: list[dict[str, Any]]) -> Counter[str]:
    """The calls of each episode among `requests` (by their first message: the instance's
    prompt); the check calls before a run's first episode apart, as `check`."""
    firsts = (request["body"]["messages"][0]["content"] for request in requests)
    return Counter("check" if first == CHECK_MESSAGE else first for first in firsts)


def digests(results: Path) -> dict[str, str]:
    """Every file of a results folder, clock readings aside (as tests/test_ray.py compares)."""
    return {
        str(path.relative_to(results)): digest(path)
        for path in sorted(results.rglob("*"))
        if path.is_file() and path.suffix not in PICTURES
    }


def others_played(out: str) -> int:
    """How many of a run's episodes it says another run played (0 when it says nothing)."""
    said = re.search(r"another run into \S+ played (\d+) of the", out)
    return int(said.group(1)) if said else 0


def test_two_runs_into_one_folder_play_each_episode_once(
    tmp_path: Path, slow_endpoint: FakeOpenAI
) -> None:
    """The first run is paused (SIGSTOP) holding the episodes it is playing, so that the second
    run meets them for certain: it plays all the others, then waits for those; the first,
    resumed, finds the rest played."""
    single = start_run(slow_endpoint, tmp_path / "single")
    _, err = single.communicate(timeout=120)
    assert single.returncode == 0, err
    alone = episode_calls(slow_endpoint.requests)
    asked_alone = len(slow_endpoint.requests)
    results = tmp_path / "records"

    first = start_run(slow_endpoint, results)
    wait_until(lambda: scored(results) >= 2, "a finished episode", first)
    os.killpg(first.pid, signal.SIGSTOP)
    try:
        holding = len(held_claims(results))  # the episodes it is playing
        assert holding >= 1
        second = start_run(slow_endpoint, results)
        # Everything but what the first run holds, the second plays; then it waits.
        wait_until(lambda: scored(results) >= 20 - holding, "the second run's episodes", second)
        assert second.poll() is None  # waiting for the first run's episodes
    finally:
        os.killpg(first.pid, signal.SIGCONT)
    first_out, first_err = first.communicate(timeout=120)
    second_out, second_err = second.communicate(timeout=120)
    assert (first.returncode, second.returncode) == (0, 0), first_err + second_err

    assert "another run is playing into" in second_out
    assert others_played(second_out) >= 1  # set aside, and found played by the first run
    assert others_played(first_out) >= 1  # the rest of its plan, played by the second
    # Each episode played once: the calls of one run, and one more check call.
    assert episode_calls(slow_endpoint.requests[asked_alone:]) == alone + Counter(check=1)
    check_no_half_written_file(results)
    assert digests(results) == digests(tmp_path / "single")  # no .claims/ left either


def test_a_killed_runs_claims_block_no_later_run(tmp_path: Path, slow_endpoint: FakeOpenAI) -> None:
    results = tmp_path / "records"
    killed = start_run(slow_endpoint, results)
    wait_until(lambda: scored(results) >= 4, "finished episodes", killed)
    os.killpg(killed.pid, signal.SIGKILL)  # the run and its workers, mid-episode
    killed.communicate(timeout=30)
    left = held_claims(results)
    assert left  # the lock files of the episodes it was playing, still there
    finished = {path.parent for path in results.rglob("scores.json")}
    asked_before = len(slow_endpoint.requests)

    later = start_run(slow_endpoint, results)
    out, err = later.communicate(timeout=120)
    assert later.returncode == 0, err
    assert "another run" not in out  # it found the folder its own
    assert scored(results) == 20
    assert not (results / CLAIMS_DIR).exists()
    prompts = {json.loads((folder / "instance.json").read_text())["initial_prompt"]
               for folder in finished}  # fmt: skip
    played = episode_calls(slow_endpoint.requests[asked_before:])
    assert played["check"] == 1
    assert len(played) - 1 == 20 - len(finished)  # the missing episodes, each played
    assert not prompts & set(played)  # and none that was finished


@dataclass
class CountedOracle:
    """The oracle, counting its replies; it takes a moment over each, as a model would, so
    that two runs in one event loop take turns."""

    name: str = "oracle"
    temperature: float = 0.0
    replies: int = 0
    oracle: OracleAnswerer = field(default_factory=OracleAnswerer)

    async def respond(self, request: PlayerRequest) -> PlayerReply:
        self.replies += 1
        await asyncio.sleep(0.001)
        return await self.oracle.respond(request)


def test_two_benchmarks_at_once_share_the_episodes(tmp_path: Path) -> None:
    one = CountedOracle()
    alone = asyncio.run(arun_benchmark([one], experiments=["travel-booking"],
                                       results_dir=tmp_path / "alone"))  # fmt: skip

    async def both() -> list[Any]:
        return await asyncio.gather(*(
            arun_benchmark([player], experiments=["travel-booking"], results_dir=tmp_path / "r")
            for player in players
        ))  # fmt: skip

    players = [CountedOracle(), CountedOracle()]
    evaluations = asyncio.run(both())
    assert [player.replies > 0 for player in players] == [True, True]  # the work was shared
    assert sum(player.replies for player in players) == one.replies  # and done once
    assert evaluations == [alone, alone]


def test_readers_of_the_folder_skip_the_claims(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """eval, transcribe and score read a folder with claims in it (a run alive, or killed) as
    they read it without."""
    results = tmp_path / "records"
    run = ["run", "--model", "oracle", "--experiment", "travel-booking", "--workers", "1"]
    assert main([*run, "--results-dir", str(results)]) == 0
    readers = [["eval", str(results)], ["transcribe", str(results)],
               ["score", str(results)]]  # fmt: skip
    capsys.readouterr()

    def read() -> list[tuple[int, str, str]]:
        said = []
        for argv in readers:
            code = main(argv)
            out, err = capsys.readouterr()
            said.append((code, out, err))
        return said

    without = read()
    # A run playing an episode it has written nothing of yet: no folder of it may appear.
    episode = next(results.glob("*/privateshared/*/")) / "episode_999"
    with hold_folder(results), try_claim(results, episode):
        assert claim_path(results, episode).is_file()
        assert read() == without
