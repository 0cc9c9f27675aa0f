"""Tests of perflab.analyze.fit.models (USL, complexity, break-even) and its charts.

Published fits: see tests/analyze/data/README.md for every source.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from perflab.analyze.fit.models import (
    COMPLEXITY_MODELS,
    breakeven,
    breakeven_from_points,
    fit_complexity,
    fit_usl,
    littles_law_concurrency,
)

DATA = Path(__file__).parent / "data"
# derandomize: the examples are the same on every run, so a 99% CI that misses
# the truth fails deterministically instead of flaking once in a hundred runs.
PROPERTY = settings(max_examples=25, deadline=None, derandomize=True)


def load(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Two columns of a published dataset in tests/analyze/data."""
    with open(DATA / f"{name}.csv", newline="") as fh:
        rows = list(csv.reader(fh))[1:]
    arr = np.array(rows, dtype=float)
    return arr[:, 0], arr[:, 1]


def close(actual: float, expected: float, rel: float = 0.01) -> bool:
    """Within ``rel`` (1% by default) of the published value."""
    return math.isclose(actual, expected, rel_tol=rel)


# ---------------------------------------------------------------------------
# USL: published fits


def test_specsdm91_matches_r_usl_summary() -> None:
    """smoeding/usl tests/summary.Rout.save (R usl >= 2.0, 3 parameters)."""
    fit = fit_usl(*load("specsdm91"))
    published = {
        "alpha": (0.0277285, 0.0091217),
        "beta": (0.0001044, 0.0000199),
        "gamma": (89.9952330, 14.2134894),
    }
    for name, (value, se) in published.items():
        est = getattr(fit, name)
        assert close(est.value, value), (name, est.value, value)
        assert close(est.se, se), (name, est.se, se)
    assert close(fit.residual_std_error, 82.85) and fit.dof == 4
    assert fit.converged and fit.warnings == ()


def test_specsdm91_residuals_and_peak_match_r_usl() -> None:
    """tests/residuals.Rout.save and tests/peak-scalability.Rout.save of smoeding/usl."""
    fit = fit_usl(*load("specsdm91"))
    published = [-25.10, -81.66, 111.09, 3.05, -49.99, -46.60, 56.00]
    np.testing.assert_allclose(fit.residuals, published, atol=0.01)
    assert round(fit.peak_load, -0) == 97 or f"{fit.peak_load:.2g}" == "97"
    assert (
        fit.reading()
        == "contention ≈ 2.8% of work is serialized; coherency cost dominates past N ≈ 97"
    )


def test_specsdm91_quadratic_matches_r_usl_1x() -> None:
    """tests/t03.Rout.save of smoeding/usl 1.x: Gunther's quadratic transform, γ = X(1)."""
    fit = fit_usl(*load("specsdm91"), method="quadratic")
    assert close(fit.alpha.value, 0.0170) and close(fit.beta.value, 7.89e-5)
    assert fit.gamma.value == 64.9 and fit.gamma.se == 0.0 and fit.dof == 5
    fitted = [64.9, 889.1, 1377.5, 1787.7, 1876.1, 1845.9, 1682.8]
    np.testing.assert_allclose(fit.predict(load("specsdm91")[0]), fitted, atol=0.05)


def test_raytracer_matches_r_usl_coefficients_and_standard_errors() -> None:
    """tests/confint.Rout.save of smoeding/usl: CI there is coef ± SE·qt(0.95, n−1)."""
    n, x = load("raytracer")
    fit = fit_usl(n, x)
    assert close(fit.alpha.value, 0.057771) and close(fit.gamma.value, 21.848843)
    assert fit.beta.value == 0.0
    q = stats.t.ppf(0.95, n.size - 1)
    assert close(fit.alpha.value - q * fit.alpha.se, 0.033677)
    assert close(fit.alpha.value + q * fit.alpha.se, 0.081864)
    assert close(q * fit.beta.se, 0.000214)
    assert close(fit.gamma.value - q * fit.gamma.se, 17.868380)
    assert close(fit.gamma.value + q * fit.gamma.se, 25.829306)


def test_raytracer_reading_and_warnings_without_coherency() -> None:
    fit = fit_usl(*load("raytracer"))
    assert math.isinf(fit.peak_load) and close(fit.amdahl_limit, 21.848843 / 0.057771)
    assert fit.peak_throughput == fit.amdahl_limit
    assert "no coherency cost measured" in fit.reading()
    assert any("CI includes 0" in w for w in fit.warnings)


def test_cisco_matches_usl4j_and_schwartz_book() -> None:
    """codahale/usl4j ModelTest.java: book values, which usl4j meets within 0.02%."""
    fit = fit_usl(*load("cisco"))
    assert close(fit.alpha.value, 0.02671591, 2e-4)
    assert close(fit.beta.value, 7.690945e-4, 2e-4)
    assert close(fit.gamma.value, 995.6486, 2e-4)
    assert close(float(fit.predict(35)), 12341.7456, 2e-4)
    assert int(fit.peak_load) == 35


def test_fixed_gamma_fits_alpha_beta_only() -> None:
    n, x = load("specsdm91")
    fit = fit_usl(n, x, gamma=89.9952330)
    assert fit.gamma.se == 0.0 and fit.dof == 5
    assert close(fit.alpha.value, 0.0277285) and close(fit.beta.value, 0.0001044)


# ---------------------------------------------------------------------------
# USL: synthetic data, warnings, bad input


@PROPERTY
@given(
    alpha=st.floats(0.01, 0.1),
    beta=st.floats(1e-5, 1e-3),
    gamma=st.floats(10.0, 1000.0),
    seed=st.integers(0, 2**32 - 1),
)
def test_usl_recovers_known_coefficients(
    alpha: float, beta: float, gamma: float, seed: int
) -> None:
    """Over 40 noisy replicates the 95% CIs cover the true α, β, γ at least 80% of the time.

    One replicate per example would make a 95% CI miss in about one example
    in twenty by design; coverage over replicates tests the CIs themselves.
    """
    rng = np.random.default_rng(seed)
    peak = math.sqrt((1 - alpha) / beta)
    n = np.unique(np.round(np.geomspace(1, 2.5 * peak, 14)))
    clean = gamma * n / (1 + alpha * (n - 1) + beta * n * (n - 1))
    # constant variance, as least squares assumes; small enough that X(1) stays > 0
    sd = min(0.01 * clean.max(), 0.2 * gamma)
    hits = np.zeros(3)
    for _ in range(40):
        fit = fit_usl(n, clean + sd * rng.standard_normal(n.size))
        assert fit.converged
        hits += [fit.alpha.contains(alpha), fit.beta.contains(beta), fit.gamma.contains(gamma)]
    assert np.all(hits / 40 >= 0.8), hits


def test_usl_band_brackets_fit() -> None:
    fit = fit_usl(*load("specsdm91"))
    grid = np.linspace(1, 300, 50)
    low, high = fit.band(grid)
    assert np.all(low <= fit.predict(grid)) and np.all(fit.predict(grid) <= high)


def test_usl_to_dict_has_cli_keys() -> None:
    d = fit_usl(*load("specsdm91")).to_dict()
    assert {
        "alpha",
        "beta",
        "gamma",
        "peak_load",
        "peak_throughput",
        "amdahl_limit",
        "r_squared",
    } <= d.keys()


def test_usl_warns_with_few_points_and_no_points_past_peak() -> None:
    n = np.array([1.0, 2.0, 4.0])
    fit = fit_usl(n, 100 * n / (1 + 0.05 * (n - 1) + 0.001 * n * (n - 1)))
    assert any("only 3 points" in w for w in fit.warnings)
    assert any("no points past the peak" in w for w in fit.warnings)


def test_usl_non_convergence_is_flagged_not_silent() -> None:
    fit = fit_usl(*load("specsdm91"), max_nfev=1)
    assert fit.converged is False
    assert any("did not converge" in w for w in fit.warnings)
    assert fit.reading().startswith("the fit did not converge")


@pytest.mark.parametrize(
    ("n", "x", "kwargs", "message"),
    [
        ([1, 2, 4], [1, 2], {}, "give one X per N"),
        ([1, 2, float("nan"), 8], [1, 2, 3, 4], {}, "NaN"),
        ([1, 2, 0, 8], [1, 2, 3, 4], {}, "N must be > 0"),
        ([1, 2, 4, 8], [1, -2, 3, 4], {}, "X must be > 0"),
        ([1, 2], [1, 2], {}, "3 parameters but only 2 points"),
        ([4, 4, 4, 4], [1, 2, 3, 4], {}, "distinct"),
        ([[1, 2], [3, 4]], [[1, 2], [3, 4]], {}, "1-D"),
        ([1, 2, 4, 8], [1, 2, 3, 4], {"gamma": -1.0}, "gamma must be"),
        ([2, 4, 8, 16], [1, 2, 3, 4], {"method": "quadratic"}, "no point has N = 1"),
        ([1, 2, 4, 8], [1, 2, 3, 4], {"method": "magic"}, "unknown USL method"),
    ],
)
def test_usl_bad_input_raises_clear_error(n: list, x: list, kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        fit_usl(n, x, **kwargs)


# ---------------------------------------------------------------------------
# complexity


GROWING = [m for m in COMPLEXITY_MODELS if m != "O(1)"]


@PROPERTY
@given(
    model=st.sampled_from(GROWING),
    a=st.floats(0.0, 5.0),
    b=st.floats(0.5, 5.0),
    seed=st.integers(0, 2**32 - 1),
)
def test_complexity_recovers_class_and_coefficients(
    model: str, a: float, b: float, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    n = np.geomspace(2, 2e4, 12)
    scale = 1e-3 / COMPLEXITY_MODELS[model](np.array([2e4]))[0]  # cost up to ~b ms
    clean = (a + b * COMPLEXITY_MODELS[model](n) * scale * 1e3) * 1e-3
    sigma = 0.01 * clean
    fit = fit_complexity(n, clean + sigma * rng.standard_normal(n.size), sigma, level=0.999)
    true = next(c for c in fit.candidates if c.model == model)
    # the true class wins, or ties with the winner (ΔAICc < 2) and the fit says so
    if fit.model != model:
        assert true.score - fit.best.score < 2, fit.reading()
        assert any("fit about equally well" in w for w in fit.warnings)
    assert true.a.contains(a * 1e-3) and true.b.contains(b * scale), (true.a, true.b)


def test_complexity_ci_coverage_is_nominal() -> None:
    """95% CIs of b cover the truth in 92–98% of 400 simulated sweeps.

    The noise is additive (SE 0.05 at every n) and the fit is told so: without
    SEs it assumes relative errors, the right default for timings.
    """
    rng = np.random.default_rng(7)
    n = np.linspace(10, 1000, 8)
    hits = 0
    for _ in range(400):
        cost = 0.5 + 0.002 * n + 0.05 * rng.standard_normal(n.size)
        hits += fit_complexity(n, cost, np.full(n.size, 0.05), models=["O(n)"]).b.contains(0.002)
    assert 0.92 <= hits / 400 <= 0.98


def test_complexity_reports_runner_up_and_band() -> None:
    n = np.geomspace(10, 1e5, 10)
    fit = fit_complexity(n, 1e-3 + 1e-6 * n)
    assert fit.model == "O(n)" and fit.runner_up is not None and fit.delta > 0
    low, high = fit.band([10, 1e6])
    assert low.shape == (2,) and np.all(low <= high)
    assert fit.to_dict()["runner_up"] == fit.runner_up.model


def test_complexity_falls_back_to_aic_with_four_points() -> None:
    fit = fit_complexity([1, 10, 100, 1000], [1.0, 2.0, 11.0, 101.0])
    assert fit.criterion == "AIC" and any("too few for AICc" in w for w in fit.warnings)


@pytest.mark.parametrize(
    ("n", "cost", "kwargs", "message"),
    [
        ([1, 2], [1, 2], {}, "only 2 points"),
        ([1, 2, -3], [1, 2, 3], {}, "n must be > 0"),
        ([1, 2, 3], [1, float("nan"), 3], {}, "NaN"),
        ([1, 2, 3], [1, 2], {}, "one cost per n"),
        ([1, 2, 3], [1, 2, 3], {"models": ["O(2^n)"]}, "unknown complexity model"),
        ([1, 2, 3], [1, 2, 3], {"se": [1, 1]}, "one standard error per point"),
        ([5, 5, 5], [1, 2, 3], {}, "distinct"),
    ],
)
def test_complexity_bad_input_raises_clear_error(
    n: list, cost: list, kwargs: dict, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        fit_complexity(n, cost, **kwargs)


# ---------------------------------------------------------------------------
# break-even


@PROPERTY
@given(
    warm_a=st.floats(0.5e-6, 2e-6),
    ratio=st.floats(2.0, 10.0),
    cold_gap=st.floats(0.01, 0.1),
    seed=st.integers(0, 2**32 - 1),
)
def test_breakeven_recovers_known_crossing(
    warm_a: float, ratio: float, cold_gap: float, seed: int
) -> None:
    """cold + n·warm curves: A pays cold_gap more once but is ratio× cheaper per object."""
    rng = np.random.default_rng(seed)
    warm_b = ratio * warm_a
    truth = cold_gap / (warm_b - warm_a)
    n = np.geomspace(10, 1e6, 9)
    a_cost, b_cost = 1e-4 + warm_a * n, 1e-4 + warm_b * n
    noisy = [c * (1 + 0.02 * rng.standard_normal(n.size)) for c in (a_cost, b_cost)]
    se = [0.02 * c for c in (a_cost, b_cost)]
    r = breakeven_from_points(
        n,
        noisy[0],
        n,
        noisy[1],
        cold_gap + 0.01,
        0.01,
        model="O(n)",
        se_a=se[0],
        se_b=se[1],
        n_boot=500,
        seed=seed % 1000,
        level=0.999,
    )
    assert r.cheaper_beyond == "A" and r.cheaper_below == "B"
    assert r.n_star is not None and r.n_star.contains(truth), (truth, r.sentence())


def test_breakeven_serializer_sentence() -> None:
    """The issue's case: new = 85 ms cold + 0.72 µs/object, old = 24 ms + 4.4 µs/object."""
    n = np.geomspace(1, 1e6, 7)
    r = breakeven_from_points(
        n,
        0.0005 + 0.722e-6 * n,
        n,
        0.0002 + 4.378e-6 * n,
        0.085,
        0.024,
        model="O(n)",
        labels=("new", "old"),
        cold_a_se=0.005,
        cold_b_se=0.002,
    )
    assert r.sentence().startswith("new is cheaper beyond n ≈ 17,000 (95% CI ")
    assert r.n_star is not None and r.warnings == ()
    assert r.n_star.ci_low < r.n_star.value < r.n_star.ci_high and r.n_star.level == 0.95


def test_breakeven_no_crossing_says_who_is_always_cheaper() -> None:
    n = np.geomspace(10, 1e4, 6)
    r = breakeven_from_points(n, 1 + 1e-3 * n, n, 2 + 2e-3 * n, model="O(n)")
    assert r.n_star is None and r.cheaper_beyond == "A" and r.to_dict()["ci_low"] is None
    assert "A is cheaper at every n" in r.sentence()


def test_breakeven_outside_data_range_warns_extrapolation() -> None:
    n = np.geomspace(10, 100, 5)
    r = breakeven_from_points(n, 10 + 1e-3 * n, n, 1 + 1e-2 * n, model="O(n)", n_boot=200)
    assert r.n_star is not None and close(r.n_star.value, 1000.0)
    assert any("extrapolation" in w for w in r.warnings)


def test_breakeven_reports_every_crossing() -> None:
    n = np.geomspace(1, 1e4, 12)
    fa = fit_complexity(n, 5 + 0.001 * n**2, models=["O(n^2)"])
    fb = fit_complexity(n, 1 + n, models=["O(n)"])
    r = breakeven(fa, fb, n_boot=200)
    assert (
        len(r.crossings) == 2
        and close(r.crossings[0], 4.016, 1e-3)
        and r.n_star is not None
        and close(r.n_star.value, 995.98, 1e-3)
    )
    assert r.cheaper_beyond == "B" and any("cross 2 times" in w for w in r.warnings)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"cold_a": -1.0}, "cold_a must be"),
        ({"cold_b": float("nan")}, "cold_b must be"),
        ({"n_boot": 10}, "n_boot"),
        ({"search_range": (10.0, 1.0)}, "search_range"),
    ],
)
def test_breakeven_bad_input_raises_clear_error(kwargs: dict, message: str) -> None:
    n = np.geomspace(10, 1e4, 6)
    fit = fit_complexity(n, 1 + n)
    with pytest.raises(ValueError, match=message):
        breakeven(fit, fit, **kwargs)


def test_littles_law() -> None:
    assert littles_law_concurrency(1000.0, 0.05) == pytest.approx(50.0)
    np.testing.assert_allclose(littles_law_concurrency([10, 20], [0.1, 0.2]), [1.0, 4.0])
    with pytest.raises(ValueError, match="pair them"):
        littles_law_concurrency([1, 2], [1])
    with pytest.raises(ValueError, match="≥ 0"):
        littles_law_concurrency(-1.0, 0.1)


# ---------------------------------------------------------------------------
# charts (perflab.report.fit_chart): smoke tests that a PNG is written


def _is_png(path: Path) -> bool:
    return path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000


def test_charts_write_pngs(tmp_path: Path) -> None:
    from perflab.report.fit_chart import breakeven_chart, complexity_chart, usl_chart

    n, x = load("specsdm91")
    assert _is_png(usl_chart(fit_usl(n, x), n, x, tmp_path / "usl.png"))
    sizes = np.geomspace(10, 1e5, 8)
    cost = 1e-3 + 1e-6 * sizes
    assert _is_png(complexity_chart(fit_complexity(sizes, cost), sizes, cost, tmp_path / "cx.png"))
    r = breakeven_from_points(
        sizes, cost + 1e-6 * sizes, sizes, 0.1 + cost, model="O(n)", n_boot=200
    )
    assert _is_png(breakeven_chart(r, tmp_path / "be.png", points_a=(sizes, cost)))
