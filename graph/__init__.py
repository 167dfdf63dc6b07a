"""The game: a LangGraph state machine over one episode's state, its records and its scores."""

from privateshared.graph.builder import build_graph, graph
from privateshared.graph.context import GameContext
from privateshared.graph.recorder import build_records, describe_players, write_episode
from privateshared.graph.records import EpisodeScores, Interactions
from privateshared.graph.scoring import score_interactions
from privateshared.graph.state import EpisodeState

__all__ = [
    "EpisodeScores",
    "EpisodeState",
    "GameContext",
    "Interactions",
    "build_graph",
    "build_records",
    "describe_players",
    "graph",
    "score_interactions",
    "write_episode",
]
