"""The game as a LangGraph state machine; `graph` is what langgraph.json serves.

instruct_answerer -> probe_round -> ask_question -> answer_question -> probe_round -> ...
With two listeners, change_audience comes once, after probing round k: probe_round ->
change_audience -> ask_question.
probe_round and ask_question end in score_episode once the questioner finishes, a rule is broken,
or n + 3 questions were asked; a call that fails for good ends the episode without scores.
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from privateshared.graph.context import GameContext
from privateshared.graph.dialogue import answer_question, instruct_answerer
from privateshared.graph.handover import change_audience
from privateshared.graph.judging import judge_questions
from privateshared.graph.probing import probe_round
from privateshared.graph.questioning import ask_question
from privateshared.graph.routing import route_after_answer, route_after_probe, route_after_question
from privateshared.graph.scoring import score_episode
from privateshared.graph.state import EpisodeState


def build_graph(
    checkpointer: BaseCheckpointSaver[Any] | None = None,
) -> CompiledStateGraph[EpisodeState, GameContext, EpisodeState, EpisodeState]:
    """Wire the game master's nodes. `graph` has no checkpointer: `langgraph dev` brings its own,
    and a benchmark run needs none."""
    builder = StateGraph(EpisodeState, context_schema=GameContext)
    builder.add_node("instruct_answerer", instruct_answerer)
    builder.add_node("probe_round", probe_round)
    builder.add_node("ask_question", ask_question)
    builder.add_node("answer_question", answer_question)
    builder.add_node("change_audience", change_audience)
    builder.add_node("judge_questions", judge_questions)
    builder.add_node("score_episode", score_episode)
    builder.add_edge(START, "instruct_answerer")
    builder.add_edge("instruct_answerer", "probe_round")
    builder.add_conditional_edges("probe_round", route_after_probe)
    builder.add_edge("change_audience", "ask_question")
    builder.add_conditional_edges("ask_question", route_after_question)
    builder.add_conditional_edges("answer_question", route_after_answer)
    builder.add_edge("judge_questions", "score_episode")
    builder.add_edge("score_episode", END)
    return builder.compile(checkpointer=checkpointer, name="privateshared")


graph = build_graph()
