"""The runtime context: players by name or spec, as LangGraph Studio and the server send them."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from privateshared.agents.baselines import MockAnswerer, OracleAnswerer
from privateshared.agents.llm import ChatModelPlayer
from privateshared.graph.builder import graph
from privateshared.graph.context import GameContext


def test_defaults_are_the_classic_game() -> None:
    context = GameContext()
    assert isinstance(context.answerer, OracleAnswerer)
    assert context.questioner.name == "programmatic"
    assert (context.max_tries, context.sequential_probes) == (5, False)


def test_players_by_name_and_by_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert isinstance(GameContext(answerer="mock:4").answerer, MockAnswerer)
    assert GameContext(answerer="mock:4").answerer.name == "mock-s4"
    spec = {"model": "qwen2.5", "base_url": "http://127.0.0.1:9/v1", "temperature": 0.5}
    player = GameContext(answerer=spec).answerer
    assert isinstance(player, ChatModelPlayer)
    assert (player.name, player.temperature, player.spec.base_url) == (
        "qwen2.5", 0.5, "http://127.0.0.1:9/v1",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("context", "expected"),
    [
        ({"answerer": "mock:x"}, "bad answerer 'mock:x'"),
        ({"answerer": {"model": "m", "colour": 1}}, "bad model spec: colour"),
        ({"questioner": "oracle"}, "'oracle' is an answerer"),
        ({"max_tries": 6}, "less than or equal to 5"),
    ],
    ids=["bad-seed", "unknown-spec-key", "oracle-as-questioner", "too-many-tries"],
)
def test_bad_context_is_refused(context: dict[str, object], expected: str) -> None:
    with pytest.raises((ValidationError, ValueError), match=expected):
        GameContext.model_validate(context)


def test_context_schema_describes_players_for_studio() -> None:
    schema = graph.get_context_jsonschema()
    assert schema is not None
    properties = schema["properties"]
    assert {"answerer", "questioner", "max_tries", "sequential_probes"} <= set(properties)
    assert "clock" not in properties  # not something a person can type in
    assert {"type": "string"} in properties["answerer"]["anyOf"]
