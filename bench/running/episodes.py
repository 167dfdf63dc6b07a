"""Play episodes through the graph and keep their records, many at once.

Episodes run concurrently in one event loop (up to `concurrency` at once, the models' episodes
interleaved), and the probes of a round concurrently within an episode. Each episode's records
are complete on disk once its last file is written (scores.json, or error.json when a call
failed for good), so a run can be stopped at any moment: the same command plays what is missing.

Runs may share a results folder: each episode is claimed before it is played (claims.py). One
that another run holds is set aside, and played once that run lets it go, unless it was
played by then; so every episode of the run is done when `run_episodes` returns.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import JsonValue

from privateshared.agents.base import Player
from privateshared.bench.reporting.transcripts.index import TRANSCRIPT_FILE, transcript_page
from privateshared.bench.running.claims import Claim, try_claim, wait_for_claim
from privateshared.bench.running.plan import Episode, is_played_meanwhile
from privateshared.domains.instances import GameInstance
from privateshared.graph.builder import graph
from privateshared.graph.context import GameContext
from privateshared.graph.files import write_text
from privateshared.graph.recorder import build_records, describe_players, write_episode
from privateshared.graph.records import ABORTED, CallFailure
from privateshared.graph.state import EpisodeRecords, EpisodeState
from privateshared.graph.usage import EpisodeUsage, Seat, episode_usage

Status = Literal["played", "aborted", "errored", "another run"]
"""How an episode of the run ended: the first three when this run played it; "another run"
when another run into the same folder played it meanwhile, this run making no call for it."""


async def play_episode(instance: GameInstance, context: GameContext) -> EpisodeState:
    """Run the graph from instructions to scores."""
    start = EpisodeState(
        instance=instance, experiment=instance.experiment, game_id=instance.game_id
    )
    values = await graph.ainvoke(start, context=context)
    return EpisodeState.model_validate(values)


@dataclass(frozen=True)
class Saved:
    """What `save_episode` wrote."""

    records: EpisodeRecords
    usage: EpisodeUsage | None
    """Its usage.json, per seat; None when no call reported usage (none was written)."""


def save_episode(
    folder: Path, instance_spec: JsonValue, state: EpisodeState, context: GameContext
) -> Saved:
    """Write the episode's records: scores.json last, or error.json when a call failed.
    Returns what was written."""
    # A scored episode carries the records it was scored from; one that failed is built here.
    if state.records is not None:
        interactions, calls = state.records.interactions, state.records.calls
    else:
        interactions, calls = build_records(state, describe_players(context))
    outcome = state.error or state.scores
    if outcome is None:
        raise ValueError("the episode is neither scored nor failed; it did not reach its end")
    usage = episode_usage(state, seat_names(context))
    write_episode(folder, instance_spec, interactions, calls, outcome, usage)
    return Saved(EpisodeRecords(interactions=interactions, calls=calls), usage)


def seat_names(context: GameContext) -> dict[Seat, str]:
    """The name each seat of an episode plays under."""
    names: dict[Seat, str] = {"answerer": context.answerer.name,
                              "questioner": context.questioner.name}  # fmt: skip
    if context.judge is not None:
        names["judge"] = context.judge.name
    return names


@dataclass(frozen=True)
class Finished:
    """An episode of this run that is done, as the progress display needs it: played by this
    run, or by another (status "another run", no call, no usage)."""

    episode: Episode
    status: Status
    calls: int
    """Model calls the episode made (its requests.json entries)."""
    error: CallFailure | None = None
    """Why an errored episode stopped."""
    usage: EpisodeUsage | None = None
    """The tokens its calls used, per seat (its usage.json); None when none was reported."""


def status_of(state: EpisodeState) -> Status:
    """How a finished episode ended."""
    if state.error is not None:
        return "errored"
    assert state.scores is not None  # the graph ends in score_episode unless a call failed
    return "aborted" if state.scores.episode_scores[ABORTED] else "played"


def record_episode(
    episode: Episode, state: EpisodeState, context: GameContext, results_dir: Path
) -> Finished:
    """Write a finished episode's records and its transcript page."""
    spec = next(
        spec for spec in episode.experiment.game_instances
        if spec.game_id == episode.instance.game_id
    )  # fmt: skip
    instance_spec = spec.model_dump(mode="json", exclude_none=True)
    saved = save_episode(episode.folder, instance_spec, state, context)
    # The page now, from the records in hand: the report at the end of the run then reads no
    # interactions.json again, and workers draw their own episodes' pages.
    page = transcript_page(results_dir, episode.folder, saved.records.interactions,
                           state.scores, state.error, instance_spec)  # fmt: skip
    write_text(episode.folder / TRANSCRIPT_FILE, page)
    calls = len(saved.records.calls)
    return Finished(episode, status_of(state), calls, state.error, saved.usage)


async def run_episodes(
    episodes: Sequence[Episode],
    questioner: Player,
    results_dir: Path,
    concurrency: int = 8,
    sequential_probes: bool = False,
    judge: Player | None = None,
    on_finished: Callable[[Finished], None] = lambda finished: None,
    one_at_a_time: Mapping[str, str] | None = None,
    admit: Callable[[Episode], bool] = lambda episode: True,
    halt: Callable[[], BaseException | None] = lambda: None,
) -> list[Finished]:
    """Play `episodes`, at most `concurrency` at once, writing each one's records as it ends;
    an episode `admit` refuses when its turn comes is not started (a budget's say). An episode
    another run into `results_dir` is playing waits for that run, holding no slot, and is
    reported as the other run's if that run finished it.

    `one_at_a_time` maps answerers (by name) to the server they share: the episodes of one
    server are played one after another. A server here (llama.cpp) answers one call at a time
    and reuses the start of the last prompt it evaluated; interleaved episodes would make it
    evaluate every prompt from its start (several times the time per call).

    `halt` says why the run cannot go on (a server it started has exited), or None: asked
    before each episode and after each one a failed call ended, its answer is raised, the
    episodes under way are cancelled, and the failed one is not recorded, as its failure is
    not its players'."""
    slots = asyncio.Semaphore(concurrency)
    servers = {server: asyncio.Semaphore(1) for server in (one_at_a_time or {}).values()}
    finished: list[Finished] = []

    @contextlib.asynccontextmanager
    async def turn(episode: Episode) -> AsyncIterator[None]:
        server = (one_at_a_time or {}).get(episode.answerer.name)
        # The server's turn first, so that waiting for it holds none of the run's slots.
        async with servers[server] if server else contextlib.nullcontext(), slots:
            yield

    def report(result: Finished) -> None:
        finished.append(result)
        on_finished(result)

    async def play_claimed(episode: Episode, claim: Claim) -> None:
        with claim:
            if is_played_meanwhile(episode):
                report(Finished(episode, "another run", 0))
                return
            if (reason := halt()) is not None:
                raise reason
            if not admit(episode):
                return
            context = GameContext(
                answerer=episode.answerer, questioner=questioner, judge=judge,
                sequential_probes=sequential_probes,
            )  # fmt: skip
            state = await play_episode(episode.instance, context)
            if state.error is not None and (reason := halt()) is not None:
                raise reason
            report(record_episode(episode, state, context, results_dir))

    async def play(episode: Episode) -> None:
        async with turn(episode):
            claim = try_claim(results_dir, episode.folder)
            if claim is not None:
                await play_claimed(episode, claim)
                return
        # Another run is playing it: wait for that run to let it go, holding no slot.
        claim = await wait_for_claim(results_dir, episode.folder)
        with claim:
            async with turn(episode):
                await play_claimed(episode, claim)

    try:
        async with asyncio.TaskGroup() as group:
            for episode in episodes:
                group.create_task(play(episode))
    except BaseExceptionGroup as failed:
        # The first episode that failed cancelled the others; its error is the run's, raised
        # as itself so that the command line's one-line handlers know it.
        raise failed.exceptions[0] from None
    return finished
