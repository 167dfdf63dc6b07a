"""`privateshared eval`, `transcribe` and `score`, and the report every run and game ends with.

The report reads the whole results folder back (reporting/), so it covers every episode there,
also those of earlier runs into the same folder; it says so when this run played only part.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from privateshared.bench.cli.usage import UsageError
from privateshared.bench.defaults import DEFAULT_RESAMPLES
from privateshared.bench.reporting.evaluate import Evaluation, collect, evaluate_benchmarks
from privateshared.bench.reporting.rescore import rescore
from privateshared.bench.reporting.results import format_table, write_results
from privateshared.bench.reporting.transcripts.index import INDEX_FILE, write_transcripts


def report(results_dir: Path, this_run: int | None = None) -> None:
    """Evaluate the results folder, write its tables, plots and transcripts, then print the
    table; `this_run` is how many episodes the run that just ended has (the ones it found done
    included), to say when the folder holds more. Every file is written before anything is
    printed, so a reader that leaves early (`| head`) costs no file."""
    evaluations, written = write_folder_results(results_dir)
    unreadable = write_transcripts(results_dir, stale_only=True).unreadable
    print_results(results_dir, evaluations, written, this_run)
    report_unreadable(unreadable)
    print(f"transcripts: open {results_dir / INDEX_FILE}")


def evaluate_folder(
    results_dir: Path, this_run: int | None = None, resamples: int = DEFAULT_RESAMPLES
) -> tuple[Evaluation, ...]:
    """Evaluate every episode of `results_dir`, each benchmark on its own, with `resamples`
    bootstrap resamples behind every interval, write the result files, print the tables."""
    evaluations, written = write_folder_results(results_dir, resamples)
    print_results(results_dir, evaluations, written, this_run)
    return evaluations


def write_folder_results(
    results_dir: Path, resamples: int = DEFAULT_RESAMPLES
) -> tuple[tuple[Evaluation, ...], list[Path]]:
    """Evaluate every episode of `results_dir` and write the result files; return the
    evaluations and the files written."""
    if not results_dir.is_dir():
        raise UsageError(f"{results_dir}: not a folder; pass a results folder such as records/")
    evaluations = evaluate_benchmarks(collect(results_dir), resamples)
    return evaluations, write_results(results_dir, *evaluations)


def print_results(
    results_dir: Path,
    evaluations: Sequence[Evaluation],
    written: Sequence[Path],
    this_run: int | None,
) -> None:
    """The tables in the terminal, after a note when they cover more than this run."""
    held = sum(evaluation.overall.episodes for evaluation in evaluations)
    if (note := earlier_runs_note(results_dir, held, this_run)) is not None:
        print(note)
    print(format_table(*evaluations))
    print(f"\nresults: {', '.join(path.name for path in written)} in {results_dir}/")


def earlier_runs_note(results_dir: Path, held: int, this_run: int | None) -> str | None:
    """One line saying the tables cover more than this run when the folder holds `held`
    episodes and the run only `this_run`; None when they cover just this run, or no run ended."""
    if this_run is None or held <= this_run:
        return None
    return (
        f"{results_dir}/ holds {held} episodes; the tables cover all of them (this run: "
        f"{this_run}). Pass --results-dir to keep runs apart."
    )


def report_unreadable(lines: Sequence[str]) -> int:
    """One line per record file that could not be read; the exit status says whether any."""
    for line in lines:
        print(f"privateshared: skipped: {line}", file=sys.stderr)
    return 1 if lines else 0


def eval_command(args: argparse.Namespace) -> int:
    evaluate_folder(args.results_dir, resamples=args.resamples)
    return 0


def transcribe_command(args: argparse.Namespace) -> int:
    if not args.results_dir.is_dir():
        raise UsageError(f"{args.results_dir}: not a folder; pass a results folder")
    transcribed = write_transcripts(args.results_dir)
    pages = len(transcribed.written) - 1
    print(f"wrote {pages} transcripts; open {args.results_dir / INDEX_FILE}")
    return report_unreadable(transcribed.unreadable)


def score_command(args: argparse.Namespace) -> int:
    rescored = rescore(args.results_dir)
    print(f"re-scored {len(rescored.episodes)} episodes under {args.results_dir}")
    return report_unreadable(rescored.unreadable)
