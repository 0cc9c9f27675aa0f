"""Which growth class the complexity fit chooses, and when it says it cannot tell (issue 11 §3)."""

from __future__ import annotations

import numpy as np
import pytest

from perflab.analyze.fit.models import fit_complexity
from tests.analyze.cost_trials import TRUE_CLASSES, draw, outcome, study

#: The issue's repro: n,cost of a real benchmark whose cost per n jumps past 10,000.
REPRO_N = np.array([10, 100, 1000, 10000, 100000], dtype=float)
REPRO_COST = np.array([5.65179e-07, 2.71269e-06, 2.04432e-05, 0.000173292, 0.00324726])


def test_repro_is_no_class_fits_never_o1() -> None:
    """Before: O(1) with R² 0.0000 and no warning (AICc's small-sample penalty at k = 5)."""
    fit = fit_complexity(REPRO_N, REPRO_COST)
    assert fit.verdict == "none" and not fit.confident
    assert fit.model == "O(n)" and "O(1)" in fit.contradicted
    assert fit.candidates[-1].model != fit.model
    assert fit.reading().startswith(
        "no class fits these points: O(n), the closest, misses n = 100,000 by +36%"
    )


def test_repro_with_cis_names_the_monotone_rise() -> None:
    fit = fit_complexity(REPRO_N, REPRO_COST, 0.02 * REPRO_COST)
    assert (
        "rise at every step, from 565 ns at n = 10 to 3.25 ms at n = 100,000, beyond "
        "their 95% CIs" in fit.contradicted["O(1)"]
    )
    assert fit.verdict == "none"


def test_costs_rising_within_noise_stay_o1() -> None:
    n = np.geomspace(10, 1e5, 6)
    cost = 1e-6 * np.array([1.0, 1.03, 0.98, 1.02, 0.99, 1.01])
    fit = fit_complexity(n, cost)
    assert (fit.verdict, fit.model) == ("fits", "O(1)")
    assert fit.reading().startswith("cost does not grow measurably with n: 1.00 µs (O(1))")


def test_a_clean_linear_sweep_is_chosen_with_its_formula() -> None:
    n = np.geomspace(100, 1e6, 7)
    fit = fit_complexity(n, 2e-6 + 5e-8 * n, 0.01 * (2e-6 + 5e-8 * n))
    assert (fit.verdict, fit.model, fit.tied) == ("fits", "O(n)", ("O(n)",))
    assert fit.reading().startswith("cost grows as O(n): 2.00 µs + 50.0 ns × n; next best")
    assert "e-0" not in fit.reading()


def test_indistinguishable_classes_are_reported_as_a_tie() -> None:
    """Over a factor of 3 in n with 5% noise, O(n) and O(n log n) look alike."""
    rng = np.random.default_rng(3)
    n = np.linspace(1000, 3000, 5)
    cost = 1e-5 * n * np.log(n) * np.exp(0.05 * rng.standard_normal(n.size))
    fit = fit_complexity(n, cost)
    assert fit.verdict == "tied" and {"O(n)", "O(n log n)"} <= set(fit.tied)
    assert "the data cannot tell them apart" in fit.reading()
    assert any("fit about equally well" in w for w in fit.warnings)


def test_falling_costs_contradict_every_class() -> None:
    n = np.geomspace(10, 1e4, 6)
    fit = fit_complexity(n, 1e-3 / np.log(n), 1e-6 / np.log(n))
    assert fit.verdict == "none"
    assert "contradict every class" in fit.reading()
    assert "cost would fall as n grows" in fit.contradicted["O(n)"]


def test_a_forced_class_that_misses_points_is_no_fit() -> None:
    fit = fit_complexity(REPRO_N, REPRO_COST, models=["O(n^2)"])
    assert fit.verdict == "none" and fit.model == "O(n^2)"


def test_sizes_of_the_study_are_what_the_issue_asks() -> None:
    rng = np.random.default_rng(1)
    for true in TRUE_CLASSES:
        for _ in range(20):
            t = draw(true, rng, known_se=False)
            assert 4 <= t.n.size <= 8 and np.unique(t.n).size == t.n.size
            assert 0.02 <= t.noise <= 0.10
            if true in ("O(n)", "O(n log n)", "O(n^2)"):
                assert 1 <= t.decades <= 6.01
    assert outcome("O(n)", "tied", "O(n log n)", ("O(n log n)", "O(n)")) == "right"
    assert outcome("O(n)", "fits", "O(n log n)", ("O(n log n)",)) == "wrong"
    assert outcome("O(n)", "none", "O(n^2)", ("O(n^2)",), ("O(n)", "O(n log n)")) == "right"
    assert outcome("O(n)", "none", "O(n^2)", ("O(n^2)",), ("O(n^2)",)) == "none"


@pytest.mark.parametrize("outlier", [False, True], ids=["clean", "one outlier point"])
@pytest.mark.parametrize("known_se", [False, True], ids=["costs only", "costs with SEs"])
def test_true_class_or_honest_range_in_95_percent_of_trials(known_se: bool, outlier: bool) -> None:
    """Issues 11 §3 and 28 §1: per class, the truth chosen or named (a tie, or the slope's
    range when no class fits) in ≥ 95% of 100 seeded trials, and never wrong (a wrong
    class chosen, or a tie without the truth): the trials that once were are
    tests/analyze/test_fit_never_wrong.py's.

    benchmarks/fit_confusion.py prints the full matrix over 200 trials.
    """
    results = study(100, known_se, outlier=outlier)
    for true, counts in results.items():
        assert counts["right"] >= 95, (true, counts)
        assert counts["wrong"] == 0, (true, counts)
