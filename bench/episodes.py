"""Play one episode through the graph, and keep its records."""

from __future__ import annotations

from pathlib import Path

from pydantic import JsonValue

from privateshared.domains.instances import GameInstance
from privateshared.graph.builder import graph
from privateshared.graph.context import GameContext
from privateshared.graph.recorder import build_records, describe_players, write_episode
from privateshared.graph.state import EpisodeRecords, EpisodeState


async def play_episode(instance: GameInstance, context: GameContext) -> EpisodeState:
    """Run the graph from instructions to scores."""
    start = EpisodeState(
        instance=instance, experiment=instance.experiment, game_id=instance.game_id
    )
    values = await graph.ainvoke(start, context=context)
    return EpisodeState.model_validate(values)


def save_episode(
    folder: Path, instance_spec: JsonValue, state: EpisodeState, context: GameContext
) -> EpisodeRecords:
    """Write the episode's records: scores.json last, or error.json when a call failed.
    Returns the records written."""
    # A scored episode carries the records it was scored from; one that failed is built here.
    if state.records is not None:
        interactions, calls = state.records.interactions, state.records.calls
    else:
        interactions, calls = build_records(state, describe_players(context))
    outcome = state.error or state.scores
    if outcome is None:
        raise ValueError("the episode is neither scored nor failed; it did not reach its end")
    write_episode(folder, instance_spec, interactions, calls, outcome)
    return EpisodeRecords(interactions=interactions, calls=calls)
