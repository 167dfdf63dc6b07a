"""The questioner's turn: it acts only through function calls, which the game master carries out.

`ask(slot, question)` sends `<TAG>: <question>` to the answerer and declares which slot it asks
(so the ground truth of probing works as with the programmatic questioner); `record(slot, value)`
writes to the questioner's belief state, kept in the graph's state; `finish()` ends the dialogue.
The game master checks every call (unknown slot, missing argument, a second question in one turn,
anything after finish), tells the questioner the outcome, and asks again, up to three times, when
a turn brings no valid question; then the episode is aborted like any other broken rule. What it
checks but never tells (is a recorded value true? was the slot asked?) goes to the records as the
call's intermediate results, from which the questioner's metrics are computed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from langgraph.runtime import Runtime
from pydantic import JsonValue

from privateshared.agents.base import ChatMessage, PlayerFailure, PlayerRequest, ToolCall
from privateshared.agents.views import REFUSED
from privateshared.domains.audience import FAREWELL, handover_opening
from privateshared.domains.instances import GameInstance
from privateshared.graph.context import GameContext, game_context
from privateshared.graph.dialogue import call_failure, call_player, revealed_slots
from privateshared.graph.listeners import (
    asker_at,
    hands_over_at,
    present_at,
    question_message,
)
from privateshared.graph.records import QUESTIONER
from privateshared.graph.state import (
    AudienceChange,
    EpisodeState,
    Exchange,
    QuestionerStep,
    Reply,
    ToolCallRecord,
)

MAX_QUESTIONER_TRIES = 3
"""Replies per turn before a questioner that makes no valid move aborts the episode."""
EXTRA_QUESTIONS = 3
"""Questions allowed beyond one per slot."""
QUESTIONER_ABORT = "no valid question from the questioner"
START = "Start the conversation: ask your first question."
NUDGE = "Make your move through the functions: ask(slot, question), or finish() when done."


def questioner_prompt(instance: GameInstance, role: str | None = None) -> str:
    """The questioner's instructions: its role and the slots to fill, never their values."""
    slots = "\n".join(
        f"- {slot}: {instance.slot_descriptions.get(slot, slot)}" for slot in instance.slots
    )
    role = role or instance.questioner or "questioner"
    return (
        f"You are a {role} in a conversation. Find out these "
        f"details from the person you talk to:\n{slots}\n\n"
        "Act only through the functions. ask(slot, question) puts one question about one slot "
        "to the person (one question per turn; its result is their answer). record(slot, value) "
        "notes a detail you have learned, in a few words; record each detail as soon as you "
        "hear it, even one you did not ask for. Do not ask about a slot you have already "
        "recorded. Call finish() once every slot is recorded."
    )


def questioner_tools(instance: GameInstance) -> tuple[dict[str, JsonValue], ...]:
    """The three functions, as OpenAI tool schemas."""
    slot: dict[str, JsonValue] = {
        "type": "string", "enum": list(instance.slots), "description": "The slot's name.",
    }  # fmt: skip

    def tool(name: str, description: str, properties: dict[str, JsonValue]) -> dict[str, JsonValue]:
        return {
            "type": "function",
            "function": {
                "name": name,
                "description": description,
                "parameters": {
                    "type": "object",
                    "properties": properties,
                    "required": list(properties),
                },
            },
        }

    return (
        tool("ask", "Ask the person one question about one slot.",
             {"slot": slot, "question": {"type": "string", "description": "The question."}}),
        tool("record", "Record the value you learned for a slot.",
             {"slot": slot, "value": {"type": "string", "description": "The value, briefly."}}),
        tool("finish", "End the conversation once every slot is recorded.", {}),
    )  # fmt: skip


def questioner_context(
    instance: GameInstance,
    steps: Sequence[QuestionerStep],
    change: AudienceChange | None = None,
    farewell: bool = False,
) -> list[ChatMessage]:
    """The questioner's conversation: instructions, then its replies and what each call got;
    `farewell` adds the call to record before a handover.

    After a handover the second questioner has a conversation of its own, opened by the note."""
    if change is not None and change.note is not None and instance.audience is not None:
        role = f"{instance.audience.role} of a {instance.questioner}"
        opening = [
            ChatMessage(role="system", content=questioner_prompt(instance, role)),
            ChatMessage(role="user", content=handover_opening(instance.questioner, change.note)),
        ]
    else:
        opening = [
            ChatMessage(role="system", content=questioner_prompt(instance)),
            ChatMessage(role="user", content=START),
        ]
    messages = opening
    for step in steps:
        calls = tuple(record.call for record in step.calls)
        messages.append(ChatMessage(role="assistant", content=step.reply.text, tool_calls=calls))
        messages += [
            ChatMessage(role="tool", content=record.result, tool_call_id=record.call.id)
            for record in step.calls
        ]
        if not makes_move(step):
            messages.append(ChatMessage(role="user", content=NUDGE))
    if farewell:
        messages.append(ChatMessage(role="user", content=FAREWELL))
    return messages


def question_limit(instance: GameInstance) -> int:
    """How many questions a questioner may ask: one per slot and a few more; after a handover
    after turn k, k more for the second questioner, who may need to ask again."""
    audience = instance.audience
    handover = audience.after_turn if audience is not None and audience.kind == "handover" else 0
    return len(instance.slots) + EXTRA_QUESTIONS + handover


def makes_move(step: QuestionerStep) -> bool:
    """Whether a step asks a valid question or validly finishes."""
    return any(r.valid and r.call.name in ("ask", "finish") for r in step.calls)


def has_finished(steps: Sequence[QuestionerStep]) -> bool:
    """Whether the questioner has validly called finish()."""
    return any(r.valid and r.call.name == "finish" for step in steps for r in step.calls)


def is_true_value(recorded: str, slot: str, slots: Mapping[str, str]) -> bool:
    """Whether a recorded value is the slot's true one: it holds the true value (containment, as
    slot filling is checked) and no other slot's value, so that recording everything one heard
    in every slot is not rewarded."""
    text = recorded.lower()
    return slots[slot].lower() in text and not any(
        value.lower() in text for other, value in slots.items() if other != slot
    )


@dataclass(frozen=True)
class Move:
    """What one questioner reply amounts to, once every call is carried out."""

    calls: tuple[ToolCallRecord, ...]
    belief: dict[str, str]
    question: tuple[str, str] | None
    """(slot, question) when the reply asks a valid question."""
    finished: bool


def _text(arguments: Mapping[str, JsonValue], key: str) -> str:
    value = arguments.get(key)
    return value.strip() if isinstance(value, str) else ""


def carry_out(
    calls: Sequence[ToolCall],
    belief: Mapping[str, str],
    instance: GameInstance,
    asked: frozenset[str],
    revealed: frozenset[str],
    questions_left: bool = True,
    leaving: bool = False,
) -> Move:
    """Check and carry out a reply's calls in order (pure: the new belief is returned).

    A reply asks or finishes, not both: the second of the two is refused, so the last answer can
    always be recorded. Once the questions run out, only record and finish are accepted; a
    questioner `leaving` in a handover may only record."""
    belief = dict(belief)
    records: list[ToolCallRecord] = []
    question: tuple[str, str] | None = None
    finished = False
    slots = list(instance.slots)

    def refuse(call: ToolCall, why: str, **checks: JsonValue) -> None:
        records.append(ToolCallRecord(
            call=call, valid=False, result=f"{REFUSED}{why}. Slots: {', '.join(slots)}.",
            intermediate_results={"error": why, **checks},
        ))  # fmt: skip

    for call in calls:
        arguments = call.arguments
        if finished:
            refuse(call, "the conversation is over")
        elif leaving and call.name != "record":
            refuse(call, "you are handing over; only record() is possible now")
        elif arguments is None:
            refuse(call, call.error or "arguments are not a JSON object")
        elif call.name == "ask":
            slot, text = _text(arguments, "slot"), _text(arguments, "question")
            if slot not in instance.slots:
                refuse(call, f"unknown slot {slot!r}" if slot else "missing slot",
                       violation="question about an unknown slot")  # fmt: skip
            elif not text:
                refuse(call, "missing question")
            elif question is not None:
                refuse(call, "one question per turn")
            elif not questions_left:
                refuse(call, "no questions left; record what you learned and call finish()")
            else:
                question = (slot, text)
                checks: dict[str, JsonValue] = {"asked_before": slot in asked}
                if slot in belief:
                    checks["violation"] = "question about a slot already recorded"
                records.append(ToolCallRecord(
                    call=call, valid=True, result="", intermediate_results=checks
                ))  # fmt: skip
        elif call.name == "record":
            slot, value = _text(arguments, "slot"), _text(arguments, "value")
            if slot not in instance.slots:
                refuse(call, f"unknown slot {slot!r}" if slot else "missing slot")
            elif not value:
                refuse(call, "missing value")
            else:
                belief[slot] = value
                records.append(ToolCallRecord(
                    call=call, valid=True, result=f"Recorded {slot}.",
                    intermediate_results={
                        "true_value": is_true_value(value, slot, instance.slots),
                        "revealed": slot in revealed, "asked": slot in asked,
                    },
                ))  # fmt: skip
        elif call.name == "finish" and question is not None:
            refuse(call, "a turn asks or finishes, not both; the question was asked")
        elif call.name == "finish":
            finished = True
            missing = [slot for slot in slots if slot not in belief]
            checks = {"unrecorded": list(missing)}
            if missing:
                checks["violation"] = "finish with slots unrecorded"
            records.append(ToolCallRecord(
                call=call, valid=True, result="The conversation is over.",
                intermediate_results=checks,
            ))  # fmt: skip
        else:
            refuse(call, f"unknown function {call.name!r}; use ask, record or finish")
    return Move(tuple(records), belief, question, finished)


def revealed_so_far(dialogue: Sequence[Exchange], instance: GameInstance) -> frozenset[str]:
    """Slots whose value a valid answer has given so far."""
    revealed: set[str] = set()
    for exchange in dialogue[1:]:
        if exchange.parsed is not None and exchange.answer is not None:
            revealed |= revealed_slots(exchange.answer.text, instance.slots)
    return frozenset(revealed)


async def ask_question(state: EpisodeState, runtime: Runtime[GameContext]) -> dict[str, object]:
    """Let the questioner make its move: record what it learned, then ask or finish."""
    ctx = game_context(state, runtime)
    instance = state.instance
    assert instance is not None  # set by instruct_answerer
    turn = len(state.dialogue)
    steps = list(state.questioner_steps)
    # Before a handover, the leaving questioner gets a last turn to record what it learned.
    leaving = hands_over_at(instance, state.audience_change, turn)
    # With two listeners the steps name who asked; each questioner sees only its own.
    asker = None
    if instance.audience is not None:
        asker = instance.tag if leaving else asker_at(instance, turn)
    change = state.audience_change if asker != instance.tag else None
    belief = dict(state.belief)
    asked = frozenset(exchange.slot for exchange in state.dialogue[1:] if exchange.slot)
    revealed = revealed_so_far(state.dialogue, instance)
    # After the last question allowed, one more turn records what the last answer gave.
    questions_left = turn <= question_limit(instance) and not leaving
    move: Move | None = None
    for attempt in range(1, 2 if leaving else MAX_QUESTIONER_TRIES + 1):
        own = [step for step in steps if step.questioner == asker]
        context = questioner_context(instance, own, change, farewell=leaving)
        request = PlayerRequest(
            kind="request", messages=tuple(context),
            tools=questioner_tools(instance), instance=instance, turn=turn, slot="",
            attempt=attempt, listener=asker,
        )  # fmt: skip
        try:
            reply = await call_player(ctx.questioner, request, ctx.clock)
        except PlayerFailure as failure:
            error = call_failure(failure, QUESTIONER, ctx.questioner, request, ctx.clock())
            return {"questioner_steps": steps, "belief": belief, "error": error}
        move = carry_out(
            reply.tool_calls, belief, instance, asked, revealed, questions_left, leaving
        )
        belief = move.belief
        steps.append(QuestionerStep(turn=turn, attempt=attempt, reply=reply, calls=move.calls,
                                    questioner=asker, farewell=leaving))  # fmt: skip
        if move.question is not None or move.finished:
            break
    update: dict[str, object] = {"questioner_steps": steps, "belief": belief}
    if move is not None and move.question is not None:
        slot, text = move.question
        question = Reply(text=text, sent_at=reply.sent_at, received_at=reply.received_at)
        exchange = Exchange(
            slot=slot, request=question, present=present_at(instance, turn),
            message=question_message(instance, turn, text, state.audience_change),
        )  # fmt: skip
        update["dialogue"] = [*state.dialogue, exchange]
    elif questions_left and (move is None or not move.finished):
        update["abort_reason"] = QUESTIONER_ABORT  # a farewell has no questions left: no abort
    return update
