"""The players and rules a thread's episode starts with stay with the thread.

A person plays over many runs on one thread, one per reply, and a client resuming a turn need
not resend the run's context: the episode goes on with the players it started with, and a
context naming others is refused before anyone is asked anything. Played here on the compiled
graph with the in-memory checkpointer `privateshared play` resumes with; the same over
`langgraph dev` is in test_langgraph_dev.py.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command

from privateshared.agents.baselines import MockAnswerer, OracleAnswerer
from privateshared.agents.human import HumanPlayer
from privateshared.agents.llm import ModelSpec
from privateshared.bench.cli.play import _checkpointer
from privateshared.domains.instances import GameInstance, default_instance
from privateshared.graph.builder import build_graph
from privateshared.graph.context import GameContext, episode_setup, game_context
from privateshared.graph.state import EpisodeState, GivenPlayer

INSTANCE = default_instance("travel-booking", 0)
START = {"experiment": INSTANCE.experiment, "game_id": INSTANCE.game_id}
TURNS = 5 + 6 * 5
"""A person's turns in a perfect travel-booking episode: five answers, six rounds of probes."""
REFUSED = "this thread's episode is played with answerer 'human'; a run on the thread may repeat"

Graph = CompiledStateGraph[EpisodeState, GameContext, EpisodeState, EpisodeState]


def person_reply(instance: GameInstance, payload: dict[str, Any], asked: list[str]) -> str:
    """The right reply to a person's turn, read off what the turn shows: the value asked for,
    or whether the slot probed was asked already. Notes each slot asked in `asked`."""
    if payload["kind"] == "question":
        slot = next(s for s, r in instance.requests.items() if r in payload["message"])
        asked.append(slot)
        return f"ANSWER: {instance.slots[slot]}."
    probes = instance.probes[len(asked)].items()
    slot = next(s for s, q in probes if q in payload["message"])
    return f"ASIDE: {'yes' if slot in asked else 'no'}"


def new_thread() -> tuple[Graph, RunnableConfig]:
    """The game with a checkpointer that keeps waiting episodes, and a fresh thread on it."""
    return build_graph(_checkpointer()), {"configurable": {"thread_id": str(uuid.uuid4())}}


async def play_out(
    graph: Graph, config: RunnableConfig, values: dict[str, Any], context: object = None
) -> tuple[dict[str, Any], int]:
    """Answer every turn right, resuming with `context` (None: none at all), until the episode
    ends; its final values and the number of turns answered."""
    asked: list[str] = []
    turns = 0
    while "__interrupt__" in values:
        reply = person_reply(INSTANCE, values["__interrupt__"][0].value, asked)
        values = await graph.ainvoke(Command(resume=reply), config, context=context)
        turns += 1
    return values, turns


def answerers(values: dict[str, Any]) -> set[str]:
    """Who answered the questions and the probes."""
    state = EpisodeState.model_validate(values)
    replies = [exchange.answer for exchange in state.dialogue[1:] if exchange.answer]
    replies += [attempt.reply for probes in state.probe_rounds for probe in probes
                for attempt in probe.attempts]  # fmt: skip
    return {reply.raw["player"] for reply in replies if isinstance(reply.raw, dict)}


async def test_a_resume_without_context_keeps_the_person() -> None:
    """The person who started the episode answers every turn to the end, though no resume says
    who plays; before, the first resume finished the episode with the default oracle."""
    graph, config = new_thread()
    first = await graph.ainvoke(START, config, context={"answerer": "human"})
    values, turns = await play_out(graph, config, first)
    assert turns == TURNS
    assert answerers(values) == {"human"}
    assert values["records"].interactions.players["Player 1"] == "Answerer: human"
    assert values["scores"].episode_scores["Main Score"] == 100.0


async def test_a_player_named_by_import_path_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The thread keeps the import path as given and names it again on resume: the user's own
    player answers the person who asks, though the resume does not name it."""
    (tmp_path / "cousin.py").write_text(
        "from privateshared.agents.baselines import OracleAnswerer\n"
        "cousin = OracleAnswerer(name='cousin')\n"
    )
    monkeypatch.chdir(tmp_path)
    graph, config = new_thread()
    context = {"answerer": "./cousin.py:cousin", "questioner": "human"}
    values = await graph.ainvoke(START, config, context=context)
    assert values["setup"].answerer == GivenPlayer(given="./cousin.py:cousin")
    values = await graph.ainvoke(Command(resume="ask from: Where do you leave from?"), config)
    assert values["__interrupt__"][0].value["seat"] == "questioner"
    assert answerers(values) == {"cousin"}


@pytest.mark.parametrize(
    ("context", "refusal"),
    [
        ({"answerer": "oracle"}, REFUSED),
        # Naming the person too does not let another seat change.
        ({"answerer": "human", "questioner": "human"}, "played with questioner 'programmatic'"),
        ({"max_tries": 2}, "played with max_tries 5; "),
    ],
    ids=["other-answerer", "other-questioner", "other-rule"],
)
async def test_a_resume_naming_others_is_refused_and_leaves_the_episode(
    context: dict[str, object], refusal: str
) -> None:
    """A resume whose context changes a player or a rule fails before anyone is asked: the
    thread waits at the same turn, the refused reply is not taken, and a right resume goes on."""
    graph, config = new_thread()
    values = await graph.ainvoke(START, config, context={"answerer": "human"})
    asked: list[str] = []
    first = person_reply(INSTANCE, values["__interrupt__"][0].value, asked)
    values = await graph.ainvoke(Command(resume=first), config)
    before = await graph.aget_state(config)
    # The second probe of the first round, about a slot nobody asked for yet: `no` is right.
    assert person_reply(INSTANCE, values["__interrupt__"][0].value, asked) == "ASIDE: no"
    with pytest.raises(ValueError, match=refusal):
        await graph.ainvoke(Command(resume="ASIDE: yes"), config, context=context)
    after = await graph.aget_state(config)
    assert after.config == before.config  # no new checkpoint
    assert (after.values, after.next, after.interrupts) == (
        before.values, before.next, before.interrupts,
    )  # fmt: skip
    values, turns = await play_out(graph, config, values)
    assert turns == TURNS - 1
    second = values["probe_rounds"][0][1]
    assert [attempt.reply.text for attempt in second.attempts] == ["ASIDE: no"]
    assert answerers(values) == {"human"}
    assert values["scores"].episode_scores["Main Score"] == 100.0


async def test_a_context_that_repeats_the_players_is_fine() -> None:
    """Resending the context, as the Studio page shows, or spelling out the defaults, plays on."""
    graph, config = new_thread()
    values = await graph.ainvoke(START, config, context={"answerer": "human", "max_tries": 3})
    same = {"answerer": "human", "questioner": "programmatic", "judge": None, "max_tries": 3,
            "sequential_probes": False}  # fmt: skip
    values, turns = await play_out(graph, config, values, same)
    assert turns == TURNS
    assert values["records"].interactions.players["Player 1"] == "Answerer: human"
    assert values["scores"].episode_scores["Main Score"] == 100.0


async def test_rules_left_out_stay_with_the_thread() -> None:
    """Started with two tries per probe, a probe resumed without context gets two, not five."""
    graph, config = new_thread()
    values = await graph.ainvoke(START, config, context={"answerer": "human", "max_tries": 2})
    while "__interrupt__" in values:
        values = await graph.ainvoke(Command(resume="No idea."), config)
    state = EpisodeState.model_validate(values)
    assert [len(probe.attempts) for probe in state.probe_rounds[0]] == [2]
    assert state.scores is not None and state.scores.episode_scores["Aborted"] == 1


LOCAL = "http://127.0.0.1:9/v1"
"""A local endpoint: a model player made for it needs no key (and is never called here)."""


@pytest.mark.parametrize(
    ("spec", "answerer"),
    [
        (None, GivenPlayer(given="oracle")),
        # The name as given, not the player's name (mock-s4), which would not make it again.
        ("mock:4", GivenPlayer(given="mock:4")),
        ({"model": "m", "base_url": LOCAL}, GivenPlayer(given={"model": "m", "base_url": LOCAL})),
        (ModelSpec(model="m", base_url=LOCAL, temperature=0.5),
         GivenPlayer(given={"model": "m", "base_url": LOCAL, "temperature": 0.5})),
        # An object from Python is kept by name only: it cannot be made from the state again.
        (MockAnswerer(seed=4), GivenPlayer(given="mock-s4", python_object=True)),
    ],
    ids=["default", "name", "spec-dict", "spec", "python-object"],
)  # fmt: skip
def test_episode_setup_keeps_players_as_given(spec: object, answerer: GivenPlayer) -> None:
    setup = episode_setup(GameContext() if spec is None else GameContext(answerer=spec))
    assert setup.answerer == answerer
    assert (setup.questioner, setup.judge) == (GivenPlayer(given="programmatic"), None)
    assert (setup.max_tries, setup.sequential_probes) == (5, False)


def started(context: GameContext) -> EpisodeState:
    """An episode's state once it has started with `context`."""
    return EpisodeState(setup=episode_setup(context))


@pytest.mark.parametrize(
    ("given", "answerer"),
    [
        (None, MockAnswerer(seed=4)),  # no context at all: made again from the state
        ({"questioner": "programmatic"}, MockAnswerer(seed=4)),  # the seat left out
        ({"answerer": "mock:4"}, MockAnswerer(seed=4)),  # repeated
    ],
    ids=["none", "seat-left-out", "repeated"],
)
def test_game_context_plays_with_the_players_started_with(
    given: dict[str, object] | None, answerer: object
) -> None:
    state = started(GameContext(answerer="mock:4", max_tries=2))
    context = None if given is None else GameContext.model_validate(given)
    played = game_context(state, Runtime(context=context))
    assert (played.answerer, played.max_tries) == (answerer, 2)


def test_a_person_is_made_again_in_their_seat() -> None:
    for seat in ("answerer", "questioner"):
        state = started(GameContext.model_validate({seat: "human"}))
        played = game_context(state, Runtime(context=None))
        assert getattr(played, seat) == HumanPlayer(seat)


def test_python_objects_passed_again_are_used_as_they_are() -> None:
    """A run from Python passes its context on every run: it is used unchanged, not rebuilt."""
    context = GameContext(answerer=OracleAnswerer(), questioner=HumanPlayer("questioner"))
    assert game_context(started(context), Runtime(context=context)) is context


@pytest.mark.parametrize(
    ("given", "refusal"),
    [
        ({"answerer": "mock:5"}, "played with answerer 'mock:4'; .* not change it to 'mock:5'"),
        ({"judge": {"model": "j", "base_url": LOCAL}}, "played with judge none; .* to {"),
        ({"sequential_probes": True}, "played with sequential_probes False; "),
    ],
    ids=["answerer", "judge", "rule"],
)
def test_game_context_refuses_other_players(given: dict[str, object], refusal: str) -> None:
    state = started(GameContext(answerer="mock:4"))
    with pytest.raises(ValueError, match=refusal):
        game_context(state, Runtime(context=GameContext.model_validate(given)))


def test_a_python_object_left_out_is_refused() -> None:
    """An object's name does not make it again (`mock-s4` would be taken for a model)."""
    state = started(GameContext(answerer=MockAnswerer(seed=4)))
    with pytest.raises(ValueError, match="answerer 'mock-s4' was given as a Player object"):
        game_context(state, Runtime(context=None))
