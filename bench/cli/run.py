"""`privateshared run`: the benchmark, from the command line's names to the printed table.

In order: the experiments to play (instances), the players (running/cast.py, after any local
model's server is up), a check call per model, the plan of what is left to play, the episodes
(in this process, in worker processes or on a Ray cluster), and the report over the folder.
From the plan to the report the run holds the results folder beside any other run into it
(running/claims.py), so that two runs share its episodes instead of each playing them all.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from privateshared.bench.cli.dry_run import dry_run
from privateshared.bench.cli.report import report
from privateshared.bench.cli.usage import UsageError, check_writable
from privateshared.bench.defaults import default_workers
from privateshared.bench.running.benchmark import ExperimentError, select_experiments
from privateshared.bench.running.budget import (
    BudgetedRun,
    budgeted_run,
    instance_estimates,
    is_budgeted,
    stop_lines,
)
from privateshared.bench.running.cast import DEFAULT_MAX_SLOTS, Cast, cast_players, named_models
from privateshared.bench.running.claims import hold_folder
from privateshared.bench.running.episodes import Finished, record_episode, run_episodes
from privateshared.bench.running.layout import model_spec_of
from privateshared.bench.running.llama_build import BUILD_COMMAND
from privateshared.bench.running.local_model import (
    LocalModel,
    LocalServer,
    LocalServerExited,
    is_local_model,
    locate,
)
from privateshared.bench.running.plan import (
    Episode,
    Playable,
    pending_episodes,
    plan_episodes,
    write_experiment_files,
)
from privateshared.bench.running.preflight import check_models
from privateshared.bench.running.progress import ProgressBar
from privateshared.bench.running.ray_cluster import connect, play_on_ray
from privateshared.bench.running.workers import OnFinished, play_in_workers
from privateshared.graph.context import GameContext


def playable(args: argparse.Namespace) -> Playable:
    """The experiments the command line names (see `select_experiments`)."""
    try:
        return select_experiments(
            args.instances, args.experiments, args.domains or (), args.resources, args.limit
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
    if args.dry_run:  # before any server starts, any file is written, any key is read
        return dry_run(args, experiments, local)
    cast_players(args, {})  # every other name is checked before a server starts
    capped = [name for name in named_models(args)
              if getattr(args.registry.get(name), "max_cost", None) is not None]  # fmt: skip
    if (args.budget is not None or capped) and (args.ray is not None or (args.workers or 1) > 1):
        what = "--budget" if args.budget is not None else f"{capped[0]}'s max_cost"
        raise UsageError(
            f"{what} is kept by this process, so a budgeted run plays here: leave out --ray "
            "and --workers"
        )
    check_writable(args.results_dir)
    with hold_folder(args.results_dir) as alone:  # till the report is written
        played = serve_and_play(args, experiments, local, alone)
        if played.finished or len(played.pending) < played.planned:
            report(args.results_dir, this_run=played.planned)
        # else a budget let no episode start: there is nothing to report yet
    if played.budget is not None and played.budget.budget.stopped:
        for line in stop_lines(played.budget.budget, played.left()):
            print(f"privateshared: {line}", file=sys.stderr)
    lines = error_lines(played.finished)
    for line in lines:
        print(f"privateshared: {line}", file=sys.stderr)
    return 1 if lines else 0


def serve_and_play(
    args: argparse.Namespace,
    experiments: Playable,
    local: dict[str, LocalModel],
    alone: bool,
) -> Played:
    """Start the local models' servers, play, and stop the servers."""
    with contextlib.ExitStack() as stack:
        servers = {
            name: stack.enter_context(
                LocalServer(model, args.results_dir / "logs" / f"llama-server-{model.alias}.log")
            )
            for name, model in local.items()
        }
        for name, server in servers.items():
            if not server.environment:  # never silently another build than the one we make
                print(f"{name}: its server runs llama-cpp-python's own build of llama.cpp, not "
                      f"the project's for any CPU ({BUILD_COMMAND} installs that)",
                      file=sys.stderr)  # fmt: skip
        cast = cast_players(args, servers)
        assert cast is not None  # every local model has its server now
        # A model served here (llama.cpp) answers one call at a time and needs the cores:
        # more processes feeding it only take CPU from it.
        workers = args.workers or (1 if servers else default_workers())
        # Probing a round's slots at once gains nothing from a server that answers one call at
        # a time, and a round its model fails costs five times the calls: one by one, as
        # clembench probes (a played episode's scores are the same either way).
        one_by_one = args.sequential_probes or bool(servers)
        served_here = {server.base_url for server in servers.values()}

        def halt() -> LocalServerExited | None:
            """Why the run cannot go on: a server it started has exited."""
            return next(filter(None, (server.exit_error() for server in servers.values())), None)

        try:
            return play(args, experiments, cast, workers, one_by_one, served_here, alone, halt)
        except Exception:
            # Whatever failed (a check call, a worker, an episode), a server of ours that has
            # exited is why: its line, not the failure it caused.
            if (exited := halt()) is not None:
                raise exited from None
            raise


def error_lines(finished: Sequence[Finished]) -> list[str]:
    """What the run says about its errored episodes: those a refusal ended (a re-run gets
    the same refusal: the setting to change), and those whose calls kept failing (a re-run
    plays them again)."""
    failures = [result.error for result in finished if result.error is not None]
    refused = [failure for failure in failures if failure.fix is not None]
    failed = Counter(failure.kind for failure in failures if failure.fix is None)
    lines = []
    if refused:
        kinds = ", ".join(f"{kind} x{n}" for kind, n in Counter(f.kind for f in refused).items())
        said = " ".join(refused[0].message.split())
        said = said if len(said) <= 300 else said[:297] + "..."
        lines.append(
            f"{len(refused)} episodes errored because the endpoint refused their requests "
            f"({kinds}: {said}); playing them again gets the same refusal: {refused[0].fix}"
        )
    if failed:
        kinds = ", ".join(f"{kind} x{count}" for kind, count in failed.most_common())
        lines.append(
            f"{failed.total()} episodes errored, their model calls failing after every retry "
            f"({kinds}; see error.json in their folders); run the same command again to play "
            "them"
        )
    return lines


@dataclass(frozen=True)
class Played:
    """What `play` did."""

    planned: int
    """The run's episodes, those already done included."""
    pending: Sequence[Episode]
    """Those it set out to play."""
    finished: list[Finished]
    """Those done: played by it, or by another run into the folder meanwhile."""
    budget: BudgetedRun | None = None
    """Its budget, when it has one."""

    def left(self) -> list[float]:
        """The estimated cost of each episode it did not start (its budget stopped them)."""
        played = {result.episode.folder for result in self.finished}
        if self.budget is None:
            return []
        return [sum(self.budget.estimate(e).values())
                for e in self.pending if e.folder not in played]  # fmt: skip


def play(
    args: argparse.Namespace,
    experiments: Playable,
    cast: Cast,
    workers: int,
    one_by_one: bool = False,
    served_here: frozenset[str] | set[str] = frozenset(),
    alone: bool = True,
    halt: Callable[[], BaseException | None] = lambda: None,
) -> Played:
    """Check the endpoints, then play every pending episode with a progress bar, in worker
    processes when there are cores for them, probing `one_by_one` if so, and the episodes of
    each server `served_here` (base URLs) one after another, within the run's budget if it
    has one, until `halt` says why not (see `run_episodes`); unless `alone`, another run is
    playing into the folder, and shares the work."""
    cast = cast.settled()  # before any call: a server that cannot be guided stops the run here
    models = cast.models()
    one_at_a_time = {
        answerer.name: spec.base_url
        for answerer in cast.answerers
        if (spec := model_spec_of(answerer)) is not None
        and spec.base_url
        and spec.base_url in served_here
    }
    # A cap on calls per model holds across workers: each gets its share of it.
    workers = max(1, min([workers, args.concurrency, *cast.caps(args.max_concurrent_calls)]))
    cast = cast.throttled(args.max_concurrent_calls, shares=workers)
    default_run = args.models is None  # see DEFAULT_MAX_SLOTS
    planned = plan_episodes(
        cast.answerers, cast.questioner, experiments, args.results_dir,
        max_slots=DEFAULT_MAX_SLOTS if default_run else None,
    )  # fmt: skip
    pending = pending_episodes(planned, args.rerun)
    if pending:  # one call per model and seat with the run's settings, before any episode
        answerers = list({id(e.answerer): e.answerer for e in pending}.values())
        check_models(answerers, cast.questioner, cast.judge, pending[0].instance)
    budget = None
    if is_budgeted(args.budget, [*cast.answerers, cast.questioner, cast.judge]):
        judged = cast.judge is not None
        estimates = asyncio.run(instance_estimates(planned, judged))
        try:
            budget = budgeted_run(args.budget, planned, pending, cast.questioner, cast.judge,
                                  estimates)  # fmt: skip
        except ValueError as error:
            raise UsageError(str(error)) from None
    if not pending:
        print(f"all {len(planned)} episodes of this run are already done; nothing to play "
              "(--rerun plays them all again)")  # fmt: skip
    elif len(pending) < len(planned):
        print(f"{len(planned) - len(pending)} of {len(planned)} episodes are already done; "
              f"playing the other {len(pending)} (--rerun plays them all again)")  # fmt: skip
    if pending and not alone:
        print(f"another run is playing into {args.results_dir}: this run leaves it the episodes "
              "it has started, plays the others, then waits for those")  # fmt: skip
    write_experiment_files(pending, cast.questioner, args.results_dir, cast.judge)
    # A budget is kept in this process: its episodes are played here.
    workers = 1 if budget is not None else min(workers, max(len(pending), 1))
    concurrency = -(-args.concurrency // workers)
    admit = budget.admit if budget is not None else lambda episode: True

    def play_share(episodes: Sequence[Episode], on_finished: OnFinished) -> list[Finished]:
        async def play_and_close() -> list[Finished]:
            try:
                return await run_episodes(
                    episodes, cast.questioner, args.results_dir, concurrency=concurrency,
                    sequential_probes=one_by_one, judge=cast.judge,
                    on_finished=on_finished, one_at_a_time=one_at_a_time, admit=admit,
                    halt=halt,
                )  # fmt: skip
            finally:
                for model in models:
                    await model.aclose()

        return asyncio.run(play_and_close())

    progress = ProgressBar(len(pending))

    def finish(finished: Finished) -> None:
        # One another run played cost this run nothing (its budget never started it).
        if budget is not None and finished.status != "another run":
            budget.finish(finished.episode, finished.usage)
        progress(finished)

    try:
        if args.ray is not None:
            played = Played(len(planned), pending, play_on_ray(
                connect(args.ray), pending, cast, args.max_concurrent_calls,
                one_by_one, args.concurrency,
                lambda episode, state: record_episode(episode, state, GameContext(
                    answerer=episode.answerer, questioner=cast.questioner, judge=cast.judge,
                ), args.results_dir),
                progress, args.results_dir,
            ))  # fmt: skip
        elif workers == 1:
            played = Played(len(planned), pending, play_share(pending, finish), budget)
        else:
            shared = play_in_workers(pending, play_share, workers, on_finished=progress)
            played = Played(len(planned), pending, shared)
    finally:
        progress.close()
    if theirs := sum(result.status == "another run" for result in played.finished):
        print(f"another run into {args.results_dir} played {theirs} of the {len(pending)} "
              "episodes this run set out to play; this run made no call for those")  # fmt: skip
    return played
