"""Runs sharing a results folder (bench/running/claims.py): each episode played once, by one run.

The claim itself (held, refused, let go when its process dies, even by kill -9) and the
folder's hold (a live run's temporary files are never swept).
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from privateshared.bench.running.claims import (
    CLAIMS_DIR,
    RUN_LOCK,
    claim_name,
    claim_path,
    hold_folder,
    try_claim,
)
from privateshared.graph.files import temporary_path

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
