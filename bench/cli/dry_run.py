"""`privateshared run --dry-run`: the plan of a run and what it is expected to use and cost.

The players are made as the run makes them (a local model's server is named, not started), the
episodes planned and those already done left out, and each instance played by stand-ins that
call nothing (bench/running/budget.py) to estimate what every model would be sent and would
say. No model is called and no file is written.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from collections.abc import Iterator, Mapping
from pathlib import Path

from privateshared.bench.cli.usage import UsageError
from privateshared.bench.reporting.cells import aligned
from privateshared.bench.running.budget import (
    CHARS_PER_TOKEN,
    Estimate,
    budgeted_run,
    instance_estimates,
    is_budgeted,
    plan_estimate,
)
from privateshared.bench.running.cast import DEFAULT_MAX_SLOTS, cast_players
from privateshared.bench.running.local_model import LocalModel, LocalServer
from privateshared.bench.running.plan import Playable, is_done, plan_episodes

ESTIMATE_NOTE = (
    f"an estimate, not a bill: the instances played by stand-ins that call nothing, about "
    f"{CHARS_PER_TOKEN:.0f} characters a token, every reply kept to the format at its first try "
    "(re-prompts cost more, aborts less); a completion cap in a model's settings "
    "(max_completion_tokens, max_tokens) counts in full"
)
NO_PRICE_NOTE = "; cost n/a: no price in the registry"


class KeysNotNeeded(Mapping[str, str]):
    """The environment, with a stand-in for every key that is not set: a plan calls no model,
    so a lab can price a run before it has the keys."""

    STAND_IN = "not-needed-for-a-dry-run"

    def __getitem__(self, name: str) -> str:
        return os.environ.get(name, self.STAND_IN)

    def __iter__(self) -> Iterator[str]:
        return iter(os.environ)

    def __len__(self) -> int:
        return len(os.environ)


def plan_table(estimates: Mapping[str, Estimate]) -> list[str]:
    """The plan's table: per model its episodes, calls, tokens and cost, and the total cost
    where every model has a price."""
    header = ["model", "episodes", "calls", "prompt tokens", "completion tokens", "cost (USD)"]
    rows = [
        [model, str(one.episodes), f"{one.calls:,}", f"{one.prompt_tokens:,}",
         f"{one.completion_tokens:,}",
         "n/a" if one.cost_usd is None else f"{one.cost_usd:.4f}"]
        for model, one in estimates.items()
    ]  # fmt: skip
    costs = [one.cost_usd for one in estimates.values()]
    if len(costs) > 1 and None not in costs:
        rows.append(["total", "", "", "", "", f"{sum(c or 0.0 for c in costs):.4f}"])
    return aligned(header, rows)


def dry_run(
    args: argparse.Namespace, experiments: Playable, local: Mapping[str, LocalModel]
) -> int:
    """Print the plan of the run the command line names, and stop."""
    # Named, never started: a local model plays under its alias, at a server it does not need.
    servers = {name: LocalServer(model, Path(os.devnull)) for name, model in local.items()}
    cast = cast_players(args, servers, KeysNotNeeded())
    assert cast is not None  # every local model has its (unstarted) server
    planned = plan_episodes(
        cast.answerers, cast.questioner, experiments, args.results_dir,
        max_slots=DEFAULT_MAX_SLOTS if args.models is None else None,
    )  # fmt: skip
    pending = [episode for episode in planned if args.rerun or not is_done(episode.folder)]
    judged = cast.judge is not None
    estimates = asyncio.run(instance_estimates(planned, judged))
    by_model = plan_estimate(pending, cast.questioner, cast.judge, estimates)
    names = sorted({episode.experiment.name for episode in pending})
    print("dry run: no model is called, no file is written")
    print(
        f"plan: {len(pending)} episodes to play of {len(planned)} "
        f"({len(planned) - len(pending)} already done), {len(names)} experiment"
        f"{'' if len(names) == 1 else 's'}"
    )
    if by_model:
        print()
        print("\n".join(plan_table(by_model)))
        unpriced = any(one.cost_usd is None for one in by_model.values())
        print(f"\n{ESTIMATE_NOTE}{NO_PRICE_NOTE if unpriced else ''}")
    else:
        print("no model plays: no call is billed")
    if is_budgeted(args.budget, [*cast.answerers, cast.questioner, cast.judge]) and pending:
        try:
            budgeted = budgeted_run(args.budget, planned, pending, cast.questioner, cast.judge,
                                    estimates)  # fmt: skip
        except ValueError as error:
            raise UsageError(str(error)) from None
        started = 0
        for episode in pending:  # one at a time, each costing its estimate
            if not budgeted.admit(episode):
                break
            budgeted.budget.finish(episode.folder, budgeted.estimate(episode))
            started += 1
        spent = sum(budgeted.budget.spent_before.values())
        print(
            f"budget: about {started} of the {len(pending)} episodes fit (played one at a time "
            f"at their estimates, in the plan's order; already spent on done episodes: "
            f"{spent:.4f} USD)"
        )
    return 0
