"""`privateshared instances` and `privateshared domains check`: the benchmark's data.

Both read domains through domains/registry.py, which knows every source: the shipped domains,
installed packages', PRIVATESHARED_DOMAINS' and the command line's `--domains DIR`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from privateshared.bench.cli.usage import UsageError
from privateshared.domains.instances import generate_instances, generate_two_listener_instances
from privateshared.domains.loader import check_domains
from privateshared.domains.registry import (
    GIVEN,
    SHIPPED,
    DomainSource,
    KnownCheck,
    check_sources,
    domain_sources,
    domains_under,
    known_domains,
)
from privateshared.domains.schema import Domain
from privateshared.graph.files import write_text


def instances_command(args: argparse.Namespace) -> int:
    if args.per_domain < 1:
        raise UsageError("--per-domain must be at least 1")
    # --domains DIR: DIR's domains only (what the option always meant), each checked beside
    # every known domain, so that the instances can be played with them.
    domains = domains_under(args.domains) if args.domains else known_domains()
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

    Without a path, every known domain is checked; `--domains DIR` adds DIR's, so that a name
    two folders define shows up as a problem naming both. Unlike the other commands, which stop
    at the first bad input, this one keeps going: a person fixing a domain wants the whole list
    at once (exit 2 if it is not empty).
    """
    given = [DomainSource(root=root, origin=GIVEN) for root in args.domains or ()]
    if args.path is None:
        checks = check_sources(domain_sources(args.domains or ()))
    elif given:
        checks = check_sources([DomainSource(root=args.path, origin="PATH"), *given])
    else:  # the folder on its own, and its lines as they always were
        path = DomainSource(root=args.path, origin="PATH")
        checks = [KnownCheck(source=path, check=check) for check in check_domains(args.path)]
    for known in checks:
        for problem in known.problems:
            print(f"privateshared: error: {problem}", file=sys.stderr)
        if known.domain is not None:
            # flushed so that, piped, each folder's verdict stays in order with the problems
            print(_verdict(known, known.domain, listing=args.path is None), flush=True)
    bad = sum(1 for known in checks if known.problems)
    if not bad:
        return 0
    total = sum(len(known.problems) for known in checks)
    domains = "domain" if len(checks) == 1 else "domains"
    have = "has" if bad == 1 else "have"
    print(
        f"privateshared: error: {bad} of {len(checks)} {domains} {have} problems "
        f"({total} in all); fix them and check again",
        file=sys.stderr,
    )
    return 2


def _verdict(known: KnownCheck, domain: Domain, listing: bool) -> str:
    """`name: ok; slots ...`, and where the domain comes from when every known one is listed."""
    counts = ", ".join(f"{slot} ({len(spec.values)} values)" for slot, spec in domain.slots.items())
    line = f"{domain.name}: ok; slots {counts}"
    if listing:
        where = known.source.origin
        line += "; shipped" if where == SHIPPED else f"; {known.check.folder} ({where})"
    return line
