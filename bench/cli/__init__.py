"""The `privateshared` command: run, play, score, eval, transcribe, replay, instances, domains,
llama-cpp.

`main` parses the command line (parser.py) and hands it to the command's module: run.py plays
the benchmark, play.py seats a person in the terminal, report.py evaluates and draws a results
folder, replay.py replays clembench's records, domains.py makes instances and checks domains,
llama_cpp.py builds llama.cpp for the local model.

Bad input ends the command with one line on stderr naming the problem and the fix (exit 2);
model calls that still fail after their retries, and a local model's server that exits, end it
with one line too (exit 1).

Only the parser is imported with this package: a command's module, and the error classes `main`
turns into one line, are imported once the command line is parsed, so that `--help`,
`--version` and a mistyped option answer at once instead of after the second or more that
importing LangGraph, the openai SDK, numpy and pydantic takes (`python scripts/startup.py`).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence

from privateshared.bench.cli.parser import build_parser

__all__ = ["main"]

COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("run", "run_command"),
    "play": ("play", "play_command"),
    "score": ("report", "score_command"),
    "eval": ("report", "eval_command"),
    "transcribe": ("report", "transcribe_command"),
    "replay": ("replay", "replay_command"),
    "instances": ("domains", "instances_command"),
    "domains": ("domains", "check_command"),
    "llama-cpp": ("llama_cpp", "llama_cpp_command"),
}
"""Each command's module in this package and the function there that runs it."""

_Handler = Callable[[argparse.Namespace], int]
"""A command's function: the parsed command line in, the exit status out."""


def _bad_input() -> tuple[type[Exception], ...]:
    """Errors whose message is one line naming the problem and its fix."""
    from privateshared.agents.llm import PlayerConfigError
    from privateshared.agents.model_registry import RegistryError
    from privateshared.bench.cli.usage import UsageError
    from privateshared.bench.reporting.evaluate import ResultsError
    from privateshared.bench.reporting.record_files import RecordsError
    from privateshared.bench.reporting.transcripts.index import TranscriptError
    from privateshared.bench.running.benchmark import ExperimentError
    from privateshared.bench.running.cast import CastError
    from privateshared.bench.running.local_model import LocalModelError
    from privateshared.bench.running.ray_cluster import RayError
    from privateshared.bench.running.workers import WorkerError
    from privateshared.domains.clembench_texts import ResourcesError
    from privateshared.domains.instances import InstancesError
    from privateshared.domains.loader import DomainError

    return (
        UsageError, ExperimentError, DomainError, InstancesError, PlayerConfigError, RecordsError,
        ResultsError,
        TranscriptError, LocalModelError, CastError, ResourcesError, WorkerError, RegistryError,
        RayError,
    )  # fmt: skip


def _run_failures() -> tuple[type[Exception], ...]:
    """Errors of what the run itself started, not of the user's input (exit 1): a local
    model's server that exited."""
    from privateshared.bench.running.local_model import LocalServerExited

    return (LocalServerExited,)


def _player_failures() -> tuple[type[Exception], ...]:
    """Errors of a model call that failed after its retries."""
    import httpx
    import openai

    from privateshared.bench.clembench.replay_answerer import ReplayError

    return (openai.APIError, httpx.HTTPError, ReplayError, TimeoutError, ConnectionError)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    args = build_parser().parse_args(argv)
    module, name = COMMANDS[args.command]
    command: _Handler = getattr(importlib.import_module(f"privateshared.bench.cli.{module}"), name)
    bad_input, run_failures, player_failures = _bad_input(), _run_failures(), _player_failures()
    args.registry = {}
    try:
        if getattr(args, "registry_file", None) is not None:
            from privateshared.agents.model_registry import read_registry

            args.registry = read_registry(args.registry_file)
        code = command(args)
        sys.stdout.flush()  # here, where a reader that left is heard (below), not at exit
        return code
    except run_failures as error:  # before bad input: LocalServerExited is a LocalModelError
        print(f"privateshared: error: {error}", file=sys.stderr)
        return 1
    except bad_input as error:
        print(f"privateshared: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # a ConnectionError too, but ours: the reader left (`| head`)
        # Nothing more can reach it, and Python would complain again flushing stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # what a shell reports for a process that a closed pipe stopped
    except player_failures as error:
        print(
            f"privateshared: error: a player failed after its retries ({type(error).__name__}: "
            f"{error}); finished episodes are kept, check the endpoint and run again",
            file=sys.stderr,
        )
        return 1
    except OSError as error:  # a folder that cannot be read or written, a disk that is full
        # os.replace names the temporary file first and the target second: name the target.
        where = error.filename2 or error.filename or "a file"
        print(f"privateshared: error: cannot read or write {where} ({error.strerror or error}); "
              "check the path, its permissions and the free space", file=sys.stderr)  # fmt: skip
        return 2
    except KeyboardInterrupt:
        print("privateshared: interrupted; finished episodes are kept", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
