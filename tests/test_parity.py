"""Parity with the reference: replaying real clembench 2.0 records reproduces their scores.

The records are read from ../shared/clembench-records (never copied into the repository); the
tests skip when that folder is absent.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from privateshared.bench.cli import main
from privateshared.bench.replay import RecordedEpisode, find_recorded_episodes, replay_episode
from privateshared.domains.instances import read_instances
from privateshared.graph.records import Interactions
from tests.conftest import SHARED_RECORDS

pytestmark = pytest.mark.skipif(
    not SHARED_RECORDS.is_dir(), reason="../shared/clembench-records is not on this machine"
)

EPISODES = list(find_recorded_episodes(SHARED_RECORDS)) if SHARED_RECORDS.is_dir() else []


def test_the_records_cover_every_case() -> None:
    assert len(EPISODES) == 8
    assert {episode.experiment for episode in EPISODES} == {
        "travel-booking", "job-interview", "restaurant",
    }  # fmt: skip


@pytest.mark.parametrize("episode", EPISODES, ids=[str(e.relative.parts[0]) for e in EPISODES])
async def test_replay_reproduces_every_score_and_probe(
    episode: RecordedEpisode, tmp_path: Path
) -> None:
    instances = read_instances(SHARED_RECORDS / "instances.json")
    outcome = await replay_episode(episode, instances, tmp_path)
    assert outcome.differences == []
    ours = tmp_path / episode.relative
    assert sorted(path.name for path in ours.iterdir()) == [
        "instance.json", "interactions.json", "requests.json", "scores.json",
    ]  # fmt: skip
    # The replay really spoke with the recorded voice: same answers, same number of calls.
    recorded = Interactions.model_validate_json((episode.folder / "interactions.json").read_text())
    replayed = Interactions.model_validate_json((ours / "interactions.json").read_text())

    def answers(interactions: Interactions) -> list[str]:
        return [
            str(event.action.content)
            for turn in interactions.turns
            for event in turn
            if event.sender == "Player 1"
        ]

    assert answers(replayed) == answers(recorded)
    assert replayed.request_count == recorded.request_count
    calls = json.loads((ours / "requests.json").read_text())
    assert len(calls) == sum(recorded.request_count)


def test_replay_command_reports_every_episode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main([
        "replay", str(SHARED_RECORDS), "--instances", str(SHARED_RECORDS / "instances.json"),
        "--results-dir", str(tmp_path / "out"),
    ])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    assert "replayed 8 episodes: 8 reproduce every recorded score, 0 differ" in out


def test_a_changed_recorded_score_is_caught(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The comparison can fail: alter one recorded score and the replay must say so."""
    source = tmp_path / "records"
    shutil.copytree(SHARED_RECORDS, source)
    scores_path = next(source.glob("gpt-4o*/privateshared/*/episode_0/scores.json"))
    scores = json.loads(scores_path.read_text())
    scores["episode scores"]["Kappa"] = 0.61
    scores["turn scores"]["3"]["Accuracy"] = 0.8
    scores_path.write_text(json.dumps(scores))
    code = main([
        "replay", str(source), "--instances", str(source / "instances.json"),
        "--results-dir", str(tmp_path / "out"),
    ])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 1
    assert "Kappa: recorded 0.61, ours 0.6" in out
    assert "round 3 Accuracy: recorded 0.8, ours 0.6" in out
    assert "7 reproduce every recorded score, 1 differ" in out
