"""Complexity fits that never contradict their data (issue 28 §1): the repros and the slope rule."""

from __future__ import annotations

import re

import numpy as np
import pytest

from perflab.analyze.fit.models import breakeven_from_points, fit_complexity
from perflab.analyze.fit.models.slope import class_exponent, loglog_slope
from perflab.report.fit_table import breakeven_table, complexity_table

#: Four sizes, the docs' layout; ~35× from the second to the fourth, the smallest noisy.
N4 = np.array([10, 100, 1000, 10000], dtype=float)
COST4 = np.array([80e-6, 43e-6, 200e-6, 1.5e-3])
SE4 = np.array([40e-6, 2e-6, 10e-6, 60e-6])
#: Five sizes rising 335× (the smallest noisy again).
N5 = np.array([10, 100, 1000, 10000, 100000], dtype=float)
COST5 = np.array([9e-6, 4.5e-6, 2e-5, 1.6e-4, 1.5e-3])
NEGATIVE_DELTA = re.compile(r"Δ\w* = [-−]")


class _Series:
    def __init__(self, name: str) -> None:
        self.name, self.param, self.cold_se, self.notes = name, "n", 0.0, ()


def test_repro_four_sizes_without_ses_is_never_o1_best() -> None:
    """Before: "best O(1) … R² 0.0000", "does not grow measurably", "ΔAIC = −3.0, ruled out"."""
    fit = fit_complexity(N4, COST4)
    assert not (fit.verdict == "fits" and fit.model == "O(1)")
    assert fit.model != "O(1)"
    text = fit.reading()
    assert "does not grow measurably" not in text and not NEGATIVE_DELTA.search(text)
    assert "overall the cost may grow (or not) roughly as n^0.4 (99% CI −1.4 to 2.3)" in text
    table = complexity_table([(_Series("four"), fit)])
    assert table.rows[0][1] != "best"


def test_repro_four_sizes_with_ses_rule_o1_out() -> None:
    """The costs from n = 100 to 10,000 are apart far beyond their CIs: not O(1)."""
    fit = fit_complexity(N4, COST4, SE4)
    assert "O(1)" in fit.contradicted and "standard errors apart" in fit.contradicted["O(1)"]
    assert (fit.verdict, fit.tied) == ("tied", ("O(n)", "O(n log n)"))
    assert fit.reading().startswith("cost grows as O(n) or O(n log n): the data cannot tell")


def test_repro_five_sizes_rising_335x_is_not_tied_o1() -> None:
    """Before: "tied O(1)" first, for costs rising 335×."""
    fit = fit_complexity(N5, COST5)
    assert fit.model != "O(1)" and not fit.reading().startswith("cost may not grow")
    with_se = fit_complexity(N5, COST5, 0.05 * COST5)
    assert "O(1)" in with_se.contradicted and with_se.model != "O(1)"
    assert "leaving out n = 10, 17× the others' line" in with_se.reading()


def test_repro_breakeven_never_shows_o1_for_a_growing_series() -> None:
    """Before: "O(1) … 4.14 µs" for a series measured at 1.5 ms at its largest size."""
    flat = np.array([300e-6, 310e-6, 320e-6, 400e-6])
    result = breakeven_from_points(
        N4, COST4, N4, flat, se_a=SE4, se_b=0.03 * flat, labels=("A", "B")
    )
    table = breakeven_table(_Series("A"), _Series("B"), result)
    assert not table.rows[0][1].startswith("O(1)")
    assert result.fit_a.model != "O(1)"


def test_a_negative_delta_is_never_quoted_and_the_table_explains_the_sign() -> None:
    rng = np.random.default_rng(0)
    for _ in range(50):
        n = np.geomspace(10, 10 ** rng.uniform(2, 6), int(rng.integers(4, 9)))
        cost = 1e-6 * n ** rng.uniform(0, 2) * np.exp(0.1 * rng.standard_normal(n.size))
        assert not NEGATIVE_DELTA.search(fit_complexity(n, cost).reading())
    table = complexity_table([(_Series("four"), fit_complexity(N4, COST4))])
    assert any("negative Δ" in f for f in table.footnotes)


def test_the_slope_rule_names_the_classes_its_ci_admits() -> None:
    n = np.geomspace(100, 1e6, 5)
    slope = loglog_slope(n, 3e-8 * n * np.exp(0.02 * np.array([1, -1, 0.5, -0.5, 0])))
    assert slope.words().startswith("grows roughly as n^1.0 (99% CI ")
    assert "O(n)" in slope.admitted and "O(n^2)" not in slope.admitted
    assert slope.grows and "O(1)" in slope.too_slow and "O(log n)" in slope.too_slow
    assert class_exponent("O(n^2)", n) == 2.0 and class_exponent("O(1)", n) == 0.0
    assert 1.0 < class_exponent("O(n log n)", n) < 1.3


def test_a_ci_between_two_classes_names_both() -> None:
    n = np.geomspace(10, 1e4, 6)
    cost = 1e-6 * n**0.6 * np.exp(0.005 * np.array([1, -1, 0, 1, -1, 0]))
    assert loglog_slope(n, cost).words().endswith(": between O(log n) and O(n)")


def test_the_slope_leaves_out_one_point_only_when_it_breaks_the_order() -> None:
    n = np.geomspace(10, 1e5, 5)
    bent = 2e-6 + 5e-8 * n  # a constant term bends the curve: not an outlier
    assert loglog_slope(n, bent, 0.01 * bent).left_out is None
    assert loglog_slope(N5, COST5, 0.05 * COST5).left_out == 10.0


def test_a_fitted_curve_missing_a_point_beyond_its_ci_is_not_best() -> None:
    n = np.geomspace(100, 1e6, 7)
    cost = 2e-6 + 5e-8 * n
    cost[3] *= 1.25  # 25% off, 25 SEs: beyond the CI plus the 10% tolerance
    fit = fit_complexity(n, cost, 0.01 * cost)
    assert fit.verdict == "none" and "misses n = 10,000 by +17%" in fit.reading()


@pytest.mark.parametrize("k", [4, 5, 6, 8])
def test_a_clean_constant_stays_o1(k: int) -> None:
    n = np.geomspace(10, 1e6, k)
    cost = 1e-6 * np.exp(0.01 * np.sin(np.arange(k)))
    fit = fit_complexity(n, cost, 0.01 * cost)
    assert (fit.verdict, fit.model) == ("fits", "O(1)")
