"""The command line: a full run with the default players, re-scoring, layout and bad input."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from privateshared.bench.cli import main
from privateshared.bench.running.layout import safe_name
from privateshared.domains.instances import default_instances_path
from privateshared.graph.files import write_json

EPISODE_FILES = ["instance.json", "interactions.json", "requests.json", "scores.json"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One default run (oracle and mock over every default instance), shared by the tests."""
    results = tmp_path_factory.mktemp("run") / "records"
    out = io.StringIO()  # capsys is per test; this fixture is per module
    with contextlib.redirect_stdout(out):
        assert (
            main(["run", "--model", "oracle", "--model", "mock", "--results-dir", str(results)])
            == 0
        )
    return results, out.getvalue()


def episode_folders(results: Path, pair: str) -> list[Path]:
    return sorted(results.glob(f"{pair}/privateshared/*/episode_*"))


def test_default_run_plays_every_instance_with_oracle_and_mock(run_dir: tuple[Path, str]) -> None:
    results, output = run_dir
    assert sorted(path.name for path in results.iterdir() if path.is_dir()) == [
        "mock-t0.0--mock-t0.0", "oracle-t0.0--oracle-t0.0",
    ]  # fmt: skip
    # The run ends with its evaluation, transcripts and plot next to the records.
    for name in ("results.json", "results.md", "results.csv", "raw.csv", "episodes.csv",
                 "index.html", "accuracy_by_round.svg"):  # fmt: skip
        assert (results / name).is_file(), name
    for pair in ("oracle-t0.0--oracle-t0.0", "mock-t0.0--mock-t0.0"):
        folders = episode_folders(results, pair)
        assert len(folders) == 50
        experiments = sorted({folder.parent.name for folder in folders})
        # clembench's order and indices, so a merge with published clembench runs lines up.
        assert experiments == [
            "0_travel-booking", "1_job-interview", "2_restaurant", "3_things-places",
            "4_letter-number",
        ]  # fmt: skip
        for folder in folders:
            files = sorted(path.name for path in folder.iterdir())
            assert files == [*EPISODE_FILES, "transcript.html"]
        for experiment in experiments:
            meta = json.loads(
                (results / pair / "privateshared" / experiment / "experiment.json").read_text()
            )
            assert meta["name"] == experiment.split("_", 1)[1]
            assert meta["dialogue_partners"] == pair
    for folder in episode_folders(results, "oracle-t0.0--oracle-t0.0"):
        scores = json.loads((folder / "scores.json").read_text())
        assert scores["episode scores"]["Main Score"] == 100.0, folder
    rows = {line.split()[0]: line.split() for line in output.splitlines() if line.strip()}
    # model, episodes, played, aborted, errored, unscored, % played
    assert rows["oracle-t0.0--oracle-t0.0"][1:7] == ["50", "50", "0", "0", "0", "100.0"]
    assert rows["mock-t0.0--mock-t0.0"][1] == "50"


def test_mock_breaks_rules_sometimes_and_guesses_probes(run_dir: tuple[Path, str]) -> None:
    results, _ = run_dir
    episodes = [
        json.loads((folder / "scores.json").read_text())["episode scores"]
        for folder in episode_folders(results, "mock-t0.0--mock-t0.0")
    ]
    aborted = [episode for episode in episodes if episode["Aborted"]]
    played = [episode for episode in episodes if not episode["Aborted"]]
    assert 0 < len(aborted) < len(episodes) / 2
    assert sum(episode["Violated Request Count"] for episode in episodes) > 20
    # Random yes/no carries no information about the truth.
    assert sum(episode["Truncated Kappa"] for episode in played) / len(played) < 0.3


def test_score_rebuilds_scores_from_interactions(
    run_dir: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    results, _ = run_dir
    paths = sorted(results.glob("**/scores.json"))
    before = {path: path.read_bytes() for path in paths}
    for path in paths:
        path.unlink()
    assert main(["score", str(results)]) == 0
    assert "re-scored 100 episodes" in capsys.readouterr().out
    assert {path: path.read_bytes() for path in paths} == before


def test_score_follows_the_interactions(tmp_path: Path) -> None:
    results = tmp_path / "records"
    assert main(["run", "--model", "oracle", "--experiment", "travel-booking",
                 "--results-dir", str(results)]) == 0  # fmt: skip
    folder = episode_folders(results, "oracle-t0.0--oracle-t0.0")[0]
    interactions = json.loads((folder / "interactions.json").read_text())
    interactions["probes"][2][0]["value"] = 1 - interactions["probes"][2][0]["value"]
    (folder / "interactions.json").write_text(json.dumps(interactions))
    assert main(["score", str(results)]) == 0
    scores = json.loads((folder / "scores.json").read_text())
    assert scores["turn scores"]["2"]["Accuracy"] == 0.8
    assert scores["episode scores"]["Main Score"] < 100


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["run", "--model", "gpt-none"], "OPENAI_API_KEY is not set"),
        (["run", "--model", "mock:abc"], "bad answerer 'mock:abc'"),
        (["run", "--experiment", "cooking"], "unknown experiment 'cooking' (neither "),
        (["run", "--experiment", "cooking", "--instances", str(default_instances_path())],
         "domains/instances.json has none of that name); choose from travel-booking, "),
        (["run", "--model", "human"], "a person cannot be the answerer of a run"),
        (["run", "--model", "oracle", "--questioner", "human"],
         "play yourself with `privateshared play`, or in LangGraph Studio"),
        (["run", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--timeout", "0"],
         "--timeout: Input should be greater than 0"),
        (["run", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--temperature", "-1"],
         "--temperature: Input should be greater than or equal to 0"),
        (["run", "--instances", "."], "is a folder"),
        (["score", "/nonexistent/records"], "not a folder"),
        (["replay", "/nonexistent", "--instances", "/nonexistent/i.json", "--results-dir", "x"],
         "file not found"),
    ],
    ids=["no-key", "bad-mock", "unknown-experiment", "unknown-in-one-file", "human-answerer",
         "human-questioner", "zero-timeout", "negative-temperature",
         "instances-folder", "score-missing", "replay-missing"],
)  # fmt: skip
def test_bad_input_gives_one_line_and_no_traceback(
    argv: list[str], expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expected in err and "Traceback" not in err
    assert not (tmp_path / "records").exists()


def test_unwritable_results_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert main(["run", "--model", "oracle", "--results-dir", str(blocker / "records")]) == 2
    err = capsys.readouterr().err
    assert "cannot write to" in err and "--results-dir" in err


def test_bad_interactions_file_names_itself_and_the_others_are_scored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "records"
    assert main(["run", "--model", "oracle", "--experiment", "travel-booking",
                 "--results-dir", str(results)]) == 0  # fmt: skip
    broken = results / "x--x" / "privateshared" / "0_travel-booking" / "episode_0"
    broken.mkdir(parents=True)
    (broken / "interactions.json").write_text('{"players": {}}')
    capsys.readouterr()
    assert main(["score", str(results)]) == 1
    output = capsys.readouterr()
    assert "re-scored 10 episodes" in output.out
    [line] = output.err.splitlines()
    assert str(broken / "interactions.json") in line and "'turns', 'probes'" in line
    assert "neither clembench record format" in line and "Traceback" not in output.err
    assert not (broken / "scores.json").exists()


@pytest.mark.parametrize(
    ("name", "expected"),
    [("gpt-4o-2024-08-06", "gpt-4o-2024-08-06"),
     ("meta-llama/Llama-3.1-8B", "meta-llama_Llama-3.1-8B"),
     ("../../etc/passwd", "etc_passwd"),
     ("local:/models/x.gguf", "local_models_x.gguf"),
     ("..", "model")],
    ids=["plain", "slash", "traversal", "local-path", "dots"],
)  # fmt: skip
def test_model_names_are_made_safe_for_paths(name: str, expected: str) -> None:
    assert safe_name(name) == expected
    assert "/" not in safe_name(name) and ".." not in safe_name(name)


def test_json_writes_are_atomic(tmp_path: Path) -> None:
    path = tmp_path / "scores.json"
    write_json(path, {"a": 1, "b": float("nan")})
    assert path.read_text() == '{\n  "a": 1,\n  "b": NaN\n}\n'
    with pytest.raises(TypeError):
        write_json(path, {"a": object()})  # type: ignore[dict-item]
    assert json.loads(path.read_text())["a"] == 1  # the old file is intact
    assert [p.name for p in tmp_path.iterdir()] == ["scores.json"]  # no temporary file is left


def test_eval_and_transcribe_commands(
    run_dir: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    results, _ = run_dir
    for name in ("results.md", "index.html"):
        (results / name).unlink()
    assert main(["eval", str(results)]) == 0
    out = capsys.readouterr().out
    assert "oracle-t0.0--oracle-t0.0" in out and (results / "results.md").is_file()
    assert main(["transcribe", str(results)]) == 0
    assert "wrote 100 transcripts" in capsys.readouterr().out
    assert (results / "index.html").is_file()


def test_eval_of_a_folder_it_cannot_write(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    results = tmp_path / "records"
    assert main(["run", "--model", "oracle", "--experiment", "travel-booking",
                 "--results-dir", str(results)]) == 0  # fmt: skip
    capsys.readouterr()
    (results / "results.md").unlink()
    (results / "results.md").mkdir()  # writing there now fails
    assert main(["eval", str(results)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"cannot read or write {results / 'results.md'} (Is a directory)" in err


def test_a_reader_that_leaves_early_stops_the_output_quietly(tmp_path: Path) -> None:
    """`privateshared run ... | head`: every file is written, and the closed pipe is no
    player's failure: no message, the status a shell gives a process a closed pipe stopped."""
    results = tmp_path / "records"
    run = f"{Path(sys.executable).parent / 'privateshared'} run --model oracle"
    # `true` reads nothing and is gone at once: every write of the run meets a closed pipe.
    command = (f"{run} --experiment travel-booking --results-dir {results} | true; "
               "exit ${PIPESTATUS[0]}")  # fmt: skip
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=120)
    assert done.returncode == 141 and done.stderr == "", done.stderr
    # Every file was written before anything was printed: records, results, transcripts.
    assert len(list(results.rglob("scores.json"))) == 10
    assert len(list(results.rglob("transcript.html"))) == 10
    assert (results / "index.html").is_file() and (results / "results.md").is_file()
