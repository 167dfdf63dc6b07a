"""`privateshared play`: a person plays one episode in the terminal, as answerer or questioner.

The episode runs through the same graph as any run, with a `HumanPlayer` in the person's seat:
each of their turns is a LangGraph interrupt, shown here, answered from the keyboard and resumed.
The graph keeps the waiting episode in an in-memory checkpointer; nothing is written until the
episode ends, so Ctrl-C leaves no records, and the next `play` starts a new episode.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import select
import sys
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, get_args

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.types import Command
from pydantic import BaseModel, JsonValue

from privateshared.agents.human import HumanPlayer, Seat, format_problem
from privateshared.agents.llm import ChatModelPlayer
from privateshared.agents.names import HUMAN
from privateshared.bench.cli.report import report
from privateshared.bench.cli.usage import UsageError, check_writable
from privateshared.bench.reporting.transcripts.index import TRANSCRIPT_FILE, transcript_page
from privateshared.bench.running.cast import Role, player
from privateshared.bench.running.episodes import save_episode
from privateshared.bench.running.layout import (
    benchmark_of,
    episode_dir,
    pair_name,
    write_experiment_file,
)
from privateshared.bench.running.plan import Playable
from privateshared.domains.instances import ExperimentSpec, GameInstance, default_playable
from privateshared.domains.registry import known_domains
from privateshared.graph.builder import build_graph
from privateshared.graph.context import GameContext
from privateshared.graph.files import write_text
from privateshared.graph.perspective import CLASSIC_MAIN_SCORE
from privateshared.graph.recorder import SCORES_FILE
from privateshared.graph.records import (
    ABORTED,
    ACCURACY,
    KAPPA,
    MAIN_SCORE,
    SLOT_FILLING_ACCURACY,
)
from privateshared.graph.state import EpisodeState

Read = Callable[[str], str]
Write = Callable[[str], None]
MOVE_ENDS_TURN = ("ask", "finish")


def introduction(seat: Seat, instance: GameInstance) -> str:
    """What the person reads first: their seat, the rules, and for the answerer the values."""
    if seat == "answerer":
        values = "\n".join(f"  {slot.upper()}: {value}" for slot, value in instance.slots.items())
        return (
            f"You are the answerer ({instance.experiment}, game {instance.game_id}). Your "
            f"instructions:\n\n{instance.initial_prompt}\n\nYour private values:\n{values}\n\n"
            "Answer questions with one line `ANSWER: ...`. Now and then the game master asks you "
            "a private side question (`ME: ...`), which no one else hears: answer it with "
            "`ASIDE: yes` or `ASIDE: no`. A reply that breaks the format counts as a failed "
            "try, as it does for a model.\n"
        )
    slots = "\n".join(
        f"  {slot}: {instance.slot_descriptions.get(slot, slot)}" for slot in instance.slots
    )
    return (
        f"You are the questioner, a {instance.questioner} ({instance.experiment}, game "
        f"{instance.game_id}). Find out these details:\n{slots}\n\n"
        "Make your moves one per line: `record SLOT: value` notes what you learned, "
        "`ask SLOT: question` asks one question and ends your turn, `finish` ends the "
        "conversation once every slot is recorded.\n"
    )


def show(payload: Mapping[str, Any]) -> str:
    """The text of one turn of the person, from its interrupt payload."""
    if payload.get("seat") == "questioner":
        lines = [f"  {move}" for move in payload.get("last_moves") or []]
        if payload.get("message"):
            lines.append(f"  ({payload['message']})")
        to_find = ", ".join(payload.get("slots_to_find") or {}) or "none"
        lines.append(f"  Still to record: {to_find}")
        return "\n".join(lines)
    message = str(payload.get("message", ""))
    if payload.get("side_question"):
        again = f", try {payload['try']}" if int(payload.get("try", 1)) > 1 else ""
        return f"  [side question from the game master, heard by no one else{again}]\n  {message}"
    return "\n".join(f"  {line}" for line in message.splitlines())


def read_reply(seat: Seat, payload: Mapping[str, Any], read: Read) -> str:
    """The person's reply: one line for the answerer; for the questioner, moves until one that
    ends the turn (ask, finish) or an empty line."""
    if seat == "answerer":
        return read("aside> " if payload.get("side_question") else "you> ")
    moves: list[str] = []
    while True:
        line = read("move> ")
        if not line.strip():
            if moves:
                return "\n".join(moves)
            continue
        moves.append(line)
        if line.strip().split()[0].lower() in MOVE_ENDS_TURN:
            return "\n".join(moves)


def _state_types(annotation: Any, found: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """The (module, name) of every pydantic model the episode's state holds, at any depth."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        key = (annotation.__module__, annotation.__name__)
        if key in found:
            return found
        found.add(key)
        for field in annotation.model_fields.values():
            _state_types(field.annotation, found)
    for argument in get_args(annotation):
        _state_types(argument, found)
    return found


def _checkpointer() -> InMemorySaver:
    """A checkpointer that keeps the waiting episode and reads back its own types, named one by
    one (LangGraph warns about, and will refuse, types it was not told about)."""
    allowed = sorted(_state_types(EpisodeState, set()))
    return InMemorySaver(serde=JsonPlusSerializer(allowed_msgpack_modules=allowed))


def read_line(prompt: str) -> str:
    """One line typed at the terminal, like `input(prompt)`, but Ctrl-C always stops it.

    `input` blocks in the C library's read: a Ctrl-C that lands after the prompt is written but
    before the read begins only sets Python's flag, and the read then waits for a line that may
    never come (seen on a loaded machine). Waiting for the line in short selects lets Python
    handle the signal between them, so KeyboardInterrupt comes within a tenth of a second."""
    sys.stdout.write(prompt)
    sys.stdout.flush()
    while not select.select([sys.stdin], [], [], 0.1)[0]:
        pass
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line.removesuffix("\n")


def play_in_terminal(
    instance: GameInstance, context: GameContext, seat: Seat, read: Read, write: Write
) -> EpisodeState:
    """Play one episode with the person in `seat`; return its final state (not yet saved).

    The person's replies are read between the graph's steps, outside the event loop, so that
    Ctrl-C at the prompt stops at once (a loop waiting on the keyboard would not hear it)."""
    graph = build_graph(checkpointer=_checkpointer())
    config: Any = {"configurable": {"thread_id": str(uuid.uuid4())}}
    write(introduction(seat, instance))
    start = EpisodeState(instance=instance, experiment=instance.experiment,
                         game_id=instance.game_id)  # fmt: skip
    loop = asyncio.new_event_loop()
    try:
        values = loop.run_until_complete(graph.ainvoke(start, config, context=context))
        while "__interrupt__" in values:
            payload: dict[str, JsonValue] = values["__interrupt__"][0].value
            write("")
            write(show(payload))
            reply = read_reply(seat, payload, read)
            problem = format_problem(seat, str(payload.get("kind", "")), reply)
            if problem:
                write(f"  ! That breaks the format ({problem}); it counts as a failed try.")
            resume = graph.ainvoke(Command(resume=reply), config, context=context)
            values = loop.run_until_complete(resume)
        return EpisodeState.model_validate(values)
    finally:
        for player in (context.answerer, context.questioner):
            if isinstance(player, ChatModelPlayer):
                loop.run_until_complete(player.aclose())
        loop.close()


def choose_instance(
    playable: Sequence[tuple[int, ExperimentSpec, Sequence[GameInstance]]],
    experiment: str | None,
    game_id: int | None,
    played: Callable[[int, str, int], bool],
    rng: random.Random,
) -> tuple[int, ExperimentSpec, GameInstance]:
    """The instance to play: the one named, else a random one this pair has not played yet (any
    one when all were played). Raises ValueError naming what exists when nothing matches."""
    candidates = [
        (index, spec, instance)
        for index, spec, instances in playable
        if experiment is None or spec.name == experiment
        for instance in instances
        if game_id is None or instance.game_id == game_id
    ]
    if not candidates:
        names = ", ".join(spec.name for _, spec, _ in playable)
        raise ValueError(
            f"no instance {experiment or 'of any experiment'}"
            f"{'' if game_id is None else f' #{game_id}'}; experiments: {names}, game ids 0-9"
        )
    fresh = [c for c in candidates if not played(c[0], c[1].name, c[2].game_id)]
    return rng.choice(fresh or candidates)


def save_game(
    results_dir: Path,
    folder: Path,
    experiment: ExperimentSpec,
    state: EpisodeState,
    context: GameContext,
) -> None:
    """Write the game's records as a run writes an episode's: its files, the experiment's
    experiment.json and the transcript page."""
    spec = next(s for s in experiment.game_instances if s.game_id == state.game_id)
    spec_json = spec.model_dump(mode="json", exclude_none=True)
    records = save_episode(folder, spec_json, state, context).records
    write_experiment_file(folder.parent, experiment.name, experiment.domain,
                          folder.parents[2].name, context.answerer, context.questioner,
                          benchmark=benchmark_of(experiment.game_instances))  # fmt: skip
    page = transcript_page(results_dir, folder, records.interactions, state.scores,
                           state.error, spec_json)  # fmt: skip
    write_text(folder / TRANSCRIPT_FILE, page)


def outcome(state: EpisodeState) -> str:
    """One line on how the game ended, with its main scores."""
    if state.error is not None:
        return f"The episode stopped: {state.error.kind}: {state.error.message}"
    assert state.scores is not None  # the graph ends in score_episode unless a call failed
    scores = state.scores.episode_scores
    if scores.get(ABORTED):
        return f"Aborted: {state.abort_reason}."
    # A two-listener episode's Main Score is its own: the classic one goes beside it.
    shown = (MAIN_SCORE, CLASSIC_MAIN_SCORE, ACCURACY, KAPPA, SLOT_FILLING_ACCURACY)
    return "Played. " + ", ".join(
        f"{name} {float(scores[name]):.2f}" for name in shown if name in scores
    )


def play_command(args: argparse.Namespace) -> int:
    """One episode with a person in a seat, saved like any run's."""
    person = HumanPlayer(args.seat, name=args.name)
    partner_role: Role = "questioner" if args.seat == "answerer" else "answerer"
    partner_name = args.questioner if args.seat == "answerer" else args.model
    if partner_name == HUMAN:
        raise UsageError("one seat is yours; name a program or a model for the other")
    partner = player(args, partner_name, partner_role, {})
    if partner is None:
        raise UsageError(f"play does not start local models; serve {partner_name} (e.g. "
                         "llama-server) and pass its name and --base-url")  # fmt: skip
    answerer, questioner = (person, partner) if args.seat == "answerer" else (partner, person)
    pair = pair_name(answerer, questioner)
    try:
        index, spec, instance = choose_instance(
            everything_playable(args.domains or ()), args.experiment, args.game_id,
            lambda i, name, game: (episode_dir(args.results_dir, pair, i, name, game)
                                   / SCORES_FILE).is_file(),
            random.Random(),
        )  # fmt: skip
    except ValueError as error:
        raise UsageError(str(error)) from None
    check_writable(args.results_dir)
    context = GameContext(answerer=answerer, questioner=questioner)
    if isinstance(partner, ChatModelPlayer):
        partner.check()  # one call, before the person starts
    try:
        state = play_in_terminal(instance, context, args.seat, read_line, print)
    except (KeyboardInterrupt, EOFError):
        print("\nprivateshared: stopped; this episode was not saved, and the next `play` starts "
              "a new one", file=sys.stderr)  # fmt: skip
        return 130
    folder = episode_dir(args.results_dir, pair, index, spec.name, instance.game_id)
    replaced = (folder / SCORES_FILE).is_file()
    save_game(args.results_dir, folder, spec, state, context)
    print(f"\n{outcome(state)}")
    print(f"records: {folder}{' (replacing your earlier game)' if replaced else ''}")
    report(args.results_dir)
    return 0


def everything_playable(folders: Sequence[Path] = ()) -> Playable:
    """Every shipped experiment, classic and two-listener, then those of every other known
    domain (installed packages', PRIVATESHARED_DOMAINS', `folders`), as drawn by default."""
    return default_playable(known_domains(folders))
