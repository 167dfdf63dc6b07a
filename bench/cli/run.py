"""`privateshared run`: the benchmark, from the command line's names to the printed table.

In order: the experiments to play (instances), the players (running/cast.py, after any local
model's server is up), a check call per model, the plan of what is left to play, the episodes
(in this process, in worker processes or on a Ray cluster), and the report over the folder.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections import Counter
from collections.abc import Sequence

from privateshared.bench.cli.report import report
from privateshared.bench.cli.usage import UsageError, check_writable
from privateshared.bench.running.benchmark import ExperimentError, select_experiments
from privateshared.bench.running.cast import DEFAULT_MAX_SLOTS, Cast, cast_players, named_models
from privateshared.bench.running.episodes import Finished, record_episode, run_episodes
from privateshared.bench.running.local_model import LocalServer, is_local_model, locate
from privateshared.bench.running.plan import (
    Episode,
    Playable,
    is_done,
    plan_episodes,
    write_experiment_files,
)
from privateshared.bench.running.progress import ProgressBar
from privateshared.bench.running.ray_cluster import connect, play_on_ray
from privateshared.bench.running.workers import OnFinished, default_workers, play_in_workers
from privateshared.graph.context import GameContext
from privateshared.graph.files import sweep_leftovers


def playable(args: argparse.Namespace) -> Playable:
    """The experiments the command line names (see `select_experiments`)."""
    try:
        return select_experiments(
            args.instances, args.experiments, args.domains or (), args.resources
        )
    except ExperimentError as error:
        raise UsageError(str(error)) from None


def run_command(args: argparse.Namespace) -> int:
    if min(args.concurrency, args.workers or 1, args.max_concurrent_calls or 1) < 1:
        raise UsageError("--concurrency, --workers and --max-concurrent-calls must be at least 1")
    experiments = playable(args)
    local = {
        name: locate(name)
        for name in named_models(args)
        if is_local_model(name) and name not in args.registry
    }
    cast_players(args, {})  # every other name is checked before a server starts
    check_writable(args.results_dir)
    with contextlib.ExitStack() as stack:
        servers = {
            name: stack.enter_context(
                LocalServer(model, args.results_dir / "logs" / f"llama-server-{model.alias}.log")
            )
            for name, model in local.items()
        }
        cast = cast_players(args, servers)
        assert cast is not None  # every local model has its server now
        # A model served here (llama.cpp) answers one call at a time and needs the cores:
        # more processes feeding it only take CPU from it.
        workers = args.workers or (1 if servers else default_workers())
        planned, finished = play(args, experiments, cast, workers)
    report(args.results_dir, this_run=planned)
    errors = Counter(result.error.kind for result in finished if result.error is not None)
    if errors:
        kinds = ", ".join(f"{kind} x{count}" for kind, count in errors.most_common())
        print(
            f"privateshared: {errors.total()} episodes errored, their model calls failing after "
            f"every retry ({kinds}; see error.json in their folders); run the same command "
            "again to play them",
            file=sys.stderr,
        )
        return 1
    return 0


def play(
    args: argparse.Namespace, experiments: Playable, cast: Cast, workers: int
) -> tuple[int, list[Finished]]:
    """Check the endpoints, then play every pending episode with a progress bar, in worker
    processes when there are cores for them; return how many episodes the run has (done ones
    included) and the ones played."""
    models = cast.models()
    for model in models:
        model.check()  # one call per model, before any episode starts
    # A cap on calls per model holds across workers: each gets its share of it.
    workers = max(1, min([workers, args.concurrency, *cast.caps(args.max_concurrent_calls)]))
    cast = cast.throttled(args.max_concurrent_calls, shares=workers)
    default_run = args.models is None  # see DEFAULT_MAX_SLOTS
    planned = plan_episodes(
        cast.answerers, cast.questioner, experiments, args.results_dir,
        max_slots=DEFAULT_MAX_SLOTS if default_run else None,
    )  # fmt: skip
    pending = [episode for episode in planned if args.rerun or not is_done(episode.folder)]
    if not pending:
        print(f"all {len(planned)} episodes of this run are already done; nothing to play "
              "(--rerun plays them all again)")  # fmt: skip
    elif len(pending) < len(planned):
        print(f"{len(planned) - len(pending)} of {len(planned)} episodes are already done; "
              f"playing the other {len(pending)} (--rerun plays them all again)")  # fmt: skip
    sweep_leftovers(args.results_dir)
    write_experiment_files(pending, cast.questioner, args.results_dir, cast.judge)
    workers = min(workers, max(len(pending), 1))
    concurrency = -(-args.concurrency // workers)

    def play_share(episodes: Sequence[Episode], on_finished: OnFinished) -> list[Finished]:
        async def play_and_close() -> list[Finished]:
            try:
                return await run_episodes(
                    episodes, cast.questioner, args.results_dir, concurrency=concurrency,
                    sequential_probes=args.sequential_probes, judge=cast.judge,
                    on_finished=on_finished,
                )  # fmt: skip
            finally:
                for model in models:
                    await model.aclose()

        return asyncio.run(play_and_close())

    progress = ProgressBar(len(pending))
    try:
        if args.ray is not None:
            return len(planned), play_on_ray(
                connect(args.ray), pending, cast, args.max_concurrent_calls,
                args.sequential_probes, args.concurrency,
                lambda episode, state: record_episode(episode, state, GameContext(
                    answerer=episode.answerer, questioner=cast.questioner, judge=cast.judge,
                ), args.results_dir),
                progress,
            )  # fmt: skip
        if workers == 1:
            return len(planned), play_share(pending, progress)
        return len(planned), play_in_workers(pending, play_share, workers, on_finished=progress)
    finally:
        progress.close()
