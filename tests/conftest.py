"""Shared test fixtures: instances, contexts and paths; and the switch that forbids skips.

Tests that need what a clone may lack (../shared with clembench's records and texts, a browser,
a local model, an extra) skip where it is missing, so that `make test` passes on any machine.
CI must not pass that way: with the environment variable `PRIVATESHARED_NO_SKIP=1` (.ci/run sets
it) every skip is reported as a failure naming its reason, whether it came from a `skipif` mark,
a `pytest.skip()` call in a test or fixture, or `pytest.importorskip`. A module that skips as a
whole (`importorskip` or `pytest.skip(..., allow_module_level=True)` at its top) fails its
collection, which stops the run as any collection error does. Expected failures (`xfail`) are
not skips and stay as they are.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Generator
from pathlib import Path

import pytest

from privateshared.domains.instances import GameInstance

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
SHARED_RECORDS = SHARED / "clembench-records" / "v2.0"
"""Real clembench 2.0 records in the classic format, with the instances file they played."""
SHARED_NEWER_RECORDS = SHARED / "clembench-records" / "v2.0-newformat"
"""Real clembench 2.0 records in the newer format (a `meta` block, named players, labels)."""
SHARED_RESOURCES = SHARED / "clembench-resources" / "texts"
"""clembench's texts for its privateshared instances (MIT), to play them as clembench does."""


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests talk only to servers they start on 127.0.0.1, which httpx would send through a
    proxy set in the environment; and no test may reach a real OpenAI endpoint."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                 "all_proxy", "OPENAI_BASE_URL"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    # A developer's own domain folders must not reach the tests' runs.
    monkeypatch.delenv("PRIVATESHARED_DOMAINS", raising=False)


@pytest.fixture
def instance() -> GameInstance:
    """A small travel instance with fixed texts: 3 slots, asked in the order to, by, from."""
    slots = {"from": "Lisbon", "to": "Budapest", "by": "Night train"}
    return GameInstance(
        experiment="travel-booking",
        game_id=7,
        tag="TRAVEL-AGENT",
        initial_prompt="You want to travel.\nFROM: Lisbon\nTO: Budapest\nBY: Night train",
        slots=slots,
        request_order=("to", "by", "from"),
        requests={"from": "Where from?", "to": "Where to?", "by": "How?"},
        probes=tuple(
            {slot: f"Does the agent know {slot} (round {k})?" for slot in order}
            for k, order in enumerate(
                [
                    ("from", "to", "by"),
                    ("by", "from", "to"),
                    ("to", "by", "from"),
                    ("from", "by", "to"),
                ]
            )
        ),
    )


def hear_ctrl_c() -> None:
    """In a run a test starts (preexec_fn): take Ctrl-C as from a terminal, also when the tests
    themselves run in the background of a shell, which starts them ignoring it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


NO_SKIP = "PRIVATESHARED_NO_SKIP"
"""Set to 1, every skip fails (see the module's docstring)."""


def _forbidden_skip(report: pytest.TestReport | pytest.CollectReport) -> bool:
    """Whether `report` is a skip that the environment forbids. An xfail is reported as
    skipped too, and is no skip."""
    return os.environ.get(NO_SKIP) == "1" and report.skipped and not hasattr(report, "wasxfail")


def _fail_the_skip(report: pytest.TestReport | pytest.CollectReport) -> None:
    """Turn a skip report into a failure that names the skip's reason (first, so that the
    short summary shows it) and where the skip was."""
    # A skip's longrepr is (file, line, "Skipped: <reason>").
    where, reason = "", str(report.longrepr)
    if isinstance(report.longrepr, tuple):
        path, line, reason = report.longrepr
        where = f" at {path}:{line}"
    report.outcome = "failed"
    report.longrepr = f"{reason} ({NO_SKIP}=1 forbids skips{where})"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Skips of a test: skipif marks and pytest.skip() in the test or in its fixtures."""
    report = yield
    if _forbidden_skip(report):
        _fail_the_skip(report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """Skips of a whole module: importorskip or a module-level pytest.skip()."""
    report = yield
    if _forbidden_skip(report):
        _fail_the_skip(report)
    return report
