"""Where the episode goes after each step. Routers return node names as `Literal`s so that
LangGraph Studio can draw every edge."""

from __future__ import annotations

from typing import Literal

from privateshared.graph.state import EpisodeState

End = Literal["__end__"]
"""A call that failed for good ends the episode unscored: there is nothing to score it on."""


def route_after_probe(state: EpisodeState) -> Literal["ask_question", "score_episode"] | End:
    """Ask the next question while slots remain and the rules are kept."""
    if state.error is not None:
        return "__end__"
    if state.abort_reason is not None or state.instance is None:
        return "score_episode"
    asked = len(state.dialogue) - 1  # turn 0 holds the instructions
    return "ask_question" if asked < len(state.instance.request_order) else "score_episode"


def route_after_question(state: EpisodeState) -> Literal["answer_question"] | End:
    """Pass the question on, unless the questioner could not be reached."""
    return "__end__" if state.error is not None else "answer_question"


def route_after_answer(state: EpisodeState) -> Literal["probe_round", "score_episode"] | End:
    """Probe after every valid answer; a broken answer ends the episode."""
    if state.error is not None:
        return "__end__"
    return "score_episode" if state.abort_reason is not None else "probe_round"
