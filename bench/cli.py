"""The `privateshared` command: run, score, replay, instances, domains check.

Bad input ends the command with one line on stderr naming the problem and the fix (exit 2);
model calls that still fail after their retries end it with one line too (exit 1).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import httpx
import openai

from privateshared.agents.human import HumanPlayer
from privateshared.agents.llm import (
    ChatModelPlayer,
    PlayerConfigError,
)
from privateshared.agents.model_registry import RegistryError, read_registry
from privateshared.agents.registry import (
    HUMAN,
    PROGRAMMATIC_ANSWERERS,
)
from privateshared.agents.replay import ReplayError
from privateshared.bench.cast import (
    DEFAULT_MAX_SLOTS,
    DEFAULT_MODELS,
    Cast,
    CastError,
    Role,
    cast_players,
    player,
)
from privateshared.bench.evaluate import Evaluation, ResultsError, collect, evaluate
from privateshared.bench.layout import DEFAULT_RESULTS_DIR, episode_dir, pair_name
from privateshared.bench.local_model import LocalModelError, LocalServer, is_local_model, locate
from privateshared.bench.play import choose_instance, outcome, play_in_terminal, save_game
from privateshared.bench.progress import ProgressBar
from privateshared.bench.ray_runner import RayError, connect, play_on_ray
from privateshared.bench.record_files import RecordsError
from privateshared.bench.replay import (
    ReplayOutcome,
    describe_outcome,
    find_recorded_episodes,
    replay_episode,
    summarise,
)
from privateshared.bench.rescore import rescore
from privateshared.bench.results import format_table, write_results
from privateshared.bench.run import (
    Episode,
    Finished,
    Playable,
    is_done,
    plan_episodes,
    record_episode,
    remove_partial_writes,
    run_episodes,
    write_experiment_files,
)
from privateshared.bench.transcripts import INDEX_FILE, TranscriptError, write_transcripts
from privateshared.bench.workers import (
    OnFinished,
    WorkerError,
    default_workers,
    play_in_workers,
)
from privateshared.domains.clembench_texts import REPROMPTS_FILE, ResourcesError
from privateshared.domains.instances import (
    DEFAULT_PER_DOMAIN,
    DEFAULT_SEED,
    InstancesError,
    default_instances_path,
    generate_instances,
    generate_two_listener_instances,
    playable_instances,
    read_instances,
    two_listener_instances_path,
)
from privateshared.domains.loader import DomainError, load_domains
from privateshared.graph.context import GameContext
from privateshared.graph.recorder import SCORES_FILE, write_text


class UsageError(ValueError):
    """Bad command-line input; the message is one line with the fix."""


PLAYER_FAILURES = (openai.APIError, httpx.HTTPError, ReplayError, TimeoutError, ConnectionError)


def _model_options(command: argparse.ArgumentParser) -> None:
    """Where and how the models of a command are called."""
    command.add_argument(
        "--models", type=Path, dest="registry_file", metavar="FILE",
        help="model registry (JSON or YAML): per model its id, endpoint, key variable and "
        "settings; --model, --questioner and --judge then name its entries",
    )  # fmt: skip
    command.add_argument(
        "--base-url", help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1"
    )
    command.add_argument(
        "--api-key-env",
        default="OPENAI_API_KEY",
        metavar="VAR",
        help="environment variable holding the API key (default: OPENAI_API_KEY)",
    )
    command.add_argument("--temperature", type=float, default=0.0)
    command.add_argument("--timeout", type=float, default=60.0, help="seconds per model call")
    command.add_argument(
        "--max-retries",
        type=int,
        default=3,
        help="retries of a failed model call, with backoff (default: 3)",
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="privateshared",
        description="Scorekeeping benchmark: does a chat model know what is private and what is "
        "shared in a conversation?",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser("run", help="play every instance with the given models")
    run.add_argument(
        "--model", action="append", dest="models", metavar="NAME",
        help=f"answerer: {', '.join(PROGRAMMATIC_ANSWERERS)}, mock:SEED, smollm2 (SmolLM2-135M "
        "run here by llama.cpp), local:PATH.gguf, or a model served at --base-url "
        f"(repeatable; default: {' '.join(DEFAULT_MODELS)}, SmolLM2 on the 5-slot "
        "experiments only)",
    )  # fmt: skip
    run.add_argument(
        "--questioner", default="programmatic", metavar="NAME",
        help="who asks: programmatic (default), or a model (any name --model takes except the "
        "programmatic answerers), which plays through function calls",
    )  # fmt: skip
    run.add_argument(
        "--judge", metavar="NAME",
        help="a model that rates every question of the questioner from 1 to 5 (off by default)",
    )  # fmt: skip
    _model_options(run)
    run.add_argument(
        "--concurrency", type=int, default=8, help="episodes played at once (default: 8)"
    )
    run.add_argument(
        "--workers", type=int, metavar="N",
        help="worker processes playing the episodes (default: one per core, here "
        f"{default_workers()}; one when a model runs on this machine, whose server needs the "
        "cores)",
    )  # fmt: skip
    run.add_argument(
        "--max-concurrent-calls",
        type=int,
        metavar="N",
        help="at most N calls under way per model (default: no limit)",
    )
    run.add_argument(
        "--rerun",
        action="store_true",
        help="play episodes again even when their records are complete",
    )
    run.add_argument("--instances", type=Path, help="instances file (default: the shipped one)")
    run.add_argument(
        "--resources",
        type=Path,
        help="clembench's privateshared/resources/texts, for clembench instances",
    )
    run.add_argument(
        "--experiment",
        action="append",
        dest="experiments",
        metavar="NAME",
        help="play only this experiment (repeatable)",
    )
    run.add_argument("--results-dir", type=Path, default=DEFAULT_RESULTS_DIR)
    run.add_argument(
        "--ray", metavar="ADDRESS",
        help="spread the episodes over a Ray cluster: auto (the cluster this machine joined) or "
        "its address, e.g. ray://head:10001 (needs the ray extra)",
    )  # fmt: skip
    run.add_argument(
        "--sequential-probes",
        action="store_true",
        help="probe one slot at a time and stop at the first failure, as clembench",
    )

    play = commands.add_parser(
        "play", help="play one episode yourself in the terminal, as answerer or questioner"
    )
    play.add_argument("--as", dest="seat", choices=("answerer", "questioner"), required=True)
    play.add_argument("--experiment", metavar="NAME", help="an experiment (default: any)")
    play.add_argument("--game-id", type=int, metavar="N", help="a game id (default: any)")
    play.add_argument("--name", default=HUMAN, help="your name in the records (default: human)")
    play.add_argument(
        "--questioner", default="programmatic", metavar="NAME",
        help="with --as answerer: who asks, programmatic (default) or a model at --base-url",
    )  # fmt: skip
    play.add_argument(
        "--model", default="oracle", metavar="NAME",
        help="with --as questioner: who answers, oracle (default), one-listener, mock, or a "
        "model at --base-url",
    )  # fmt: skip
    _model_options(play)
    play.add_argument("--results-dir", type=Path, default=DEFAULT_RESULTS_DIR)

    score = commands.add_parser("score", help="re-score a results folder from its interactions")
    score.add_argument("results_dir", nargs="?", type=Path, default=DEFAULT_RESULTS_DIR)

    evaluation = commands.add_parser(
        "eval", help="aggregate a results folder: tables (md, csv, json), clembench's csv, plot"
    )
    evaluation.add_argument("results_dir", nargs="?", type=Path, default=DEFAULT_RESULTS_DIR)

    transcribe = commands.add_parser(
        "transcribe", help="write transcript.html per episode and an index.html"
    )
    transcribe.add_argument("results_dir", nargs="?", type=Path, default=DEFAULT_RESULTS_DIR)

    replay = commands.add_parser(
        "replay", help="replay clembench records (either layout) and compare scores and prompts"
    )
    replay.add_argument("source", type=Path, help="a clembench results folder")
    replay.add_argument(
        "--instances",
        type=Path,
        required=True,
        help="the instances file the records were played on",
    )
    replay.add_argument("--results-dir", type=Path, required=True)
    replay.add_argument(
        "--resources",
        type=Path,
        help="clembench's privateshared/resources/texts: plays the recorded instances with "
        "clembench's own texts and compares every answerer message with requests.json",
    )

    instances = commands.add_parser("instances", help="generate an instances file")
    instances.add_argument("--seed", type=int, default=DEFAULT_SEED)
    instances.add_argument("--per-domain", type=int, default=DEFAULT_PER_DOMAIN)
    instances.add_argument("--domains", type=Path, help="folder of domains (default: shipped)")
    instances.add_argument("--out", default="-", help="output file (default: - for stdout)")
    instances.add_argument(
        "--two-listeners", action="store_true",
        help="the two-listener experiments (late joiner, handover) of every domain with a "
        "second listener, as in domains/instances_two_listeners.json",
    )  # fmt: skip

    domains = commands.add_parser("domains", help="work with domain folders")
    domain_commands = domains.add_subparsers(
        dest="domains_command", required=True, metavar="ACTION"
    )
    check = domain_commands.add_parser("check", help="validate a domain folder or a folder of them")
    check.add_argument("path", type=Path)
    return parser


def _writable(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".write-check-"):
            pass
    except OSError as error:
        raise UsageError(
            f"cannot write to {folder} ({error.strerror}); pass a writable --results-dir"
        ) from None


def _playable(args: argparse.Namespace) -> Playable:
    """The experiments to play: every one of --instances (default: the classic benchmark), or
    those named by --experiment, which may also name the shipped two-listener experiments."""
    path = args.instances or default_instances_path()
    file = read_instances(path)
    playable = playable_instances(file, load_domains(), args.resources, source=str(path))
    if args.experiments and args.instances is None:
        extra = two_listener_instances_path()
        playable += playable_instances(read_instances(extra), load_domains(), source=str(extra))
    if args.experiments:
        known = {experiment.name for _, experiment, _ in playable}
        unknown = sorted(set(args.experiments) - known)
        if unknown:
            raise UsageError(
                f"unknown experiment {unknown[0]!r} in {path}; "
                f"choose from {', '.join(sorted(known))}"
            )
        playable = [item for item in playable if item[1].name in args.experiments]
    return playable


def _run(args: argparse.Namespace) -> int:
    if min(args.concurrency, args.workers or 1, args.max_concurrent_calls or 1) < 1:
        raise UsageError("--concurrency, --workers and --max-concurrent-calls must be at least 1")
    playable = _playable(args)
    names = [
        *(args.models or DEFAULT_MODELS),
        args.questioner,
        *([args.judge] if args.judge else []),
    ]
    local = {
        name: locate(name) for name in names if is_local_model(name) and name not in args.registry
    }
    cast_players(args, {})  # every other name is checked before a server starts
    _writable(args.results_dir)
    with contextlib.ExitStack() as stack:
        servers = {
            name: stack.enter_context(
                LocalServer(model, args.results_dir / "logs" / f"llama-server-{model.alias}.log")
            )
            for name, model in local.items()
        }
        cast = cast_players(args, servers)
        assert cast is not None  # every local model has its server now
        # A model served here (llama.cpp) answers one call at a time and needs the cores:
        # more processes feeding it only take CPU from it.
        workers = args.workers or (1 if servers else default_workers())
        finished = _play(args, playable, cast, workers)
    _report(args.results_dir)
    errors = Counter(result.error.kind for result in finished if result.error is not None)
    if errors:
        kinds = ", ".join(f"{kind} x{count}" for kind, count in errors.most_common())
        print(
            f"privateshared: {errors.total()} episodes errored, their model calls failing after "
            f"every retry ({kinds}; see error.json in their folders); run the same command "
            "again to play them",
            file=sys.stderr,
        )
        return 1
    return 0


def _play(args: argparse.Namespace, playable: Playable, cast: Cast, workers: int) -> list[Finished]:
    """Check the endpoints, then play every pending episode with a progress bar, in worker
    processes when there are cores for them."""
    models = cast.models()
    for model in models:
        model.check()  # one call per model, before any episode starts
    # A cap on calls per model holds across workers: each gets its share of it.
    workers = max(1, min([workers, args.concurrency, *cast.caps(args.max_concurrent_calls)]))
    cast = cast.throttled(args.max_concurrent_calls, shares=workers)
    default_run = args.models is None  # see DEFAULT_MAX_SLOTS
    planned = plan_episodes(
        cast.answerers, cast.questioner, playable, args.results_dir,
        max_slots=DEFAULT_MAX_SLOTS if default_run else None,
    )  # fmt: skip
    pending = [episode for episode in planned if args.rerun or not is_done(episode.folder)]
    if len(pending) < len(planned):
        print(f"{len(planned) - len(pending)} of {len(planned)} episodes are already done; "
              "playing the rest (--rerun plays them all again)")  # fmt: skip
    remove_partial_writes(args.results_dir)
    write_experiment_files(pending, cast.questioner, args.results_dir, cast.judge)
    workers = min(workers, max(len(pending), 1))
    concurrency = -(-args.concurrency // workers)

    def play(episodes: Sequence[Episode], on_finished: OnFinished) -> list[Finished]:
        async def play_and_close() -> list[Finished]:
            try:
                return await run_episodes(
                    episodes, cast.questioner, args.results_dir, concurrency=concurrency,
                    sequential_probes=args.sequential_probes, judge=cast.judge,
                    on_finished=on_finished,
                )  # fmt: skip
            finally:
                for model in models:
                    await model.aclose()

        return asyncio.run(play_and_close())

    progress = ProgressBar(len(pending))
    try:
        if args.ray is not None:
            return play_on_ray(
                connect(args.ray), pending, cast, args.max_concurrent_calls,
                args.sequential_probes, args.concurrency,
                lambda episode, state: record_episode(episode, state, GameContext(
                    answerer=episode.answerer, questioner=cast.questioner, judge=cast.judge,
                ), args.results_dir),
                progress,
            )  # fmt: skip
        if workers == 1:
            return play(pending, progress)
        return play_in_workers(pending, play, workers, on_finished=progress)
    finally:
        progress.close()


def _report(results_dir: Path) -> None:
    """Evaluate the results folder, write its tables, plot and transcripts, print the table."""
    _evaluate(results_dir)
    _report_unreadable(write_transcripts(results_dir, stale_only=True).unreadable)
    print(f"transcripts: open {results_dir / INDEX_FILE}")


def _evaluate(results_dir: Path) -> Evaluation:
    if not results_dir.is_dir():
        raise UsageError(f"{results_dir}: not a folder; pass a results folder such as records/")
    evaluation = evaluate(collect(results_dir))
    written = write_results(results_dir, evaluation)
    print(format_table(evaluation))
    print(f"\nresults: {', '.join(path.name for path in written)} in {results_dir}/")
    return evaluation


def _eval(args: argparse.Namespace) -> int:
    _evaluate(args.results_dir)
    return 0


def _transcribe(args: argparse.Namespace) -> int:
    if not args.results_dir.is_dir():
        raise UsageError(f"{args.results_dir}: not a folder; pass a results folder")
    transcribed = write_transcripts(args.results_dir)
    pages = len(transcribed.written) - 1
    print(f"wrote {pages} transcripts; open {args.results_dir / INDEX_FILE}")
    return _report_unreadable(transcribed.unreadable)


def _report_unreadable(lines: Sequence[str]) -> int:
    """One line per record file that could not be read; the exit status says whether any."""
    for line in lines:
        print(f"privateshared: skipped: {line}", file=sys.stderr)
    return 1 if lines else 0


def _score(args: argparse.Namespace) -> int:
    rescored = rescore(args.results_dir)
    print(f"re-scored {len(rescored.episodes)} episodes under {args.results_dir}")
    return _report_unreadable(rescored.unreadable)


def _replay(args: argparse.Namespace) -> int:
    instances = read_instances(args.instances)
    if not args.source.is_dir():
        raise UsageError(f"{args.source}: not a folder; pass a clembench results folder")
    if args.resources is not None and not (args.resources / REPROMPTS_FILE).is_file():
        raise UsageError(
            f"{args.resources}: no {REPROMPTS_FILE} here; pass clembench's "
            "privateshared/resources/texts folder as --resources"
        )
    episodes = find_recorded_episodes(args.source)
    if not episodes:
        raise UsageError(f"{args.source}: no privateshared episodes with an interactions.json")
    _writable(args.results_dir)

    async def replay_all() -> list[ReplayOutcome]:
        outcomes = []
        for episode in episodes:
            outcome = await replay_episode(episode, instances, args.results_dir, args.resources)
            print("\n".join(describe_outcome(outcome)))
            outcomes.append(outcome)
        return outcomes

    outcomes = asyncio.run(replay_all())
    print(f"\n{summarise(outcomes, args.resources)}; records in {args.results_dir}/")
    return 0 if all(o.verdict in ("reproduced", "unreferenced") for o in outcomes) else 1


def _instances(args: argparse.Namespace) -> int:
    if args.per_domain < 1:
        raise UsageError("--per-domain must be at least 1")
    domains = load_domains(args.domains)
    generate = generate_two_listener_instances if args.two_listeners else generate_instances
    text = generate(list(domains.values()), args.seed, args.per_domain).to_json()
    if args.out == "-":
        sys.stdout.write(text)
    else:
        write_text(Path(args.out), text)
        print(f"wrote {args.per_domain} instances per domain to {args.out}", file=sys.stderr)
    return 0


def _play_yourself(args: argparse.Namespace) -> int:
    """One episode with a person in a seat (bench/play.py), saved like any run's."""
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
            _playable_everything(), args.experiment, args.game_id,
            lambda i, name, game: (episode_dir(args.results_dir, pair, i, name, game)
                                   / SCORES_FILE).is_file(),
            random.Random(),
        )  # fmt: skip
    except ValueError as error:
        raise UsageError(str(error)) from None
    _writable(args.results_dir)
    context = GameContext(answerer=answerer, questioner=questioner)
    if isinstance(partner, ChatModelPlayer):
        partner.check()  # one call, before the person starts
    try:
        state = play_in_terminal(instance, context, args.seat, input, print)
    except (KeyboardInterrupt, EOFError):
        print("\nprivateshared: stopped; this episode was not saved, and the next `play` starts "
              "a new one", file=sys.stderr)  # fmt: skip
        return 130
    folder = episode_dir(args.results_dir, pair, index, spec.name, instance.game_id)
    replaced = (folder / SCORES_FILE).is_file()
    save_game(args.results_dir, folder, spec, state, context)
    print(f"\n{outcome(state)}")
    print(f"records: {folder}{' (replacing your earlier game)' if replaced else ''}")
    _report(args.results_dir)
    return 0


def _playable_everything() -> Playable:
    """Every shipped experiment, classic and two-listener."""
    playable = []
    for path in (default_instances_path(), two_listener_instances_path()):
        playable += playable_instances(read_instances(path), load_domains(), source=str(path))
    return playable


def _domains_check(args: argparse.Namespace) -> int:
    domains = load_domains(args.path)
    for name, domain in domains.items():
        slots = domain.slots.items()
        counts = ", ".join(f"{slot} ({len(spec.values)} values)" for slot, spec in slots)
        print(f"{name}: ok; slots {counts}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    args = _parser().parse_args(argv)
    args.registry = {}
    handlers = {
        "run": _run, "score": _score, "eval": _eval, "transcribe": _transcribe,
        "replay": _replay, "instances": _instances, "domains": _domains_check,
        "play": _play_yourself,
    }  # fmt: skip
    try:
        if getattr(args, "registry_file", None) is not None:
            args.registry = read_registry(args.registry_file)
        return handlers[args.command](args)
    except (
        UsageError, DomainError, InstancesError, PlayerConfigError, RecordsError, ResultsError,
        TranscriptError, LocalModelError, CastError, ResourcesError, WorkerError, RegistryError,
        RayError,
    ) as error:  # fmt: skip
        print(f"privateshared: error: {error}", file=sys.stderr)
        return 2
    except PLAYER_FAILURES as error:
        print(
            f"privateshared: error: a player failed after its retries ({type(error).__name__}: "
            f"{error}); finished episodes are kept, check the endpoint and run again",
            file=sys.stderr,
        )
        return 1
    except OSError as error:  # a folder that cannot be written, a disk that is full
        where = error.filename or "a file"
        print(f"privateshared: error: cannot write {where} ({error.strerror}); "
              "check the folder's permissions and free space", file=sys.stderr)  # fmt: skip
        return 2
    except KeyboardInterrupt:
        print("privateshared: interrupted; finished episodes are kept", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
