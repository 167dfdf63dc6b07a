"""Tokens and cost as table cells: the tables of what a run's model calls used and cost.

evaluate.py sums each episode's usage.json (every seat's calls) per model, per model and
experiment, and over the run, errored episodes included (their calls were made and billed), and
prices them where experiment.json records a price. Here those sums become cells. A model whose
calls reported no usage (a program, a person, a server that does not count) says so instead of
showing 0, and a count no call reported (cached or reasoning tokens) says `not reported`; the
cost column appears only when some model has a price, and never guesses one that has none.
"""

from __future__ import annotations

from privateshared.bench.reporting.cells import aligned, markdown_table
from privateshared.bench.reporting.evaluate import Aggregate, Evaluation

NO_USAGE = "no usage reported"
"""A row whose calls reported no usage: not 0 tokens, but none counted."""
NOT_REPORTED = "not reported"
"""A count (cached, reasoning) that no call of the row reported."""
NO_PRICE = "no price"
"""The cost of a row whose tokens have no price to count them at."""

USAGE_COLUMNS = ["prompt tokens", "completion tokens", "cached tokens", "reasoning tokens"]
COST_COLUMN = "cost (USD)"


def has_usage(evaluation: Evaluation) -> bool:
    """Whether any call of the evaluation's episodes reported usage."""
    return evaluation.overall.prompt_tokens is not None


def has_cost(evaluation: Evaluation) -> bool:
    """Whether any episode was priced (a model with a price played it)."""
    return any(episode.cost_usd is not None for episode in evaluation.episodes)


def cost_cell(value: float | None) -> str:
    """US dollars to four decimals (a cent is often more than an episode costs)."""
    return NO_PRICE if value is None else f"{value:.4f}"


def usage_cells(row: Aggregate, priced: bool) -> list[str]:
    """The cells of `USAGE_COLUMNS` (and of the cost column when `priced`)."""
    if row.prompt_tokens is None:
        return [NO_USAGE, *[""] * (len(USAGE_COLUMNS) - 1), *([""] if priced else [])]
    counts = [row.prompt_tokens, row.completion_tokens, row.cached_tokens, row.reasoning_tokens]
    cells = [NOT_REPORTED if count is None else f"{count:,}" for count in counts]
    return cells + ([cost_cell(row.cost_usd)] if priced else [])


def usage_section(evaluation: Evaluation) -> str | None:
    """results.md's section on tokens and cost; None when no call reported usage."""
    if not has_usage(evaluation):
        return None
    priced = has_cost(evaluation)
    columns = [*USAGE_COLUMNS, *([COST_COLUMN] if priced else [])]
    rows = (*evaluation.models, evaluation.overall)
    per_model = markdown_table(
        ["model", *columns], [[row.model, *usage_cells(row, priced)] for row in rows]
    )
    per_experiment = markdown_table(
        ["model", "experiment", *columns],
        [[row.model, row.experiment or "", *usage_cells(row, priced)]
         for row in evaluation.experiments],
        left=2,
    )  # fmt: skip
    cost = (
        " The cost is at the prices experiment.json records for each seat's model (US dollars "
        "per million tokens, cached prompt tokens at their own price where one is given, "
        f"reasoning tokens as output); `{NO_PRICE}` where a model that used tokens has none."
        if priced
        else " No model has a price (a registry entry's `price:`), so no cost is shown."
    )
    return (
        "## Tokens and cost\n\nWhat every seat's calls used (answerer, questioner and judge "
        "together), as their endpoints reported it, summed over all episodes, errored ones "
        "included (their calls were made). Cached tokens are part of the prompt tokens and "
        "reasoning tokens part of the completion tokens, as OpenAI counts them; "
        f"`{NO_USAGE}` where no call of the row reported usage, never 0.{cost}\n\n"
        f"{per_model}\n\n{per_experiment}"
    )


def usage_lines(evaluation: Evaluation) -> list[str]:
    """The terminal's tokens table, per model and over every model (the run); none when no
    call reported usage."""
    if not has_usage(evaluation):
        return []
    priced = has_cost(evaluation)
    header = ["model", "prompt tokens", "completion", "cached", "reasoning",
              *(["cost usd"] if priced else [])]  # fmt: skip
    rows = [[row.model, *usage_cells(row, priced)]
            for row in (*evaluation.models, evaluation.overall)]  # fmt: skip
    return aligned(header, rows)
