"""An optional LLM judge of the questioner's questions, rated 1 to 5 once the dialogue is over.

The judge sees the dialogue before a question and the question, and replies with JSON
(`{"score": 1-5, "reason": "..."}`). A reply that cannot be read is recorded as missing, never as
0, so one unparseable reply does not drag a mean down (the judge of seed 003 counted it as 0).
"""

from __future__ import annotations

import asyncio
import json
import re

from langgraph.runtime import Runtime

from privateshared.agents.base import ChatMessage, PlayerFailure, PlayerRequest
from privateshared.domains.instances import GameInstance
from privateshared.graph.context import GameContext, game_context
from privateshared.graph.dialogue import call_failure, call_player
from privateshared.graph.records import JUDGE, CallFailure
from privateshared.graph.state import EpisodeState, Exchange, Judgment

RUBRIC = (
    "You judge the questions a {role} asks in a conversation. Rate the last question from 1 "
    "(poor) to 5 (excellent): is it clear, relevant to what the {role} needs to find out, "
    "polite, and does it avoid asking for something the person has already said? Reply with "
    'JSON only, in this form: {{"score": <1 to 5>, "reason": "<one short sentence>"}}'
)
_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def parse_rating(reply: str) -> tuple[int | None, str | None]:
    """The score (1 to 5) and reason in a judge's reply; (None, None) when it cannot be read.

    Accepts the JSON object alone, in a Markdown code fence, or amid other text."""
    found = _OBJECT.search(reply)
    if found is None:
        return None, None
    try:
        rating = json.loads(found.group(0))
    except json.JSONDecodeError:
        return None, None
    if not isinstance(rating, dict):
        return None, None
    score = rating.get("score")
    if isinstance(score, bool) or not isinstance(score, int | float) or score != int(score):
        return None, None
    if not 1 <= score <= 5:
        return None, None
    reason = rating.get("reason")
    return int(score), reason if isinstance(reason, str) else None


def judge_messages(
    instance: GameInstance, dialogue: list[Exchange], turn: int
) -> list[ChatMessage]:
    """What the judge sees for question `turn`: the rubric, the dialogue before it, the question."""
    role = instance.questioner or "questioner"
    lines = []
    for exchange in dialogue[1:turn]:
        if exchange.request is not None and exchange.answer is not None:
            lines.append(f"{role}: {exchange.request.text}")
            lines.append(f"person: {exchange.parsed or exchange.answer.text}")
    question = dialogue[turn].request
    assert question is not None  # only asked questions are judged
    shown = "\n".join(lines) if lines else "(nothing yet)"
    return [
        ChatMessage(role="system", content=RUBRIC.format(role=role)),
        ChatMessage(
            role="user",
            content=f"The conversation so far:\n{shown}\n\nThe question to rate:\n"
            f"{role}: {question.text}",
        ),
    ]


async def judge_questions(state: EpisodeState, runtime: Runtime[GameContext]) -> dict[str, object]:
    """Have the judge, if there is one, rate every question the questioner asked."""
    ctx = game_context(state, runtime)
    judge = ctx.judge
    instance = state.instance
    if judge is None or instance is None or state.error is not None:
        return {}
    asked = [t for t, exchange in enumerate(state.dialogue) if t and exchange.request]

    async def rate(turn: int) -> Judgment | CallFailure:
        request = PlayerRequest(
            kind="judge", messages=tuple(judge_messages(instance, state.dialogue, turn)),
            instance=instance, turn=turn, slot=state.dialogue[turn].slot or "",
        )  # fmt: skip
        try:
            reply = await call_player(judge, request, ctx.clock)
        except PlayerFailure as failure:
            return call_failure(failure, JUDGE, judge, request, ctx.clock())
        score, reason = parse_rating(reply.text)
        question = state.dialogue[turn].request
        assert question is not None
        return Judgment(turn=turn, question=question.text, score=score, reason=reason, reply=reply)

    outcomes = await asyncio.gather(*(rate(turn) for turn in asked))
    judgments = [outcome for outcome in outcomes if isinstance(outcome, Judgment)]
    failures = [outcome for outcome in outcomes if isinstance(outcome, CallFailure)]
    if failures:
        return {"judgments": judgments, "error": failures[0]}
    return {"judgments": judgments}
