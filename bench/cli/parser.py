"""The command line's words: every command, option, help text and default, in one tree.

Each command's handler (run.py, play.py, report.py, replay.py, domains.py) reads the namespace
this parser makes; `--help` shows every default (the formatter below adds it where the help text
does not say it already).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from privateshared.agents.names import HUMAN, PROGRAMMATIC_ANSWERERS
from privateshared.bench.defaults import (
    DEFAULT_MODELS,
    DEFAULT_RESAMPLES,
    DEFAULT_RESULTS_DIR,
    default_workers,
)
from privateshared.domains.instance_defaults import DEFAULT_PER_DOMAIN, DEFAULT_SEED


class _HelpWithDefaults(argparse.HelpFormatter):
    """argparse's ArgumentDefaultsHelpFormatter, but silent where there is nothing to say (no
    default, a flag) or where the help text names the default itself."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        # Identity, not equality: a default of 0.0 (the temperature) equals False.
        if (
            re.search(r"\(default\b|\bdefault:", text)
            or any(action.default is nothing for nothing in (None, False, argparse.SUPPRESS))
            or action.nargs == 0
        ):
            return text
        return f"{text} (default: %(default)s)" if text else "default: %(default)s"


class _Version(argparse.Action):
    """argparse's `version` action, reading the installed distribution's version only when asked:
    importing importlib.metadata takes about 50 ms, which every other command would wait for."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS) -> None:
        super().__init__(
            option_strings, dest, nargs=0, default=argparse.SUPPRESS,
            help="show program's version number and exit",
        )  # fmt: skip

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[object] | None,
        option_string: str | None = None,
    ) -> None:
        from importlib.metadata import version

        print(f"{parser.prog} {version('privateshared')}", file=sys.stdout)
        parser.exit()


def _positive(text: str) -> int:
    """A whole number of at least 1, for argparse."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return value


def _temperature(text: str) -> float | None:
    """A number, or `default` (None: none is sent), for argparse; a model's settings check the
    range, in the one line every bad setting gets."""
    if text == "default":
        return None
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is neither a number nor default") from None


def _dollars(text: str) -> float:
    """An amount of US dollars above 0, for argparse."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not an amount of US dollars above 0")
    return value


def _command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], name: str, summary: str
) -> argparse.ArgumentParser:
    return commands.add_parser(
        name, help=summary, description=summary[0].upper() + summary[1:] + ".",
        formatter_class=_HelpWithDefaults,
    )  # fmt: skip


def _model_options(command: argparse.ArgumentParser, roles: str) -> None:
    """Where and how the models of a command are called; `roles` names the options that pick
    models, for the registry's help."""
    command.add_argument(
        "--models", type=Path, dest="registry_file", metavar="FILE",
        help="model registry (JSON or YAML): per model its id, endpoint, key variable and "
        "settings, a LangChain chat model ({name, provider, model, ...}: any provider "
        "init_chat_model knows), or a player of your own ({name, player: ./file.py:attr}, a file "
        f"relative to the registry's folder); {roles} then name its entries",
    )  # fmt: skip
    command.add_argument(
        "--base-url", metavar="URL",
        help="OpenAI-compatible endpoint of the models named, e.g. http://localhost:8000/v1 "
        "(default: OpenAI's, or OPENAI_BASE_URL); for langchain:PROVIDER:MODEL, its base_url",
    )  # fmt: skip
    command.add_argument(
        "--api-key-env", default="OPENAI_API_KEY", metavar="VAR",
        help="environment variable holding the API key (langchain:PROVIDER:MODEL: the "
        "provider's own variable, e.g. ANTHROPIC_API_KEY, unless another is named here)",
    )  # fmt: skip
    command.add_argument(
        "--temperature", type=_temperature, default=0.0, metavar="T",
        help="sampling temperature of every model call, or `default` to "
        "send none, so that each "
        "model samples at its provider's default (OpenAI's reasoning models, o-series and "
        "GPT-5, refuse any other; a registry entry says it with temperature: null); folders "
        "then read NAME-tdefault",
    )  # fmt: skip
    command.add_argument(
        "--timeout", type=float, default=60.0, metavar="SECONDS", help="seconds per model call"
    )
    command.add_argument(
        "--max-retries", type=int, default=3, metavar="N",
        help="retries of a failed model call, with backoff",
    )  # fmt: skip


def _results_dir(command: argparse.ArgumentParser, what: str) -> None:
    command.add_argument(
        "--results-dir", type=Path, default=DEFAULT_RESULTS_DIR, metavar="DIR", help=what
    )


def _instances_options(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--instances", type=Path, metavar="FILE",
        help="instances file (default: the shipped classic benchmark, domains/instances.json)",
    )  # fmt: skip
    command.add_argument(
        "--resources", type=Path, metavar="DIR",
        help="clembench's privateshared/resources/texts, to play clembench's instances with "
        "clembench's own texts",
    )  # fmt: skip


def _domains_option(command: argparse.ArgumentParser, what: str) -> None:
    """`--domains DIR`, repeatable: folders of domains beyond those every command knows (the
    shipped ones, installed packages' and PRIVATESHARED_DOMAINS'; domains/registry.py)."""
    command.add_argument(
        "--domains", type=Path, action="append", metavar="DIR",
        help=f"a folder of domain folders, or one domain folder (repeatable): {what}",
    )  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    """The `privateshared` command and its subcommands."""
    parser = argparse.ArgumentParser(
        prog="privateshared",
        description="Scorekeeping benchmark: does a chat model know what is private and what is "
        "shared in a conversation?",
    )
    parser.add_argument("--version", action=_Version)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = _command(commands, "run", "play every instance with the given models")
    run.add_argument(
        "--model", action="append", dest="models", metavar="NAME",
        help=f"answerer: {', '.join(PROGRAMMATIC_ANSWERERS)}, mock:SEED, smollm2 (SmolLM2-135M "
        "run here by llama.cpp), local:PATH.gguf, a registry entry, your own player as "
        "module:attr or ./file.py:attr (a player, a class or a factory, or a LangChain chat "
        "model), a LangChain chat model as langchain:PROVIDER:MODEL (made by init_chat_model, "
        "split at the first two colons: langchain:ollama:llama3.1:8b is model llama3.1:8b of "
        "provider ollama; needs the provider's integration package), or a model served at "
        f"--base-url (repeatable; default: {' '.join(DEFAULT_MODELS)}, SmolLM2 on the 5-slot "
        "experiments only)",
    )  # fmt: skip
    run.add_argument(
        "--questioner", default="programmatic", metavar="NAME",
        help="who asks: programmatic, your own player (module:attr or ./file.py:attr), or a "
        "model (any name --model takes except the programmatic answerers, langchain:PROVIDER:"
        "MODEL too), which plays through function calls",
    )  # fmt: skip
    run.add_argument(
        "--judge", metavar="NAME",
        help="a model (a name --model takes, langchain:PROVIDER:MODEL too), or your own player "
        "(module:attr or ./file.py:attr), that rates every question of the questioner from 1 to "
        "5 (default: none)",
    )  # fmt: skip
    _model_options(run, "--model, --questioner and --judge")
    run.add_argument(
        "--concurrency", type=int, default=8, metavar="N", help="episodes played at once"
    )
    run.add_argument(
        "--workers", type=int, metavar="N",
        help="worker processes playing the episodes (default: one per core, here "
        f"{default_workers()}; one when a model runs on this machine, whose server needs the "
        "cores)",
    )  # fmt: skip
    run.add_argument(
        "--max-concurrent-calls", type=int, metavar="N",
        help="at most N calls under way per model (default: no limit)",
    )  # fmt: skip
    run.add_argument(
        "--rerun", action="store_true",
        help="play episodes again even when their records are complete",
    )  # fmt: skip
    run.add_argument(
        "--budget", type=_dollars, metavar="USD",
        help="stop starting episodes once what this command's episodes cost (those an earlier "
        "run played included) plus the estimate of those under way would pass USD; episodes "
        "under way finish. Needs every model's price (a registry entry's price:); a registry's "
        "max_cost caps one model the same way. A budgeted run plays in this process (no "
        "--workers, no --ray); the same command with a larger budget plays only what is left",
    )  # fmt: skip
    run.add_argument(
        "--dry-run", action="store_true",
        help="print the plan and stop: per model the episodes left to play, their calls, and "
        "the tokens and cost (with a price) estimated from the instances' lengths; no model is "
        "called, no file written",
    )  # fmt: skip
    _instances_options(run)
    _domains_option(
        run, "its domains are known besides the shipped ones, installed packages' and "
        "PRIVATESHARED_DOMAINS', for --instances and --experiment to use",
    )  # fmt: skip
    run.add_argument(
        "--experiment", action="append", dest="experiments", metavar="NAME",
        help="play only this experiment (repeatable); names the shipped two-listener "
        "experiments too, and without --instances those of other known domains (their "
        "default instances)",
    )  # fmt: skip
    run.add_argument(
        "--limit", type=_positive, metavar="N",
        help="play only the first N instances of each experiment: a short slice of the same "
        "run, e.g. to try the default models in a minute (default: all)",
    )  # fmt: skip
    _results_dir(run, "where records, results and transcripts go")
    run.add_argument(
        "--ray", metavar="ADDRESS",
        help="spread the episodes over a Ray cluster: auto (the cluster this machine joined) or "
        "its address, e.g. ray://head:10001 (needs the ray extra)",
    )  # fmt: skip
    run.add_argument(
        "--guided", action="store_true",
        help="hold every model answerer's replies to the game's format (ASIDE: yes/no, one "
        "ANSWER: line) by its server's grammar or regular expression, so that what is left is "
        "its scorekeeping: llama.cpp, vLLM and SGLang servers (found out from /v1/models, or "
        "named by a registry entry's guided:); played and named as its own condition, "
        "NAME-guided",
    )  # fmt: skip
    run.add_argument(
        "--sequential-probes", action="store_true",
        help="probe one slot at a time and stop at the first failure, as clembench does; "
        "always so for a model this run serves (smollm2, local:PATH), whose server answers one "
        "call at a time",
    )  # fmt: skip

    play = _command(
        commands, "play", "play one episode yourself in the terminal, as answerer or questioner"
    )
    play.add_argument(
        "--as", dest="seat", choices=("answerer", "questioner"), required=True,
        help="your seat",
    )  # fmt: skip
    play.add_argument(
        "--experiment", metavar="NAME", help="an experiment, classic or two-listener (default: any)"
    )
    play.add_argument("--game-id", type=int, metavar="N", help="a game id (default: any)")
    _domains_option(play, "its domains' experiments (their default instances) can be played too")
    play.add_argument("--name", default=HUMAN, help="your name in the records")
    play.add_argument(
        "--questioner", default="programmatic", metavar="NAME",
        help="with --as answerer: who asks, programmatic, your own player (module:attr or "
        "./file.py:attr) or a model (at --base-url, or a registry entry)",
    )  # fmt: skip
    play.add_argument(
        "--model", default="oracle", metavar="NAME",
        help="with --as questioner: who answers, oracle, one-listener, mock, your own player "
        "(module:attr or ./file.py:attr), or a model (at --base-url, or a registry entry)",
    )  # fmt: skip
    _model_options(play, "--model and --questioner")
    _results_dir(play, "where your episode's records go")

    score = _command(commands, "score", "re-score a results folder from its interactions.json")
    score.add_argument(
        "results_dir", nargs="?", type=Path, default=DEFAULT_RESULTS_DIR, metavar="RESULTS_DIR",
        help="a results folder, ours or clembench's",
    )  # fmt: skip

    evaluation = _command(
        commands,
        "eval",
        "aggregate a results folder: tables (md, csv, json), clembench's csv, plots",
    )
    evaluation.add_argument(
        "results_dir", nargs="?", type=Path, default=DEFAULT_RESULTS_DIR, metavar="RESULTS_DIR",
        help="a results folder, ours or clembench's",
    )  # fmt: skip
    evaluation.add_argument(
        "--resamples", type=_positive, default=DEFAULT_RESAMPLES, metavar="N",
        help="bootstrap resamples behind every 95%% interval, and random sign flips behind "
        "every paired test, all seeded: the same records give the same intervals (default: "
        "%(default)s, as in the report that ends a run)",
    )  # fmt: skip

    transcribe = _command(
        commands, "transcribe", "write a transcript.html per episode and an index.html"
    )
    transcribe.add_argument(
        "results_dir", nargs="?", type=Path, default=DEFAULT_RESULTS_DIR, metavar="RESULTS_DIR",
        help="a results folder, ours or clembench's",
    )  # fmt: skip

    replay = _command(
        commands, "replay",
        "replay clembench records (either layout) and compare their scores and prompts",
    )  # fmt: skip
    replay.add_argument("source", type=Path, help="a clembench results folder")
    replay.add_argument(
        "--instances", type=Path, required=True, metavar="FILE",
        help="the instances file the records were played on",
    )  # fmt: skip
    replay.add_argument(
        "--results-dir", type=Path, required=True, metavar="DIR",
        help="where the replayed episodes' records go",
    )  # fmt: skip
    replay.add_argument(
        "--resources", type=Path, metavar="DIR",
        help="clembench's privateshared/resources/texts: plays the recorded instances with "
        "clembench's own texts and compares every answerer message with requests.json",
    )  # fmt: skip
    _domains_option(
        replay, "its domains give their texts to the instances that name them (the replies are "
        "recorded, so other instances play with stand-in texts)",
    )  # fmt: skip

    instances = _command(commands, "instances", "generate an instances file")
    instances.add_argument("--seed", type=int, default=DEFAULT_SEED, help="random seed")
    instances.add_argument(
        "--per-domain", type=int, default=DEFAULT_PER_DOMAIN, metavar="N",
        help="instances per domain (per experiment)",
    )  # fmt: skip
    _domains_option(
        instances, "instances of its domains only, checked beside every known domain (default: "
        "every known domain: the shipped ones, installed packages' and PRIVATESHARED_DOMAINS')",
    )  # fmt: skip
    instances.add_argument("--out", default="-", metavar="FILE", help="output file, - for stdout")
    instances.add_argument(
        "--two-listeners", action="store_true",
        help="the two-listener experiments (late joiner, handover) of every domain with a "
        "second listener, as in domains/instances_two_listeners.json",
    )  # fmt: skip

    domains = _command(commands, "domains", "work with domain folders")
    domain_commands = domains.add_subparsers(
        dest="domains_command", required=True, metavar="ACTION"
    )
    check = _command(
        domain_commands, "check", "validate a domain folder or a folder of them, every problem"
    )
    check.add_argument(
        "path", type=Path, nargs="?", metavar="PATH",
        help="a domain folder, or a folder of domain folders, checked on its own (default: "
        "every known domain: the shipped ones, installed packages' and PRIVATESHARED_DOMAINS')",
    )  # fmt: skip
    _domains_option(
        check, "checked too, together with PATH's domains (without PATH, with every known "
        "domain): a name two folders define is a problem",
    )  # fmt: skip

    llama = _command(
        commands, "llama-cpp", "build llama.cpp for the local model, for any CPU, and show it"
    )
    llama_commands = llama.add_subparsers(dest="llama_cpp_command", required=True,
                                          metavar="ACTION")  # fmt: skip
    build = _command(
        llama_commands, "build",
        "build llama.cpp from llama-cpp-python's pinned source, its CPU code as variants it "
        "chooses from by the CPU it runs on (never AMX's), once per machine, and install "
        "llama-cpp-python to load it",
    )  # fmt: skip
    build.add_argument("--rebuild", action="store_true", help="build again, ignoring our cache")
    _command(
        llama_commands, "info",
        "show which build of llama.cpp the local model's server loads here, and which of its "
        "CPU variants this CPU runs",
    )  # fmt: skip
    return parser
