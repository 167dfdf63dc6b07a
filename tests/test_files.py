"""Atomic writing (graph/files.py), as a run relies on it.

A write cut short leaves the old file, or none, and no temporary file; a run killed between a
write and its rename leaves a temporary file that the next run sweeps away; and every file a
run writes gets the permissions the user's umask gives a new file.
"""

from __future__ import annotations

import json
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from privateshared.bench.cli import main
from privateshared.graph import files
from privateshared.graph.files import write_text

ORACLE_RUN = ["run", "--model", "oracle", "--experiment", "travel-booking", "--workers", "1"]
"""A small run that needs no endpoint: 10 episodes, written by one process."""


def fail_with(error: BaseException) -> object:
    def fail(*args: object, **kwargs: object) -> None:
        raise error

    return fail


@pytest.mark.parametrize(
    ("step", "error"),
    [
        ("write", UnicodeEncodeError("utf-8", "\udcff", 0, 1, "surrogates not allowed")),
        ("fsync", OSError(28, "No space left on device")),
        ("replace", KeyboardInterrupt()),
    ],
    # write: the text cannot be encoded (a lone surrogate), which fails once the file is open;
    # fsync: the disk fills as the data is flushed; replace: Ctrl-C just before the rename.
    ids=["write", "fsync", "replace"],
)
@pytest.mark.parametrize("old", [b'{"Main Score": 100}\n', None], ids=["over-a-file", "new-file"])
def test_a_write_cut_short_leaves_the_old_file_and_no_temporary(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    step: str,
    error: BaseException,
    old: bytes | None,
) -> None:
    target = tmp_path / "scores.json"
    if old is not None:
        target.write_bytes(old)
    text = '{"Main Score": 0}\n'
    if step == "write":
        text += "\udcff"  # not encodable in UTF-8
    else:  # as os.fsync or os.replace is seen from graph/files.py
        monkeypatch.setattr(files.os, step, fail_with(error))
    with pytest.raises(type(error)) as raised:
        write_text(target, text)
    if step != "write":
        assert raised.value is error  # the injected failure, not some other one
    monkeypatch.undo()
    assert (target.read_bytes() if target.exists() else None) == old
    left = sorted(path.name for path in tmp_path.iterdir())
    assert left == ([] if old is None else [target.name])  # no temporary file beside it


KILLED_RUN = """
import os, signal, sys
from privateshared.bench.cli import main

real_replace, renames = os.replace, 0

def replace(source, target):
    global renames
    renames += 1
    if renames == int(sys.argv[1]):  # killed between a write and its rename
        os.kill(os.getpid(), signal.SIGKILL)
    real_replace(source, target)

os.replace = replace
sys.exit(main(sys.argv[2:]))
"""
"""`privateshared run`, killed (SIGKILL) at its Nth rename, as an atomic write is about to
finish: the temporary file is written and flushed, the target not yet replaced."""


def test_the_next_run_sweeps_what_a_killed_write_left_and_finishes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "records"
    argv = [*ORACLE_RUN, "--results-dir", str(results)]
    # The 8th rename: past the experiment's files, inside the second or third episode.
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_RUN, "8", *argv],
        cwd=tmp_path, capture_output=True, timeout=120,
    )  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()
    [leftover] = results.rglob(".*.tmp")
    # The temporary file is complete (written and flushed before the rename that never came),
    # named for its target beside it: `.<name>.<hex>.tmp`.
    target = leftover.with_name(leftover.name[1:].rsplit(".", 2)[0])
    assert not target.exists()
    if target.suffix == ".json":
        json.loads(leftover.read_text())
    assert len(list(results.rglob("scores.json"))) < 10

    assert main(argv) == 0
    capsys.readouterr()
    assert list(results.rglob(".*.tmp")) == []  # swept
    assert target.is_file()  # its episode was played again and finished
    assert len(list(results.rglob("scores.json"))) == 10
    for scores in results.rglob("scores.json"):
        assert json.loads(scores.read_text())["episode scores"]["Main Score"] == 100


UMASK_RUNS = f"""
import os, sys
from privateshared.bench.cli import main

for umask, folder in zip(sys.argv[1::2], sys.argv[2::2]):
    os.umask(int(umask, 8))
    if main([*{ORACLE_RUN!r}, "--results-dir", folder]) != 0:
        sys.exit(1)
"""
"""The small run under each umask given (octal), into the folder given after it; one process
for all, as a process's first run pays for the imports."""


RECORDS = {"instance.json", "interactions.json", "requests.json", "scores.json",
           "experiment.json", "transcript.html", "results.md", "index.html"}  # fmt: skip
"""Some of the files a run writes: the records, the transcripts and the results."""


def test_records_get_the_permissions_the_umask_gives(tmp_path: Path) -> None:
    """Under umask 022 a record is -rw-r--r--, under 077 -rw-------, as `open` would make it
    (a temporary file made by tempfile.mkstemp would be -rw------- whatever the umask)."""
    umasks = {"022": "-rw-r--r--", "077": "-rw-------"}
    folders = {umask: tmp_path / umask for umask in umasks}
    run = subprocess.run(
        [sys.executable, "-c", UMASK_RUNS,
         *(arg for umask, folder in folders.items() for arg in (umask, str(folder)))],
        cwd=tmp_path, capture_output=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr.decode()
    for umask, expected in umasks.items():
        written = [path for path in folders[umask].rglob("*") if path.is_file()]
        assert {path.name for path in written} >= RECORDS
        modes = {str(path.relative_to(tmp_path)): stat.filemode(path.stat().st_mode)
                 for path in written}  # fmt: skip
        assert {name: mode for name, mode in modes.items() if mode != expected} == {}, umask
