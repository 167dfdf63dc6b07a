"""How long the command takes to answer without playing anything: help, version, a bad option.

Each command runs as its own process, `--runs` times, alternating so that a shared machine's
drift falls on all of them alike; the table gives the median and the fastest wall time of each,
and what it takes beyond starting Python (`python -c pass`, the floor no command gets under).
The commands are the console script next to this interpreter, as a user runs them:

    python scripts/startup.py [--runs 10]

tests/test_startup.py checks what these commands import (nothing beyond the standard library
and the parser's own light modules); this script only times them, since a wall-clock limit in a
test fails on a busy machine.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

BIN = Path(sys.executable).parent
COMMAND = str(BIN / "privateshared")
COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "privateshared --help": [COMMAND, "--help"],
    "privateshared run --help": [COMMAND, "run", "--help"],
    "privateshared --version": [COMMAND, "--version"],
    "privateshared run --concurrency x": [COMMAND, "run", "--concurrency", "x"],
}
"""What is timed, by the name the table shows; the first is the floor the others are set against."""


def seconds(command: list[str]) -> float:
    """Wall time of one run of `command`, its output discarded."""
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, metavar="N", help="runs of each command")
    options = parser.parse_args()
    if options.runs < 1:
        parser.error("--runs must be at least 1")
    if not Path(COMMAND).is_file():
        parser.error(f"no {COMMAND}; run this with the python of the environment that installed it")
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(options.runs):
        for name, command in COMMANDS.items():
            times[name].append(seconds(command))
    floor = statistics.median(times["python -c pass"])
    width = max(map(len, COMMANDS))
    print(f"{'command':<{width}}  median s   min s  median - python -c pass")
    for name, taken in times.items():
        median = statistics.median(taken)
        print(f"{name:<{width}}  {median:8.3f}  {min(taken):6.3f}  {median - floor:+8.3f}")
    print(f"({options.runs} runs each, {sys.platform}, Python {sys.version.split()[0]})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
