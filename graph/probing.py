"""Probing rounds: the game master privately asks the answerer, slot by slot, whether the
questioner knows it yet.

Round k comes after dialogue turn k (round 0 before the first question). Each probe sees the
dialogue so far plus the probe itself and never enters the dialogue, so the probes of a round are
independent and are asked concurrently unless `sequential_probes` asks for clembench's order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from langgraph.runtime import Runtime

from privateshared.agents.base import ChatMessage, PlayerFailure, PlayerRequest
from privateshared.domains.instances import GameInstance
from privateshared.domains.schema import ASIDE_TAG
from privateshared.graph.context import GameContext, game_context
from privateshared.graph.dialogue import (
    answerer_context,
    call_failure,
    call_player,
    has_continuation,
)
from privateshared.graph.listeners import knows, round_plan
from privateshared.graph.records import ANSWERER, CallFailure
from privateshared.graph.state import EpisodeState, Probe, ProbeAnswer, ProbeAttempt

PROBING_ABORT = "invalid format in probing"


def parse_probe_answer(reply: str) -> ProbeAnswer | None:
    """Read yes or no from a reply such as "ASIDE: No."; None if malformed."""
    if not reply.startswith(ASIDE_TAG) or has_continuation(reply):
        return None
    text = reply.replace(ASIDE_TAG, "").strip().lower()
    if text.startswith("yes"):
        return "yes"
    if text.startswith("no"):
        return "no"
    return None


async def probe_slot(
    context: Sequence[ChatMessage],
    instance: GameInstance,
    round_index: int,
    planned: tuple[str | None, str, str],
    gold: ProbeAnswer,
    ctx: GameContext,
) -> tuple[Probe, CallFailure | None]:
    """Ask one planned probe (listener, slot, question) until its reply is valid or the tries
    are used (`ctx.max_tries`, at most as many as the instance's probe wording has); a call that
    fails for good ends the probe early, with what it had so far."""
    listener, slot, question = planned
    wording = instance.probe_wording
    attempts: list[ProbeAttempt] = []
    for attempt in range(1, min(ctx.max_tries, len(wording.tries)) + 1):
        message = wording.message(question, attempt)
        request = PlayerRequest(
            kind="probe",
            messages=(*context, ChatMessage(role="user", content=message)),
            instance=instance,
            turn=round_index,
            slot=slot,
            attempt=attempt,
            listener=listener,
        )
        try:
            reply = await call_player(ctx.answerer, request, ctx.clock)
        except PlayerFailure as failure:
            failed = Probe(listener=listener, slot=slot, question=question, gold=gold,
                           attempts=tuple(attempts), failed=True)  # fmt: skip
            return failed, call_failure(failure, ANSWERER, ctx.answerer, request, ctx.clock())
        parsed = parse_probe_answer(reply.text)
        attempts.append(ProbeAttempt(message=message, reply=reply, parsed=parsed))
        if parsed is not None:
            break
    probe = Probe(listener=listener, slot=slot, question=question, gold=gold,
                  attempts=tuple(attempts))  # fmt: skip
    return probe, None


async def probe_round(state: EpisodeState, runtime: Runtime[GameContext]) -> dict[str, object]:
    """Probe every slot once per listener so far, in the order the instance gives for this
    round."""
    ctx = game_context(state, runtime)
    instance = state.instance
    assert instance is not None  # set by instruct_answerer
    round_index = len(state.probe_rounds)
    context = answerer_context(state.dialogue)

    async def probe(planned: tuple[str | None, str, str]) -> tuple[Probe, CallFailure | None]:
        listener, slot, _ = planned
        gold: ProbeAnswer = "yes" if knows(state, listener, slot) else "no"
        return await probe_slot(context, instance, round_index, planned, gold, ctx)

    order = round_plan(instance, round_index)
    outcomes: list[tuple[Probe, CallFailure | None]] = []
    if ctx.probes_one_by_one:
        for planned in order:
            outcomes.append(await probe(planned))
            if outcomes[-1][0].answer is None:  # clembench stops probing at the first failure
                break
    else:
        outcomes = list(await asyncio.gather(*(probe(planned) for planned in order)))
    probes = [probe for probe, _ in outcomes]
    update: dict[str, object] = {"probe_rounds": [*state.probe_rounds, probes]}
    failures = [failure for _, failure in outcomes if failure is not None]
    if failures:
        update["error"] = failures[0]
    elif any(probe.answer is None for probe in probes):
        update["abort_reason"] = PROBING_ABORT
    return update
