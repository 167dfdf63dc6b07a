"""Episodes spread over a Ray cluster (`privateshared run --ray auto`, or a cluster's address).

Ray (Apache-2.0, the `ray` extra) is imported here only, and only when `--ray` is given. Each
episode is one Ray task: a worker builds the players from their recipe (a model from its
`ModelSpec`, or a LangChain model from its registry entry's `LangChainSpec`, reading its key
from the worker's own environment, so no key travels with a task;
a user's player from its import path, which the worker imports, since the module the driver
loaded it from need not exist there), plays the episode on its own event loop and returns the
final state. The driver writes every record, as a local run does, so the results folder is the
same and resume works the same way: a killed driver leaves finished episodes on disk, and the
next run plays only what is missing. A worker that dies mid-episode loses that episode's
progress only: Ray runs the task again. The driver also claims each episode before sending it
out, as a local run claims it before playing it (claims.py), so runs sharing the folder never
play an episode twice.

A model's cap on calls under way holds across the whole cluster through one `CallSlots` actor
per capped model, which every worker asks for a slot before each call.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from privateshared.agents.base import Player
from privateshared.agents.imports import ImportedPlayer, ImportSpec
from privateshared.agents.langchain_player import LangChainSpec
from privateshared.agents.llm import ChatModelPlayer, ModelSpec
from privateshared.agents.registry import resolve_model
from privateshared.agents.throttle import ThrottledPlayer
from privateshared.bench.running.cast import Cast
from privateshared.bench.running.claims import WAIT, Claim, try_claim
from privateshared.bench.running.episodes import Finished, play_episode
from privateshared.bench.running.layout import model_spec_of
from privateshared.bench.running.plan import Episode, is_played_meanwhile
from privateshared.domains.instances import GameInstance
from privateshared.graph.context import GameContext
from privateshared.graph.state import EpisodeState

TASK_RETRIES = 3
"""Times Ray runs an episode's task again after its worker died."""


class RayError(RuntimeError):
    """Ray is missing or the cluster cannot be reached; the message is one line with the fix."""


@dataclass(frozen=True)
class Recipe:
    """How a worker builds a player: a model from its spec (and its cap's actor), a user's player
    from its import path, anything else (our programs, which hold no connections) as it is. The
    command line names no LangChain model object (only entries, `langchain:` names and import
    paths), so none is ever sent as it is."""

    spec: ModelSpec | LangChainSpec | None = None
    player: Player | None = None
    origin: ImportSpec | None = None
    """A user's player: the worker imports it (a file at the same absolute path, a module that
    is installed or on PYTHONPATH there)."""
    cap: tuple[int, Any] | None = None
    """The model's cap and its `CallSlots` actor when its calls are capped; None otherwise."""

    def build(self) -> Player:
        if self.origin is not None:
            return self.origin.load()
        if self.spec is None:
            assert self.player is not None
            return self.player
        model = resolve_model(self.spec)  # the key from this worker's environment
        if self.cap is None:
            return model
        limit, actor = self.cap
        return ThrottledPlayer(model, limit, slots=ActorSlots(actor))


@dataclass(frozen=True)
class ActorSlots:
    """One model's call slots, held in a `CallSlots` actor that every worker shares."""

    actor: Any

    async def __aenter__(self) -> None:
        await self.actor.acquire.remote()

    async def __aexit__(self, *exc: object) -> None:
        await self.actor.release.remote()


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RayError("--ray needs Ray: pip install -e '.[ray]' (or pip install ray)") from None
    return ray


def connect(address: str) -> Any:
    """Ray, connected to the cluster at `address` (`auto`: the one this machine belongs to);
    a process that already joined a cluster (ray.init) keeps it."""
    ray = _import_ray()
    if not ray.is_initialized():
        try:
            ray.init(address=address, log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as error:
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error)
            raise RayError(
                f"cannot join the Ray cluster at {address!r} ({first}); start one with "
                "`ray start --head` or pass its address"
            ) from None
    return ray


def _slots_actor(ray: Any) -> Any:
    @ray.remote(num_cpus=0)
    class CallSlots:
        """A semaphore for one model's calls, shared by every worker of the cluster."""

        def __init__(self, limit: int) -> None:
            self.free = asyncio.Semaphore(limit)

        async def acquire(self) -> None:
            await self.free.acquire()

        async def release(self) -> None:
            self.free.release()

    return CallSlots


def recipes(ray: Any, cast: Cast, limit: int | None) -> dict[str, Recipe]:
    """A recipe per player of the cast, by name; capped models get their slots actor."""
    actor = _slots_actor(ray)
    players = [*cast.answerers, cast.questioner, *([cast.judge] if cast.judge else [])]
    made: dict[str, Recipe] = {}
    for player in players:
        if player.name in made:
            continue
        spec = model_spec_of(player)
        inner = getattr(player, "inner", player)  # without a local call cap's semaphore
        if isinstance(inner, ImportedPlayer):
            made[player.name] = Recipe(origin=inner.origin.absolute())
            continue
        if spec is None:  # one of our programs: sent as it is
            made[player.name] = Recipe(player=inner)
            continue
        caps = [cap for cap in (limit, spec.max_concurrent_calls) if cap is not None]
        shared = (min(caps), actor.remote(min(caps))) if caps else None
        made[player.name] = Recipe(spec=spec, cap=shared)
    return made


def _play_one(
    instance: GameInstance,
    answerer: Recipe,
    questioner: Recipe,
    judge: Recipe | None,
    sequential_probes: bool,
) -> EpisodeState:
    """A Ray task: one episode, on this worker's own event loop."""
    players = [answerer.build(), questioner.build(), judge.build() if judge else None]

    async def play() -> EpisodeState:
        context = GameContext(answerer=players[0], questioner=players[1], judge=players[2],
                              sequential_probes=sequential_probes)  # fmt: skip
        try:
            return await play_episode(instance, context)
        finally:
            for player in players:
                inner = getattr(player, "inner", player)
                if isinstance(inner, ChatModelPlayer):
                    await inner.aclose()

    return asyncio.run(play())


def play_on_ray(
    ray: Any,
    episodes: Sequence[Episode],
    cast: Cast,
    limit: int | None,
    sequential_probes: bool,
    concurrency: int,
    save: Callable[[Episode, EpisodeState], Finished],
    on_finished: Callable[[Finished], None],
    results_dir: Path,
) -> list[Finished]:
    """Play `episodes` as Ray tasks, at most `concurrency` at once over the cluster; the driver
    saves each one as it comes back (`save`), so nothing is written by a worker. The driver
    claims each episode in `results_dir` before it sends it out (claims.py): one another run is
    playing waits for that run, and is the other run's if that run finished it."""
    made = recipes(ray, cast, limit)
    cpus = max(float(ray.cluster_resources().get("CPU", 1.0)), 1.0)
    # Episodes mostly wait on calls: let `concurrency` of them share the cluster's CPUs.
    task = ray.remote(max_retries=TASK_RETRIES, num_cpus=min(1.0, cpus / concurrency))(_play_one)
    judge = made[cast.judge.name] if cast.judge else None
    pending: dict[Any, tuple[Episode, Claim]] = {}
    finished: list[Finished] = []
    queue = list(episodes)
    held: list[Episode] = []  # those another run holds, tried again every WAIT seconds

    def report(result: Finished) -> None:
        finished.append(result)
        on_finished(result)

    try:
        while queue or held or pending:
            while queue and len(pending) < concurrency:
                episode = queue.pop(0)
                claim = try_claim(results_dir, episode.folder)
                if claim is None:
                    held.append(episode)
                elif is_played_meanwhile(episode):
                    claim.release()
                    report(Finished(episode, "another run", 0))
                else:
                    ref = task.remote(episode.instance, made[episode.answerer.name],
                                      made[cast.questioner.name], judge,
                                      sequential_probes)  # fmt: skip
                    pending[ref] = episode, claim
            retry = not queue and bool(held)
            if retry:  # what is left to start, another run holds: look again soon
                queue, held = held, []
                if not pending:
                    time.sleep(WAIT)
                    continue
            done, _ = ray.wait(list(pending), num_returns=1, timeout=WAIT if retry else None)
            for ref in done:
                episode, claim = pending.pop(ref)
                with claim:
                    try:
                        state = ray.get(ref)
                    except ray.exceptions.RayError as error:
                        # e.g. a worker without the model's key: one line, and the episodes
                        # finished so far stay written.
                        cause = getattr(error, "cause", None) or error
                        said = str(cause).strip()
                        first = said.splitlines()[-1] if said else ""
                        raise RayError(
                            f"episode {episode.folder.name} of {episode.experiment.name} failed "
                            f"on the cluster ({type(cause).__name__}: {first}); finished "
                            "episodes are kept, fix it and run again"
                        ) from None
                    report(save(episode, state))
    finally:
        for _, claim in pending.values():
            claim.release()
    return finished
