"""Any LangChain chat model as a player, against the fake endpoint on 127.0.0.1.

`ChatOpenAI` (langchain-openai) is the reference LangChain model: pointed at the same fake
endpoint as the fast path, it must play the same episodes to the same scores, with the same
answerer messages in requests.json. Then the ways to name one (a Python object, a registry entry
with `provider:`, `langchain:PROVIDER:MODEL`, an import path), what a missing integration
package says, how provider failures end an episode, and the traces: each model call a child run
of the node that made it.
"""

from __future__ import annotations

import json
import pickle
import sys
from collections import Counter
from contextvars import ContextVar
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tracers.context import register_configure_hook
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from privateshared.agents.base import ChatMessage, PlayerFailure, PlayerRequest
from privateshared.agents.imports import is_import_path, load_player
from privateshared.agents.langchain_player import (
    LangChainPlayer,
    LangChainSpec,
    is_transient_failure,
    langchain_spec,
)
from privateshared.agents.llm import PlayerConfigError
from privateshared.agents.refusals import CHECK_MESSAGE
from privateshared.agents.registry import resolve_answerer, resolve_questioner
from privateshared.bench import arun_benchmark
from privateshared.bench.cli import main
from privateshared.bench.running.episodes import play_episode
from privateshared.bench.running.ray_cluster import Recipe
from privateshared.bench.testing.fake_endpoint import FakeOpenAI, Fault, past_the_check
from privateshared.bench.testing.fake_players import answerer_for, default_players
from privateshared.domains.instances import GameInstance
from privateshared.graph.builder import graph
from privateshared.graph.context import GameContext
from privateshared.graph.state import EpisodeState

SECRET = "sk-langchain-secret-0123456789"
EXPERIMENTS = ("travel-booking", "travel-booking-late-joiner", "travel-booking-handover")
"""The classic experiment and both two-listener ones, on one domain."""
MODEL_NODES = {"probe_round", "answer_question", "ask_question", "judge_questions"}
"""The nodes that call players."""


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    """The key ChatOpenAI reads itself; every check below looks for it where it must not be."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)


def chat_openai(server: FakeOpenAI, **settings: Any) -> ChatOpenAI:
    """The reference LangChain model, at the fake endpoint."""
    return ChatOpenAI(model="fake-model", base_url=server.base_url, temperature=0, **settings)


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def episodes(results: Path, pair: str) -> dict[str, Path]:
    """The episode folders of a pair, by experiment/episode."""
    found = sorted((results / pair / "privateshared").glob("*/episode_*"))
    return {f"{folder.parent.name}/{folder.name}": folder for folder in found}


def assert_secret_absent(folder: Path) -> None:
    files = [path for path in folder.rglob("*") if path.is_file()]
    assert any(path.name == "requests.json" for path in files)  # records were written
    for path in files:
        assert SECRET.encode() not in path.read_bytes(), path


def answerer_prompts(folder: Path) -> list[Any]:
    """The answerer's calls in requests.json (its context opens with the instructions as a user
    message; the questioner's and the judge's open with a system message)."""
    calls = read(folder / "requests.json")
    return [c["manipulated_prompt_obj"] for c in calls
            if c["manipulated_prompt_obj"][0]["role"] == "user"]  # fmt: skip


def every_seat(model: str, results: Path, *options: str) -> list[str]:
    """`privateshared run`'s arguments with every seat `model`: answerer, questioner and judge,
    on EXPERIMENTS."""
    return ["run", "--model", model, "--questioner", model, "--judge", model,
            "--results-dir", str(results), "--workers", "1", *options,
            *[option for name in EXPERIMENTS for option in ("--experiment", name)]]  # fmt: skip


def test_fast_path_and_chat_openai_play_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same instances, every seat a model: through the fast path, then through ChatOpenAI
    named by a registry entry with `provider: openai` and `base_url`, its key in a variable of
    its own. Scores (the questioner's and the judge's among them) and the answerer's messages
    must be identical."""
    monkeypatch.setenv("LC_KEY", SECRET)
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("FAST_KEY", "sk-fast-0123456789")
    with FakeOpenAI(default_players()) as server:
        fast = tmp_path / "fast"
        options = ("--base-url", server.base_url, "--api-key-env", "FAST_KEY")
        assert main(every_seat("fake-model", fast, *options)) == 0, capsys.readouterr().err
        fast_calls = len(server.requests)
        registry = tmp_path / "models.yaml"
        registry.write_text(
            "models:\n"
            "  - name: lc-model\n"
            "    provider: openai\n"
            "    model: fake-model\n"
            f"    base_url: {server.base_url}\n"
            "    api_key_env: LC_KEY\n"
        )
        langchain = tmp_path / "langchain"
        code = main(every_seat("lc-model", langchain, "--models", str(registry)))
        assert code == 0, capsys.readouterr().err
        requests = server.requests
    # As many calls each way, the LangChain run's with the entry's key, through ChatOpenAI's
    # typed client (which sends the SDK's telemetry headers; the fast path leaves them out).
    assert len(requests) == 2 * fast_calls
    fast_requests, langchain_requests = requests[:fast_calls], requests[fast_calls:]
    assert {r["headers"]["authorization"] for r in langchain_requests} == {f"Bearer {SECRET}"}
    assert all("x-stainless-lang" in r["headers"] for r in langchain_requests)
    # (The check call before the run goes through the SDK's synchronous client.)
    played = [r for r in fast_requests if r["body"]["messages"][0]["content"] != CHECK_MESSAGE]
    assert played and not any("x-stainless-lang" in r["headers"] for r in played)

    ours = episodes(fast, "fake-model-t0.0--fake-model-t0.0")
    theirs = episodes(langchain, "lc-model-t0.0--lc-model-t0.0")
    assert len(ours) == 30 and sorted(ours) == sorted(theirs)
    for where, folder in ours.items():
        other = theirs[where]
        scores = read(folder / "scores.json")
        assert scores == read(other / "scores.json"), where
        assert scores["episode scores"]["Main Score"] == 100
        assert scores["episode scores"]["Questioner Call Validity"] == 1.0
        assert scores["episode scores"]["Questioner Judge Score"] == 4.0
        assert answerer_prompts(folder) == answerer_prompts(other), where
        assert len(read(folder / "requests.json")) == len(read(other / "requests.json"))
        # The raw response is the AIMessage as JSON, with the provider's completion id.
        raw = read(other / "requests.json")[0]["raw_response_obj"]
        assert raw["type"] == "ai" and raw["response_metadata"]["model_name"] == "fake-model"
        assert raw["response_metadata"]["id"].startswith("chatcmpl-fake-")
        assert raw["usage_metadata"]["total_tokens"] > 0
        # The same tokens either way, read from `usage` or from `usage_metadata`.
        used = {seat: {k: v for k, v in counts.items() if k != "model"}
                for seat, counts in read(folder / "usage.json").items()}  # fmt: skip
        assert used == {seat: {k: v for k, v in counts.items() if k != "model"}
                        for seat, counts in read(other / "usage.json").items()}, where  # fmt: skip
        assert set(used) == {"answerer", "questioner", "judge"}
    # experiment.json records the entry, its key's variable and never the key.
    settings = read(next((langchain / "lc-model-t0.0--lc-model-t0.0").rglob("experiment.json")))
    assert settings["settings"]["answerer"]["provider"] == "openai"
    assert settings["settings"]["answerer"]["api_key_env"] == "LC_KEY"
    assert_secret_absent(langchain)


async def test_a_chat_model_object_from_python_plays_every_seat(tmp_path: Path) -> None:
    with FakeOpenAI(default_players()) as server:
        model = chat_openai(server)
        evaluation = await arun_benchmark(
            [model], questioner=model, judge=model, experiments=["travel-booking"],
            results_dir=tmp_path,
        )  # fmt: skip
    (row,) = evaluation.models
    assert row.model == "fake-model-t0.0--fake-model-t0.0"
    assert row.played == 10 and row.quality_score == 100
    assert row.questioner_task_completion == 1.0
    assert_secret_absent(tmp_path)


def test_an_import_path_may_name_a_chat_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`module:attr` naming a ChatOpenAI object (or a factory making one) plays like a player."""
    instances = [i for e in ("travel-booking",) for i in _instances(e)]
    with FakeOpenAI(answerer_for(*instances)) as server:
        (tmp_path / "models_here.py").write_text(
            "from langchain_openai import ChatOpenAI\n"
            f"model = ChatOpenAI(model='fake-model', base_url={server.base_url!r}, "
            "temperature=0)\n"
        )
        monkeypatch.chdir(tmp_path)
        assert is_import_path("./models_here.py:model")
        player = load_player("./models_here.py:model")
        assert player.name == "fake-model" and player.temperature == 0.0
        code = main(["run", "--model", "./models_here.py:model", "--experiment",
                     "travel-booking", "--results-dir", "records"])  # fmt: skip
        assert code == 0, capsys.readouterr().err
    scores = [read(path)["episode scores"]["Main Score"]
              for path in (tmp_path / "records").rglob("scores.json")]  # fmt: skip
    assert scores == [100] * 10


def _instances(experiment: str) -> list[GameInstance]:
    from privateshared.domains.instances import default_instance

    return [default_instance(experiment, game_id) for game_id in range(10)]


@pytest.mark.parametrize(
    ("name", "provider", "model"),
    [
        ("langchain:openai:gpt-4o", "openai", "gpt-4o"),
        ("langchain:ollama:llama3.1:8b", "ollama", "llama3.1:8b"),  # the model keeps its colon
        ("langchain:google_genai:gemini-2.5-flash", "google_genai", "gemini-2.5-flash"),
    ],
    ids=["openai", "ollama-colon", "underscore-provider"],
)
def test_the_command_line_form_splits_at_its_first_two_colons(
    name: str, provider: str, model: str
) -> None:
    spec = langchain_spec(name)
    assert (spec.provider, spec.model, spec.played_as) == (provider, model, name)
    assert not is_import_path(name)


@pytest.mark.parametrize(
    "name", ["langchain:openai", "langchain:", "langchain::gpt-4o"],
    ids=["no-model", "nothing", "no-provider"],
)  # fmt: skip
def test_a_short_command_line_form_gets_one_line(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Never an import path either: `langchain:openai` would otherwise name module langchain.
    assert not is_import_path(name)
    assert main(["run", "--model", name, "--results-dir", str(tmp_path)]) == 2
    line = capsys.readouterr().err.strip()
    assert "\n" not in line and "write langchain:PROVIDER:MODEL" in line, line


@pytest.fixture
def no_anthropic(monkeypatch: pytest.MonkeyPatch) -> None:
    """langchain-anthropic missing, whatever this machine has installed."""
    monkeypatch.setitem(sys.modules, "langchain_anthropic", None)


@pytest.mark.usefixtures("no_anthropic")
def test_a_missing_provider_package_gets_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    registry = tmp_path / "models.yaml"
    registry.write_text("models:\n  - {name: claude, provider: anthropic, model: claude-x}\n")
    for argv in (["--models", str(registry), "--model", "claude"],
                 ["--model", "langchain:anthropic:claude-x"]):  # fmt: skip
        code = main(["run", *argv, "--results-dir", str(tmp_path / "r")])
        line = capsys.readouterr().err.strip()
        assert code == 2
        assert "\n" not in line and "Traceback" not in line
        assert line.endswith("integration is not installed; pip install langchain-anthropic")
    assert not (tmp_path / "r").exists()


def test_an_unknown_provider_gets_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--model", "langchain:no_such_provider:m", "--results-dir", str(tmp_path)])
    line = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in line
    assert "no_such_provider" in line and "fix the entry" in line


# --- Traces: what LangGraph's callbacks (Studio, LangSmith) see of the model's calls


class NodeAndModelRuns(BaseCallbackHandler):
    """Records every chain run (the graph, its nodes) and every chat model run, with parents."""

    def __init__(self) -> None:
        self.chains: dict[UUID, str] = {}
        self.model_parents: list[UUID | None] = []

    def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: UUID,
                       parent_run_id: UUID | None = None, **kwargs: Any) -> None:  # fmt: skip
        self.chains[run_id] = str(kwargs.get("name"))

    def on_chat_model_start(self, serialized: Any, messages: Any, *, run_id: UUID,
                            parent_run_id: UUID | None = None, **kwargs: Any) -> None:  # fmt: skip
        self.model_parents.append(parent_run_id)

    def parents(self) -> Counter[str]:
        return Counter(self.chains.get(p, "?") if p else "none" for p in self.model_parents)


@pytest.mark.parametrize("sequential", [False, True], ids=["concurrent-probes", "sequential"])
async def test_each_model_call_is_a_child_run_of_its_node(sequential: bool) -> None:
    from privateshared.domains.instances import default_instance

    instance = default_instance("travel-booking", 3)
    handler = NodeAndModelRuns()
    with FakeOpenAI(default_players()) as server:
        model = chat_openai(server)
        context = GameContext(answerer=model, questioner=model, judge=model,
                              sequential_probes=sequential)  # fmt: skip
        start = EpisodeState(instance=instance, experiment=instance.experiment, game_id=3)
        values = await graph.ainvoke(start, context=context, config={"callbacks": [handler]})
        calls = len(server.requests)
    state = EpisodeState.model_validate(values)
    assert state.records is not None and len(state.records.calls) == calls
    # One LLM run per model call, each under the node that made it.
    assert len(handler.model_parents) == calls
    parents = handler.parents()
    assert set(parents) == MODEL_NODES, parents
    assert parents["answer_question"] == 5 and parents["judge_questions"] == 5
    assert parents["ask_question"] == 6  # five questions and a finish


TRACER: ContextVar[BaseCallbackHandler | None] = ContextVar("test_tracer", default=None)
"""A handler LangChain adds to every run started while it is set, and that runs' children
inherit: how LangSmith's tracer attaches when LANGSMITH_TRACING is on."""
register_configure_hook(TRACER, inheritable=True)


async def test_a_run_given_no_callbacks_still_traces_under_the_nodes() -> None:
    """The programmatic path (play_episode, as run_benchmark and the command line play) passes
    no config: a tracer attached as LangSmith's still sees each call inside its node."""
    from privateshared.domains.instances import default_instance

    instance = default_instance("travel-booking", 5)
    handler = NodeAndModelRuns()
    with FakeOpenAI(answerer_for(instance)) as server:
        context = GameContext(answerer=chat_openai(server))
        attached = TRACER.set(handler)
        try:
            await play_episode(instance, context)
        finally:
            TRACER.reset(attached)
        calls = len(server.requests)
    assert len(handler.model_parents) == calls
    assert handler.parents() == {"probe_round": calls - 5, "answer_question": 5}


async def test_the_messages_stream_carries_the_models_replies() -> None:
    """Where the fast path's calls are invisible to LangGraph's messages stream (see
    tests/test_llm_answerer.py), a LangChain model's replies stream as Studio shows them: then
    it streams, the questioner's function calls too, and the episode plays as it would."""
    from privateshared.domains.instances import default_instance

    instance = default_instance("travel-booking", 2)
    text: dict[str, str] = {}
    calls: list[str] = []
    values: dict[str, Any] = {}
    with FakeOpenAI(default_players()) as server:
        model = chat_openai(server)
        context = GameContext(answerer=model, questioner=model)
        start = EpisodeState(instance=instance, experiment=instance.experiment, game_id=2)
        async for mode, payload in graph.astream(
            start, context=context, stream_mode=["messages", "values"]
        ):
            if mode == "values":
                values = payload
                continue
            message, metadata = payload
            node = metadata["langgraph_node"]
            text[node] = text.get(node, "") + str(message.content)
            calls += [chunk["name"] for chunk in message.tool_call_chunks if chunk["name"]]
        streamed = all(request["body"].get("stream") for request in server.requests)
    assert streamed
    assert set(text) == {"probe_round", "answer_question", "ask_question"}
    assert f"ANSWER: {instance.slots[instance.request_order[0]]}." in text["answer_question"]
    assert calls.count("ask") == 5 and calls.count("finish") == 1
    final = EpisodeState.model_validate(values)
    assert final.scores is not None
    assert final.scores.episode_scores["Main Score"] == 100
    assert final.scores.episode_scores["Questioner Task Completion"] == 1


# --- Failures: the provider's client retries; what it raises then ends the episode


def question(instance: GameInstance) -> PlayerRequest:
    return PlayerRequest(kind="question", messages=(ChatMessage(role="user", content="Hi"),),
                         instance=instance, turn=1, slot="to")  # fmt: skip


async def test_a_refused_key_fails_at_once_and_without_the_key(instance: GameInstance) -> None:
    with FakeOpenAI(answerer_for(instance),
                    faults=lambda n: Fault("status", 401, echo_key=True)) as server:  # fmt: skip
        player = LangChainPlayer(chat_openai(server, max_retries=2))
        with pytest.raises(PlayerFailure) as failure:
            await player.respond(question(instance))
        received = len(server.requests)
    assert failure.value.kind == "AuthenticationError"
    assert failure.value.tries == 1 and received == 1  # a refusal is not retried
    assert SECRET not in str(failure.value) and "[key]" in failure.value.message


async def test_a_server_error_fails_after_the_clients_retries(instance: GameInstance) -> None:
    with FakeOpenAI(answerer_for(instance), faults=lambda n: Fault("status", 503)) as server:
        player = LangChainPlayer(chat_openai(server, max_retries=1))
        with pytest.raises(PlayerFailure) as failure:
            await player.respond(question(instance))
        received = len(server.requests)
    assert failure.value.kind == "InternalServerError"
    assert failure.value.tries == 2 == received


def test_a_timeout_errors_the_episodes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    instances = _instances("travel-booking")
    hang = past_the_check(lambda number: Fault("hang"))  # the check call is answered
    with FakeOpenAI(answerer_for(*instances), faults=hang) as server:
        registry = tmp_path / "models.yaml"
        registry.write_text(
            "models:\n"
            f"  - {{name: slow, provider: openai, model: fake-model, base_url: '{server.base_url}',"
            " timeout: 0.5, max_retries: 0}\n"
        )
        code = main(["run", "--models", str(registry), "--model", "slow", "--experiment",
                     "travel-booking", "--results-dir", str(tmp_path / "r")])  # fmt: skip
    line = capsys.readouterr().err.strip()
    assert code == 1 and "10 episodes errored" in line and "APITimeoutError" in line, line
    failures = [read(path) for path in (tmp_path / "r").rglob("error.json")]
    assert {(f["kind"], f["tries"], f["model"]) for f in failures} == {
        ("APITimeoutError", 1, "slow")
    }


@pytest.mark.parametrize(
    ("error", "transient"),
    [
        (TimeoutError(), True),
        (ConnectionResetError(), True),
        (type("ReadTimeout", (Exception,), {})(), True),  # httpx's, by its name
        (type("E", (Exception,), {"status_code": 429})(), True),  # a rate limit
        (type("E", (Exception,), {"status_code": 503})(), True),
        (type("E", (Exception,), {"code": 500})(), True),  # google's api_core spells it code
        (type("E", (Exception,), {"status_code": 401})(), False),  # a refused key
        (type("E", (Exception,), {"status_code": 404})(), False),  # an unknown model
        (ValueError("bad parameter"), False),
    ],
    ids=["timeout", "reset", "timeout-by-name", "429", "503", "code-500", "401", "404", "other"],
)
def test_is_transient_failure(error: Exception, transient: bool) -> None:
    assert is_transient_failure(error) is transient


# --- Own models, seats and Ray


class Parrot(BaseChatModel):
    """A chat model of one's own: repeats the last message. It has no bind_tools."""

    temperature: float = 0.0

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:  # fmt: skip
        return ChatResult(generations=[ChatGeneration(message=AIMessage(messages[-1].text))])

    @property
    def _llm_type(self) -> str:
        return "parrot"


async def test_a_chat_model_of_ones_own_answers(instance: GameInstance) -> None:
    player = resolve_answerer(Parrot())
    reply = await player.respond(question(instance))
    assert (reply.text, player.name, player.temperature) == ("Hi", "Parrot", 0.0)
    assert reply.prompt == [{"role": "user", "content": "Hi"}]


def test_a_model_without_tool_calling_cannot_ask() -> None:
    with pytest.raises(PlayerConfigError, match="does not implement bind_tools"):
        resolve_questioner(Parrot())


def test_a_model_without_a_temperature_must_be_given_one() -> None:
    class Mute(Parrot):
        temperature: float | None = None  # type: ignore[assignment]  # unset, as many are

    with pytest.raises(PlayerConfigError, match="has no temperature set"):
        resolve_answerer(Mute())
    assert LangChainPlayer(Mute(), temperature=0.7).temperature == 0.7


def test_a_ray_recipe_carries_the_entry_not_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Ray task sends the entry; the worker builds the model, its key from its own
    environment (here this one, after the recipe was made)."""
    spec = LangChainSpec(provider="openai", model="fake-model", base_url="http://127.0.0.1:9/v1",
                         api_key_env="WORKER_KEY", name="lc")  # fmt: skip
    sent = pickle.dumps(Recipe(spec=spec))
    monkeypatch.setenv("WORKER_KEY", SECRET)
    built = pickle.loads(sent).build()
    assert SECRET.encode() not in sent
    assert isinstance(built, LangChainPlayer) and built.spec == spec
    assert isinstance(built.model, ChatOpenAI)
    assert built.model.openai_api_key == SecretStr(SECRET)
    assert built.model.openai_api_base == "http://127.0.0.1:9/v1"
