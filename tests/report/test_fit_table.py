"""Tables and number words of `perflab fit` (report/fit_table.py, analyze/fit/models/words.py)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from perflab.analyze.fit.models import breakeven_from_points, fit_complexity, fit_usl
from perflab.analyze.fit.models.words import fmt_count, fmt_number, fmt_time, fmt_value
from perflab.report.fit_table import (
    MAX_POINT_ROWS,
    breakeven_points,
    complexity_table,
    usl_points,
    usl_table,
)
from tests.analyze.test_models import load

E_NOTATION = re.compile(r"\d[eE][+-]?\d")


@pytest.mark.parametrize(
    "value, text",
    [
        (0.0277, "0.0277"),
        (1.04e-4, "1.04×10⁻⁴"),
        (9.999e-6, "1.00×10⁻⁵"),
        (4.512e7, "4.51×10⁷"),
        (1234.5, "1,234"),
        (0.99999, "1.00"),
        (float("inf"), "∞"),
        (float("nan"), "–"),
    ],
)
def test_bare_numbers_never_use_e_notation(value: float, text: str) -> None:
    assert fmt_number(value) == text


def test_times_rates_and_counts() -> None:
    assert fmt_time(2.61e-7) == "261 ns" and fmt_time(3.77e-13) == "377 fs"
    assert fmt_value(1.432e5, "/s") == "143 k/s" and fmt_value(3e-3, "s") == "3.00 ms"
    assert fmt_count(31234) == "31,000" and fmt_count(1e10) == "1.0×10¹⁰"


class _Series:
    """The few Series fields the tables read."""

    def __init__(self, name: str, param: str | None = "n", y_unit: str = "s") -> None:
        self.name, self.param, self.y_unit = name, param, y_unit
        self.x_label, self.notes, self.cold_se = "N", (), 0.0


def test_complexity_rows_say_best_tied_or_closest() -> None:
    n = np.array([10, 100, 1000, 10000, 100000], dtype=float)
    repro = np.array([5.65179e-07, 2.71269e-06, 2.04432e-05, 0.000173292, 0.00324726])
    clean = fit_complexity(n, 2e-6 + 5e-8 * n, 0.01 * (2e-6 + 5e-8 * n))
    table = complexity_table(
        [(_Series("repro"), fit_complexity(n, repro)), (_Series("clean"), clean)]
    )
    assert [r[1] for r in table.rows if r[0]] == ["closest", "best"]
    assert "no class fits these points" in table.footnotes[0]
    assert not any(E_NOTATION.search(c) for row in table.rows for c in row)
    assert not any(E_NOTATION.search(f) for f in table.footnotes)


def test_usl_table_has_no_e_notation() -> None:
    fit = fit_usl(*load("specsdm91"), unit="/s")
    table = usl_table(_Series("specsdm91", y_unit="/s"), fit)
    cells = [c for row in table.rows for c in row] + table.footnotes
    assert not any(E_NOTATION.search(c) for c in cells), cells
    assert table.rows[1][1] == "1.04×10⁻⁴"


def test_breakeven_points_mark_the_refuting_size() -> None:
    n = np.array([100, 1000, 1e4, 3e4, 1e5])
    a = np.where(n < 1e5, 10e-6 + 1e-9 * n, 3 * (10e-6 + 1e-9 * n))
    b = 5e-6 + 1.5e-9 * n
    r = breakeven_from_points(n, a, n, b, model="O(n)", se_a=0.02 * a, se_b=0.02 * b)
    table = breakeven_points(r)
    assert table is not None and table.rows[-1] == ["100,000", "330 µs", "155 µs", "B ✗", "A"]


def test_a_points_table_of_a_large_input_shows_a_bounded_spread_of_rows() -> None:
    # a 30 MB CSV of 2 M points printed 2 M rows (about half an hour of formatting)
    n = np.arange(1.0, 5001.0)
    x = 0.9 * n / (1 + 0.01 * (n - 1))
    fit = fit_usl(n, x, unit="/s")
    series = type("S", (), {"name": "big", "x": n, "y": x, "y_unit": "/s", "notes": []})
    table = usl_points(series, fit)
    assert len(table.rows) == MAX_POINT_ROWS
    assert [table.rows[0][0], table.rows[-1][0]] == ["1", "5,000"]  # first and last
    assert table.footnotes == [
        f"{MAX_POINT_ROWS} of 5,000 points shown, evenly spread; "
        'every point is in --json\'s "points"'
    ]
    small = usl_points(
        type("S", (), {"name": "s", "x": n[:9], "y": x[:9], "y_unit": "/s", "notes": []}),
        fit_usl(n[:9], x[:9]),
    )
    assert len(small.rows) == 9 and not small.footnotes
