"""How fast a run is, side by side with clembench: wall time, CPU per call, latency, memory.

The benchmark is clembench's own: its 50 instances and texts (five experiments, 4,800 answerer
calls), played with `--instances` and `--resources` against the local fake endpoint
(`privateshared.bench.testing.fake_endpoint`, a perfect answerer in its own process) with a
given latency per call. Each measured command is the real one, start-up and final report included:

    privateshared run --model fake-model --base-url URL --concurrency 50 \\
        --instances CLEMBENCH/instances.json --resources CLEMBENCH/texts --results-dir TMP

CPU is the run's own, its worker processes included (wait4), plus the endpoint's (from /proc),
counted on both sides: clembench's figures below were taken against the same endpoint. Memory is
the resident memory of the run and its workers together (proportional set sizes, so that pages
a worker shares with the process it was forked from count once), sampled every 50 ms.

clembench runs side by side, alternating with ours, when `--clem` names its `clem` command and
`--clembench-game` its privateshared game folder (docs/performance.md says how to set them
up); shared machines drift from run to run, so only figures taken in the same minutes
compare. Without them, the figures recorded below stand in (or --clembench-wall and
--clembench-cpu-per-call).
clembench plays its calls one after another, so its time at latency L is its time at 0 plus
calls x L.

    python scripts/perf.py --clem ~/clem/bin/clem --clembench-game ~/clembench/privateshared
    python scripts/perf.py --skip-memory    # without the 1,000-episode memory run
    python scripts/perf.py --profile        # where the CPU goes, by area, in one process
    python scripts/perf.py --langchain      # the LangChain path (ChatOpenAI) beside the fast path

`--langchain` plays the same benchmark twice per pair at latency 0: through the fast path, and
through langchain-openai's `ChatOpenAI` named by a registry entry (`provider: openai`,
`base_url`: the fake endpoint), and reports each one's CPU per call: a figure, no target.
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
CLEMBENCH_WALL = 22.2
"""clembench's wall time at latency 0 (clemcore 3.4.2, `clem run -g privateshared`), seconds:
the median of three runs on the development machine, side by side with ours (2026-11-23)."""
CLEMBENCH_CPU_PER_CALL = 4.68
"""clembench's CPU per call at latency 0, its process and the endpoint's, milliseconds (same
runs)."""
SHORT = ("travel-booking", "job-interview", "restaurant")
LONG = ("things-places",)


@dataclass(frozen=True)
class Measurement:
    wall: float
    run_cpu: float
    endpoint_cpu: float
    calls: int
    peak_memory_mb: float

    @property
    def cpu_per_call_ms(self) -> float:
        return 1000 * (self.run_cpu + self.endpoint_cpu) / self.calls


def _ticks(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _tree_memory_mb(pid: int) -> float:
    """Memory of `pid` and its descendants, in MB: each one's proportional set size, so that
    the pages a forked worker shares with the run's process count once, not in both."""
    total, stack = 0, [pid]
    while stack:
        current = stack.pop()
        try:
            rollup = Path(f"/proc/{current}/smaps_rollup").read_text()
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except OSError:  # it has just exited
            continue
        # a process that is exiting has no Pss line any more
        total += next((int(line.split()[1]) for line in rollup.splitlines()
                       if line.startswith("Pss:")), 0)  # fmt: skip
        stack += [int(child) for child in children]
    return total / 1024


class Endpoint:
    """The fake endpoint in its own process, answering perfectly with `latency` per call."""

    def __init__(self, latency: float, instances: Path, texts: Path | None) -> None:
        command = [str(BIN / "python"), "-m", "privateshared.bench.testing.fake_endpoint",
                   "--latency", str(latency), "--instances", str(instances)]  # fmt: skip
        if texts is not None:
            command += ["--resources", str(texts)]
        # Its stderr is dropped: clients that hang up mid-reply make it print tracebacks.
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
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
        texts: Path | None = TEXTS, model: list[str] | None = None) -> Measurement:  # fmt: skip
    """One `privateshared run` against `endpoint`, measured; `model` names the answerer
    (default: the fast path's fake-model at the endpoint)."""
    model = model or ["--model", "fake-model", "--base-url", endpoint.url]
    command = [str(BIN / "privateshared"), "run", *model, "--instances", str(instances),
               "--results-dir", str(results), *(["--resources", str(texts)] if texts else []),
               *options]  # fmt: skip
    env = {**os.environ, "OPENAI_API_KEY": "not-needed"}
    before, peak, start = endpoint.cpu(), [0.0], time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, env=env)
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.05):
            peak[0] = max(peak[0], _tree_memory_mb(process.pid))

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


def measure_clembench(clem: Path, game: Path) -> Measurement:
    """One `clem run` of clembench's privateshared against the fake endpoint at latency 0,
    from a scratch folder holding the endpoint's key file, a registry entry for the model and
    the game (clembench finds games and keys in the folder it runs in)."""
    endpoint = Endpoint(0.0, INSTANCES, TEXTS)
    try:
        with tempfile.TemporaryDirectory() as scratch:
            folder = Path(scratch)
            (folder / "key.json").write_text(json.dumps(
                {"openai_compatible": {"api_key": "not-needed", "base_url": endpoint.url}}
            ))  # fmt: skip
            (folder / "model_registry.json").write_text(json.dumps([{
                "model_name": "fake-model", "model_id": "fake-model",
                "backend": "openai_compatible", "open_weight": True, "release_date": "",
                "parameters": "", "languages": ["en"], "context_size": "",
                "license": {"name": "", "url": ""}, "model_config": {},
            }]))  # fmt: skip
            (folder / "privateshared").symlink_to(game.resolve())
            command = [str(clem), "run", "-g", "privateshared", "-m", "fake-model", "-r",
                       str(folder / "results")]  # fmt: skip
            before, start = endpoint.cpu(), time.perf_counter()
            process = subprocess.Popen(command, cwd=folder, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)  # fmt: skip
            _, status, usage = os.wait4(process.pid, 0)
            wall = time.perf_counter() - start
            if os.waitstatus_to_exitcode(status) != 0:
                raise SystemExit(f"clembench's run failed: {' '.join(command)} (in {folder})")
            calls = sum(sum(json.loads(p.read_text())["Request Count"])
                        for p in (folder / "results").rglob("interactions.json"))  # fmt: skip
            served = endpoint.cpu() - before
    finally:
        endpoint.stop()
    return Measurement(wall, usage.ru_utime + usage.ru_stime, served, calls, 0)


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
    ("bench/reporting/transcripts", "report: transcripts"),
    ("bench/reporting/evaluate.py", "report: evaluation"),
    ("bench/reporting/results.py", "report: evaluation"),
    ("bench/reporting/plots.py", "report: plots"), ("numpy", "scoring (numpy)"),
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
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    by_area: dict[str, float] = {}

    def area_of(function: tuple[str, int, str]) -> str | None:
        file, _, name = function
        where = file if file != "~" else name  # built-in functions have no file
        return next((area for pattern, area in AREAS if pattern in where), None)

    def charge(function: tuple[str, int, str], seconds: float, depth: int) -> None:
        """Charge a function's own time to its area; time of code in no area (the standard
        library, built-ins) to its callers', in proportion, up to a few calls up."""
        area = area_of(function)
        callers = stats[function][4] if function in stats else {}
        if area is not None or depth == 0 or not callers:
            by_area[area or "other"] = by_area.get(area or "other", 0.0) + seconds
            return
        spent = sum(timing[2] for timing in callers.values()) or 1.0
        for caller, timing in callers.items():
            charge(caller, seconds * timing[2] / spent, depth - 1)

    for function, (_, _, own, _, _) in stats.items():
        charge(function, own, depth=4)
    total = sum(by_area.values())
    print(
        f"CPU by area, one process under cProfile, start-up imports aside ({total:.1f} s with "
        "the profiler's cost):"
    )
    for area, seconds in sorted(by_area.items(), key=lambda item: -item[1]):
        print(f"  {100 * seconds / total:5.1f} %  {area}")


def fixed_costs(options: list[str]) -> tuple[float, float]:
    """CPU of start-up alone (importing the run command) and of a run with nothing left to play
    (start-up, checks and the final report), seconds."""
    before = os.times()
    # The run command's module, not the package: the package imports only the parser, and each
    # command its own module once parsed (bench/cli/__init__.py).
    subprocess.run([str(BIN / "python"), "-c", "import privateshared.bench.cli.run"], check=True)
    after = os.times()
    start_up = (after.children_user + after.children_system
                - before.children_user - before.children_system)  # fmt: skip
    endpoint = Endpoint(0.0, INSTANCES, TEXTS)
    try:
        with tempfile.TemporaryDirectory() as results:
            run(endpoint, Path(results), options)
            again = run(endpoint, Path(results), options)
    finally:
        endpoint.stop()
    return start_up, again.run_cpu


def compare_langchain(options: list[str], repeat: int) -> None:
    """The fast path and the LangChain path (ChatOpenAI from a registry entry) on the same
    benchmark at latency 0, alternating, `repeat` pairs: wall time and CPU per call."""
    endpoint = Endpoint(0.0, INSTANCES, TEXTS)
    paths: dict[str, list[Measurement]] = {"fast path": [], "LangChain (ChatOpenAI)": []}
    try:
        with tempfile.TemporaryDirectory() as scratch:
            registry = Path(scratch) / "models.json"
            registry.write_text(json.dumps({"models": [{
                "name": "fake-model-langchain", "provider": "openai", "model": "fake-model",
                "base_url": endpoint.url,
            }]}))  # fmt: skip
            models = {
                "fast path": ["--model", "fake-model", "--base-url", endpoint.url],
                "LangChain (ChatOpenAI)": ["--models", str(registry), "--model",
                                           "fake-model-langchain"],
            }  # fmt: skip
            for index in range(repeat):
                for path, model in models.items():
                    results = Path(scratch) / f"{index}-{len(paths[path])}-{path[:4]}"
                    paths[path].append(run(endpoint, results, options, model=model))
    finally:
        endpoint.stop()
    print(f"{'latency 0, ' + str(repeat) + ' runs each (median)':40}{'wall':>9}"
          f"{'CPU/call':>11}{'run only':>11}")  # fmt: skip
    for path, measured in paths.items():
        run_only = median([1000 * m.run_cpu / m.calls for m in measured])
        print(f"{path:40}{median([m.wall for m in measured]):>8.1f}s"
              f"{median([m.cpu_per_call_ms for m in measured]):>9.2f}ms{run_only:>9.2f}ms"
              f"   ({measured[0].calls} calls)")  # fmt: skip


def median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--clem", type=Path, help="clembench's `clem` command, to run it here")
    parser.add_argument("--clembench-game", type=Path, help="clembench's privateshared folder")
    parser.add_argument("--repeat", type=int, default=3, help="latency-0 pairs (default: 3)")
    parser.add_argument("--clembench-wall", type=float, default=CLEMBENCH_WALL)
    parser.add_argument("--clembench-cpu-per-call", type=float, default=CLEMBENCH_CPU_PER_CALL)
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--memory-episodes", type=int, default=1000)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument(
        "--langchain", action="store_true",
        help="CPU per call of the LangChain path (ChatOpenAI) beside the fast path's, only",
    )  # fmt: skip
    args = parser.parse_args()
    if not INSTANCES.is_file() or not TEXTS.is_dir():
        raise SystemExit(f"clembench's instances and texts are needed: {INSTANCES}, {TEXTS}")
    options = ["--concurrency", str(args.concurrency)]
    if args.profile:
        profile(options)
        return
    if args.langchain:
        compare_langchain(options, args.repeat)
        return

    # Latency 0, side by side: each of our runs right after one of clembench's.
    pairs = []
    for _ in range(args.repeat):
        clem = measure_clembench(args.clem, args.clembench_game) if args.clem else None
        pairs.append((clem, measure_latency(0.0, options)))
    ours = [m for _, m in pairs]
    zero_wall = median([m.wall for m in ours])
    zero_cpu = median([m.cpu_per_call_ms for m in ours])
    if args.clem:
        clems = [c for c, _ in pairs if c is not None]
        clem_wall = median([c.wall for c in clems])
        clem_cpu = median([c.cpu_per_call_ms for c in clems])
        source = f"measured here, median of {len(clems)}"
    else:
        clem_wall, clem_cpu = args.clembench_wall, args.clembench_cpu_per_call
        source = "recorded, see CLEMBENCH_WALL"
    tenth, one = measure_latency(0.1, options), measure_latency(1.0, options)
    print(f"{'':40}{'wall':>9}{'CPU/call':>11}")
    print(f"{'clembench, latency 0':40}{clem_wall:>8.1f}s{clem_cpu:>9.2f}ms   ({source})")
    print(f"{'ours, latency 0':40}{zero_wall:>8.1f}s{zero_cpu:>9.2f}ms   (median of "
          f"{len(ours)}; {ours[0].calls} calls)")  # fmt: skip
    for latency, m in ((0.1, tenth), (1.0, one)):
        print(f"{f'ours, latency {latency:g} s':40}{m.wall:>8.1f}s{m.cpu_per_call_ms:>9.2f}ms")
    for clem, m in pairs:
        if clem is not None:
            print(f"  pair: clembench {clem.wall:.1f} s, {clem.cpu_per_call_ms:.2f} ms/call "
                  f"(run {clem.run_cpu:.1f} s + endpoint {clem.endpoint_cpu:.1f} s); ours "
                  f"{m.wall:.1f} s, {m.cpu_per_call_ms:.2f} ms/call (run {m.run_cpu:.1f} s + "
                  f"endpoint {m.endpoint_cpu:.1f} s)")  # fmt: skip

    start_up, fixed = fixed_costs(options)
    play = median([m.run_cpu for m in ours]) - fixed
    print(f"\nwhere our CPU goes at latency 0: {fixed:.1f} s for a run with nothing left to play "
          f"(start-up, checks, final report; importing `run` alone takes {start_up:.1f} s),"
          f" {play:.1f} s playing = {1000 * play / ours[0].calls:.2f} ms per call; the endpoint"
          f" {median([m.endpoint_cpu for m in ours]):.1f} s. By area: --profile\n")  # fmt: skip

    critical = CRITICAL_PATH_CALLS * 1.0
    short = marginal_cpu_per_call(SHORT, options)
    long = marginal_cpu_per_call(LONG, options)
    targets = [
        ("wall at 0 ms, x clembench's", zero_wall / clem_wall, "<= 0.5"),
        ("CPU per call at 0 ms, x clembench's", zero_cpu / clem_cpu, "<= 0.5"),
        ("speed-up at 100 ms (clembench: 0 ms time + calls x 0.1 s)",
         (clem_wall + CALLS * 0.1) / tenth.wall, ">= 20"),
        (f"wall(1 s) - wall(0), x the critical path ({critical:.0f} s)",
         (one.wall - zero_wall) / critical, "<= 1.3"),
        (f"CPU per call, 15 slots ({long:.2f} ms) / 5 slots ({short:.2f} ms)", long / short,
         "<= 1.25"),
    ]  # fmt: skip
    if not args.skip_memory:
        memory, played = measure_memory(args.memory_episodes)
        targets.append((f"peak memory, {played} episodes at once (MB)", memory.peak_memory_mb,
                        "<= 1024"))  # fmt: skip
    for name, value, target in targets:
        bound = float(target.split()[1])
        met = value <= bound if target.startswith("<=") else value >= bound
        print(f"{name:66} {value:8.2f}  target {target:7}  {'met' if met else 'NOT MET'}")


if __name__ == "__main__":
    main()
