"""The dialogue: instructing the answerer, the questioner's questions and the answers to them.

Rules as clembench 2.0 played them: a valid answer starts with `ANSWER:` and stays on one line;
a broken answer aborts the episode at once. A slot is filled when its value occurs in the answer
(case-insensitive), and every value of the instance that occurs in a valid answer makes its slot
shared from that turn on, even when the questioner has not asked for it yet.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from langgraph.runtime import Runtime

from privateshared.agents.base import ChatMessage, Player, PlayerFailure, PlayerRequest
from privateshared.agents.views import ANSWERED
from privateshared.domains.instances import default_instance
from privateshared.domains.schema import ANSWER_TAG
from privateshared.graph.context import GameContext, episode_setup, game_context, run_context
from privateshared.graph.listeners import heard_now, present_at
from privateshared.graph.records import ANSWERER, CallFailure
from privateshared.graph.state import EpisodeState, Exchange, QuestionerStep, Reply

PSEUDO_ANSWER = "Ok."
"""Put in the answerer's mouth after the instructions, so the dialogue starts with its turn."""
SLOT_FILLING_ABORT = "invalid format in slot filling"


def has_continuation(reply: str) -> bool:
    """Whether a reply goes on past its first line (surrounding newlines do not count)."""
    return "\n" in reply.strip("\n")


def parse_answer(reply: str) -> str | None:
    """The answer without its tag, e.g. "Lisbon." from "ANSWER: Lisbon."; None if malformed."""
    if not reply.startswith(ANSWER_TAG) or has_continuation(reply):
        return None
    return reply.replace(ANSWER_TAG, "").strip()


def is_slot_filled(answer: str, value: str) -> bool:
    """Whether `value` occurs in `answer`, ignoring case (clembench's containment rule)."""
    return value.lower() in answer.lower()


def revealed_slots(answer: str, slots: Mapping[str, str]) -> frozenset[str]:
    """Slots whose value occurs in `answer`."""
    return frozenset(slot for slot, value in slots.items() if is_slot_filled(answer, value))


def answerer_context(dialogue: Sequence[Exchange]) -> list[ChatMessage]:
    """The answerer's conversation: every message it received and every answer it gave."""
    messages = []
    for exchange in dialogue:
        messages.append(ChatMessage(role="user", content=exchange.message))
        if exchange.answer is not None:
            messages.append(ChatMessage(role="assistant", content=exchange.answer.text))
    return messages


async def call_player(player: Player, request: PlayerRequest, clock: Callable[[], str]) -> Reply:
    """Send `request` to `player` and stamp the reply with when it was sent and received.

    Raises `PlayerFailure` when the player's call failed after its retries."""
    sent_at = clock()
    reply = await player.respond(request)
    return Reply(
        text=reply.text, sent_at=sent_at, received_at=clock(), prompt=reply.prompt, raw=reply.raw,
        tool_calls=reply.tool_calls,
    )  # fmt: skip


def call_failure(
    failure: PlayerFailure, role: str, player: Player, request: PlayerRequest, at: str
) -> CallFailure:
    """What error.json says about a call that failed for good."""
    return CallFailure(
        player=role,
        model=player.name,
        kind=failure.kind,
        message=failure.message,
        tries=failure.tries,
        at=at,
        request={
            "kind": request.kind,
            # A probe's `turn` is its probing round, as the records' probe events call it.
            "round" if request.kind == "probe" else "turn": request.turn,
            "slot": request.slot,
            "attempt": request.attempt,
        },
        fix=failure.fix,
    )  # fmt: skip


async def instruct_answerer(
    state: EpisodeState, runtime: Runtime[GameContext]
) -> dict[str, object]:
    """Open the dialogue with the initial prompt and the pseudo answer `Ok.`.

    Async although it awaits nothing: a sync node would cost a thread-pool hop per episode."""
    if state.dialogue or state.probe_rounds:
        # With a checkpointer (Studio), a second run on a thread would inherit the first
        # episode's state; say so rather than play a mixture of two episodes.
        raise ValueError(
            "this thread already holds an episode; start a new thread to play another one"
        )
    # The episode starts here, with the players and rules of this run's context; they stay
    # with the thread (any `setup` in the input is replaced: the context says who plays).
    context = run_context(runtime)
    now = context.clock()
    instance = state.instance or default_instance(state.experiment, state.game_id)
    instructions = Exchange(
        slot=None,
        request=None,
        message=instance.initial_prompt,
        answer=Reply(text=PSEUDO_ANSWER, sent_at=now, received_at=now),
        parsed=PSEUDO_ANSWER,
        present=present_at(instance, 0),
    )
    return {"instance": instance, "dialogue": [instructions], "setup": episode_setup(context)}


async def answer_question(state: EpisodeState, runtime: Runtime[GameContext]) -> dict[str, object]:
    """Get the answer, check its format and filling, and mark every slot it shares as shared."""
    ctx = game_context(state, runtime)
    instance = state.instance
    assert instance is not None  # set by instruct_answerer
    exchange = state.dialogue[-1]
    assert exchange.slot is not None  # set by ask_question
    turn = len(state.dialogue) - 1
    messages = tuple(answerer_context(state.dialogue))
    question = PlayerRequest(
        kind="question", messages=messages, instance=instance, turn=turn, slot=exchange.slot
    )
    try:
        answer = await call_player(ctx.answerer, question, ctx.clock)
    except PlayerFailure as failure:
        return {"error": call_failure(failure, ANSWERER, ctx.answerer, question, ctx.clock())}
    parsed = parse_answer(answer.text)
    heard = deliver_answer(state.questioner_steps, parsed or answer.text)
    if parsed is None:
        answered = exchange.model_copy(update={"answer": answer})
        return {
            "dialogue": [*state.dialogue[:-1], answered],
            "questioner_steps": heard,
            "abort_reason": SLOT_FILLING_ABORT,
        }
    answered = exchange.model_copy(
        update={
            "answer": answer,
            "parsed": parsed,
            "filled": is_slot_filled(answer.text, instance.slots[exchange.slot]),
        }
    )
    # The asked slot is shared now whatever the answer said (a wrong value is still shared);
    # so is every slot whose value the answer gave away early.
    shared = frozenset({exchange.slot} | revealed_slots(answer.text, instance.slots))
    newly_shared = shared - set(state.shared_since)
    return {
        "dialogue": [*state.dialogue[:-1], answered],
        "questioner_steps": heard,
        "shared_since": {**state.shared_since, **dict.fromkeys(sorted(newly_shared), turn)},
        # With two listeners, only those present hear it.
        "heard_since": heard_now(state, instance, turn, shared),
    }


def deliver_answer(steps: list[QuestionerStep], answer: str) -> list[QuestionerStep]:
    """`steps` with the latest question's result set to the answer it got: the questioner
    hears the answer as the result of its `ask` call."""
    if not steps:
        return steps
    *earlier, last = steps
    calls = tuple(
        record.model_copy(update={"result": f"{ANSWERED}{answer}"})
        if record.valid and record.call.name == "ask"
        else record
        for record in last.calls
    )
    return [*earlier, last.model_copy(update={"calls": calls})]
