"""Guided decoding: the answerer's replies held to the game's format by its server's constraint,
in each server's own request fields, as a condition of its own; servers that cannot guide are
refused before the first episode. (SmolLM2 under llama.cpp's grammar: tests/test_local_model.py.)
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from privateshared.agents.guided import (
    ANSWER_REGEX,
    PROBE_REGEX,
    GuidedForm,
    constraint,
    form_of_server,
)
from privateshared.agents.refusals import CHECK_MESSAGE
from privateshared.bench.cli import main
from privateshared.bench.testing.fake_endpoint import FakeOpenAI
from privateshared.bench.testing.fake_players import default_players


@pytest.mark.parametrize(
    ("form", "kind", "expected"),
    [
        ("llama.cpp", "probe", {"grammar": 'root ::= "ASIDE: " ("yes" | "no")'}),
        ("llama.cpp", "question", {"grammar": 'root ::= "ANSWER: " [^\\n]{1,200}'}),
        ("vllm", "probe", {"structured_outputs": {"regex": "ASIDE: (yes|no)"}}),
        ("vllm-legacy", "question", {"guided_regex": "ANSWER: [^\\n]{1,200}"}),
        ("sglang", "probe", {"regex": "ASIDE: (yes|no)"}),
        ("vllm", "request", {}),  # the questioner's tool calls are left alone
        ("sglang", "judge", {}),  # and so are the judge's ratings
    ],
    ids=["llama-probe", "llama-answer", "vllm", "vllm-legacy", "sglang", "questioner", "judge"],
)
def test_each_server_gets_the_constraint_in_its_own_fields(
    form: GuidedForm, kind: Any, expected: dict[str, Any]
) -> None:
    assert constraint(form, kind) == expected


@pytest.mark.parametrize(
    ("reply", "probe", "answer"),
    [
        ("ASIDE: yes", True, False),
        ("ASIDE: no", True, False),
        ("ASIDE: Yes.", False, False),  # what a model writes unguided: the parser would take it,
        ("Yes.", False, False),  # but the constraint leaves exactly two replies
        ("ANSWER: Budapest.", False, True),
        ("ANSWER: Budapest.\nASIDE: yes", False, False),  # one line only
        ("ANSWER: ", False, False),  # something must be said
    ],
    ids=["yes", "no", "capital", "bare", "answer", "two-lines", "empty"],
)
def test_the_constraints_allow_the_game_s_format_only(reply: str, probe: bool, answer: bool):
    assert bool(re.fullmatch(PROBE_REGEX, reply)) is probe
    assert bool(re.fullmatch(ANSWER_REGEX, reply)) is answer


@pytest.mark.parametrize(
    ("owned_by", "form"),
    [("vllm", "vllm"), ("sglang", "sglang"), ("llamacpp", "llama.cpp"), ("me", "llama.cpp"),
     ("openai", None), ("system", None), ("library", None)],
    ids=["vllm", "sglang", "llama-server", "llama-cpp-python", "openai", "openai-system",
         "ollama"],
)  # fmt: skip
def test_servers_are_known_by_what_they_say_owns_their_models(
    owned_by: str, form: str | None
) -> None:
    assert form_of_server(owned_by) == form


def play(server: FakeOpenAI, results: Path, *options: str) -> int:
    return main(["run", "--model", "fake-model", "--experiment", "restaurant", "--base-url",
                 server.base_url, "--results-dir", str(results), *options])  # fmt: skip


@pytest.mark.parametrize(
    ("owned_by", "field", "regexes"),
    [
        ("vllm", "structured_outputs", ({"regex": PROBE_REGEX}, {"regex": ANSWER_REGEX})),
        ("sglang", "regex", (PROBE_REGEX, ANSWER_REGEX)),
    ],
    ids=["vllm", "sglang"],
)
def test_guided_requests_carry_the_server_s_constraint(
    owned_by: str, field: str, regexes: tuple[Any, Any], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.setenv("OPENAI_API_KEY", "sk-guided")
    with FakeOpenAI(default_players(), owned_by=owned_by) as server:
        assert play(server, tmp_path, "--guided", "--questioner", "fake-model") == 0
        sent = [entry["body"] for entry in server.requests]
    # The check calls before the run carry the run's settings, the constraint among them.
    checks = [body for body in sent if body["messages"][0]["content"] == CHECK_MESSAGE]
    assert [body.get(field) for body in checks if "tools" not in body] == [regexes[1]]
    bodies = [body for body in sent if body not in checks]
    answerer = [body for body in bodies if "tools" not in body]
    asker = [body for body in bodies if "tools" in body]
    probes = [b for b in answerer if b["messages"][-1]["content"].startswith("ME:")]
    questions = [b for b in answerer if not b["messages"][-1]["content"].startswith("ME:")]
    assert len(probes) == 10 * 6 * 5 and len(questions) == 10 * 5  # every answerer call
    assert all(body[field] == regexes[0] for body in probes)
    assert all(body[field] == regexes[1] for body in questions)
    assert asker and not any(field in body for body in asker)  # the questioner is left alone
    # A condition of its own: its folder, its rows, its constraint in experiment.json.
    folder = tmp_path / "fake-model-guided-t0.0--fake-model-t0.0" / "privateshared"
    recorded = json.loads((folder / "2_restaurant" / "experiment.json").read_text())
    assert recorded["settings"]["answerer"]["guided"] == owned_by
    assert recorded["settings"]["answerer"]["constraint"] == {
        "probe": {field: regexes[0]}, "question": {field: regexes[1]},
    }  # fmt: skip
    assert recorded["answerer"] == "fake-model-guided"
    assert "fake-model-guided-t0.0--fake-model-t0.0" in capsys.readouterr().out


def test_a_folder_with_both_conditions_sets_them_side_by_side(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-guided")
    with FakeOpenAI(default_players(), owned_by="vllm") as server:
        assert play(server, tmp_path) == 0
        assert play(server, tmp_path, "--guided") == 0
    capsys.readouterr()
    markdown = (tmp_path / "results.md").read_text()
    section = markdown[markdown.index("## Format and scorekeeping") :].split("\n## ")[0]
    rows = [line for line in section.splitlines() if line.startswith("| fake-model")]
    assert rows == [
        "| fake-model-t0.0--fake-model-t0.0 | unguided | 10 | 0 | 100.0 | 100.00 | 100.00 |",
        "| fake-model-guided-t0.0--fake-model-guided-t0.0 | guided | 10 | 0 | 100.0 | 100.00 "
        "| 100.00 |",
    ]
    results = json.loads((tmp_path / "results.json").read_text())
    assert {row["model"] for row in results["models"]} == {
        "fake-model-t0.0--fake-model-t0.0", "fake-model-guided-t0.0--fake-model-guided-t0.0",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("owned_by", "why"),
    [
        ("openai", "does not say it is llama.cpp, vLLM or SGLang (its models are owned_by "
         "'openai'), so it cannot be guided as one; if it takes one of their constraints, say "
         "which in a registry entry (guided: llama.cpp, vllm, vllm-legacy or sglang), else play "
         "it without --guided"),
    ],
    ids=["openai-like"],
)  # fmt: skip
def test_a_server_that_cannot_guide_is_refused_before_the_first_episode(
    owned_by: str, why: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.setenv("OPENAI_API_KEY", "sk-guided")
    with FakeOpenAI(default_players(), owned_by=owned_by) as server:
        assert play(server, tmp_path, "--guided") == 2
        assert server.requests == []  # not one chat call
    err = capsys.readouterr().err
    assert err == f"privateshared: error: fake-model-guided: {server.base_url} {why}\n"
    assert not list(tmp_path.glob("*/privateshared"))  # no episode folder, no experiment.json


def test_openai_s_own_api_is_refused_without_a_call(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-guided")
    code = main(["run", "--model", "gpt-4o", "--guided", "--experiment", "restaurant",
                 "--results-dir", str(tmp_path)])  # fmt: skip
    assert code == 2
    assert capsys.readouterr().err == (
        "privateshared: error: gpt-4o-guided: OpenAI's API takes no grammar or regular "
        "expression, so it cannot hold replies to the game's format; play this model without "
        "--guided\n"
    )


def test_a_registry_entry_names_the_form_of_an_older_vllm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that does not say what it is can be named; `vllm-legacy` for vLLM before 0.12,
    which knows `guided_regex` only."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-guided")
    with FakeOpenAI(default_players(), owned_by="someone") as server:
        registry = tmp_path / "models.json"
        registry.write_text(json.dumps({"models": [{
            "name": "old-vllm", "model": "fake-model", "base_url": server.base_url,
            "guided": "vllm-legacy",
        }]}))  # fmt: skip
        code = main(["run", "--models", str(registry), "--model", "old-vllm", "--experiment",
                     "restaurant", "--results-dir", str(tmp_path / "records")])  # fmt: skip
        bodies = [entry["body"] for entry in server.requests]
    assert code == 0
    assert bodies and all(body["guided_regex"] in (PROBE_REGEX, ANSWER_REGEX) for body in bodies)
    assert (tmp_path / "records" / "old-vllm-guided-t0.0--old-vllm-guided-t0.0").is_dir()
