"""Where the episode goes after each step. Routers return node names as `Literal`s so that
LangGraph Studio can draw every edge. An episode that ends goes to `judge_questions` (which does
nothing without a judge) and then to `score_episode`."""

from __future__ import annotations

from typing import Literal

from privateshared.graph.listeners import hands_over_at
from privateshared.graph.questioning import has_finished, question_limit
from privateshared.graph.state import EpisodeState

# Each router's return type is one flat Literal: LangGraph reads the edges Studio draws from it,
# and a union of Literals reads as no edges at all. "__end__": a call that failed for good ends
# the episode unscored, as there is nothing to score it on.


def route_after_probe(
    state: EpisodeState,
) -> Literal["ask_question", "change_audience", "judge_questions", "__end__"]:
    """Give the questioner its next turn while the rules are kept and it has not finished: one
    question per slot and three more, then a last turn to record and finish. With two
    listeners, the audience changes after probing round k, before question k + 1."""
    if state.error is not None:
        return "__end__"
    if state.abort_reason is not None or state.instance is None:
        return "judge_questions"
    audience = state.instance.audience
    if (
        audience is not None
        and state.audience_change is None
        and len(state.probe_rounds) == audience.after_turn + 1
    ):
        # A leaving questioner first gets its farewell turn, to record what it learned.
        return "ask_question" if audience.kind == "handover" else "change_audience"
    # After the last question allowed, the questioner still gets a turn to record and finish.
    final_turn = question_limit(state.instance) + 1
    steps = state.questioner_steps
    if has_finished(steps) or any(step.turn >= final_turn for step in steps):
        return "judge_questions"
    return "ask_question"


def route_after_question(
    state: EpisodeState,
) -> Literal["answer_question", "change_audience", "judge_questions", "__end__"]:
    """Pass a new question on; end when the questioner finished or made no valid move. After a
    leaving questioner's farewell turn, the second listener takes over."""
    if state.error is not None:
        return "__end__"
    if len(state.dialogue) > 1 and state.dialogue[-1].answer is None:
        return "answer_question"
    if state.instance is not None and hands_over_at(
        state.instance, state.audience_change, len(state.dialogue)
    ):
        return "change_audience"
    return "judge_questions"


def route_after_answer(
    state: EpisodeState,
) -> Literal["probe_round", "judge_questions", "__end__"]:
    """Probe after every valid answer; a broken answer ends the episode."""
    if state.error is not None:
        return "__end__"
    return "judge_questions" if state.abort_reason is not None else "probe_round"
