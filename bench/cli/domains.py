"""`privateshared instances` and `privateshared domains check`: the benchmark's data."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from privateshared.bench.cli.usage import UsageError
from privateshared.domains.instances import generate_instances, generate_two_listener_instances
from privateshared.domains.loader import check_domains, load_domains
from privateshared.graph.files import write_text


def instances_command(args: argparse.Namespace) -> int:
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


def check_command(args: argparse.Namespace) -> int:
    """Check every domain folder under the path and print every problem, one line each.

    Unlike the other commands, which stop at the first bad input, this one keeps going: a
    person fixing a domain wants the whole list at once (exit 2 if it is not empty).
    """
    checks = check_domains(args.path)
    for check in checks:
        for problem in check.problems:
            print(f"privateshared: error: {problem}", file=sys.stderr)
        if check.domain is not None:
            slots = check.domain.slots.items()
            counts = ", ".join(f"{slot} ({len(spec.values)} values)" for slot, spec in slots)
            # flushed so that, piped, each folder's verdict stays in order with the problems
            print(f"{check.domain.name}: ok; slots {counts}", flush=True)
    bad = sum(1 for check in checks if check.problems)
    if not bad:
        return 0
    total = sum(len(check.problems) for check in checks)
    domains = "domain" if len(checks) == 1 else "domains"
    have = "has" if bad == 1 else "have"
    print(
        f"privateshared: error: {bad} of {len(checks)} {domains} {have} problems "
        f"({total} in all); fix them and check again",
        file=sys.stderr,
    )
    return 2
