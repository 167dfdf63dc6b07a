"""Start-up: `--help`, `--version` and bad arguments answer without importing the stack.

Each case runs `main` in a fresh interpreter, as the console script does, and lists what it
imported beyond what the interpreter had loaded before: only the standard library and our own
light modules may appear. Importing LangGraph, the openai SDK, numpy and pydantic takes over a
second, which `privateshared --help` should not wait for. How long start-up takes is measured by
`python scripts/startup.py`, not here: a test with a wall-clock limit fails on a busy machine.
"""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
from importlib.metadata import version

import pytest

from privateshared.bench.cli import COMMANDS
from privateshared.bench.cli.parser import build_parser

HEAVY = (
    "langgraph", "langchain_core", "langchain", "langchain_openai", "openai", "httpx", "aiohttp",
    "numpy", "pydantic", "yaml", "tqdm", "ray",
    "privateshared.graph.builder", "privateshared.agents.registry", "privateshared.agents.llm",
    "privateshared.bench.running.benchmark", "privateshared.bench.reporting.evaluate",
    "privateshared.domains.instances",
)  # fmt: skip
"""Modules the help path must not import, named so that a failure says which one came in."""

PROBE = """
import contextlib, io, json, sys
before = set(sys.modules)
from privateshared.bench.cli import main
out, err = io.StringIO(), io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    try:
        code = main(json.loads(sys.argv[1]))
    except SystemExit as stop:  # argparse exits after help, a version or a bad argument
        code = stop.code
heavy = json.loads(sys.argv[2])
print(json.dumps({
    "code": code, "out": out.getvalue(), "err": err.getvalue(),
    "new": sorted(set(sys.modules) - before),
    "heavy": [name for name in heavy if name in sys.modules],
}))
"""


def run_main(argv: list[str]) -> dict[str, object]:
    """`main(argv)` in a fresh interpreter: its exit code, output and the modules it imported."""
    shown = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argv), json.dumps(HEAVY)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    outcome: dict[str, object] = json.loads(shown.stdout)
    return outcome


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        pytest.param(["--help"], 0, id="help"),
        # Shows default_workers() and the default models.
        pytest.param(["run", "--help"], 0, id="run-help"),
        pytest.param(["eval", "--help"], 0, id="eval-help"),  # the default resamples
        pytest.param(["instances", "--help"], 0, id="instances-help"),  # the default seed
        pytest.param(["domains", "check", "--help"], 0, id="domains-check-help"),  # nested
        pytest.param(["--version"], 0, id="version"),
        pytest.param(["run", "--concurrency", "x"], 2, id="bad-value"),  # argparse's check
        pytest.param(["bogus"], 2, id="unknown-command"),
        pytest.param([], 2, id="no-command"),
    ],
)
def test_help_version_and_bad_arguments_import_nothing_heavy(argv: list[str], code: int) -> None:
    outcome = run_main(argv)
    assert outcome["code"] == code, outcome["err"]
    assert outcome["heavy"] == []
    new = outcome["new"]
    assert isinstance(new, list)
    # lazy_loader is what keeps the packages' names from importing their modules (0.4 ms).
    third_party = sorted(
        {name.partition(".")[0] for name in new}
        - set(sys.stdlib_module_names)
        - {"privateshared", "lazy_loader"}
    )
    assert third_party == []


def test_version_is_the_installed_distributions() -> None:
    outcome = run_main(["--version"])
    assert outcome["out"] == f"privateshared {version('privateshared')}\n"


def test_every_command_has_a_handler() -> None:
    """Commands are imported only when they run, so a parser command without a handler would
    pass every help test and fail only when used."""
    [commands] = [
        action
        for action in build_parser()._actions
        if isinstance(action, argparse._SubParsersAction)
    ]
    assert set(commands.choices) == set(COMMANDS)
    for name, (module, function) in COMMANDS.items():
        handler = getattr(importlib.import_module(f"privateshared.bench.cli.{module}"), function)
        assert callable(handler), name


@pytest.mark.parametrize("package", ["privateshared.agents", "privateshared.bench"])
def test_lazy_packages_give_every_public_name(package: str) -> None:
    """A package that imports its names on first use still gives each one in `__all__`, the same
    object its module defines."""
    module = importlib.import_module(package)
    for name in module.__all__:
        value = getattr(module, name)
        home = getattr(value, "__module__", "")  # a type alias (RequestKind) has typing's
        if home.startswith(f"{package}."):
            assert getattr(importlib.import_module(home), name) is value, name
    assert set(module.__all__) <= set(dir(module))
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = module.no_such_name
