"""A user's players by import path: a questioner and an answerer written in a file outside the
package, against `privateshared.agents`' public names only, play when named `./file.py:attr` or
`module:attr`, in this process, in worker processes and on a Ray cluster, and their records and
tables carry their names; so do programs of about ten lines over the game's views, on the
command line, from Python and in Studio's context; names with colons that are models stay
models; a broken path, or a program named where its player is meant, is one line."""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import pickle
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from privateshared.agents import PlayerConfigError, is_import_path, load_player
from privateshared.agents.registry import resolve_answerer, resolve_questioner
from privateshared.bench import run_benchmark
from privateshared.bench.cli import main
from privateshared.bench.running.episodes import play_episode
from privateshared.domains.instances import GameInstance, default_instance
from privateshared.graph.context import GameContext

PLAYERS = '''\
"""A user's players, written against privateshared.agents' public names only."""

import os

from privateshared.agents import ChatMessage, PlayerReply, PlayerRequest, ToolCall


def said(messages: tuple[ChatMessage, ...]) -> str:
    """Everything the answerer said so far, lower-cased."""
    return " ".join(m.content for m in messages if m.role == "assistant").lower()


class ReverseAsker:
    """Asks for the slots in the reverse of the instance's order, records each answer's value
    as it hears it, then finishes."""

    name = "reverse-asker"
    temperature = 0.0

    async def respond(self, request: PlayerRequest) -> PlayerReply:
        asks = [call for message in request.messages if message.role == "assistant"
                for call in message.tool_calls if call.name == "ask" and call.arguments]
        calls = []
        if asks:  # what its last question got is that call's result: "Answer: <value>."
            last = asks[-1]
            heard = next(m.content for m in request.messages if m.tool_call_id == last.id)
            value = heard.removeprefix("Answer:").strip().rstrip(".")
            calls.append(ToolCall(id=f"record-{request.turn}", name="record",
                                  arguments={"slot": last.arguments["slot"], "value": value}))
        asked = {call.arguments["slot"] for call in asks}
        left = [slot for slot in reversed(request.instance.slots) if slot not in asked]
        if left:
            calls.append(ToolCall(id=f"ask-{request.turn}", name="ask",
                                  arguments={"slot": left[0], "question": f"Your {left[0]}?"}))
        else:
            calls.append(ToolCall(id=f"finish-{request.turn}", name="finish", arguments={}))
        return PlayerReply(text="", prompt=None, raw=None, tool_calls=tuple(calls))


class EchoAnswerer:
    """Gives the value it is asked for; a slot is shared once it said its value. Its raw
    responses name the process that played it."""

    def __init__(self, name: str = "echo") -> None:
        self.name = name
        self.temperature = 0.0

    async def respond(self, request: PlayerRequest) -> PlayerReply:
        value = request.instance.slots[request.slot]
        if request.kind == "probe":  # the probe itself is the last message
            text = f"ASIDE: {'yes' if value.lower() in said(request.messages[:-1]) else 'no'}"
        else:
            text = f"ANSWER: {value}."
        return PlayerReply(text=text, prompt=[m.to_openai() for m in request.messages],
                           raw={"text": text, "pid": os.getpid()})


def make_answerer() -> EchoAnswerer:
    return EchoAnswerer("echo-made")


SIMON = EchoAnswerer("simon")
NOT_A_PLAYER = 42


class NeedsSeed(EchoAnswerer):
    def __init__(self, seed: int) -> None:
        super().__init__(f"seeded-{seed}")


def failing_factory() -> EchoAnswerer:
    raise RuntimeError("no model file configured")


class SyncAnswerer:
    name = "sync"
    temperature = 0.0

    def respond(self, request: PlayerRequest) -> PlayerReply:
        raise NotImplementedError
'''
PROGRAMS = '''\
"""A user's programs over the game's views: a questioner and an answerer, ten lines each."""

from privateshared.agents import (
    AnswererView,
    Move,
    ProgramAnswerer,
    ProgramQuestioner,
    QuestionerView,
)


def reverse_order(game: QuestionerView) -> Move:
    """Write down each answer as it was said, then ask for the last slot left, or finish."""
    return Move(record=game.heard, ask=game.left[-1] if game.left else None)


ReverseAsker = ProgramQuestioner(reverse_order, name="reverse-asker")


def said_it(game: AnswererView) -> str:
    """Give the value asked for; a slot is shared once its value was in one of my answers."""
    value = game.values[game.slot]
    if game.kind == "question":
        return f"ANSWER: {value}."
    said = " ".join(game.said).lower()
    return "ASIDE: yes" if value.lower() in said else "ASIDE: no"


SaidItAnswerer = ProgramAnswerer(said_it, name="said-it")
'''
MODULE = "user_players_for_tests"
"""The players file's module name when it is named as `module:attr`."""
PROGRAMS_MODULE = "user_programs_for_tests"
"""The programs file's, likewise."""
RUN = ["run", "--experiment", "travel-booking", "--results-dir", "records"]
PAIR = "echo-t0.0--reverse-asker-t0.0"


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder outside the package, the current one, holding the players file twice: as
    my_players.py, named by path, and as a module on sys.path, named by its module name; the
    programs file likewise, as my_programs.py and a module."""
    (tmp_path / "lib").mkdir()
    for file, module, text in (("my_players.py", MODULE, PLAYERS),
                               ("my_programs.py", PROGRAMS_MODULE, PROGRAMS)):  # fmt: skip
        (tmp_path / file).write_text(text)
        (tmp_path / "lib" / f"{module}.py").write_text(text)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path / "lib"))
    yield tmp_path
    sys.modules.pop(MODULE, None)
    sys.modules.pop(PROGRAMS_MODULE, None)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("llama3.1:8b", False),  # Ollama: "1" and "8b" are no Python names
        ("qwen2.5:7b", False),
        ("mistral:latest", False),  # a Python name, but no module mistral here
        ("phi3:mini", False),
        ("hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M", False),  # Ollama from the Hub
        ("gpt-4o-2024-08-06", False),  # no colon
        ("mock:3", False),  # our own prefix
        ("local:./models/m.gguf", False),
        ("local:./players.py:Asker", False),  # our prefix wins even over a .py part
        ("./my_players.py:ReverseAsker", True),
        ("../elsewhere/players.py:make", True),
        ("/abs/players.py:Asker", True),
        ("my_players.py:ReverseAsker", True),  # a .py file without ./
        ("./players:Asker", True),  # starts like a path: loading says it is no .py file
        ("my_players.py", True),  # a file without its attr: loading says what to add
        ("json:loads", True),  # an importable top-level module
        (f"{MODULE}:EchoAnswerer", True),  # a module on sys.path
        ("my_players:ReverseAsker", True),  # not importable, but its file is here
        ("some.package:Thing", True),  # dotted: loading says it is missing
        ("some.package:8b", False),  # the part after is no Python name
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_is_import_path(here: Path, name: str, expected: bool) -> None:
    assert is_import_path(name) is expected


def interactions(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "interactions.json").read_text())
    return data


def asked_slots(record: dict[str, Any]) -> list[str]:
    return [
        event["action"]["arguments"]["slot"]
        for turn in record["turns"] for event in turn
        if event["action"]["type"] == "tool call" and event["action"]["name"] == "ask"
    ]  # fmt: skip


def pids(results: Path) -> set[int]:
    """The processes the echo answerers played in, from their raw responses."""
    return {
        entry["raw_response_obj"]["pid"]
        for path in results.rglob("requests.json")
        for entry in json.loads(path.read_text())
        if isinstance(entry["raw_response_obj"], dict) and "pid" in entry["raw_response_obj"]
    }


def check_played(
    results: Path,
    answerer: str,
    questioner: str = "reverse-asker",
    reversed_key: str = "slots",
    tables: bool = True,
) -> None:
    """Ten travel episodes under the players' names, every one won, the questions asked in
    the reverse of the instance's `reversed_key` (its slots, or its request order), and the
    tables naming both (a run from Python writes none: it returns them)."""
    pair = f"{answerer}-t0.0--{questioner}-t0.0"
    experiment = results / pair / "privateshared" / "0_travel-booking"
    episodes = sorted(experiment.glob("episode_*"))
    assert len(episodes) == 10
    for folder in episodes:
        scores = json.loads((folder / "scores.json").read_text())["episode scores"]
        assert scores["Main Score"] == 100 and scores["Questioner Task Completion"] == 1
        record = interactions(folder)
        assert record["players"]["Player 1"] == f"Answerer: {answerer}"
        assert record["players"]["Player 2"] == f"Questioner: {questioner}"
        slots = json.loads((folder / "instance.json").read_text())[reversed_key]
        assert asked_slots(record) == list(reversed(slots))
    written = json.loads((experiment / "experiment.json").read_text())
    assert (written["answerer"], written["questioner"]) == (answerer, questioner)
    if not tables:
        return
    rows = json.loads((results / "results.json").read_text())["models"]
    row = next(row for row in rows if row["model"] == pair)
    assert row["questioner"] == questioner and row["quality_score"] == 100


def test_players_from_a_file_play_by_relative_path_and_resume(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    names = ["--model", "./my_players.py:EchoAnswerer",
             "--questioner", "./my_players.py:ReverseAsker"]  # fmt: skip
    assert main([*RUN, *names, "--workers", "1"]) == 0, capsys.readouterr().err
    check_played(here / "records", "echo")
    assert pids(here / "records") == {os.getpid()}
    # Resume: the folder named from the players' names is found again, the done episodes kept.
    (here / "records" / PAIR / "privateshared/0_travel-booking/episode_3/scores.json").unlink()
    capsys.readouterr()
    assert main([*RUN, *names, "--workers", "1"]) == 0
    assert "9 of 10 episodes are already done; playing the other 1" in capsys.readouterr().out
    check_played(here / "records", "echo")


def test_players_from_a_module_play_in_worker_processes(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Worker processes are forked after the players are loaded, and play them as they are."""
    names = ["--model", f"{MODULE}:make_answerer", "--model", f"{MODULE}:SIMON",
             "--questioner", f"{MODULE}:ReverseAsker"]  # fmt: skip
    assert main([*RUN, *names, "--workers", "2"]) == 0, capsys.readouterr().err
    check_played(here / "records", "echo-made")
    check_played(here / "records", "simon")
    played_in = pids(here / "records")
    assert len(played_in) == 2 and os.getpid() not in played_in


def test_studio_context_and_python_take_the_same_words(here: Path, instance: GameInstance) -> None:
    context = GameContext.model_validate(
        {"answerer": "./my_players.py:EchoAnswerer", "questioner": f"{MODULE}:ReverseAsker"}
    )
    assert (context.answerer.name, context.questioner.name) == ("echo", "reverse-asker")
    state = asyncio.run(play_episode(instance, context))
    assert state.scores is not None and state.scores.episode_scores["Main Score"] == 100
    assert resolve_answerer("./my_players.py:SIMON").name == "simon"
    assert resolve_questioner(f"{MODULE}:ReverseAsker").name == "reverse-asker"
    # The same file is imported once; its objects pickle within the process.
    first, second = load_player("./my_players.py:EchoAnswerer"), load_player("my_players.py:SIMON")
    assert type(first.player) is type(second.player)
    assert pickle.loads(pickle.dumps(first)).name == "echo"
    with pytest.raises(ValueError, match=r"missing\.py:X: .*missing\.py does not exist"):
        GameContext.model_validate({"answerer": "./missing.py:X"})


PROGRAMS_PAIR = "said-it-t0.0--reverse-asker-t0.0"


def check_programs_played(results: Path, tables: bool = True) -> None:
    """The ten-line programs' travel episodes: won, the questions asked in the reverse of the
    request order, every answer written down as it was said, every answer and probe reply in
    requests.json under the answerer's name."""
    check_played(results, "said-it", reversed_key="request_order", tables=tables)
    experiment = results / PROGRAMS_PAIR / "privateshared" / "0_travel-booking"
    for folder in sorted(experiment.glob("episode_*")):
        values = json.loads((folder / "instance.json").read_text())["slots"]
        recorded = {
            event["action"]["arguments"]["slot"]: event["action"]["arguments"]["value"]
            for turn in interactions(folder)["turns"] for event in turn
            if event["action"]["type"] == "tool call" and event["action"]["name"] == "record"
            and event["action"]["valid"]
        }  # fmt: skip
        assert recorded == {slot: f"{value}." for slot, value in values.items()}
        calls = json.loads((folder / "requests.json").read_text())
        assert len(calls) == 5 + 6 * 5  # five answers, six rounds of five probes
        assert {call["raw_response_obj"]["player"] for call in calls} == {"said-it"}


@pytest.mark.parametrize(
    ("names", "workers"),
    [
        (["--model", "./my_programs.py:SaidItAnswerer",
          "--questioner", "./my_programs.py:ReverseAsker"], "1"),
        (["--model", f"{PROGRAMS_MODULE}:SaidItAnswerer",
          "--questioner", f"{PROGRAMS_MODULE}:ReverseAsker"], "2"),
    ],
    ids=["file-here", "module-in-workers"],
)  # fmt: skip
def test_programs_play_from_the_command_line(
    here: Path, capsys: pytest.CaptureFixture[str], names: list[str], workers: str
) -> None:
    assert main([*RUN, *names, "--workers", workers]) == 0, capsys.readouterr().err
    check_programs_played(here / "records")


def test_programs_play_from_python(here: Path) -> None:
    """Named by import path, or passed as the objects the file made, with the same records."""
    by_path = run_benchmark(
        ["./my_programs.py:SaidItAnswerer"], questioner=f"{PROGRAMS_MODULE}:ReverseAsker",
        experiments=["travel-booking"], results_dir=here / "by-path",
    )  # fmt: skip
    programs = importlib.import_module(PROGRAMS_MODULE)
    as_objects = run_benchmark(
        [programs.SaidItAnswerer], questioner=programs.ReverseAsker,
        experiments=["travel-booking"], results_dir=here / "as-objects",
    )  # fmt: skip
    for evaluation, folder in ((by_path, "by-path"), (as_objects, "as-objects")):
        (row,) = evaluation.models
        assert (row.model, row.played, row.quality_score) == (PROGRAMS_PAIR, 10, 100)
        assert (row.questioner_slot_accuracy, row.questioner_task_completion) == (1, 1)
        check_programs_played(here / folder, tables=False)


def test_programs_play_in_a_studio_context(here: Path) -> None:
    """Studio's context takes the same words: each seat's program plays one episode."""
    context = GameContext.model_validate(
        {"answerer": "./my_programs.py:SaidItAnswerer",
         "questioner": f"{PROGRAMS_MODULE}:ReverseAsker"}
    )  # fmt: skip
    instance = default_instance("travel-booking", 0)
    state = asyncio.run(play_episode(instance, context))
    assert state.scores is not None
    scores = state.scores.episode_scores
    assert (scores["Main Score"], scores["Questioner Task Completion"]) == (100, 1)
    assert [exchange.slot for exchange in state.dialogue[1:]] == list(
        reversed(instance.request_order)
    )
    assert state.belief == {slot: f"{value}." for slot, value in instance.slots.items()}
    assert state.records is not None
    assert state.records.interactions.players["Player 1"] == "Answerer: said-it"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("./my_programs.py:reverse_order", "./my_programs.py:reverse_order: reverse_order is a "
         "program (it takes a QuestionerView), not a player; make a player of it in its file, e.g. "
         'Asker = ProgramQuestioner(reverse_order, name="my-asker"), and name that'),
        (f"{PROGRAMS_MODULE}:said_it", f"{PROGRAMS_MODULE}:said_it: said_it is a program (it "
         "takes an AnswererView), not a player; make a player of it in its file, e.g. Answerer = "
         'ProgramAnswerer(said_it, name="my-answerer"), and name that'),
    ],
    ids=["questioner", "answerer"],
)  # fmt: skip
def test_a_program_named_for_its_player_is_one_line(here: Path, name: str, expected: str) -> None:
    with pytest.raises(PlayerConfigError) as raised:
        load_player(name)
    assert str(raised.value) == expected


BROKEN = {
    "broken.py": "x = 1\ndef oops(:\n",
    "raising.py": "import os\ny = x + 1\n",
}


ONE_LINE = " a player has a name (str), a temperature (float) and an async respond(request)"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("./missing.py:Asker", "./missing.py:Asker: {here}/missing.py does not "
                     "exist; name a Python file (a relative path starts from the current folder; "
                     "in a registry, from the registry's folder)", id="missing-file"),
        pytest.param("./broken.py:Asker", "./broken.py:Asker: importing ./broken.py failed "
                     "(SyntaxError: invalid syntax (broken.py, line 2)); fix the file",
                     id="syntax-error"),
        pytest.param("./raising.py:Asker", "./raising.py:Asker: importing ./raising.py failed at "
                     "line 2 (NameError: name 'x' is not defined); fix the file",
                     id="import-raises"),
        pytest.param("./my_players.py:Askr", "./my_players.py:Askr: ./my_players.py has no "
                     "'Askr'; name one of EchoAnswerer, NeedsSeed, ReverseAsker, SIMON, "
                     "SyncAnswerer, failing_factory", id="missing-attribute"),
        pytest.param("./my_players.py:NOT_A_PLAYER", "./my_players.py:NOT_A_PLAYER: NOT_A_PLAYER "
                     "is an int, not a player (it has no respond method);" + ONE_LINE,
                     id="not-a-player"),
        pytest.param("./my_players.py:SyncAnswerer", "./my_players.py:SyncAnswerer: "
                     "SyncAnswerer() made a SyncAnswerer, not a player (its respond is not async; "
                     "write async def respond);" + ONE_LINE, id="sync-respond"),
        pytest.param("./my_players.py:NeedsSeed", "./my_players.py:NeedsSeed: NeedsSeed needs "
                     "seed, and a class named here is called with no arguments; give them "
                     "defaults, or name a factory that supplies them", id="class-needs-arguments"),
        pytest.param("./my_players.py:failing_factory", "./my_players.py:failing_factory: "
                     "failing_factory() failed (RuntimeError: no model file configured); fix the "
                     "factory", id="factory-raises"),
        pytest.param("./my_players.py", "./my_players.py: name the player in the file after a "
                     "colon, e.g. ./my_players.py:Asker", id="no-attribute-named"),
        pytest.param("nosuch_pkg.players:Asker", "nosuch_pkg.players:Asker: no module named "
                     "'nosuch_pkg' here; install it, or put the folder holding it on PYTHONPATH",
                     id="missing-module"),
        pytest.param("my_players:EchoAnswerer", "my_players:EchoAnswerer: no module named "
                     "'my_players' here; install it, or put the folder holding it on PYTHONPATH, "
                     "or name the file: ./my_players.py:EchoAnswerer", id="module-in-this-folder"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("seat", ["--model", "--questioner"])
def test_a_broken_path_is_one_line(
    here: Path, capsys: pytest.CaptureFixture[str], name: str, expected: str, seat: str
) -> None:
    for file, text in BROKEN.items():
        (here / file).write_text(text)
    assert main([*RUN, seat, name]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"privateshared: error: {expected.format(here=here)}\n"
    assert not (here / "records").exists()


def test_the_console_script_says_it_in_one_line_without_a_traceback(here: Path) -> None:
    (here / "raising.py").write_text(BROKEN["raising.py"])
    script = Path(sys.executable).with_name("privateshared")
    shown = subprocess.run([str(script), *RUN, "--model", "./raising.py:Asker"],
                           capture_output=True, text=True, cwd=here)  # fmt: skip
    assert shown.returncode == 2 and shown.stdout == ""
    assert shown.stderr == (
        "privateshared: error: ./raising.py:Asker: importing ./raising.py failed at line 2 "
        "(NameError: name 'x' is not defined); fix the file\n"
    )


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A local Ray cluster of 2 CPUs, as tests/test_ray.py starts one, whose workers find the
    players module on their PYTHONPATH, as every machine of a cluster must."""
    ray = pytest.importorskip("ray")
    lib = tmp_path_factory.mktemp("cluster_lib")
    (lib / f"{MODULE}.py").write_text(PLAYERS)
    with pytest.MonkeyPatch.context() as patch:  # the workers start with the cluster's env
        patch.setenv("PYTHONPATH", os.pathsep.join([str(lib), os.environ.get("PYTHONPATH", "")]))
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield lib
    ray.shutdown()


def test_players_play_on_a_ray_cluster(
    cluster: Path, here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each task's recipe carries the players' import paths and the worker imports them: the
    module a file was loaded as in this process exists nowhere else."""
    names = ["--model", "./my_players.py:EchoAnswerer", "--model", f"{MODULE}:make_answerer",
             "--questioner", "./my_players.py:ReverseAsker"]  # fmt: skip
    assert main([*RUN, *names, "--ray", "auto"]) == 0, capsys.readouterr().err
    check_played(here / "records", "echo")
    check_played(here / "records", "echo-made")
    played_in = pids(here / "records")
    assert played_in and os.getpid() not in played_in


def test_a_module_the_workers_cannot_import_is_one_line(
    cluster: Path, here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A module found here but on no worker's path: the run stops with one line saying so."""
    (here / "lib" / "driver_only_players.py").write_text(PLAYERS)
    try:
        code = main([*RUN, "--model", "driver_only_players:SIMON", "--ray", "auto"])
    finally:
        sys.modules.pop("driver_only_players", None)
    assert code == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "Traceback" not in error
    assert (
        "failed on the cluster (PlayerConfigError: driver_only_players:SIMON: no module named "
        "'driver_only_players' here; install it, or put the folder holding it on PYTHONPATH)"
    ) in error, error
