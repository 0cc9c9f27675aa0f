"""A neutral table model built from summaries, rendered by the console, Markdown and CSV writers.

Building the cells once and rendering them three ways keeps the formats
identical in content (hyperfine's exporters share one result type the same way).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from perflab.units import WIDE_CI, ci_width, format_time, significant

#: Column fold ranks (:attr:`Table.fold`): KEY columns (what identifies a row, and the
#: headline figure with its unit and CI) always show; NOTE columns always show too and
#: wrap into the room the others leave; a rank n ≥ 1 folds away n-th when the terminal is
#: too narrow (1 first). The console names the folded columns under the table.
KEY = 0
NOTE = -1


@dataclass
class Table:
    """A rendered-agnostic table.

    Attributes:
        title: shown above the table.
        columns: header cells.
        rows: body cells (strings), one list per row.
        align: "l" or "r" per column.
        footnotes: plain-words lines shown under the table.
        fold: per column, :data:`KEY`, :data:`NOTE` or the rank n ≥ 1 in which it folds
            away on a narrow terminal; empty: every column is KEY.
    """

    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    align: list[str] = field(default_factory=list)
    footnotes: list[str] = field(default_factory=list)
    fold: list[int] = field(default_factory=list)


#: a CI is printed as "low–high" instead of "± x%" when its two sides differ by more
#: than this fraction of the whole interval and by more than ASYMMETRY_FLOOR of the value
ASYMMETRY = 0.25
ASYMMETRY_FLOOR = 0.005


def estimate_cell(value: float, low: float, high: float, fmt: Any = format_time) -> str:
    """A value with its CI: ``1.23 ms ± 0.8%``; ``663 ns −12% +1,080%`` when the
    CI is asymmetric (a "±" would hide that one side is far longer than the other;
    two times with their units read slower and take a third more room);
    ``1.02 ms (CI 2,800× wide)`` when its ends are over :data:`WIDE_CI` times apart."""
    if not (math.isfinite(value) and value):
        return "–"
    if low > 0 and math.isfinite(high) and high / low > WIDE_CI:
        return f"{fmt(value)} ({ci_width(high / low)})"
    up, down = high - value, value - low
    if abs(up - down) > ASYMMETRY * (up + down) and abs(up - down) > ASYMMETRY_FLOOR * value:
        return f"{fmt(value)} −{_percent(down / value)} +{_percent(up / value)}"
    return f"{fmt(value)} ± {(high - low) / 2 / value:.1%}"


def _percent(fraction: float) -> str:
    """A CI's side as a percentage of the value: "4.2%", "73%", "1,080%" (2 significant
    digits, whole numbers from 100%)."""
    percent = abs(fraction) * 100
    return f"{percent:,.0f}%" if percent >= 99.5 else f"{significant(percent, 2)}%"
