"""`privateshared replay`: recorded clembench episodes played again through our game master."""

from __future__ import annotations

import argparse
import asyncio
import shlex
from pathlib import Path

from privateshared.bench.clembench.replay import (
    ReplayOutcome,
    describe_outcome,
    find_recorded_episodes,
    replay_episode,
    replayed_folder,
    summarise,
)
from privateshared.bench.cli.usage import UsageError, check_writable
from privateshared.domains.clembench_texts import REPROMPTS_FILE
from privateshared.domains.instances import read_instances
from privateshared.domains.registry import known_domains


def replay_command(args: argparse.Namespace) -> int:
    instances = read_instances(args.instances)
    if not args.source.is_dir():
        raise UsageError(f"{args.source}: not a folder; pass a clembench results folder")
    if args.resources is not None and not (args.resources / REPROMPTS_FILE).is_file():
        raise UsageError(
            f"{args.resources}: no {REPROMPTS_FILE} here; pass clembench's "
            "privateshared/resources/texts folder as --resources"
        )
    # Our own instances files name their domains, whose texts the replayed instances then get;
    # clembench's name none, and need no domain.
    named = any(experiment.domain is not None for experiment in instances.experiments)
    domains = known_domains(args.domains or ()) if named or args.domains else {}
    episodes = find_recorded_episodes(args.source)
    if not episodes:
        raise UsageError(f"{args.source}: no privateshared episodes with an interactions.json")
    # Folders above the pairs are left out of the replay's records (replayed_folder), so two
    # sources of one pair and episode (v1.6/ and v2.0/, say) would write into one folder.
    sources: dict[Path, Path] = {}
    for episode in episodes:
        target = replayed_folder(episode, instances)
        if target in sources:
            raise UsageError(
                f"{sources[target]} and {episode.folder} would both be replayed into "
                f"{args.results_dir / target}; replay each into its own --results-dir"
            )
        sources[target] = episode.folder
    check_writable(args.results_dir)

    async def replay_all() -> list[ReplayOutcome]:
        outcomes = []
        for episode in episodes:
            outcome = await replay_episode(
                episode, instances, args.results_dir, args.resources, domains
            )
            print("\n".join(describe_outcome(outcome)))
            outcomes.append(outcome)
        return outcomes

    outcomes = asyncio.run(replay_all())
    print(f"\n{summarise(outcomes, args.resources)}; records in {args.results_dir}/")
    # They are laid out as a run's, so the usual command tabulates them.
    print(f"tables: privateshared eval {shlex.quote(str(args.results_dir))}")
    return 0 if all(o.verdict in ("reproduced", "unreferenced") for o in outcomes) else 1
