"""How fast a run is, side by side with clembench: wall time, CPU per call, latency, memory.

The benchmark is clembench's own: its 50 instances and texts (five experiments, 4,800 answerer
calls), played with `--instances` and `--resources` against the local fake endpoint
(`privateshared.bench.fake_endpoint`, a perfect answerer in its own process) with a given latency
per call. Each measured command is the real one, start-up and final report included:

    privateshared run --model fake-model --base-url URL --concurrency 50 \\
        --instances CLEMBENCH/instances.json --resources CLEMBENCH/texts --results-dir TMP

CPU is the run's own, its worker processes included (wait4), plus the endpoint's (from /proc),
counted on both sides: clembench's figures below were taken against the same endpoint. Memory is
the resident size of the run and its workers together, sampled every 50 ms.

clembench is not run here: its figures were measured on the same machine, the same day, against
the same endpoint, and the README says how to measure them again (pass them with
--clembench-wall and --clembench-cpu-per-call). clembench plays its calls one after another, so
its time at latency L is its time at 0 plus calls x L.

    python scripts/perf.py                  # every target (about 3 minutes on 2 cores)
    python scripts/perf.py --skip-memory    # without the 1,000-episode memory run
    python scripts/perf.py --profile        # where the CPU goes, by area, in one process
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
INSTANCES = SHARED / "clembench-records" / "v2.0" / "instances.json"
TEXTS = SHARED / "clembench-resources" / "texts"
CALLS = 4800
"""Answerer calls of a perfect answerer over clembench's 50 instances."""
CRITICAL_PATH_CALLS = 31
"""The longest episode's calls one after another: 16 probing rounds and 15 answers."""
CLEMBENCH_WALL = 24.8
"""clembench's wall time at latency 0 (clemcore 3.4.2, `clem run -g privateshared`), seconds."""
CLEMBENCH_CPU_PER_CALL = 5.23
"""clembench's CPU per call at latency 0, its process and the endpoint's, milliseconds."""
SHORT = ("travel-booking", "job-interview", "restaurant")
LONG = ("things-places",)


@dataclass(frozen=True)
class Measurement:
    wall: float
    run_cpu: float
    endpoint_cpu: float
    calls: int
    peak_rss_mb: float

    @property
    def cpu_per_call_ms(self) -> float:
        return 1000 * (self.run_cpu + self.endpoint_cpu) / self.calls


def _ticks(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _tree_rss_mb(pid: int) -> float:
    """Resident memory of `pid` and its descendants, in MB."""
    total, stack = 0, [pid]
    while stack:
        current = stack.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except OSError:
            continue
        # a process that is exiting has no VmRSS line any more
        total += next((int(line.split()[1]) for line in status.splitlines()
                       if line.startswith("VmRSS:")), 0)  # fmt: skip
        stack += [int(child) for child in children]
    return total / 1024


class Endpoint:
    """The fake endpoint in its own process, answering perfectly with `latency` per call."""

    def __init__(self, latency: float, instances: Path, texts: Path | None) -> None:
        command = [str(BIN / "python"), "-m", "privateshared.bench.fake_endpoint",
                   "--latency", str(latency), "--instances", str(instances)]  # fmt: skip
        if texts is not None:
            command += ["--resources", str(texts)]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()
        if not self.url.startswith("http"):
            self.process.kill()
            raise SystemExit(f"the fake endpoint did not start (printed {self.url!r})")

    def cpu(self) -> float:
        return _ticks(self.process.pid)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait()


def run(endpoint: Endpoint, results: Path, options: list[str], instances: Path = INSTANCES,
        texts: Path | None = TEXTS) -> Measurement:  # fmt: skip
    """One `privateshared run` against `endpoint`, measured."""
    command = [str(BIN / "privateshared"), "run", "--model", "fake-model", "--base-url",
               endpoint.url, "--instances", str(instances), "--results-dir", str(results),
               *(["--resources", str(texts)] if texts else []), *options]  # fmt: skip
    env = {**os.environ, "OPENAI_API_KEY": "not-needed"}
    before, peak, start = endpoint.cpu(), [0.0], time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, env=env)
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.05):
            peak[0] = max(peak[0], _tree_rss_mb(process.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    done.set()
    sampler.join()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"the run failed: {' '.join(command)}")
    calls = sum(len(json.loads(p.read_text())) for p in results.rglob("requests.json"))
    return Measurement(wall, usage.ru_utime + usage.ru_stime, endpoint.cpu() - before, calls,
                       peak[0])  # fmt: skip


def measure_latency(latency: float, options: list[str]) -> Measurement:
    endpoint = Endpoint(latency, INSTANCES, TEXTS)
    try:
        with tempfile.TemporaryDirectory() as results:
            return run(endpoint, Path(results), options)
    finally:
        endpoint.stop()


def marginal_cpu_per_call(experiments: tuple[str, ...], options: list[str]) -> float:
    """CPU per call (the run's, the endpoint's apart) without the run's fixed cost: the same
    command again on the finished folder plays nothing, and costs start-up and report alone."""
    endpoint = Endpoint(0.0, INSTANCES, TEXTS)
    chosen = [option for name in experiments for option in ("--experiment", name)]
    try:
        with tempfile.TemporaryDirectory() as results:
            played = run(endpoint, Path(results), [*options, *chosen])
            again = run(endpoint, Path(results), [*options, *chosen])
    finally:
        endpoint.stop()
    return 1000 * (played.run_cpu - again.run_cpu) / played.calls


def measure_memory(episodes: int) -> tuple[Measurement, int]:
    """`episodes` travel-booking episodes under way at once (1 s per call keeps them all
    waiting together); returns the measurement and the episodes played."""
    with tempfile.TemporaryDirectory() as scratch:
        instances = Path(scratch) / "instances.json"
        subprocess.run(
            [str(BIN / "privateshared"), "instances", "--per-domain", str(episodes), "--out",
             str(instances)], check=True, capture_output=True,
        )  # fmt: skip
        endpoint = Endpoint(1.0, instances, None)
        try:
            results = Path(scratch) / "records"
            measured = run(endpoint, results, ["--concurrency", str(episodes), "--experiment",
                                               "travel-booking"], instances, None)  # fmt: skip
            played = len(list(results.rglob("scores.json")))
        finally:
            endpoint.stop()
    return measured, played


AREAS = (
    ("graph/recorder.py", "records: building and writing"),
    ("bench/transcript", "report: transcripts"), ("bench/evaluate.py", "report: evaluation"),
    ("bench/results.py", "report: evaluation"),
    ("bench/plots.py", "report: plots"), ("numpy", "scoring (numpy)"),
    ("agents/llm.py", "model player"), ("/openai/", "openai SDK"), ("aiohttp", "HTTP"),
    ("yarl", "HTTP"), ("multidict", "HTTP"), ("httpx", "HTTP"), ("httpcore", "HTTP"),
    ("/langgraph/", "LangGraph"), ("langchain_core", "LangGraph"), ("/pydantic", "pydantic"),
    ("/graph/", "game master"), ("/agents/", "game master"), ("/domains/", "instances"),
    ("/bench/", "runner"), ("/json/", "JSON"), ("<frozen", "imports"),
    ("asyncio", "event loop"), ("selectors", "event loop"), ("socket", "event loop"),
)  # fmt: skip
"""Areas of the code, matched in order against the file of each function."""


def profile(options: list[str]) -> None:
    """Run once in this process under cProfile (one worker) and print CPU by area: each
    function's own time goes to the first area its file matches."""
    from privateshared.bench.cli import main

    endpoint = Endpoint(0.0, INSTANCES, TEXTS)
    os.environ["OPENAI_API_KEY"] = "not-needed"
    try:
        with tempfile.TemporaryDirectory() as results:
            argv = ["run", "--model", "fake-model", "--base-url", endpoint.url, "--instances",
                    str(INSTANCES), "--resources", str(TEXTS), "--results-dir", results,
                    "--workers", "1", *options]  # fmt: skip
            profiler = cProfile.Profile()
            with open(os.devnull, "w") as quiet:
                stdout, sys.stdout = sys.stdout, quiet
                try:
                    profiler.runcall(main, argv)
                finally:
                    sys.stdout = stdout
    finally:
        endpoint.stop()
    stats = pstats.Stats(profiler)
    by_area: dict[str, float] = {}
    for (file, _, function), (_, _, own, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        # built-in functions have no file; their name tells what they serve
        where = file if file != "~" else function
        area = next((name for pattern, name in AREAS if pattern in where), "other")
        by_area[area] = by_area.get(area, 0.0) + own
    total = sum(by_area.values())
    print(f"CPU by area, one process under cProfile ({total:.1f} s with the profiler's cost):")
    for area, seconds in sorted(by_area.items(), key=lambda item: -item[1]):
        print(f"  {100 * seconds / total:5.1f} %  {area}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--clembench-wall", type=float, default=CLEMBENCH_WALL)
    parser.add_argument("--clembench-cpu-per-call", type=float, default=CLEMBENCH_CPU_PER_CALL)
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--memory-episodes", type=int, default=1000)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    if not INSTANCES.is_file() or not TEXTS.is_dir():
        raise SystemExit(f"clembench's instances and texts are needed: {INSTANCES}, {TEXTS}")
    options = ["--concurrency", str(args.concurrency)]
    if args.profile:
        profile(options)
        return

    at = {latency: measure_latency(latency, options) for latency in (0.0, 0.1, 1.0)}
    clem_wall = {lat: args.clembench_wall + CALLS * lat for lat in at}
    print(f"{'':38}{'wall':>10}{'CPU/call':>12}")
    print(f"{'clembench, latency 0 (measured)':38}{args.clembench_wall:>9.1f}s"
          f"{args.clembench_cpu_per_call:>10.2f}ms")  # fmt: skip
    for latency, m in at.items():
        print(
            f"{f'ours, latency {latency:g} s':38}{m.wall:>9.1f}s{m.cpu_per_call_ms:>10.2f}ms"
            f"   ({m.calls} calls, run {m.run_cpu:.1f} s + endpoint {m.endpoint_cpu:.1f} s CPU)"
        )
    print()
    zero, tenth, one = at[0.0], at[0.1], at[1.0]
    critical = CRITICAL_PATH_CALLS * 1.0
    short = marginal_cpu_per_call(SHORT, options)
    long = marginal_cpu_per_call(LONG, options)
    targets = [
        ("wall at 0 ms, x clembench's", zero.wall / args.clembench_wall, "<= 0.5"),
        ("CPU per call at 0 ms, x clembench's",
         zero.cpu_per_call_ms / args.clembench_cpu_per_call, "<= 0.5"),
        ("speed-up at 100 ms (clembench: 0 ms time + calls x 0.1 s)",
         clem_wall[0.1] / tenth.wall, ">= 20"),
        (f"wall(1 s) - wall(0), x the critical path ({critical:.0f} s)",
         (one.wall - zero.wall) / critical, "<= 1.3"),
        (f"CPU per call, 15 slots ({long:.2f} ms) / 5 slots ({short:.2f} ms)", long / short,
         "<= 1.25"),
    ]  # fmt: skip
    if not args.skip_memory:
        memory, played = measure_memory(args.memory_episodes)
        targets.append((f"peak memory, {played} episodes at once (MB)", memory.peak_rss_mb,
                        "<= 1024"))  # fmt: skip
    for name, value, target in targets:
        bound = float(target.split()[1])
        met = value <= bound if target.startswith("<=") else value >= bound
        print(f"{name:66} {value:8.2f}  target {target:7}  {'met' if met else 'NOT MET'}")


if __name__ == "__main__":
    main()
