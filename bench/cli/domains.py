"""`privateshared instances` and `privateshared domains check`: the benchmark's data."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from privateshared.bench.cli.usage import UsageError
from privateshared.domains.instances import generate_instances, generate_two_listener_instances
from privateshared.domains.loader import load_domains
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
    domains = load_domains(args.path)
    for name, domain in domains.items():
        slots = domain.slots.items()
        counts = ", ".join(f"{slot} ({len(spec.values)} values)" for slot, spec in slots)
        print(f"{name}: ok; slots {counts}")
    return 0
