"""Numbers as table cells, and cells as tables: the text layout results.py and comparisons.py
share, for the terminal (aligned columns) and for results.md (markdown)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from privateshared.bench.reporting.statistics import Interval


def fixed(value: float, digits: int) -> str:
    """e.g. `64.0`; n/a for NaN."""
    return "n/a" if math.isnan(value) else f"{value:.{digits}f}"


def interval_cell(interval: Interval, digits: int) -> str:
    """e.g. `[50.1, 75.9]`; n/a where there is no interval."""
    low, high = interval
    return "n/a" if math.isnan(low) else f"[{low:.{digits}f}, {high:.{digits}f}]"


def p_cell(value: float) -> str:
    """A p-value to three decimals, `< 0.001` below that; n/a for NaN."""
    if math.isnan(value):
        return "n/a"
    return "< 0.001" if value < 0.001 else f"{value:.3f}"


def aligned(header: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1) -> list[str]:
    """Columns padded to their widest cell: the first `left` to the left, the rest right."""
    widths = [max(len(line[i]) for line in (header, *rows)) for i in range(len(header))]
    return [
        "  ".join(
            cell.ljust(width) if i < left else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(line, widths, strict=True))
        ).rstrip()
        for line in (header, *rows)
    ]


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[str]], left: int = 1) -> str:
    """A markdown table, the first `left` columns aligned left, the rest right."""
    rule = ["---" if i < left else "--:" for i in range(len(header))]
    return "\n".join(f"| {' | '.join(line)} |" for line in (header, rule, *rows))
