"""The README's and the documentation's commands, run as pasted from a fresh clone, print what
they say.

The documents are README.md and the pages of docs/, in the order of the site's navigation
(mkdocs.yml), read as one text (`docs_text`; `where` names a line's file and line). Every shell
command of their `sh` blocks (and the `$ ` lines of `console` blocks) is classified below, in one
of two lists: the commands this module runs (no key, no outside server, no minutes-long build)
and those it does not, each with its reason. A command added or changed later fails
`test_every_documented_command_is_classified_once` until it is put in one list, and a command
that left the documents fails it too, so the lists cannot drift.

The runnable commands are run as a user who followed the documents would run them: in reading
order, from a copy of the repository's files (`git ls-files -co --exclude-standard`) in
`<tmp>/work/main` beside a link `<tmp>/work/shared` to `../shared`, with the virtual
environment's `bin/` first on PATH (the pages say to activate it), each through `bash -c`
exactly as pasted, with a timeout. Later commands read what earlier ones wrote (records/, the
replay's /tmp/replayed), so one module-scoped fixture runs them all, and each test checks one
claim of the documents against what a command printed or wrote. Their tables and quoted output
are read from the documents themselves; no number of theirs is copied here. Every Python block
runs too, as a script.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from privateshared.bench.cli.parser import build_parser
from tests.conftest import (
    REPO,
    SHARED,
    SHARED_NEWER_RECORDS,
    SHARED_RECORDS,
    SHARED_RESOURCES,
    hear_ctrl_c,
)
from tests.test_user_domains import NAME as CLINIC
from tests.test_user_domains import make_clinic

README = REPO / "README.md"
MKDOCS = REPO / "mkdocs.yml"
VENV_BIN = Path(sys.executable).parent
"""The environment running the tests: the `.venv` that `make test` (or `make install`) made."""

COMMAND_TIMEOUT = 120.0
"""Seconds one documented command may take; the slowest here takes about 15 s on 2 cores."""
SERVER_START_TIMEOUT = 30.0
"""Seconds the fake endpoint gets to print its URL."""
SERVER_STOP_TIMEOUT = 10.0
"""Seconds the fake endpoint gets to stop after Ctrl-C before it is killed."""

# --- The documented commands, as keys: one line per logical line (lines ending in `\` joined),
# comments dropped, runs of spaces collapsed.

TWO_LISTENER_RUN = (
    "privateshared run --experiment travel-booking-handover --experiment "
    "travel-booking-late-joiner --experiment job-interview-handover --experiment "
    "job-interview-late-joiner --model oracle --model one-listener --model always-yes "
    "--model always-no --model mock"
)
REFERENCE_RUN = "privateshared run --model oracle --model always-yes --model always-no --model mock"
SUBSET_RUN = "privateshared run --model oracle --experiment travel-booking"
RUN_HELP = "privateshared run --help"
FAKE_ENDPOINT = "python -m privateshared.bench.testing.fake_endpoint --latency 0.05 --port 8765"
FAKE_RUN = (
    "OPENAI_API_KEY=none privateshared run --model fake-model --questioner fake-model "
    "--judge fake-model --base-url http://127.0.0.1:8765/v1 --experiment travel-booking "
    "--results-dir /tmp/fake-run"
)
REPLAY_LOOP = (
    "for records in v2.0 v2.0-newformat; do\n"
    "privateshared replay ../shared/clembench-records/$records "
    "--instances ../shared/clembench-records/v2.0/instances.json "
    "--resources ../shared/clembench-resources/texts --results-dir /tmp/replayed\n"
    "done"
)
EVAL_REPLAYED = "privateshared eval /tmp/replayed"
INSTANCES_IDENTICAL = (
    "privateshared instances --seed 20251121 | cmp - domains/instances.json && echo identical"
)
INSTANCES_30 = "privateshared instances --per-domain 30 --seed 7 --out /tmp/instances-30.json"
RUN_30 = (
    "privateshared run --instances /tmp/instances-30.json --model oracle --results-dir /tmp/thirty"
)

MINE_RUN = (
    "privateshared run --model ./answerer.py:SaidItAnswerer --model oracle "
    "--questioner ./asker.py:ReverseAsker --experiment travel-booking --results-dir records-mine"
)
MINE_SWAPPED_BACK = (
    "privateshared run --model ./answerer.py:SaidItAnswerer --questioner programmatic "
    "--experiment travel-booking --results-dir records-mine"
)
DOMAIN_INSTANCES = "privateshared instances --domains my_domains --out clinic.json"
DOMAIN_RUN = (
    "privateshared run --domains my_domains --instances clinic.json --model oracle --model mock"
)
DOMAIN_RUN_BY_NAME = (
    "privateshared run --domains my_domains --experiment clinic-intake --model oracle"
)
DOMAIN_CHECK = "privateshared domains check --domains my_domains"

RUN: dict[str, str] = {
    TWO_LISTENER_RUN: "results.json equals the two-listener table of 'Who knows what'",
    REFERENCE_RUN: "results.json equals the reference players' table; its table rows are "
    "those the documents show for `make run`",
    SUBSET_RUN: "plays (here: finds done) the oracle's travel-booking episodes",
    RUN_HELP: "lists every option of `run` with a help text and its default",
    FAKE_ENDPOINT: "prints its URL, serves the next command, stops on Ctrl-C",
    FAKE_RUN: "every call went over HTTP to the fake endpoint; its answerer scores 100",
    REPLAY_LOOP: "prints the summary lines and the episode line the documents quote",
    EVAL_REPLAYED: "prints a row for every model replayed",
    INSTANCES_IDENTICAL: "prints identical",
    INSTANCES_30: "writes 30 instances per experiment",
    RUN_30: "plays all of them",
    MINE_RUN: "the documented players play from their files, under their names",
    MINE_SWAPPED_BACK: "the programmatic questioner takes the seat back",
    DOMAIN_INSTANCES: "writes instances of the user's domain only",
    DOMAIN_RUN: "plays them: the oracle scores 100",
    DOMAIN_RUN_BY_NAME: "plays the domain's default instances by its experiment's name",
    DOMAIN_CHECK: "lists every known domain, the user's with its folder",
}
"""The commands this module runs, in no particular order (they run in reading order), with
what it checks of each."""

_OPENAI_KEY = "needs an OpenAI key"
_RAY = "needs a Ray cluster of the user's machines"
_REGISTRY = "needs the user's models.yaml (not in the repository), an OpenAI key and a vLLM server"
NOT_RUN: dict[str, str] = {
    "make run": "builds llama.cpp (about 3 minutes) and plays SmolLM2 for minutes; "
    "measured by hand (its rows of the reference players are checked against REFERENCE_RUN)",
    "privateshared llama-cpp info": "tests/test_local_model.py asks the same of the library "
    "(test_the_installed_llama_cpp_is_the_build_for_any_cpu); its folder differs per machine",
    'CMAKE_ARGS="-DGGML_NATIVE=ON -DLLAVA_BUILD=OFF" pip install --no-cache-dir '
    "--force-reinstall --no-deps llama-cpp-python==0.3.36": "compiles llama.cpp natively for "
    "minutes and would replace the build for any CPU in the environment the tests run in",
    "make test": "CI runs make test itself; this test is part of it",
    "make docs": "tests/test_docs_site.py builds the site the same way, in strict mode",
    "make install": "creates .venv and installs the package: the environment this test runs in",
    "export OPENAI_API_KEY=sk-...": "sets the user's OpenAI key",
    "privateshared run --model gpt-4o-2024-08-06": _OPENAI_KEY,
    "privateshared run --model Qwen/Qwen2.5-7B-Instruct --base-url http://localhost:8000/v1": (
        "needs the user's vLLM server"
    ),
    "privateshared run --model llama3.1:8b --base-url http://localhost:11434/v1": (
        "needs the user's Ollama server"
    ),
    "privateshared run --model model --base-url http://localhost:8080/v1": (
        "needs the user's llama.cpp server"
    ),
    "privateshared run --model oracle --questioner gpt-4o-2024-08-06": _OPENAI_KEY,
    "privateshared run --model gpt-4o-2024-08-06 --questioner gpt-4o-2024-08-06": _OPENAI_KEY,
    "privateshared play --as answerer --experiment travel-booking --game-id 0": (
        "interactive: tests/test_play.py plays it through a pseudo-terminal"
    ),
    "privateshared run --models models.yaml --model gpt-4o --model qwen2.5-7b": _REGISTRY,
    "pip install langchain-anthropic": "installs a provider's LangChain integration into the "
    "environment the tests run in; tests/test_langchain_player.py checks the line a run prints "
    "without it",
    "privateshared run --model langchain:anthropic:claude-sonnet-4-5": (
        "needs an Anthropic key and langchain-anthropic"
    ),
    "privateshared run --model oracle --questioner langchain:ollama:llama3.1:8b": (
        "needs the user's Ollama server and langchain-ollama"
    ),
    "privateshared run --models models.yaml --model o3 --model gpt-4o --dry-run --budget 25": (
        "needs the user's models.yaml (above, not in the repository); its output is pasted from "
        "a run with it, and tests/test_usage.py runs a dry run without a key"
    ),
    "privateshared run --models models.yaml --model o3 --model gpt-4o --budget 25": _OPENAI_KEY,
    "vllm serve Qwen/Qwen2.5-7B-Instruct": "needs a GPU machine with vLLM",
    "privateshared run --model Qwen/Qwen2.5-7B-Instruct --base-url http://gpu-box:8000/v1": (
        "needs the user's vLLM server; tests/test_guided.py plays a vLLM-like fake endpoint"
    ),
    "privateshared run --model Qwen/Qwen2.5-7B-Instruct --base-url http://gpu-box:8000/v1 "
    "--guided": "needs the user's vLLM server; tests/test_guided.py checks its requests on a "
    "vLLM-like fake endpoint",
    "ray start --head --port 6379": _RAY,
    "ray start --address HEAD_IP:6379": _RAY,
    "privateshared run --ray auto --models models.yaml --model gpt-4o --model qwen2.5-7b "
    "--concurrency 64": f"{_RAY}; {_REGISTRY}",
    "LANGGRAPH_CLI_NO_ANALYTICS=1 .venv/bin/langgraph dev": (
        "a server that opens a browser; tests/test_langgraph_dev.py plays through langgraph dev"
    ),
    "privateshared play --as answerer --domains my_domains --experiment clinic-intake": (
        "interactive: tests/test_user_domains.py plays it through a pseudo-terminal"
    ),
    "python scripts/perf.py --clem ~/clem/bin/clem --clembench-game ~/clembench/privateshared": (
        "needs a clembench install (clemcore and clembench's game folder)"
    ),
}
"""The commands this module does not run, each with its reason."""

SERVES = {FAKE_ENDPOINT}
"""Commands that serve until Ctrl-C: started in the background, stopped after the next command."""
NEEDS_SHARED = {REPLAY_LOOP, EVAL_REPLAYED}
"""Commands that read ../shared (clembench's records and texts), or what the replay wrote."""
SHARED_PRESENT = all(
    path.is_dir() for path in (SHARED_RECORDS, SHARED_NEWER_RECORDS, SHARED_RESOURCES)
)
have_shared = pytest.mark.skipif(
    not SHARED_PRESENT,
    reason="../shared/clembench-records or ../shared/clembench-resources is not on this machine",
)

# --- Reading the documents

_FENCE = re.compile(r"^```(\S*)\s*$")
_SHELLS = {"sh", "bash", "shell", "zsh"}


@dataclass(frozen=True)
class Block:
    """One fenced code block of the documents."""

    language: str
    start: int
    """Index (0-based) of its opening fence among the documents' lines (`where` names it)."""
    lines: tuple[str, ...]


@dataclass(frozen=True)
class Command:
    """One command of a shell block, or a `$ ` line of a console block."""

    key: str
    """Its logical lines (continuations joined, comments dropped, spaces collapsed)."""
    pasted: str
    """Its lines as the documents have them: what a user pastes."""
    line: int
    """Line (1-based) of its first line in `docs_text` (`where` names it)."""


def code_blocks(text: str) -> list[Block]:
    """The fenced code blocks of a markdown text, in order."""
    lines = text.splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        match = _FENCE.match(lines[index])
        if match is None:
            index += 1
            continue
        end = index + 1
        while end < len(lines) and lines[end].rstrip() != "```":
            end += 1
        blocks.append(Block(match.group(1), index, tuple(lines[index + 1 : end])))
        index = end + 1
    return blocks


def _drop_comment(line: str) -> str:
    # a `#` that starts a word starts a comment, as in the shell (no command here quotes one)
    return re.sub(r"(^|\s)#.*$", "", line)


def shell_commands(block: Block) -> list[Command]:
    """The commands of a shell block: lines ending in `\\` continue, a `for`/`while` loop
    runs to its `done`, comments and blank lines between commands are dropped."""
    commands: list[Command] = []
    pasted: list[str] = []
    logical: list[str] = []
    pending, depth, first = "", 0, 0
    for offset, line in enumerate(block.lines):
        if not pasted and not _drop_comment(line).strip():
            continue
        if not pasted:
            first = block.start + 2 + offset
        pasted.append(line)
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        text = " ".join((pending + _drop_comment(line)).split())
        pending = ""
        if not text:
            continue
        logical.append(text)
        if text.split()[0] in ("for", "while", "until"):
            depth += 1
        if text == "done" or text.endswith("; done"):
            depth -= 1
        if depth == 0:
            commands.append(Command("\n".join(logical), "\n".join(pasted), first))
            pasted, logical = [], []
    if pasted:
        raise ValueError(f"{where(first)}: the command starting there never ends")
    return commands


def documented_commands(text: str) -> list[Command]:
    """Every command of the documents' shell blocks and console blocks, in reading order."""
    commands: list[Command] = []
    for block in code_blocks(text):
        if block.language in _SHELLS:
            commands += shell_commands(block)
        elif block.language == "console":
            commands += [
                Command(" ".join(line[2:].split()), line[2:], block.start + 2 + offset)
                for offset, line in enumerate(block.lines)
                if line.startswith("$ ")
            ]
    return commands


def block_after(text: str, command: str, language: str = "") -> Block:
    """The first code block in `language` (unlabelled by default) after the block that holds
    `command`: the output the documents show for it."""
    blocks = code_blocks(text)
    for index, block in enumerate(blocks):
        if block.language in _SHELLS and any(c.key == command for c in shell_commands(block)):
            following = [b for b in blocks[index + 1 :] if b.language == language]
            assert following, f"{where(block.start + 1)}: no output block after {command!r}"
            return following[0]
    raise AssertionError(f"the documents no longer have the command {command!r}")


@dataclass(frozen=True)
class Table:
    """A markdown table: its header cells and rows of cells, and where it starts."""

    line: int
    """Line (1-based) of its header in `docs_text`."""
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


def tables_after(text: str, anchor: str) -> list[Table]:
    """The markdown tables after the first line that contains `anchor`."""
    lines = text.splitlines()
    starts = [index for index, line in enumerate(lines) if anchor in line]
    assert starts, f"the documents no longer have the line with {anchor!r}"
    tables: list[Table] = []
    index = starts[0]
    while index < len(lines):
        if not lines[index].startswith("|"):
            index += 1
            continue
        start = index
        rows: list[tuple[str, ...]] = []
        while index < len(lines) and lines[index].startswith("|"):
            cells = tuple(cell.strip() for cell in lines[index].strip().strip("|").split("|"))
            if not all(re.fullmatch(r":?-+:?", cell) for cell in cells):  # the rule under it
                rows.append(cells)
            index += 1
        tables.append(Table(start + 1, rows[0], tuple(rows[1:])))
    return tables


def documents() -> list[Path]:
    """README.md, then the pages of docs/ in the order of the site's navigation."""

    def pages(entries: Any) -> Iterator[str]:
        for entry in entries:
            if isinstance(entry, str):
                yield entry
            elif isinstance(entry, dict):
                for value in entry.values():
                    yield from pages([value] if isinstance(value, str) else value)

    nav = yaml.safe_load(MKDOCS.read_text(encoding="utf-8"))["nav"]
    return [README, *(REPO / "docs" / page for page in pages(nav))]


@functools.cache
def _read() -> tuple[str, tuple[tuple[int, Path], ...]]:
    texts, starts, line = [], [], 1
    for path in documents():
        text = path.read_text(encoding="utf-8")
        text = text if text.endswith("\n") else text + "\n"
        texts.append(text)
        starts.append((line, path))
        line += text.count("\n")
    return "".join(texts), tuple(starts)


def docs_text() -> str:
    """The documents as one text, in reading order (no fenced block spans two of them)."""
    return _read()[0]


def where(line: int) -> str:
    """A line (1-based) of `docs_text` as its file and line there, e.g. `docs/run.md line 12`."""
    start, path = [(start, path) for start, path in _read()[1] if start <= line][-1]
    return f"{path.relative_to(REPO)} line {line - start + 1}"


def python_blocks(text: str) -> list[Block]:
    """The documents' Python blocks, each a whole script."""
    return [block for block in code_blocks(text) if block.language == "python"]


def saved_name(block: Block) -> str | None:
    """The file the documents say to save a Python block as: `# asker.py: ...` on its first
    line."""
    match = re.match(r"# (\w+\.py):", block.lines[0]) if block.lines else None
    return match.group(1) if match else None


def claimed_output(text: str, block: Block) -> list[str]:
    """The lines the documents say a Python block prints: the `backticked` texts after "prints"
    in the prose between the block and the next one."""
    lines = text.splitlines()
    end = block.start + len(block.lines) + 2
    following = [b.start for b in code_blocks(text) if b.start > block.start]
    prose = "\n".join(lines[end : following[0] if following else len(lines)])
    match = re.search(r"prints ((?:`[^`]+`(?:,? and |, )?)+)", " ".join(prose.split()))
    return re.findall(r"`([^`]+)`", match.group(1)) if match else []


def make_users_files(folder: Path) -> None:
    """What the documents assume their reader made: the Python files they say to save, and a folder
    `my_domains/` holding a domain `clinic-intake` (the shipped travel booking, renamed)."""
    for block in python_blocks(docs_text()):
        name = saved_name(block)
        if name is not None:
            (folder / name).write_text("\n".join(block.lines) + "\n")
    (folder / "my_domains").mkdir()
    make_clinic(folder / "my_domains")


# --- Running the commands


@dataclass
class Ran:
    """What one documented command did."""

    command: Command
    returncode: int | None
    """None when it was stopped: it ran out of time (or did not start, see `problem`)."""
    stdout: str = field(repr=False)
    stderr: str = field(repr=False)
    seconds: float
    results: dict[str, Any] | None = field(repr=False)
    """results.json of its results folder (`--results-dir`, else records/) once it ended."""
    problem: str = ""
    """Why it did not run as it should, in a line: a timeout, a server that did not start."""

    def describe(self) -> str:
        return (
            f"{where(self.command.line)}: {self.command.pasted}\n"
            f"exit code {self.returncode}{'; ' + self.problem if self.problem else ''}\n"
            f"--- stdout\n{self.stdout[-4000:]}--- stderr\n{self.stderr[-4000:]}"
        )


def _environment() -> dict[str, str]:
    """The user's shell after `source .venv/bin/activate`: the environment's bin first on PATH.
    No key, no proxy, no endpoint: the commands run here need none, and none may reach out."""
    env = {
        name: value
        for name, value in os.environ.items()
        if name.lower() not in {"http_proxy", "https_proxy", "all_proxy"}
        and name not in {"OPENAI_API_KEY", "OPENAI_BASE_URL", "PYTHONPATH"}
    }
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(VENV_BIN.parent)
    return env


def _clone(root: Path) -> Path:
    """A copy of the repository's files (what a fresh clone has, with the working tree's
    changes) in `root/work/main`, and `root/work/shared` linking to ../shared."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "-co", "--exclude-standard"],
        cwd=REPO, capture_output=True, check=True,
    ).stdout.decode()  # fmt: skip
    main = root / "work" / "main"
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():  # a tracked file deleted in the working tree is not there
            (main / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, main / name)
    (root / "work" / "shared").symlink_to(SHARED, target_is_directory=True)
    make_users_files(main)
    return main


def _fixed_paths(commands: list[str]) -> set[Path]:
    """The paths under /tmp that the commands write to, named in the commands themselves."""
    return {Path(path) for c in commands for path in re.findall(r"/tmp/\w[\w.-]*", c)}


def _remove(paths: set[Path]) -> None:
    for path in paths:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)


def _results_of(command: Command, cwd: Path) -> dict[str, Any] | None:
    match = re.search(r"--results-dir (\S+)", command.key)
    path = cwd / (match.group(1) if match else "records") / "results.json"
    return json.loads(path.read_text()) if path.is_file() else None


def _stop_group(process: subprocess.Popen[bytes], first: signal.Signals, timeout: float) -> bool:
    """Send `first` to the command's process group, then SIGKILL if it is still there after
    `timeout` seconds. Whether it stopped on `first`."""
    with contextlib.suppress(ProcessLookupError):  # the group is gone already
        os.killpg(process.pid, first)
    try:
        process.wait(timeout)
        return True
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        return False


def run_pasted(command: Command, cwd: Path, env: dict[str, str]) -> Ran:
    """Run a command through `bash -c` as pasted; its own process group, so that a command
    that runs out of time is stopped with every process it started."""
    started = time.monotonic()
    process = subprocess.Popen(
        ["bash", "-c", command.pasted], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    problem = ""
    try:
        out, err = process.communicate(timeout=COMMAND_TIMEOUT)
    except subprocess.TimeoutExpired:
        _stop_group(process, signal.SIGKILL, 5)
        out, err = process.communicate()
        problem = f"killed after {COMMAND_TIMEOUT:.0f} s"
    return Ran(
        command, None if problem else process.returncode, out.decode(errors="replace"),
        err.decode(errors="replace"), time.monotonic() - started, _results_of(command, cwd),
        problem,
    )  # fmt: skip


def _port_is_taken(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


@dataclass
class Serving:
    """A serving command started in the background, as in a second terminal."""

    command: Command
    process: subprocess.Popen[bytes] | None
    log: Path
    started: float
    problem: str = ""

    def output(self, stream: str) -> str:
        path = self.log.with_suffix(f".{stream}")
        return path.read_text(errors="replace") if path.is_file() else ""


def start_serving(command: Command, cwd: Path, env: dict[str, str], log: Path) -> Serving:
    """Start a command that prints its URL and serves until Ctrl-C; wait for the URL."""
    started = time.monotonic()
    port = re.search(r"--port (\d+)", command.key)
    if port and _port_is_taken(int(port.group(1))):
        problem = (
            f"port {port.group(1)} on 127.0.0.1 is taken (another server, or a fake endpoint "
            "left running?), so the documented command cannot serve there; free it and rerun"
        )
        return Serving(command, None, log, started, problem)
    with (
        log.with_suffix(".stdout").open("wb") as out,
        log.with_suffix(".stderr").open("wb") as err,
    ):
        process = subprocess.Popen(
            ["bash", "-c", command.pasted], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
            stdout=out, stderr=err, start_new_session=True,
            preexec_fn=hear_ctrl_c,  # Ctrl-C in a terminal reaches it even if ours ignores it
        )  # fmt: skip
    serving = Serving(command, process, log, started)
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    while not serving.output("stdout").endswith("\n"):
        if process.poll() is not None:
            serving.problem = f"it exited with code {process.returncode} before serving"
            return serving
        if time.monotonic() > deadline:
            _stop_group(process, signal.SIGKILL, 5)
            serving.problem = f"it printed no URL within {SERVER_START_TIMEOUT:.0f} s"
            return serving
        time.sleep(0.05)
    return serving


def stop_serving(serving: Serving) -> Ran:
    """Ctrl-C, as in its terminal (SIGINT to its process group); killed if it lingers."""
    returncode: int | None = None
    problem = serving.problem
    if serving.process is not None:
        still_serving = serving.process.poll() is None
        if still_serving and not _stop_group(serving.process, signal.SIGINT, SERVER_STOP_TIMEOUT):
            problem = f"still serving {SERVER_STOP_TIMEOUT:.0f} s after Ctrl-C; killed"
        returncode = None if problem else serving.process.returncode
    return Ran(
        serving.command, returncode, serving.output("stdout"), serving.output("stderr"),
        time.monotonic() - serving.started, None, problem,
    )  # fmt: skip


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Ran]]:
    """Run the documents' runnable commands in reading order from a fresh copy; by command key.

    A serving command runs in the background until the command after it has ended. The fixed
    paths the commands write under /tmp are removed before and after."""
    root = tmp_path_factory.mktemp("docs")
    cwd = _clone(root)
    env = _environment()
    fixed = _fixed_paths(list(RUN))
    _remove(fixed)
    outcomes: dict[str, Ran] = {}
    serving: Serving | None = None
    try:
        for command in documented_commands(docs_text()):
            if command.key not in RUN or command.key in outcomes:
                continue
            if command.key in NEEDS_SHARED and not SHARED_PRESENT:
                continue  # its tests skip (or fail, where skips are forbidden)
            if command.key in SERVES:
                serving = start_serving(command, cwd, env, root / f"serving-{command.line}")
                continue
            if serving is not None and serving.problem:
                problem = f"not run, as its server is not up: {serving.problem}"
                outcomes[command.key] = Ran(command, None, "", "", 0.0, None, problem)
            else:
                outcomes[command.key] = run_pasted(command, cwd, env)
            if serving is not None:
                outcomes[serving.command.key] = stop_serving(serving)
                serving = None
        yield outcomes
    finally:
        if serving is not None:
            stop_serving(serving)
        _remove(fixed)


def outcome(ran: dict[str, Ran], key: str) -> Ran:
    """What the command did; it must have run and exited with status 0."""
    assert key in ran, f"the command was not run (no longer documented?):\n{key}"
    result = ran[key]
    assert result.returncode == 0, result.describe()
    return result


# --- Checks


def test_every_documented_command_is_classified_once() -> None:
    commands = {command.key: command.line for command in documented_commands(docs_text())}
    both = set(RUN) & set(NOT_RUN)
    assert not both, f"in both lists: {sorted(both)}"
    unclassified = {key: line for key, line in commands.items() if key not in RUN | NOT_RUN}
    assert not unclassified, "commands in neither list (add each to RUN or NOT_RUN):\n" + (
        "\n".join(f"{where(line)}: {key!r}" for key, line in unclassified.items())
    )
    gone = [key for key in [*RUN, *NOT_RUN] if key not in commands]
    assert not gone, "listed commands no longer documented:\n" + "\n".join(map(repr, gone))


def test_shell_commands_are_read_as_a_shell_reads_them() -> None:
    block = Block(
        "sh", 0,
        ("make run   # a comment", "", "# a line of comment", "a --x \\", "    --y  z",
         "for i in 1 2; do", "  echo $i \\", "    done-not", "done", "b && echo 'x'  # c"),
    )  # fmt: skip
    assert [c.key for c in shell_commands(block)] == [
        "make run", "a --x --y z", "for i in 1 2; do\necho $i done-not\ndone", "b && echo 'x'"
    ]  # fmt: skip
    assert shell_commands(block)[1].pasted == "a --x \\\n    --y  z"
    assert shell_commands(block)[1].line == 5
    with pytest.raises(ValueError, match="never ends"):
        shell_commands(Block("sh", 0, ("for i in 1; do", "echo $i")))


@pytest.mark.parametrize(
    "key",
    [
        pytest.param(key, marks=[have_shared] if key in NEEDS_SHARED else [])
        for key in RUN
        if key not in SERVES
    ],
    ids=lambda key: key.split("\n")[0][:60],
)
def test_command_exits_with_status_0(ran: dict[str, Ran], key: str) -> None:
    outcome(ran, key)


def _models(command: str) -> list[str]:
    """The answerers a `privateshared run` command names."""
    return re.findall(r"--model (\S+)", command)


def _folder(model: str) -> str:
    """The records folder (clembench's 'model') of an answerer played with the programmatic
    questioner at the default temperature, as the Records page names it."""
    return f"{model}-t0.0--{model}-t0.0"


def _evaluation(results: dict[str, Any], benchmark: str) -> dict[str, Any]:
    """One benchmark's evaluation in results.json: at its top when the folder holds only that
    benchmark or it is the classic one, else under its name (`two_listeners`)."""
    if results.get("benchmark", "classic") == benchmark:
        return results
    key = benchmark.replace("-", "_")
    assert key in results, f"results.json has neither {benchmark} at its top nor {key!r}"
    return results[key]  # type: ignore[no-any-return]


_NUMBER = r"\d+(?:\.\d+)?"


def _compare_table(
    table: Table, evaluation: dict[str, Any], command: str, bracket: str
) -> list[str]:
    """Where a documented table of Quality Scores per player and experiment differs from the
    evaluation its command produced. `bracket`: what a cell's `(...)` gives, `played` (% Played,
    shown where it is not 100) or `classic` (the two-listener experiments' classic Main Score,
    then `; NN %` where % Played is not 100)."""
    by_experiment = {(a["model"], a["experiment"]): a for a in evaluation["experiments"]}
    listeners = {(a["model"], a["experiment"]): a for a in evaluation.get("listeners", [])}
    experiments = {a["experiment"] for a in evaluation["experiments"]}
    columns = {
        index: "-".join(cell.split())
        for index, cell in enumerate(table.header)
        if "-".join(cell.split()) in experiments
    }
    problems = []
    if set(columns.values()) != experiments:
        problems.append(f"columns {sorted(columns.values())}, played {sorted(experiments)}")
    players: list[str] = []
    for offset, row in enumerate(table.rows):
        line = table.line + 2 + offset
        names = re.findall(r"`([^`]+)`", re.sub(r"\([^)]*\)", "", row[0]))
        players += names
        for name in names:
            for index, experiment in columns.items():
                at = f"{where(line)}, {name} on {experiment}"
                cell = row[index]
                aggregate = by_experiment.get((_folder(name), experiment))
                # "14.75", "14.75 (80 %)", "0.00 (86.59)" or "0.00 (3.55; 90 %)"
                match = re.fullmatch(
                    rf"({_NUMBER})(?: \(({_NUMBER})( %)?(?:; ({_NUMBER}) %)?\))?", cell
                )
                if aggregate is None or match is None:
                    problems.append(f"{at}: {cell!r}; results.json has {aggregate}")
                    continue
                quality, played = aggregate["quality_score"], aggregate["percent_played"]
                if float(match.group(1)) != round(quality, 2):
                    problems.append(f"{at}: shown {cell!r}, run: Quality Score {quality:.2f}")
                if bracket == "played" and (
                    (match.group(2) is None and played != 100)
                    or (match.group(2) is not None and float(match.group(2)) != round(played, 2))
                ):
                    problems.append(f"{at}: shown {cell!r}, run: % Played {played:g}")
                shown = match.group(4)
                if bracket == "classic" and (
                    (shown is None and played != 100)
                    or (shown is not None and float(shown) != round(played, 2))
                ):
                    problems.append(f"{at}: shown {cell!r}, run: % Played {played:g}")
                if bracket == "classic" and match.group(2) is not None:
                    classic = listeners[(_folder(name), experiment)]["classic_main_score"]
                    if float(match.group(2)) != round(classic, 2):
                        problems.append(
                            f"{at}: shown {cell!r}, run: classic Main Score {classic:.2f}"
                        )
    if sorted(players) != sorted(_models(command)):
        problems.append(f"the table's players {players}, the command's {_models(command)}")
    return problems


def _experiment_table(anchor: str, evaluation: dict[str, Any]) -> Table:
    """The first table after `anchor` with a column per experiment of `evaluation`."""
    experiments = {a["experiment"] for a in evaluation["experiments"]}
    for table in tables_after(docs_text(), anchor):
        if experiments & {"-".join(cell.split()) for cell in table.header}:
            return table
    raise AssertionError(f"the documents have no table of experiments after {anchor!r}")


def test_reference_table_is_what_its_command_measured(ran: dict[str, Ran]) -> None:
    results = outcome(ran, REFERENCE_RUN).results
    assert results is not None, "the run wrote no records/results.json"
    evaluation = _evaluation(results, "classic")
    table = _experiment_table("The reference players say where a score sits", evaluation)
    problems = _compare_table(table, evaluation, REFERENCE_RUN, "played")
    assert not problems, "\n".join(problems)


def test_two_listener_table_is_what_its_command_measured(ran: dict[str, Ran]) -> None:
    results = outcome(ran, TWO_LISTENER_RUN).results
    assert results is not None, "the run wrote no records/results.json"
    evaluation = _evaluation(results, "two-listeners")
    table = _experiment_table("# Who knows what: two listeners", evaluation)
    problems = _compare_table(table, evaluation, TWO_LISTENER_RUN, "classic")
    assert not problems, "\n".join(problems)


def test_make_run_rows_of_the_reference_players(ran: dict[str, Ran]) -> None:
    """`make run` plays SmolLM2 too (minutes), but its oracle and mock play the same 50
    instances as the reference run, so the documented rows for them must be printed by it."""
    printed = {tuple(line.split()) for line in outcome(ran, REFERENCE_RUN).stdout.splitlines()}
    shown = block_after(docs_text(), "make run")
    folders = {_folder(model) for model in _models(REFERENCE_RUN)}
    # (Their tokens rows aside: the reference run calls no model, so it prints no tokens table.)
    rows = [line for line in shown.lines if line.split() and line.split()[0] in folders
            and "no usage reported" not in line]  # fmt: skip
    assert len(rows) >= 2, f"{where(shown.start + 1)}: no rows of the reference players"
    missing = [row for row in rows if tuple(row.split()) not in printed]
    assert not missing, (
        f"rows of the block at {where(shown.start + 1)} that the run did not print:\n"
        + "\n".join(missing)
        + f"\n--- it printed\n{ran[REFERENCE_RUN].stdout}"
    )


def test_subset_plays_the_same_way(ran: dict[str, Ran]) -> None:
    results = outcome(ran, SUBSET_RUN).results
    assert results is not None
    (oracle,) = [
        a for a in _evaluation(results, "classic")["experiments"]
        if (a["model"], a["experiment"]) == (_folder("oracle"), "travel-booking")
    ]  # fmt: skip
    assert (oracle["played"], oracle["quality_score"]) == (10, 100)


def _help_entries(text: str) -> dict[str, str]:
    """The options section of argparse's help: option string -> its entry, one line."""
    section = text.split("\noptions:\n", 1)[1]
    entries: list[list[str]] = []
    for line in section.splitlines():
        if re.match(r"  -", line):
            entries.append([line])
        elif line.startswith("   ") and entries:
            entries[-1].append(line)
    found = {}
    for entry in entries:
        joined = " ".join(" ".join(entry).split())
        invocation = re.split(r"\s{2,}", entry[0].strip())[0]
        for option in re.findall(r"(?:^|, )(-[-\w]+)", invocation):
            found[option] = joined
    return found


def test_run_help_lists_every_option_with_help_and_default(ran: dict[str, Ran]) -> None:
    """The Run it page: "`--help` lists every option with its default". Every option of `run` has a
    help text, and every one with a default (not a flag) says it."""
    entries = _help_entries(outcome(ran, RUN_HELP).stdout)
    run_parser = next(
        action
        for action in build_parser()._actions
        if isinstance(action, argparse._SubParsersAction)
    ).choices["run"]
    problems = []
    for action in run_parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        name = action.option_strings[-1]
        entry = entries.get(name)
        if entry is None:
            problems.append(f"{name}: not listed")
            continue
        if not action.help or " ".join(action.help.split()) not in entry:
            problems.append(f"{name}: no help text: {entry!r}")
        has_default = action.default is not None and action.nargs != 0
        if has_default and "default" not in entry.removeprefix(name):
            problems.append(f"{name}: its default {action.default!r} not shown: {entry!r}")
    assert not problems, "\n".join(problems)


def test_fake_endpoint_prints_its_url_serves_the_run_and_stops_on_ctrl_c(
    ran: dict[str, Ran],
) -> None:
    assert FAKE_ENDPOINT in ran, "the fake endpoint was not started (no longer documented?)"
    server = ran[FAKE_ENDPOINT]
    assert not server.problem, server.describe()
    base_url = re.search(r"--base-url (\S+)", FAKE_RUN)
    assert base_url is not None
    assert server.stdout.splitlines()[0] == base_url.group(1), server.describe()
    client = outcome(ran, FAKE_RUN)
    assert client.results is not None
    (answerer,) = client.results["models"]
    assert (answerer["model"], answerer["percent_played"], answerer["quality_score"]) == (
        "fake-model-t0.0--fake-model-t0.0", 100, 100
    )  # fmt: skip
    assert answerer["episodes"] == 10
    # every call (answerer, questioner, judge) is a chat completion the fake endpoint made
    episodes = Path("/tmp/fake-run").glob("*/privateshared/*/episode_*/requests.json")
    calls = [call for path in episodes for call in json.loads(path.read_text())]
    assert len(calls) > 100
    responses = [call["raw_response_obj"] for call in calls]
    assert [r for r in responses if r["object"] != "chat.completion"] == []
    assert [r["id"] for r in responses if not r["id"].startswith("chatcmpl-fake-")] == []


@have_shared
def test_replay_prints_what_the_documents_show(ran: dict[str, Ran]) -> None:
    printed = outcome(ran, REPLAY_LOOP).stdout.splitlines()
    text = docs_text()
    shown = block_after(text, REPLAY_LOOP)
    assert shown.lines, f"{where(shown.start + 1)}: an empty output block"
    missing = [line for line in shown.lines if line not in printed]
    assert not missing, (
        f"lines of the block at {where(shown.start + 1)} that the replay did not print:\n"
        + "\n".join(missing)
        + "\n--- it printed\n"
        + "\n".join(printed)
    )
    # the episode line quoted in the prose: "Each episode gets a line (`...episode_5: ...`)"
    quoted = re.search(r"\(`\.\.\.(episode_\d+:[^`]+)`\)", " ".join(text.split()))
    assert quoted, "the documents no longer quote an episode line of the replay"
    assert [line for line in printed if line.endswith("/" + quoted.group(1))], quoted.group(1)


@have_shared
def test_eval_prints_every_replayed_model(ran: dict[str, Ran]) -> None:
    printed = {line.split()[0] for line in outcome(ran, EVAL_REPLAYED).stdout.splitlines() if line}
    replayed = {path.name for path in Path("/tmp/replayed").iterdir() if path.is_dir()}
    assert len(replayed) >= 2
    assert replayed <= printed


def test_instances_are_reproduced(ran: dict[str, Ran]) -> None:
    assert outcome(ran, INSTANCES_IDENTICAL).stdout == "identical\n"


def test_instances_of_30_per_experiment_are_played(ran: dict[str, Ran]) -> None:
    outcome(ran, INSTANCES_30)
    written = json.loads(Path("/tmp/instances-30.json").read_text())
    counts = {e["name"]: len(e["game_instances"]) for e in written["experiments"]}
    assert list(counts.values()) == [30] * 5, counts
    results = outcome(ran, RUN_30).results
    assert results is not None
    played = {a["experiment"]: a["played"] for a in results["experiments"]}
    assert played == counts


def test_the_documented_players_play_under_their_names(ran: dict[str, Ran]) -> None:
    results = outcome(ran, MINE_RUN).results
    assert results is not None
    scores = {row["model"]: row["quality_score"] for row in results["models"]}
    assert scores == {"oracle-t0.0--reverse-asker-t0.0": 100.0,
                      "said-it-t0.0--reverse-asker-t0.0": 100.0}  # fmt: skip
    back = outcome(ran, MINE_SWAPPED_BACK).results
    assert back is not None
    assert "said-it-t0.0--said-it-t0.0" in {row["model"] for row in back["models"]}


def test_a_domain_of_ones_own_is_played(ran: dict[str, Ran]) -> None:
    outcome(ran, DOMAIN_INSTANCES)
    for key in (DOMAIN_RUN, DOMAIN_RUN_BY_NAME):
        results = outcome(ran, key).results
        assert results is not None
        rows = {(row["model"], row["experiment"]): row for row in results["experiments"]}
        oracle = rows[("oracle-t0.0--oracle-t0.0", CLINIC)]
        assert oracle["played"] == oracle["episodes"] > 0 and oracle["quality_score"] == 100.0
    assert ("mock-t0.0--mock-t0.0", CLINIC) in {
        (row["model"], row["experiment"]) for row in outcome(ran, DOMAIN_RUN).results["experiments"]
    }
    listing = outcome(ran, DOMAIN_CHECK).stdout
    assert f"{CLINIC}: ok" in listing and "my_domains" in listing


@pytest.fixture(scope="module")
def scripts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the documents' Python blocks, each saved as its own script."""
    folder = tmp_path_factory.mktemp("python-examples")
    for index, block in enumerate(python_blocks(docs_text())):
        name = saved_name(block) or f"example_{index}.py"
        (folder / name).write_text("\n".join(block.lines) + "\n")
    return folder


@pytest.mark.parametrize(
    "index", range(len(python_blocks(docs_text()))),
    ids=lambda index: saved_name(python_blocks(docs_text())[index]) or f"block {index}",
)  # fmt: skip
def test_python_examples_run_as_pasted_and_print_what_the_documents_say(
    scripts: Path, index: int
) -> None:
    block = python_blocks(docs_text())[index]
    name = saved_name(block) or f"example_{index}.py"
    done = subprocess.run(
        [str(VENV_BIN / "python"), name], cwd=scripts, env=_environment(),
        capture_output=True, text=True, timeout=COMMAND_TIMEOUT,
    )  # fmt: skip
    at = f"{where(block.start + 1)} ({name})"
    assert done.returncode == 0, f"{at}:\n{done.stdout}\n{done.stderr}"
    printed = done.stdout.splitlines()
    for line in claimed_output(docs_text(), block):
        assert line in printed, f"{at} should print {line!r}; it printed:\n{done.stdout}"
