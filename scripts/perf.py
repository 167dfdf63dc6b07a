"""How fast a run is: wall time, model calls, CPU per call, against the critical path.

Starts the fake OpenAI-compatible endpoint (`privateshared.bench.fake_endpoint`, a perfect
answerer for the default instances) with a given latency per call in its own process, then times
the real command, start-up and reports included:

    privateshared run --model fake-model --base-url URL --concurrency 20 --results-dir TMP \
        --experiment travel-booking --experiment job-interview

CPU is the run process's own (user + system, from wait4), so the server's work is not counted.
The critical path is what no concurrency can shorten: per episode, 6 probing rounds and 5 answers
one after another, 11 latencies for 5 slots. The two 5-slot experiments measured are those the
figures in the README were first taken on (`--experiment` picks others).

    python scripts/perf.py                         # latencies 0, 0.1 and 1 s, concurrency 20
    python scripts/perf.py --latency 0.1 --concurrency 1
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

BIN = Path(sys.executable).parent
SEQUENTIAL_STEPS = 11
"""Per episode with 5 slots: 6 probing rounds and 5 answers."""


@dataclass(frozen=True)
class Measurement:
    latency: float
    concurrency: int
    wall: float
    cpu: float
    calls: int
    episodes: int

    @property
    def cpu_per_call_ms(self) -> float:
        return 1000 * self.cpu / self.calls

    @property
    def critical_path(self) -> float:
        return SEQUENTIAL_STEPS * self.latency


def _start_server(latency: float) -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen(
        [str(BIN / "python"), "-m", "privateshared.bench.fake_endpoint",
         "--latency", str(latency)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert server.stdout is not None
    url = server.stdout.readline().strip()
    if not url.startswith("http"):
        server.kill()
        raise SystemExit(f"the fake endpoint did not start (printed {url!r})")
    return server, url


def measure(latency: float, concurrency: int, experiments: list[str]) -> Measurement:
    """Time one full run of the default instances at `latency` seconds per call."""
    server, url = _start_server(latency)
    try:
        with tempfile.TemporaryDirectory() as results:
            command = [
                str(BIN / "privateshared"), "run", "--model", "fake-model", "--base-url", url,
                "--concurrency", str(concurrency), "--results-dir", results,
                *(option for name in experiments for option in ("--experiment", name)),
            ]  # fmt: skip
            env = {**os.environ, "OPENAI_API_KEY": "not-needed"}
            start = time.perf_counter()
            run = subprocess.Popen(command, stdout=subprocess.DEVNULL, env=env)
            _, status, usage = os.wait4(run.pid, 0)
            wall = time.perf_counter() - start
            if os.waitstatus_to_exitcode(status) != 0:
                raise SystemExit(f"the run failed: {' '.join(command)}")
            calls = sum(
                len(json.loads(path.read_text())) for path in Path(results).rglob("requests.json")
            )
            episodes = len(list(Path(results).rglob("scores.json")))
    finally:
        server.terminate()
        server.wait()
    return Measurement(latency, concurrency, wall, usage.ru_utime + usage.ru_stime, calls, episodes)


def report(m: Measurement) -> str:
    return (
        f"latency {m.latency:>5.2f} s  concurrency {m.concurrency:>3}  episodes {m.episodes}  "
        f"calls {m.calls}  wall {m.wall:6.2f} s  CPU {m.cpu:5.2f} s  "
        f"CPU/call {m.cpu_per_call_ms:4.2f} ms  critical path {m.critical_path:5.2f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--latency",
        type=float,
        action="append",
        help="seconds per call (repeatable; default: 0, 0.1 and 1)",
    )
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument(
        "--experiment",
        action="append",
        help="experiment to play (repeatable; default: travel-booking and job-interview)",
    )
    args = parser.parse_args()
    experiments = args.experiment or ["travel-booking", "job-interview"]
    latencies = args.latency or [0.0, 0.1, 1.0]
    results = {}
    for latency in latencies:
        results[latency] = measure(latency, args.concurrency, experiments)
        print(report(results[latency]), flush=True)
    if 0.0 in results and 1.0 in results:
        driven = results[1.0].wall - results[0.0].wall
        print(f"latency-driven part wall(1 s) - wall(0) = {driven:.2f} s = "
              f"{driven / results[1.0].critical_path:.2f} x the critical path "
              f"({results[1.0].critical_path:.0f} s; target at most 1.3 x)")  # fmt: skip
    if 0.1 in results:
        print(f"at 0.1 s per call: {75 / results[0.1].wall:.1f} x faster than clembench's "
              "sequential ~75 s (target at least 20 x)")  # fmt: skip
    if 0.0 in results:
        print(f"CPU per model call at latency 0: {results[0.0].cpu_per_call_ms:.2f} ms "
              "(target at most 3.7 ms, start-up included)")  # fmt: skip


if __name__ == "__main__":
    main()
