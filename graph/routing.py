"""Where the episode goes after each step. Routers return node names as `Literal`s so that
LangGraph Studio can draw every edge."""

from __future__ import annotations

from typing import Literal

from privateshared.graph.state import EpisodeState


def route_after_probe(state: EpisodeState) -> Literal["ask_question", "score_episode"]:
    """Ask the next question while slots remain and the rules are kept."""
    if state.abort_reason is not None or state.instance is None:
        return "score_episode"
    asked = len(state.dialogue) - 1  # turn 0 holds the instructions
    return "ask_question" if asked < len(state.instance.request_order) else "score_episode"


def route_after_answer(state: EpisodeState) -> Literal["probe_round", "score_episode"]:
    """Probe after every valid answer; a broken answer ends the episode."""
    return "score_episode" if state.abort_reason is not None else "probe_round"
