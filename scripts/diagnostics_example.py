"""Make the worked example of docs/diagnostics.md: its tables and its plot.

Replays the clembench records kept next to the repository (../shared/clembench-records, both
layouts) with the README's replay commands into a scratch folder, evaluates it as
`privateshared eval` does, copies the plot to docs/img/diagnostics-clembench.svg and prints the
rows of the Diagnostics tables the page shows (each model over all its experiments). Then plays
the seeded mock over the default instances, to print what the intervals look like with 50
episodes a model. tests/test_diagnostics.py checks that the page shows what this prints.

    python scripts/diagnostics_example.py
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import sys
import tempfile
from pathlib import Path

from privateshared.bench.cli import main

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
RECORDS = SHARED / "clembench-records"
RESOURCES = SHARED / "clembench-resources" / "texts"
PLOT = REPO / "docs" / "img" / "diagnostics-clembench.svg"
TABLES = ("## Diagnostics", "### Under-attribution by rounds since the slot became shared")
"""The results.md tables the page quotes, by their headings."""


def _quiet(argv: list[str]) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    if code != 0:
        raise SystemExit(f"privateshared {' '.join(argv)} exited with {code}")


def replayed(results: Path) -> None:
    """The README's replay of both layouts into `results`, then eval."""
    for records in ("v2.0", "v2.0-newformat"):
        _quiet(["replay", str(RECORDS / records), "--instances",
                str(RECORDS / "v2.0" / "instances.json"), "--resources", str(RESOURCES),
                "--results-dir", str(results)])  # fmt: skip
    _quiet(["eval", str(results)])


def first_table(markdown: str, heading: str) -> list[str]:
    """The first table under `heading`: its header, rule, then each model's `all` row."""
    lines = markdown[markdown.index(heading + "\n") :].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    table = lines[start:end]
    return [*table[:2], *(row for row in table[2:] if row.split(" | ")[1] == "all")]


def mock_line(results: Path) -> str:
    """The seeded mock's over- and under-attribution over the default instances, as the page
    quotes it."""
    _quiet(["run", "--model", "mock", "--results-dir", str(results)])
    (row,) = json.loads((results / "results.json").read_text())["models"]
    found = row["diagnostics"]

    def shown(name: str) -> str:
        rate = found[name]
        low, high = rate["ci95"]
        return f"{rate['rate']:.2f} [{low:.2f}, {high:.2f}] ({rate['count']}/{rate['total']})"

    return (
        f"mock, {found['episodes']} episodes: over-attribution {shown('over_attribution')}, "
        f"under-attribution {shown('under_attribution')}"
    )


def main_() -> int:
    if not RECORDS.is_dir() or not RESOURCES.is_dir():
        print(f"{RECORDS} and {RESOURCES} are needed; they are not here", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as scratch:
        results = Path(scratch) / "replayed"
        replayed(results)
        markdown = (results / "results.md").read_text()
        PLOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(results / "diagnostics.svg", PLOT)
        for heading in TABLES:
            print("\n".join(first_table(markdown, heading)), end="\n\n")
        print(mock_line(Path(scratch) / "mock"))
    print(f"\nplot: {PLOT.relative_to(REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main_())
