"""Bad command-line input, and the checks every command makes before it writes anything."""

from __future__ import annotations

import tempfile
from pathlib import Path


class UsageError(ValueError):
    """Bad command-line input; the message is one line with the fix."""


def check_writable(folder: Path, option: str = "--results-dir") -> None:
    """Make `folder` if needed and check that files can be written there, or `UsageError`."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".write-check-"):
            pass
    except OSError as error:
        raise UsageError(
            f"cannot write to {folder} ({error.strerror}); pass a writable {option}"
        ) from None
