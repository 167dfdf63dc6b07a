"""Parity with the reference: real clembench 2.0 records, in both of clembench's layouts, replay
through our game master to their scores, and clembench's instances played with clembench's texts
send clembench's bytes.

The records and texts are read from ../shared (never copied into the repository); the tests skip
when that folder is absent.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from privateshared.bench.clembench.prompt_parity import answerer_calls, prompt_messages
from privateshared.bench.clembench.replay import (
    RecordedEpisode,
    ReplayOutcome,
    find_recorded_episodes,
    replay_episode,
)
from privateshared.bench.cli import main
from privateshared.bench.reporting.record_files import read_interactions, read_requests
from privateshared.bench.reporting.statistics import wilson_interval
from privateshared.bench.testing.fake_endpoint import FakeOpenAI
from privateshared.bench.testing.fake_players import answerer_for
from privateshared.domains.instances import (
    default_instance,
    playable_instances,
    read_instances,
)
from privateshared.domains.loader import load_domains
from privateshared.graph.records import ANSWERER, MAIN_SCORE, Interactions
from tests.conftest import SHARED_NEWER_RECORDS, SHARED_RECORDS, SHARED_RESOURCES

pytestmark = pytest.mark.skipif(
    not (SHARED_RECORDS.is_dir() and SHARED_NEWER_RECORDS.is_dir() and SHARED_RESOURCES.is_dir()),
    reason="../shared/clembench-records or ../shared/clembench-resources is not on this machine",
)

INSTANCES = SHARED_RECORDS / "instances.json"
ROOTS = (SHARED_RECORDS, SHARED_NEWER_RECORDS)
EPISODES = [e for root in ROOTS if root.is_dir() for e in find_recorded_episodes(root)]
GPT4O = "gpt-4o-2024-08-06-t0.0--gpt-4o-2024-08-06-t0.0"
OLMO = "OLMo-2-1124-13B-Instruct-t0.0--OLMo-2-1124-13B-Instruct-t0.0"


def texts(interactions: Interactions, sender: str) -> list[str]:
    """What `sender` said, probes included, in order (the pseudo `Ok.` of the newer layout
    aside: no model said it)."""
    return [
        str(event.action.content)
        for turn in interactions.turns
        for event in turn
        if event.sender == sender and getattr(event.action, "label", None) != "pseudo"
    ]


def replay(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["replay", *argv, "--instances", str(INSTANCES)])
    return code, capsys.readouterr().out


def test_the_records_cover_both_layouts() -> None:
    formats = {
        root.name: sorted(e.relative.parts[0] for e in find_recorded_episodes(root))
        for root in ROOTS
    }
    assert len(formats["v2.0"]) == 8 and formats["v2.0-newformat"] == [OLMO, OLMO]
    assert {episode.experiment for episode in EPISODES} == {
        "travel-booking", "job-interview", "restaurant",
    }  # fmt: skip


@pytest.mark.parametrize(
    "episode", EPISODES, ids=[f"{e.relative.parts[0]}/{e.experiment}" for e in EPISODES]
)
async def test_replay_reproduces_every_score_probe_and_prompt(
    episode: RecordedEpisode, tmp_path: Path
) -> None:
    outcome = await replay_episode(episode, read_instances(INSTANCES), tmp_path, SHARED_RESOURCES)
    assert outcome.differences == [] and outcome.verdict == "reproduced"
    ours = tmp_path / episode.relative
    assert sorted(path.name for path in ours.iterdir()) == [
        "instance.json", "interactions.json", "requests.json", "scores.json",
    ]  # fmt: skip
    # The replay really spoke with the recorded voice: same replies, same number of calls.
    recorded = read_interactions(episode.folder / "interactions.json")
    replayed = read_interactions(ours / "interactions.json")
    assert texts(replayed, ANSWERER) == texts(recorded, ANSWERER)
    assert replayed.request_count == recorded.request_count
    calls = read_requests(ours / "requests.json")
    assert len(calls) == sum(recorded.request_count)
    # Wherever clembench kept its prompts, every one of them was compared, and matched.
    if (episode.folder / "requests.json").is_file():
        theirs = answerer_calls(recorded, read_requests(episode.folder / "requests.json"))
        assert outcome.prompts is not None and outcome.prompts.difference is None
        assert outcome.prompts.compared == len(theirs) == len(calls) > 0
        assert outcome.prompts.unreadable == 0
    else:
        assert outcome.prompts is None


def test_replay_without_texts_compares_scores_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = replay([str(SHARED_RECORDS), "--results-dir", str(tmp_path)], capsys)
    assert code == 0
    assert (
        "replayed 8 episodes: 8 reproduce every reference score, 0 differ, 0 had no reference "
        "scores (replayed and scored); prompts not compared (pass --resources" in out
    )


def test_a_changed_recorded_score_is_caught(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The comparison can fail: alter one recorded score and the replay must say so."""
    source = tmp_path / "records"
    shutil.copytree(SHARED_RECORDS, source)
    scores_path = next(source.glob(f"{GPT4O}/privateshared/*/episode_0/scores.json"))
    scores = json.loads(scores_path.read_text())
    scores["episode scores"]["Kappa"] = 0.61
    scores["turn scores"]["3"]["Accuracy"] = 0.8
    scores_path.write_text(json.dumps(scores))
    code, out = replay([str(source), "--results-dir", str(tmp_path / "out")], capsys)
    assert code == 1
    assert "Kappa: recorded 0.61, ours 0.6" in out
    assert "round 3 Accuracy: recorded 0.8, ours 0.6" in out
    assert "7 reproduce every reference score, 1 differ" in out


def tamper(requests_path: Path, entry: int, old: str, new: str) -> None:
    """Change the last message of one recorded prompt, in whichever shape it is recorded."""
    calls = json.loads(requests_path.read_text())
    prompt = calls[entry]["manipulated_prompt_obj"]
    if isinstance(prompt, dict):  # a chat template applied: one string
        assert old in prompt["inputs"]
        prompt["inputs"] = prompt["inputs"].replace(old, new)
    else:
        assert old in prompt[-1]["content"]
        prompt[-1]["content"] = prompt[-1]["content"].replace(old, new)
    requests_path.write_text(json.dumps(calls))


@pytest.mark.parametrize(
    ("root", "pair", "entry", "old", "new"),
    [
        (SHARED_RECORDS, GPT4O, 3, "ME:  ", "ME: "),  # a message list: one space less
        (SHARED_NEWER_RECORDS, OLMO, 2, "wish to travel", "want to travel"),  # a template
    ],
    ids=["message-list", "chat-template"],
)
def test_a_changed_recorded_message_is_caught(
    root: Path, pair: str, entry: int, old: str, new: str, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    source = tmp_path / "records"
    shutil.copytree(root / pair, source / pair)
    requests_path = next(source.glob(f"{pair}/privateshared/0_*/episode_0/requests.json"))
    tamper(requests_path, entry, old, new)
    code, out = replay(
        [str(source), "--results-dir", str(tmp_path / "out"), "--resources", str(SHARED_RESOURCES)],
        capsys,
    )
    assert code == 1
    [report] = [line for line in out.splitlines() if line.startswith("    prompts:")]
    assert f"requests.json entry {entry} " in report
    assert repr(new)[1:-1] in report and repr(old)[1:-1] in report  # both texts, quoted
    assert "1 differ" in out


def test_a_mixed_folder_replays_every_episode_and_counts_them_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both layouts in one folder, an episode without scores.json and a file in neither layout:
    every readable episode is replayed and scored, and eval tabulates them."""
    source = tmp_path / "records"
    for root in ROOTS:
        for pair in root.iterdir():
            if pair.is_dir():
                shutil.copytree(pair, source / pair.name)
    unscored = source / "copy-t0.0--copy-t0.0" / "privateshared" / "0_travel-booking"
    shutil.copytree(
        next(source.glob(f"{GPT4O}/privateshared/0_*/episode_0")), unscored / "episode_0"
    )
    (unscored / "episode_0" / "scores.json").unlink()
    broken = (
        source / "broken-t0.0--broken-t0.0" / "privateshared" / "0_travel-booking" / "episode_1"
    )
    broken.mkdir(parents=True)
    (broken / "interactions.json").write_text('{"players": {}, "turns": []}')

    results = tmp_path / "out"
    argv = [str(source), "--results-dir", str(results), "--resources", str(SHARED_RESOURCES)]
    code, out = replay(argv, capsys)
    assert code == 1  # the broken file
    assert (
        "replayed 11 episodes: 10 reproduce every reference score, 0 differ, 1 had no reference "
        "scores (replayed and scored); 1 could not be replayed; answerer prompts identical in 7 "
        "of 7 episodes with recorded prompts" in out
    )
    [line] = [line for line in out.splitlines() if "NOT REPLAYED" in line]
    assert str(broken / "interactions.json") in line and "'probes'" in line
    assert "no reference scores; replayed and scored, Main Score 75.00" in out
    assert len(list(results.glob("*/privateshared/*/episode_*/scores.json"))) == 11

    # eval over the replayed folder: clembench's per-model figures for those records.
    assert main(["eval", str(results)]) == 0
    models = {
        row["model"]: row for row in json.loads((results / "results.json").read_text())["models"]
    }
    for pair in {e.relative.parts[0] for e in EPISODES}:
        reference = [
            json.loads(path.read_text())["episode scores"]
            for root in ROOTS
            for path in (root / pair).glob("privateshared/*/episode_*/scores.json")
        ]
        played = [scores[MAIN_SCORE] for scores in reference if not scores["Aborted"]]
        assert models[pair]["played"] == len(played)
        assert models[pair]["questioner"] == "programmatic"  # from the experiment.json written
        if played:
            assert models[pair]["quality_score"] == pytest.approx(sum(played) / len(played))


def recorded_replies(episode: Path) -> dict[str, str]:
    """Each recorded answerer prompt (its messages as JSON) -> what the model replied to it."""
    interactions = read_interactions(episode / "interactions.json")
    said = {
        event.timestamp: str(event.action.content)
        for turn in interactions.turns
        for event in turn
        if event.sender == ANSWERER
    }
    return {
        json.dumps(prompt_messages(call.manipulated_prompt_obj)): said[call.timestamp]
        for _, call in answerer_calls(interactions, read_requests(episode / "requests.json"))
    }


def test_playing_clembench_instances_sends_clembenchs_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Play clembench's travel-booking instances with clembench's texts against an endpoint
    that answers the recorded prompts of gpt-4o's episode 0 as gpt-4o did (and every other
    prompt as a perfect answerer): every prompt of that episode is the recorded one, byte for
    byte, and the episode scores what clembench scored."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    recorded = next(SHARED_RECORDS.glob(f"{GPT4O}/privateshared/0_travel-booking/episode_0"))
    replies = recorded_replies(recorded)
    clembench = playable_instances(read_instances(INSTANCES), {}, SHARED_RESOURCES)
    perfect = answerer_for(*(i for _, _, instances in clembench for i in instances))

    def reply(messages: list[dict[str, Any]]) -> str:
        key = json.dumps([(m["role"], m["content"]) for m in messages])
        return replies[key] if key in replies else str(perfect(messages))

    results = tmp_path / "records"
    with FakeOpenAI(reply, models=["fake-model"]) as server:
        code = main([
            "run", "--model", "fake-model", "--base-url", server.base_url, "--experiment",
            "travel-booking", "--instances", str(INSTANCES), "--resources", str(SHARED_RESOURCES),
            "--results-dir", str(results), "--sequential-probes",
        ])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    sent = [
        [(m["role"], m["content"]) for m in request["body"]["messages"]]
        for request in server.requests
    ]
    first_prompt = json.loads(next(iter(replies)))[0][1]
    episode = [messages for messages in sent if messages[0][1] == first_prompt]
    assert [json.dumps(messages) for messages in episode] == list(replies)  # every byte, in order
    probes = [messages[-1][1] for messages in sent if messages[-1][1].startswith("ME:")]
    assert probes and all(probe.startswith("ME:  ") for probe in probes)  # clembench's two spaces
    ours = json.loads(
        next(
            results.glob("fake-model*/privateshared/0_travel-booking/episode_0/scores.json")
        ).read_text()
    )["episode scores"]
    theirs = json.loads((recorded / "scores.json").read_text())["episode scores"]
    assert {name: ours[name] for name in theirs} == theirs


def test_our_own_domains_keep_one_space() -> None:
    """Our texts are ours: the first try of a probe reads `ME: <question>`, one space."""
    instance = default_instance("travel-booking", 0)
    question = next(iter(instance.probes[0].values()))
    assert instance.probe_wording.message(question, 1) == (
        f"ME: {question} Answer this question with yes or no and then stop."
    )
    clembench = playable_instances(read_instances(INSTANCES), load_domains(), SHARED_RESOURCES)
    assert all(
        instance.probe_wording.message("Q?", 1) == "ME:  Q? Answer this question with yes or no "
        "and then stop."
        for _, _, instances in clembench
        for instance in instances
    )


def test_outcome_verdicts() -> None:
    episode = EPISODES[0]
    assert ReplayOutcome(episode).verdict == "reproduced"
    assert ReplayOutcome(episode, reference_scores=False).verdict == "unreferenced"
    assert ReplayOutcome(episode, differences=["x"], reference_scores=False).verdict == "differs"
    assert ReplayOutcome(episode, problem="unreadable").verdict == "unreadable"


def test_later_clemcore_layout_replays(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Later clemcore versions (as clemcore 3.4.2 writes them, seen here) name episode folders
    `<experiment>/instance_<00000>`, describe players as objects, log no probe events and keep
    the answerer's calls in `player_1.requests.json`. A published newer-layout episode turned
    into that layout still replays to its scores and prompts."""
    source = next(SHARED_NEWER_RECORDS.glob(f"{OLMO}/privateshared/0_travel-booking/episode_0"))
    target = tmp_path / "runs" / "OLMo-t0.0" / "privateshared" / "travel-booking" / "instance_00000"
    target.mkdir(parents=True)
    interactions = json.loads((source / "interactions.json").read_text())
    interactions["players"] = {
        "GM": {"game_role": "Game Master", "model_name": "programmatic"},
        "Player 1": {"game_role": "Answerer", "model_name": "OLMo-2-1124-13B-Instruct"},
        "Player 2": {"game_role": "Questioner", "model_name": "programmatic"},
    }
    interactions["turns"] = [
        [e for e in turn if e["action"].get("label") != "forget"] for turn in interactions["turns"]
    ]
    (target / "interactions.json").write_text(json.dumps(interactions))
    shutil.copy(source / "scores.json", target / "scores.json")
    recorded = read_interactions(source / "interactions.json")
    calls = answerer_calls(recorded, read_requests(source / "requests.json"))
    (target / "player_1.requests.json").write_text(json.dumps({
        "meta": {"player_name": "Player 1", "game_role": "Answerer"},
        "calls": [{"round": 0, "call": call.model_dump(mode="json")} for _, call in calls],
    }))  # fmt: skip
    code, out = replay(
        [str(tmp_path / "runs"), "--results-dir", str(tmp_path / "out"), "--resources",
         str(SHARED_RESOURCES)], capsys,
    )  # fmt: skip
    assert code == 0, out
    assert "every reference score reproduced; every answerer message identical (6 calls)" in out
    # Written as a run lays out its episodes (travel-booking is experiment 0 of the instances
    # file), so eval reads it.
    written = tmp_path / "out" / "OLMo-t0.0" / "privateshared" / "0_travel-booking" / "episode_0"
    assert (written / "scores.json").is_file()
    assert main(["eval", str(tmp_path / "out")]) == 0
    assert "OLMo-t0.0 " in capsys.readouterr().out


def test_replay_of_a_folder_above_the_runs_then_eval_works_as_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """clembench-records holds its runs under v2.0/ and v2.0-newformat/: the replay leaves those
    folders out of its records, so that the eval command it prints tabulates every model."""
    results = tmp_path / "replayed"
    code, out = replay([str(SHARED_RECORDS.parent), "--results-dir", str(results)], capsys)
    assert code == 0, out
    assert "v2.0/" + GPT4O in out  # each episode is still named as found
    assert sorted(path.name for path in results.iterdir()) == sorted(
        {e.relative.parts[0] for e in EPISODES}
    )
    (command,) = [line for line in out.splitlines() if line.startswith("tables: ")]
    assert command == f"tables: privateshared eval {results}"
    assert main(command.removeprefix("tables: privateshared ").split()) == 0
    models = json.loads((results / "results.json").read_text())["models"]
    assert len(models) == 9 and sum(row["episodes"] for row in models) == 10


def test_two_sources_of_one_episode_are_refused_before_replaying(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two runs of one pair, kept apart only by the folders above them, would be replayed into
    one episode folder: the replay says so and writes nothing."""
    for run in ("v1", "v2"):
        shutil.copytree(SHARED_RECORDS / GPT4O, tmp_path / "runs" / run / GPT4O)
    results = tmp_path / "replayed"
    code = main(["replay", str(tmp_path / "runs"), "--instances", str(INSTANCES),
                 "--results-dir", str(results)])  # fmt: skip
    assert code == 2
    error = capsys.readouterr().err
    assert "would both be replayed into" in error and "its own --results-dir" in error
    assert not results.exists()


def test_eval_of_replayed_records_shows_intervals_beside_clembenchs_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The documented replay of both layouts into one folder, then `eval`: each model's row keeps
    clembench's Quality Score (std) and gains Wilson's interval of its % Played; the row over
    all models, 5 played of 10, gains bootstrap intervals around its Quality Score and
    clemscore; clembench's results.csv has its columns and no others."""
    results = tmp_path / "replayed"
    for root in ROOTS:
        argv = [str(root), "--results-dir", str(results), "--resources", str(SHARED_RESOURCES)]
        assert replay(argv, capsys)[0] == 0
    assert main(["eval", str(results)]) == 0
    printed = capsys.readouterr().out
    saved = json.loads((results / "results.json").read_text())
    markdown = (results / "results.md").read_text().splitlines()
    for row in saved["models"]:
        played, decided = row["played"], row["played"] + row["aborted"]
        low, high = (100 * end for end in wilson_interval(played, decided))
        assert row["played_ci95"] == pytest.approx([low, high])
        # In the terminal, the model's last line (its headline row): % Played, then the interval.
        *_, line = [line for line in printed.splitlines() if line.startswith(f"{row['model']} ")]
        assert f"{row['percent_played']:.1f} [{low:.1f}, {high:.1f}]" in line
    overall = saved["overall"]
    assert (overall["played"], overall["aborted"]) == (5, 5)
    # The per-model table's last row (the questioner's table, further down, has one too).
    all_row = next(line for line in markdown if line.startswith("| all |"))
    cells = [cell.strip() for cell in all_row.strip("|").split("|")]
    # clembench's Quality Score (std), then our interval beside it.
    quality = f"{overall['quality_score']:.2f} ± {overall['quality_score_std']:.2f}"
    assert cells[8] == quality == "81.65 ± 13.37"
    low, high = overall["quality_score_ci95"]
    assert cells[9] == f"[{low:.2f}, {high:.2f}]" and low < 81.65 < high
    low, high = overall["clemscore_ci95"]
    assert low < overall["clemscore"] < high
    assert (results / "results.csv").read_text().splitlines()[0] == (
        ',"-, clemscore","all, Average % Played","all, Average Quality Score",'
        '"privateshared, % Played","privateshared, Quality Score"'
    )
