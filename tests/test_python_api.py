"""`run_benchmark` and `arun_benchmark`: a whole run from Python, its evaluation returned as data
(the documentation's examples run it as pasted, in tests/test_docs.py; here its edges)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from privateshared.agents import OracleAnswerer
from privateshared.bench import arun_benchmark, run_benchmark
from privateshared.bench.running.benchmark import ExperimentError


def test_it_returns_the_evaluation_of_the_episodes_it_played(tmp_path: Path) -> None:
    evaluation = run_benchmark(
        [OracleAnswerer(), "mock:3"], experiments=["restaurant"], results_dir=tmp_path
    )
    assert [row.model for row in evaluation.models] == [
        "mock-s3-t0.0--mock-s3-t0.0", "oracle-t0.0--oracle-t0.0",
    ]  # fmt: skip
    assert len(evaluation.episodes) == 20
    oracle = evaluation.models[1]
    assert (oracle.played, oracle.quality_score) == (10, 100.0)
    # Records as a run writes them: a second call plays nothing and reads the same back.
    scores = sorted(tmp_path.glob("*/privateshared/2_restaurant/episode_*/scores.json"))
    assert len(scores) == 20
    stamps = [path.stat().st_mtime_ns for path in scores]
    again = run_benchmark([OracleAnswerer(), "mock:3"], experiments=["restaurant"],
                          results_dir=tmp_path)  # fmt: skip
    assert again == evaluation
    assert [path.stat().st_mtime_ns for path in scores] == stamps


def test_in_a_running_loop_it_says_to_await_the_other(tmp_path: Path) -> None:
    async def inside() -> float:
        with pytest.raises(RuntimeError, match=r"use `await arun_benchmark\(...\)` there"):
            run_benchmark(["oracle"], results_dir=tmp_path)
        evaluation = await arun_benchmark(
            ["oracle"], experiments=["travel-booking"], results_dir=tmp_path
        )
        return evaluation.overall.quality_score

    assert asyncio.run(inside()) == 100.0


def test_two_benchmarks_are_not_evaluated_as_one(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="call once for each"):
        run_benchmark(["oracle"], experiments=["restaurant", "travel-booking-handover"],
                      results_dir=tmp_path)  # fmt: skip
    with pytest.raises(ExperimentError, match="unknown experiment 'cooking'"):
        run_benchmark(["oracle"], experiments=["cooking"], results_dir=tmp_path)
