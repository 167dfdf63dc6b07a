"""A benchmark run from Python, in one call: players and experiments in, the evaluation out.

    from privateshared.bench import run_benchmark
    evaluation = run_benchmark(["oracle", "mock"], experiments=["travel-booking"])
    evaluation.models          # per model: % Played, Quality Score, clemscore, ...
    evaluation.episodes        # per episode: status and scores

It plays what `privateshared run` plays, with the same words for players (names, import paths,
model names at an OpenAI-compatible endpoint, `langchain:PROVIDER:MODEL`), `Player` objects or
LangChain chat models (which play in this process only), into the same records (so the
command line's `eval`, `transcribe` and resume work on them), in this process and event loop. It
returns the evaluation of the episodes it was asked for, read back from their records, rather
than printing a table. `arun_benchmark` is the same for code that already runs an event loop (a
notebook: `await arun_benchmark(...)`).

Local models (smollm2, local:PATH.gguf), worker processes and Ray clusters are the command
line's; `select_experiments` is shared with it.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeAlias, TypeVar

from privateshared.agents.base import Player
from privateshared.agents.langchain_player import LangChainPlayer
from privateshared.agents.llm import ChatModelPlayer
from privateshared.agents.registry import resolve_answerer, resolve_judge, resolve_questioner
from privateshared.bench.reporting.evaluate import Evaluation, evaluate_benchmarks, read_episode
from privateshared.bench.running.claims import hold_folder
from privateshared.bench.running.episodes import run_episodes
from privateshared.bench.running.plan import (
    Playable,
    pending_episodes,
    plan_episodes,
    write_experiment_files,
)
from privateshared.bench.running.preflight import check_models
from privateshared.domains.instances import (
    ExperimentSpec,
    GameInstance,
    default_instances_path,
    default_playable,
    playable_instances,
    read_instances,
    two_listener_instances_path,
)
from privateshared.domains.registry import known_domains

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

P = ParamSpec("P")
T = TypeVar("T")
PlayerName: TypeAlias = "Player | str | BaseChatModel"
"""A player, a LangChain chat model (`ChatOpenAI(...)`, `init_chat_model(...)`), or what names
one where players are named: `oracle`, `mock:3`, `programmatic`, `./my_players.py:Asker`,
`my_package.players:asker`, `langchain:anthropic:claude-sonnet-4-5`, a model name."""


class ExperimentError(ValueError):
    """Experiments that cannot be played as named; the message is one line with the fix."""


def select_experiments(
    instances: Path | None = None,
    experiments: Sequence[str] | None = None,
    domains: Sequence[Path] = (),
    resources: Path | None = None,
    limit: int | None = None,
) -> Playable:
    """The experiments to play: every one of `instances` (default: the classic benchmark), or
    those named in `experiments`, which without `instances` may also name the shipped
    two-listener experiments and those of every other known domain (their default instances);
    with `limit`, only the first `limit` instances of each (a short slice)."""
    # Every known domain: shipped, installed, PRIVATESHARED_DOMAINS and `domains`. Instances
    # travel to worker processes and Ray workers with their texts resolved, so only this
    # process needs to find the domains.
    known_to_us = known_domains(domains)
    files = [instances or default_instances_path()]
    playable: list[tuple[int, ExperimentSpec, list[GameInstance]]]
    if experiments and instances is None:
        files.append(two_listener_instances_path())
        playable = default_playable(known_to_us)
    else:
        playable = playable_instances(
            read_instances(files[0]), known_to_us, resources, source=str(files[0])
        )
    if experiments:
        known = [experiment.name for _, experiment, _ in playable]
        unknown = [name for name in experiments if name not in known]
        if unknown:
            where = (
                f"{files[0]} has none" if len(files) == 1
                else f"neither {files[0]} nor {files[1]} has one, nor another known domain"
            )  # fmt: skip
            raise ExperimentError(
                f"unknown experiment {unknown[0]!r} ({where} of that name); "
                f"choose from {', '.join(known)}"
            )
        playable = [item for item in playable if item[1].name in experiments]
    if limit is not None:
        playable = [(index, experiment, list(instances)[:limit])
                    for index, experiment, instances in playable]  # fmt: skip
    return playable


async def arun_benchmark(
    answerers: Sequence[PlayerName],
    questioner: PlayerName = "programmatic",
    *,
    experiments: Sequence[str] | None = None,
    results_dir: Path | str = "records",
    instances: Path | str | None = None,
    domains: Sequence[Path | str] = (),
    judge: PlayerName | None = None,
    concurrency: int = 8,
    rerun: bool = False,
    sequential_probes: bool = False,
    limit: int | None = None,
) -> Evaluation:
    """Play every instance of `experiments` (default: the classic benchmark) with every answerer
    and `questioner`, write the records under `results_dir`, and evaluate those episodes.

    With `limit`, only the first `limit` instances of each experiment are played (a short
    slice). Episodes whose records are complete are not played again (unless `rerun`), so a
    call that was interrupted is finished by the same call. Raises `ExperimentError` for
    experiments that cannot be played, `PlayerConfigError` for a player that cannot be made,
    and a `ValueError` when the experiments mix the classic and the two-listener benchmarks,
    which are evaluated apart (call once for each).
    """
    if concurrency < 1 or (limit is not None and limit < 1):
        raise ValueError("concurrency and limit must be at least 1")
    if not answerers:
        raise ValueError("no answerers; name at least one, e.g. run_benchmark(['oracle'])")
    folder = Path(results_dir)
    playable = select_experiments(
        Path(instances) if instances is not None else None,
        experiments,
        [Path(domain) for domain in domains],
        limit=limit,
    )
    # A guided model on `auto` learns its server's form before any episode (or stops here).
    players = [
        player.settle_guidance() if isinstance(player, ChatModelPlayer) else player
        for player in (resolve_answerer(answerer) for answerer in answerers)
    ]
    asker = resolve_questioner(questioner)
    rater = resolve_judge(judge) if judge is not None else None
    models = [player for player in (*players, asker, rater)
              if isinstance(player, ChatModelPlayer | LangChainPlayer)]  # fmt: skip
    planned = plan_episodes(players, asker, playable, folder)
    pending = pending_episodes(planned, rerun)
    if pending:  # one call per model and seat before any episode, as the command line makes
        await asyncio.to_thread(check_models, players, asker, rater, pending[0].instance)
    # Beside any other run into the folder, which then shares the episodes (claims.py).
    with hold_folder(folder):
        write_experiment_files(pending, asker, folder, rater)
        try:
            await run_episodes(
                pending, asker, folder, concurrency=concurrency,
                sequential_probes=sequential_probes, judge=rater,
            )  # fmt: skip
        finally:
            for model in models:
                await model.aclose()
    evaluations = evaluate_benchmarks([read_episode(episode.folder) for episode in planned])
    if len(evaluations) > 1:
        raise ValueError(
            "these experiments belong to two benchmarks, the classic and the two-listener one, "
            "which are never evaluated together; their records are written: call once for each "
            "to get each one's evaluation"
        )
    return evaluations[0]


def _blocking(play: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, T]:
    """`play` for code that runs no event loop of its own (a script): the same arguments, the
    same result; in a notebook or another running loop, await the coroutine itself."""

    @functools.wraps(play)
    def blocking(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(play(*args, **kwargs))
        raise RuntimeError(
            f"{play.__name__.removeprefix('a')} cannot run inside a running event loop (a "
            f"notebook has one); use `await {play.__name__}(...)` there"
        )

    blocking.__name__ = blocking.__qualname__ = play.__name__.removeprefix("a")
    return blocking


run_benchmark = _blocking(arun_benchmark)
"""`arun_benchmark` for a script; in a notebook, `await arun_benchmark(...)`."""
