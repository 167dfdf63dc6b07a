"""The records of a deterministic benchmark, pinned: work on speed must not change a byte of them.

Two runs against the local fake endpoint, whose players are deterministic: a model answerer and
the seeded mock over all 50 default instances with the programmatic questioner, and the oracle
with a model questioner over travel-booking. Every file they write (records, results,
transcripts; not the pictures) is compared with the digests in `golden/records.json`, with what
may differ from run to run taken out: timestamps, and the `created` time of each completion.

When a change of the records is intended, regenerate the digests and say why in the commit:

    .venv/bin/python -m tests.test_golden_records
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import sys
from pathlib import Path
from typing import Any

from privateshared.bench.cli import main
from privateshared.bench.testing.fake_endpoint import FakeOpenAI
from privateshared.bench.testing.fake_players import default_players

GOLDEN = Path(__file__).parent / "golden" / "records.json"
PICTURES = frozenset({".png", ".svg"})
"""The plots: results drawn from the records, not records."""
VOLATILE = frozenset({"timestamp", "created", "at", "base_url"})
"""Keys whose values are clock readings, or the address of the fake endpoint (a free port)."""
RUNS = {
    "answerers": ["--model", "fake-model", "--model", "mock"],
    "questioner": ["--model", "oracle", "--questioner", "fake-model",
                   "--experiment", "travel-booking"],
}  # fmt: skip


def without_clock(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: without_clock(v) for k, v in data.items() if k not in VOLATILE}
    if isinstance(data, list):
        return [without_clock(item) for item in data]
    return data


def digest(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        text = json.dumps(without_clock(json.loads(text)), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def play(folder: Path) -> dict[str, str]:
    """Play both runs under `folder` and digest every file they wrote."""
    digests = {}
    with FakeOpenAI(default_players()) as server, contextlib.redirect_stdout(io.StringIO()):
        for name, argv in RUNS.items():
            results = folder / name
            code = main(["run", *argv, "--base-url", server.base_url, "--results-dir",
                         str(results)])  # fmt: skip
            assert code == 0, name
            for path in sorted(results.rglob("*")):
                if path.is_file() and path.suffix not in PICTURES and path.parent.name != "logs":
                    digests[str(path.relative_to(folder))] = digest(path)
    return digests


def test_records_are_byte_for_byte_the_pinned_ones(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-golden")
    played = play(tmp_path)
    pinned = json.loads(GOLDEN.read_text())
    assert sorted(played) == sorted(pinned)  # the same files
    changed = [path for path in played if played[path] != pinned[path]]
    assert changed == [], f"{len(changed)} files differ, e.g. {changed[:5]}"


if __name__ == "__main__":
    import tempfile

    os.environ["OPENAI_API_KEY"] = "sk-golden"
    with tempfile.TemporaryDirectory() as scratch:
        digests = play(Path(scratch))
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(digests)} digests to {GOLDEN}", file=sys.stderr)
