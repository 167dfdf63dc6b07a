"""Shared test fixtures: instances, contexts and paths."""

from __future__ import annotations

import signal
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
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests talk only to servers they start on 127.0.0.1, which httpx would send through a
    proxy set in the environment; and no test may reach a real OpenAI endpoint."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                 "all_proxy", "OPENAI_BASE_URL"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)


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
