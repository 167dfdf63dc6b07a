"""The model registry: two models on two endpoints in one run, each with its own key variable and
settings; a broken registry file gets one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from privateshared.agents.langchain_player import LangChainSpec
from privateshared.agents.llm import ModelSpec
from privateshared.agents.model_registry import RegistryError, read_registry
from privateshared.bench.cli import main
from privateshared.bench.testing.fake_endpoint import FakeOpenAI
from privateshared.bench.testing.fake_players import default_players
from tests.test_user_players import PLAYERS, check_played

ALPHA_KEY, BETA_KEY = "sk-alpha-0123456789", "sk-beta-9876543210"


def registry_text(alpha_url: str, beta_url: str) -> str:
    return f"""\
models:
  - name: alpha
    model: fake-model
    base_url: {alpha_url}
    api_key_env: ALPHA_KEY
    max_concurrent_calls: 2
    extra_body:
      max_tokens: 32
      seed: 7
  - name: beta
    model: fake-model
    base_url: {beta_url}
    api_key_env: BETA_KEY
    timeout: 20
"""


def test_two_models_on_two_endpoints_in_one_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ALPHA_KEY", ALPHA_KEY)
    monkeypatch.setenv("BETA_KEY", BETA_KEY)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    results = tmp_path / "records"
    # A little latency per call, so that calls overlap as they would on a real endpoint.
    with (
        FakeOpenAI(default_players(), delay=0.02) as alpha,
        FakeOpenAI(default_players(), delay=0.02) as beta,
    ):
        registry = tmp_path / "models.yaml"
        registry.write_text(registry_text(alpha.base_url, beta.base_url))
        code = main(["run", "--models", str(registry), "--model", "alpha", "--model", "beta",
                     "--experiment", "travel-booking", "--workers", "1",
                     "--results-dir", str(results)])  # fmt: skip
        assert code == 0, capsys.readouterr().err
        # Each model's calls went to its own endpoint, with its own key and settings.
        assert alpha.requests and beta.requests
        for request in alpha.requests:
            assert request["headers"]["authorization"] == f"Bearer {ALPHA_KEY}"
            assert request["body"]["max_tokens"] == 32 and request["body"]["seed"] == 7
        for request in beta.requests:
            assert request["headers"]["authorization"] == f"Bearer {BETA_KEY}"
            assert "max_tokens" not in request["body"]
        assert alpha.max_in_flight == 2  # its cap, across the whole run
        assert beta.max_in_flight > 2  # uncapped: probes go out together
    for name, url in (("alpha", alpha.base_url), ("beta", beta.base_url)):
        folder = results / f"{name}-t0.0--{name}-t0.0" / "privateshared" / "0_travel-booking"
        settings = json.loads((folder / "experiment.json").read_text())["settings"]["answerer"]
        assert settings["name"] == name and settings["model"] == "fake-model"
        assert settings["base_url"] == url
        assert settings["api_key_env"] == f"{name.upper()}_KEY"
        scores = json.loads((folder / "episode_0" / "scores.json").read_text())
        assert scores["episode scores"]["Main Score"] == 100
    alpha_settings = json.loads(
        (results / "alpha-t0.0--alpha-t0.0/privateshared/0_travel-booking/experiment.json")
        .read_text()
    )["settings"]["answerer"]  # fmt: skip
    assert alpha_settings["extra_body"] == {"max_tokens": 32, "seed": 7}
    assert alpha_settings["max_concurrent_calls"] == 2
    # No key anywhere in what the run wrote.
    for path in results.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            assert ALPHA_KEY not in text and BETA_KEY not in text, path


def test_an_entry_with_a_provider_is_a_langchain_model(tmp_path: Path) -> None:
    """`provider:` makes an entry LangChain's (built by init_chat_model when played, see
    tests/test_langchain_player.py); without it, the same fields are the fast path's."""
    registry = tmp_path / "models.yaml"
    registry.write_text(
        "models:\n"
        "  - {name: claude, provider: anthropic, model: claude-sonnet-4-5, max_retries: 5,\n"
        "     parameters: {max_tokens: 256}}\n"
        "  - {name: local, provider: ollama, model: 'llama3.1:8b'}\n"
        "  - {name: fast, model: gpt-4o}\n"
    )
    entries = read_registry(registry)
    claude, local, fast = entries["claude"], entries["local"], entries["fast"]
    assert isinstance(claude, LangChainSpec) and isinstance(local, LangChainSpec)
    assert (claude.provider, claude.model) == ("anthropic", "claude-sonnet-4-5")
    assert claude.max_retries == 5
    assert claude.parameters == {"max_tokens": 256} and claude.api_key_env is None
    assert (local.model, local.played_as) == ("llama3.1:8b", "local")
    assert isinstance(fast, ModelSpec)


def test_plain_names_still_take_the_command_line_endpoint(tmp_path: Path) -> None:
    registry = tmp_path / "models.json"
    registry.write_text(json.dumps({"models": [{"name": "alpha", "model": "fake-model"}]}))
    assert set(read_registry(registry)) == {"alpha"}
    assert main(["run", "--models", str(registry), "--model", "oracle", "--experiment",
                 "travel-booking", "--results-dir", str(tmp_path / "r")]) == 0  # fmt: skip


def test_an_entry_names_a_users_player_from_the_registrys_folder(
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An entry with `player` names a user's player by import path (tests/test_user_players.py);
    the entry's name is the one the command line and the records use, and a relative file
    starts from the registry's folder, wherever the run is."""
    (tmp_path / "my_players.py").write_text(PLAYERS)
    registry = tmp_path / "models.yaml"
    registry.write_text(
        "models:\n"
        "  - {name: my-echo, player: ./my_players.py:EchoAnswerer}\n"
        "  - {name: asker, player: my_players.py:ReverseAsker}\n"
    )
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    monkeypatch.chdir(elsewhere)
    code = main(["run", "--models", str(registry), "--model", "my-echo", "--questioner", "asker",
                 "--experiment", "travel-booking", "--results-dir", "records"])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    check_played(elsewhere / "records", "my-echo", "asker")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "models:\n  - name: a\n    model: m\n  - name: b\n    temperature: hot\n",
            "entry 2 (b): model: missing; add it",
        ),
        (
            "models:\n  - name: a\n    model: m\n    temperature: hot\n",
            "entry 1 (a): temperature: Input should be a valid number",
        ),
        (
            "models:\n  - name: a\n    model: m\n    api_key_env: sk-live-abc123\n",
            "entry 1 (a): api_key_env: must name an environment variable",
        ),
        (
            "models:\n  - name: a\n    model: m\n    temprature: 0.5\n",
            "entry 1 (a): temprature: unknown field; remove it or fix its spelling",
        ),
        (
            "models:\n  - name: a\n    model: m\n    extra_body: {model: other}\n",
            "entry 1 (a): extra_body: 'model' is set by the game",
        ),
        (
            "models:\n  - {name: a, model: m}\n  - {name: a, model: n}\n",
            "two entries are named 'a'; rename one",
        ),
        (
            "models:\n  - {name: a, player: gpt-4o}\n",
            "entry 1 (a): player: must name a player by import path: module:attr, or "
            "./file.py:attr for a file",
        ),
        (
            "models:\n  - {name: a, player: ./p.py:A, model: m}\n",
            "entry 1 (a): model: unknown field; remove it or fix its spelling",
        ),
        ("models:\n  - {player: ./p.py:A}\n", "entry 1: name: missing; add it"),
        (
            "models:\n  - {name: c, provider: anthropic, model: m, parameters: {temperature: 1}}\n",
            "entry 1 (c): parameters: 'temperature' is the entry's own field; set it there",
        ),
        (
            "models:\n  - {name: c, provider: Anthropic!, model: m}\n",
            "entry 1 (c): provider: must name a provider as init_chat_model does",
        ),
        (
            "models:\n  - {name: c, provider: openai, model: m, extra_body: {top_p: 1}}\n",
            "entry 1 (c): extra_body: unknown field; remove it or fix its spelling",
        ),
        (
            "models:\n  - {name: c, provider: openai, model: m, api_key_env: sk-live-abc123}\n",
            "entry 1 (c): api_key_env: must name an environment variable",
        ),
        ("models: [\n", "not valid YAML"),
    ],
)
def test_a_broken_registry_gets_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    registry = tmp_path / "models.yaml"
    registry.write_text(text)
    with pytest.raises(RegistryError) as error:
        read_registry(registry)
    message = str(error.value)
    assert "\n" not in message and message.startswith(str(registry)) and expected in message
    assert main(["run", "--models", str(registry), "--results-dir", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err.strip() == f"privateshared: error: {message}"
    assert not (tmp_path / "r").exists()
