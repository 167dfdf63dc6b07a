"""A model played guided and unguided, side by side: how much of its loss is format.

A guided model (agents/guided.py) is its own condition, with its own folder and rows
(`NAME-guided`), never averaged with the same model unguided. Where a results folder holds both,
results.md sets them side by side: the unguided row is the model as clembench plays it, the
guided row the same model with its replies held to the game's format, so an abort there is no
longer the format's. % Played lost unguided is what the format cost; the guided Quality Score
is what the model's scorekeeping (and its slot filling) earns on its own.
"""

from __future__ import annotations

from privateshared.agents.guided import GUIDED_SUFFIX
from privateshared.bench.reporting.cells import fixed, markdown_table
from privateshared.bench.reporting.evaluate import Aggregate, Evaluation


def unguided_folder(folder: str) -> str:
    """The pair folder of the same players unguided, e.g. `smollm2-t0.0--smollm2-t0.0` for
    `smollm2-guided-t0.0--smollm2-guided-t0.0`."""
    return folder.replace(f"{GUIDED_SUFFIX}-t", "-t")


def guided_pairs(evaluation: Evaluation) -> list[tuple[Aggregate, Aggregate]]:
    """(unguided, guided) per-model rows of every model the evaluation holds both ways."""
    guided = sorted({episode.model for episode in evaluation.episodes if episode.guided})
    rows = {row.model: row for row in evaluation.models}
    return [
        (rows[unguided_folder(model)], rows[model])
        for model in guided
        if unguided_folder(model) in rows and unguided_folder(model) != model
    ]


def guided_section(evaluation: Evaluation) -> str | None:
    """results.md's section on models played both ways; None when there are none."""
    pairs = guided_pairs(evaluation)
    if not pairs:
        return None

    def cells(row: Aggregate, condition: str) -> list[str]:
        return [
            row.model, condition, str(row.played + row.aborted), str(row.aborted),
            fixed(row.percent_played, 1), fixed(row.quality_score, 2), fixed(row.clemscore, 2),
        ]  # fmt: skip

    table = markdown_table(
        ["model", "condition", "episodes", "aborted", "% Played", "Quality Score", "clemscore"],
        [row for plain, held in pairs for row in (cells(plain, "unguided"), cells(held, "guided"))],
        left=2,
    )
    return (
        "## Format and scorekeeping\n\nModels played both ways: unguided, as clembench plays "
        "them, and guided, their replies held by the server to the game's format (a probe's "
        "reply can only be `ASIDE: yes` or `ASIDE: no`, an answer is one `ANSWER:` line, and "
        "what they say is the model's own choice). An abort is a format error, so the % Played "
        "lost unguided is what the format cost; the guided Quality Score is what the model's "
        "scorekeeping and slot filling earn on their own.\n\n" + table
    )
