"""The views a program in a seat gets: read from requests built as the game master builds them
(its own functions write the conversations), in the classic game and with two listeners, and
from the requests of whole episodes, where they must agree with the game master's state."""

from __future__ import annotations

import pytest
from pydantic import JsonValue

from privateshared.agents import (
    AnswererView,
    Asked,
    ChatMessage,
    Move,
    PlayerRequest,
    ProgramAnswerer,
    ProgramQuestioner,
    QuestionerView,
    ToolCall,
    Turn,
    answerer_view,
    questioner_view,
)
from privateshared.agents.scripted import ask_in_order
from privateshared.bench.running.episodes import play_episode
from privateshared.domains.audience import (
    NOTHING_NOTED,
    handover_opening,
    note_text,
    read_handover_opening,
    read_note,
)
from privateshared.domains.instances import GameInstance, default_instance
from privateshared.graph.context import GameContext
from privateshared.graph.dialogue import PSEUDO_ANSWER, answerer_context
from privateshared.graph.listeners import present_at, question_message
from privateshared.graph.questioning import questioner_context, questioner_tools
from privateshared.graph.state import (
    AudienceChange,
    Exchange,
    QuestionerStep,
    Reply,
    ToolCallRecord,
)

CLASSIC = default_instance("travel-booking", 0)
"""Asks class, when, from, by, to; values Edinburgh, Budapest, Connecting flight, ..."""
HANDOVER = default_instance("travel-booking-handover", 2)
"""Hands over after turn 3 (by, from, when asked); the leaving questioner notes by and from."""
LATE_JOINER = default_instance("travel-booking-late-joiner", 0)
AGENT, COLLEAGUE = "TRAVEL-AGENT", "COLLEAGUE"


@pytest.mark.parametrize(
    "values",
    [
        {"from": "Lisbon", "by": "train"},
        {"from": "Lisbon; or Porto", "to": "Rome."},  # `; ` and a final `.` inside values
        {"class": "First: with a bed"},  # `: ` inside a value
        {},  # nothing recorded: the note says so
    ],
    ids=["two-values", "separators-in-values", "colon-in-value", "nothing"],
)
def test_a_note_reads_back_as_the_values_it_carries(values: dict[str, str]) -> None:
    note = note_text(values)
    assert read_note(note, CLASSIC.slots) == values
    opening = handover_opening("travel agent", note)
    assert read_handover_opening(opening) == note


def test_other_messages_carry_no_note() -> None:
    assert read_handover_opening("Start the conversation: ask your first question.") is None
    assert read_note(NOTHING_NOTED, CLASSIC.slots) == {}
    assert read_note("Some words of a model.", CLASSIC.slots) == {}


# --- The questioner's view


def call(name: str, result: str, valid: bool = True, **arguments: JsonValue) -> ToolCallRecord:
    """A call and what the game master made of it. Its id is its name: ids may repeat across
    replies (a program's do), and each result is read as its own reply's."""
    tool_call = ToolCall(id=name, name=name, arguments=arguments)
    return ToolCallRecord(call=tool_call, valid=valid, result=result)


def step(
    turn: int, *calls: ToolCallRecord, questioner: str | None = None, attempt: int = 1
) -> QuestionerStep:
    """One questioner reply and what the game master made of each of its calls."""
    reply = Reply(text="", sent_at="", received_at="")
    return QuestionerStep(turn=turn, attempt=attempt, reply=reply, calls=calls,
                          questioner=questioner)  # fmt: skip


def questioner_request(
    instance: GameInstance,
    steps: list[QuestionerStep],
    turn: int,
    listener: str | None = None,
    change: AudienceChange | None = None,
    farewell: bool = False,
) -> PlayerRequest:
    """The request `ask_question` sends, from the same context function."""
    messages = questioner_context(instance, steps, change, farewell=farewell)
    return PlayerRequest(kind="request", messages=tuple(messages), instance=instance, turn=turn,
                         slot="", tools=questioner_tools(instance), listener=listener)  # fmt: skip


def test_questioner_view_in_the_classic_game() -> None:
    requests = CLASSIC.requests
    steps = [
        step(1, call("ask", "Answer: Private compartment.", slot="class",
                     question=requests["class"])),
        # A refused question is no question asked; a refused record writes nothing down.
        step(2, call("record", "Error: unknown slot 'klass'.", valid=False, slot="klass",
                     value="Private compartment"),
             call("ask", "Error: missing question.", valid=False, slot="when"),
             attempt=1),
        step(2, call("record", "Recorded class.", slot="class", value=" Private compartment "),
             call("ask", "Answer: Early August.", slot="when", question="When?"), attempt=2),
    ]  # fmt: skip
    game = questioner_view(questioner_request(CLASSIC, steps, turn=3))
    assert game.tag == AGENT and game.role == "travel agent"
    assert (game.turn, game.attempt, game.leaving) == (3, 1, False)
    assert game.asked == (
        Asked(slot="class", question=requests["class"], answer="Private compartment."),
        Asked(slot="when", question="When?", answer="Early August."),
    )
    assert game.recorded == {"class": "Private compartment"}
    assert game.heard == {"when": "Early August."}
    assert game.left == ("from", "by", "to")  # in the instance's request order
    assert (game.note, game.noted) == (None, {})


def test_questioner_view_of_the_one_who_hands_over() -> None:
    steps = [step(t, call("ask", f"Answer: {HANDOVER.slots[slot]}.", slot=slot, question="?"),
                  questioner=AGENT)
             for t, slot in enumerate(HANDOVER.request_order[:3], start=1)]  # fmt: skip
    game = questioner_view(questioner_request(HANDOVER, steps, 4, AGENT, farewell=True))
    assert game.leaving and game.tag == AGENT and game.role == "travel agent"
    assert [asked.slot for asked in game.asked] == ["by", "from", "when"]
    assert game.left == ("to", "class")


def test_questioner_view_of_the_one_who_takes_over() -> None:
    """Its conversation opens with the note: it has asked nothing, and the note gives by and
    from, so only when, to and class are left."""
    noted = {"by": "Connecting flight", "from": "Marseille"}
    change = AudienceChange(kind="handover", after_turn=3, listener=COLLEAGUE, at="",
                            note=note_text(noted), note_values=noted)  # fmt: skip
    steps = [step(4, call("ask", "Answer: Zurich.", slot="to", question="?"),
                  questioner=COLLEAGUE)]  # fmt: skip
    game = questioner_view(questioner_request(HANDOVER, steps, 5, COLLEAGUE, change))
    assert game.tag == COLLEAGUE and game.role == "colleague" and not game.leaving
    assert game.note == "Here is what I have noted: BY: Connecting flight; FROM: Marseille."
    assert game.noted == noted
    assert game.asked == (Asked(slot="to", question="?", answer="Zurich."),)
    assert game.left == ("when", "class")


def test_a_view_is_read_from_its_own_kind_of_request() -> None:
    probe = PlayerRequest(kind="probe", messages=(), instance=CLASSIC, turn=0, slot="from")
    with pytest.raises(ValueError, match="from a request, not a probe"):
        questioner_view(probe)
    with pytest.raises(ValueError, match="from a question or a probe, not a request"):
        answerer_view(questioner_request(CLASSIC, [], 1))


# --- The answerer's view


def exchange(instance: GameInstance, turn: int, slot: str, answer: str,
             change: AudienceChange | None = None) -> Exchange:  # fmt: skip
    """Question `turn`, in the instance's words, as the game master sends it, and `answer`."""
    message = question_message(instance, turn, instance.requests[slot], change)
    reply = Reply(text=answer, sent_at="", received_at="")
    return Exchange(slot=slot, request=None, message=message, answer=reply,
                    present=present_at(instance, turn))  # fmt: skip


def instructions(instance: GameInstance) -> Exchange:
    reply = Reply(text=PSEUDO_ANSWER, sent_at="", received_at="")
    return Exchange(slot=None, request=None, message=instance.initial_prompt, answer=reply,
                    present=present_at(instance, 0))  # fmt: skip


def probe_request(instance: GameInstance, dialogue: list[Exchange], slot: str,
                  listener: str | None = None, attempt: int = 1) -> PlayerRequest:  # fmt: skip
    """The request `probe_slot` sends: the answerer's context and the probe."""
    probe = instance.probe_wording.message(instance.probes[0][slot], attempt)
    messages = (*answerer_context(dialogue), ChatMessage(role="user", content=probe))
    return PlayerRequest(kind="probe", messages=messages, instance=instance,
                         turn=len(dialogue) - 1, slot=slot, attempt=attempt,
                         listener=listener)  # fmt: skip


def test_answerer_view_in_the_classic_game() -> None:
    values = CLASSIC.slots
    dialogue = [
        instructions(CLASSIC),
        exchange(CLASSIC, 1, "class", f"ANSWER: {values['class']}, from {values['from']}."),
    ]
    game = answerer_view(probe_request(CLASSIC, dialogue, "to", attempt=2))
    assert (game.kind, game.slot, game.listener, game.turn, game.attempt) == (
        "probe", "to", AGENT, 1, 2,
    )  # fmt: skip
    assert game.values == values and game.message.startswith("ME:")
    assert game.turns == (
        Turn(asker=None, question="", present=(AGENT,), notes={}, reply="Ok."),
        Turn(asker=AGENT, question=CLASSIC.requests["class"], present=(AGENT,), notes={},
             reply="ANSWER: Private compartment, from Edinburgh."),
    )  # fmt: skip
    assert game.said == ("Ok.", "ANSWER: Private compartment, from Edinburgh.")
    # Asked for (class), said early (from), neither (to).
    assert [game.knows(AGENT, slot) for slot in ("class", "from", "to")] == [True, True, False]
    # The question it is asked now is no turn yet; who asks it is its listener.
    question = PlayerRequest(kind="question", instance=CLASSIC, turn=2, slot="when",
                             messages=tuple(answerer_context(
                                 [*dialogue, exchange(CLASSIC, 2, "when", "")]))[:-1])  # fmt: skip
    game = answerer_view(question)
    assert (game.kind, game.listener, len(game.turns)) == ("question", AGENT, 2)
    assert game.message == f"{AGENT}: {CLASSIC.requests['when']}"


def test_answerer_view_after_a_handover() -> None:
    """The note carries by and from; when was said before the handover, to after it."""
    values = HANDOVER.slots
    noted = {slot: values[slot] for slot in ("by", "from")}
    change = AudienceChange(kind="handover", after_turn=3, listener=COLLEAGUE, at="",
                            note=note_text(noted), note_values=noted)  # fmt: skip
    dialogue = [instructions(HANDOVER)] + [
        exchange(HANDOVER, turn, slot, f"ANSWER: {values[slot]}.", change)
        for turn, slot in enumerate(("by", "from", "when", "to"), start=1)
    ]
    game = answerer_view(probe_request(HANDOVER, dialogue, "class", listener=COLLEAGUE))
    assert game.listener == COLLEAGUE
    assert [turn.present for turn in game.turns] == [(AGENT,)] * 4 + [(COLLEAGUE,)]
    assert [turn.asker for turn in game.turns] == [None, AGENT, AGENT, AGENT, COLLEAGUE]
    assert game.turns[4].notes == {COLLEAGUE: change.note}
    knows = {listener: {slot for slot in values if game.knows(listener, slot)}
             for listener in (AGENT, COLLEAGUE, None)}  # fmt: skip
    assert knows == {
        AGENT: {"by", "from", "when"},
        COLLEAGUE: {"by", "from", "to"},  # the note's two and what it heard itself
        None: {"by", "from", "when", "to"},  # everything said, whoever heard it
    }
    # The colleague asks the next question: the view says so, though the request does not.
    question = PlayerRequest(kind="question", instance=HANDOVER, turn=5, slot="class",
                             messages=tuple(answerer_context([*dialogue, exchange(
                                 HANDOVER, 5, "class", "", change)]))[:-1])  # fmt: skip
    assert answerer_view(question).listener == COLLEAGUE


def test_answerer_view_with_a_late_joiner() -> None:
    k = LATE_JOINER.audience.after_turn if LATE_JOINER.audience else 0
    change = AudienceChange(kind="late-joiner", after_turn=k, listener=COLLEAGUE, at="")
    order = LATE_JOINER.request_order
    dialogue = [instructions(LATE_JOINER)] + [
        exchange(LATE_JOINER, turn, slot, f"ANSWER: {LATE_JOINER.slots[slot]}.", change)
        for turn, slot in enumerate(order[: k + 1], start=1)
    ]
    game = answerer_view(probe_request(LATE_JOINER, dialogue, order[0], listener=COLLEAGUE))
    assert game.turns[-1].present == (AGENT, COLLEAGUE)
    assert {slot for slot in order if game.knows(COLLEAGUE, slot)} == {order[k]}
    assert {slot for slot in order if game.knows(AGENT, slot)} == set(order[: k + 1])


# --- Views of whole episodes agree with the game master's state


async def test_views_agree_with_the_state_of_a_handover_episode() -> None:
    """Each questioner's view lists the questions it asked and their answers as the game
    master's state has them, the note as it was handed over; each probe's view knows what the
    game master's truth says, though it reads only what the answerer heard."""
    questioners: list[QuestionerView] = []
    probes: dict[tuple[int, str, str], bool] = {}

    def asker(game: QuestionerView) -> Move:
        questioners.append(game)
        return ask_in_order(game)

    def answerer(game: AnswererView) -> str:
        if game.kind == "probe":
            probes[game.turn, game.listener, game.slot] = game.knows(game.listener, game.slot)
        return f"ANSWER: {game.values[game.slot]}." if game.kind == "question" else "ASIDE: no"

    context = GameContext(answerer=ProgramAnswerer(answerer, "spy"),
                          questioner=ProgramQuestioner(asker, "spy"))  # fmt: skip
    state = await play_episode(HANDOVER, context)
    assert state.audience_change is not None and state.abort_reason is None
    for game in questioners:
        turns = [step.turn for step in state.questioner_steps
                 if step.questioner == game.tag and step.turn < game.turn
                 and any(r.valid and r.call.name == "ask" for r in step.calls)]  # fmt: skip
        assert [(a.slot, a.answer) for a in game.asked] == [
            (state.dialogue[t].slot, state.dialogue[t].parsed) for t in turns
        ]
        assert game.noted == (state.audience_change.note_values if game.tag == COLLEAGUE else {})
    assert [(g.tag, g.turn) for g in questioners if g.leaving] == [(AGENT, 4)]
    assert {g.tag for g in questioners} == {AGENT, COLLEAGUE}
    gold = {(k, p.listener or AGENT, p.slot): p.gold == "yes"
            for k, round_ in enumerate(state.probe_rounds) for p in round_}  # fmt: skip
    assert len(probes) == len(gold) > 30 and probes == gold
