"""Atomic file writing: the one way this project writes a file.

Every record, result table, transcript page and instances file goes through `write_text`: the
text goes to a temporary file beside the target, is flushed to disk, and is renamed over the
target, so a crash, a full disk or Ctrl-C leaves the old file or the new one, never half of one.
A run that was killed between the two steps leaves a temporary file behind; the next run sweeps
it with `sweep_leftovers`, when it is the only run writing into the folder (another live run's
temporary files are its writes under way; bench/running/claims.py makes sure).

This module sits low (the recorder in graph/ needs it, and everything above it writes through
it) and imports nothing of the project.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path

from pydantic import BaseModel, JsonValue

TEMPORARY_SUFFIX = ".tmp"
"""Temporary files are `.<name>.<random>.tmp` beside their target: hidden, found by the sweep."""


def temporary_path(path: Path) -> Path:
    """A fresh name for the temporary file that becomes `path`."""
    return path.with_name(f".{path.name}.{secrets.token_hex(4)}{TEMPORARY_SUFFIX}")


def write_text(path: Path, text: str) -> None:
    """Write a file atomically: a crash leaves the old file or the new one, never half of one.

    The new file gets the permissions the user's umask gives a new file (as `open` would): the
    temporary file is created with mode 0o666, which the kernel narrows by the umask. (Python's
    `tempfile.mkstemp` would make every record -rw------- whatever the umask.)
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = temporary_path(path)
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            # Without fsync the rename may reach the disk before the data does: after a power
            # cut the episode would look done (scores.json present) with empty records.
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_json(path: Path, data: BaseModel | JsonValue) -> None:
    """Write JSON atomically. NaN is written as clembench writes it (`NaN`), so scores stay
    readable by its tools."""
    payload = data.model_dump(mode="python") if isinstance(data, BaseModel) else data
    write_text(path, json.dumps(payload, indent=2, ensure_ascii=False, allow_nan=True) + "\n")


def sweep_leftovers(folder: Path, pattern: str = "**/") -> int:
    """Delete the temporary files that killed writes left under `folder`; return how many.
    Only while nothing else writes there: a live writer's temporary file looks the same.

    `pattern` narrows where to look (a glob prefix relative to `folder`), so a sweep of a
    results folder never reaches into files that are not ours."""
    leftovers = list(folder.glob(f"{pattern}.*{TEMPORARY_SUFFIX}"))
    for path in leftovers:
        path.unlink(missing_ok=True)
    return len(leftovers)
