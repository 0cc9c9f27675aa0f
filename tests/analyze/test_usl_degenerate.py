"""USL fits of points that show no USL behaviour are named in words (issue 11 §3)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from perflab.analyze.fit.models import fit_usl
from perflab.analyze.fit.models.usl import NOT_USL
from perflab.report.fit_chart import usl_chart, usl_title
from tests.analyze.test_models import load

#: benchmarks/results/fit.md, threads mode, deque: X does not grow with N (GIL-bound).
DEQUE_N = np.array([1, 2, 4, 8, 12], dtype=float)
DEQUE_X = np.array([4827217, 4063134, 3773787, 5070677, 4823274], dtype=float)


@pytest.mark.parametrize("name", ["specsdm91", "raytracer", "cisco"])
def test_published_datasets_are_not_degenerate(name: str) -> None:
    fit = fit_usl(*load(name))
    assert fit.degenerate == () and fit.usable
    assert not any(NOT_USL in w for w in fit.warnings)


def test_flat_throughput_puts_alpha_at_its_bound_and_says_so() -> None:
    fit = fit_usl(DEQUE_N, DEQUE_X, unit="/s")
    assert fit.alpha.value == pytest.approx(1.0)
    assert "α is at its bound 1: X does not grow with N" in fit.degenerate
    assert any(r.startswith("R² = 0.00 ≤ 0.5") for r in fit.degenerate)
    assert fit.warnings[0].startswith(f"{NOT_USL}: α is at its bound 1")
    assert fit.reading() == f"{NOT_USL} (see the warning), so α, β and N* mean nothing here"
    assert not fit.usable and fit.to_dict()["degenerate"] == list(fit.degenerate)


def test_a_point_missed_by_more_than_20_percent_is_named() -> None:
    n = np.array([1, 2, 4, 8, 16, 32], dtype=float)
    x = 100 * n / (1 + 0.05 * (n - 1) + 0.001 * n * (n - 1))
    x[3] *= 1.6
    fit = fit_usl(n, x)
    assert any(
        re.match(r"the curve misses N = 8 by \+\d+% of X \(beyond ±20%\)", r)
        for r in fit.degenerate
    ), fit.degenerate


def test_a_band_wider_than_the_data_spans_the_chart() -> None:
    n = np.array([1, 2, 3, 4], dtype=float)
    fit = fit_usl(n, np.array([100.0, 150.0, 120.0, 160.0]))
    assert any("spans the chart" in r for r in fit.degenerate), fit.degenerate


def test_the_chart_says_so_too(tmp_path: Path) -> None:
    fit = fit_usl(DEQUE_N, DEQUE_X, unit="/s")
    assert usl_title("deque", fit) == f"deque: USL fit, but {NOT_USL}"
    path = usl_chart(fit, DEQUE_N, DEQUE_X, tmp_path / "deque.png")
    assert path.read_bytes()[:4] == b"\x89PNG"
    good = fit_usl(*load("specsdm91"))
    assert usl_title("specsdm91", good) == "specsdm91: USL α = 0.0277, β = 1.04×10⁻⁴, γ = 90.0"


def test_readings_of_rates_are_formatted_like_the_tables() -> None:
    """Before: "X levels off towards γ/α ≈ 4.512e+06"."""
    n = np.array([1, 2, 4, 8, 16, 32], dtype=float)
    fit = fit_usl(n, 2e5 * n / (1 + 0.05 * (n - 1)), unit="/s")
    assert fit.reading().endswith("X levels off towards γ/α ≈ 4.00 M/s")


def test_no_degrees_of_freedom_gives_no_interval_not_the_bounds() -> None:
    # A 3-point closed-loop sweep (uvicorn, CPU-bound endpoint): α printed "0 – 1.00" as
    # its 95% CI beside "no degrees of freedom left, so no standard errors or CIs".
    fit = fit_usl(np.array([1.0, 4.0, 16.0]), np.array([184.0, 194.0, 280.0]), unit="/s")
    assert fit.dof == 0
    for est in (fit.alpha, fit.beta, fit.gamma):
        assert np.isnan(est.ci_low) and np.isnan(est.ci_high)
