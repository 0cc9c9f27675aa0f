"""A break-even is never claimed where the measurements show the opposite order (issue 11 §3)."""

from __future__ import annotations

import numpy as np

from perflab.analyze.fit.models import breakeven, breakeven_from_points, fit_complexity
from perflab.analyze.fit.models.breakeven import per_call_fit
from perflab.analyze.fit.models.measured import measured_summary

N = np.array([100, 1000, 1e4, 3e4, 1e5])
#: A: 10 µs + 1 ns·n until a cache cliff triples its cost at n = 100,000.
CLIFF_A = np.where(N < 1e5, 10e-6 + 1e-9 * N, 3 * (10e-6 + 1e-9 * N))
#: B: 5 µs + 1.5 ns·n throughout.
CLEAN_B = 5e-6 + 1.5e-9 * N


def test_a_crossing_the_measurements_contradict_is_not_claimed() -> None:
    """Forced O(n), A's line crosses B's near 18,000, but at 100,000 A measured 2× B."""
    r = breakeven_from_points(
        N, CLIFF_A, N, CLEAN_B, model="O(n)", se_a=0.02 * CLIFF_A, se_b=0.02 * CLEAN_B
    )
    assert r.refuted and r.n_star is None and r.cheaper_beyond is None
    assert r.crossings and 1e4 < r.crossings[-1] < 3e4  # the fitted lines do cross
    assert r.sentence().startswith(
        "no break-even claimed: the fitted curves contradict the "
        "measurements (at n = 100,000 the measurements show B "
        "cheaper (155 µs vs 330 µs for A, beyond the CI of the "
        "difference))"
    )
    assert "cheaper beyond" not in r.sentence()
    refuting = [o.n for o in r.measured if o.refutes]
    assert refuting == [1e5]
    assert r.to_dict()["refuted"] is True and r.to_dict()["n_star"] is None


def test_without_standard_errors_a_gap_over_20_percent_refutes() -> None:
    r = breakeven_from_points(N, CLIFF_A, N, CLEAN_B, model="O(n)")
    assert r.refuted
    assert "(155 µs vs 330 µs for A, more than 20% apart)" in r.sentence()


def test_a_crossing_the_measurements_agree_with_is_claimed() -> None:
    a, b = 10e-6 + 1e-9 * N, 5e-6 + 1.5e-9 * N
    r = breakeven_from_points(N, a, N, b, model="O(n)", se_a=0.02 * a, se_b=0.02 * b)
    assert not r.refuted and r.n_star is not None and abs(r.n_star.value - 1e4) < 100
    assert r.sentence().startswith("A is cheaper beyond n ≈ 10,000")
    assert [o.cheaper for o in r.measured] == ["B", "B", None, "A", "A"]


def test_the_issue_repro_never_says_the_slower_side_is_cheaper_beyond() -> None:
    """The repro's costs against a side that is cheaper at every measured n.

    Before, the repro's fit was O(1) (a flat 671 ns), so a slowly growing B
    crossed it and "repro is cheaper beyond n ≈ 65,000" was printed although
    at n = 100,000 the repro measured 3.25 ms against B's 0.98 µs.
    """
    repro = np.array([5.65179e-07, 2.71269e-06, 2.04432e-05, 0.000173292, 0.00324726])
    n = np.array([10, 100, 1000, 10000, 100000], dtype=float)
    b = 100e-9 + 0.0088e-9 * n
    r = breakeven_from_points(n, repro, n, b, labels=("repro", "B"))
    assert "repro is cheaper" not in r.sentence()
    assert all(o.cheaper in ("B", None) for o in r.measured)
    assert any(w.startswith("repro: no growth class fits its costs") for w in r.warnings)


def test_measured_summary_names_a_single_flip() -> None:
    a, b = 10e-6 + 1e-9 * N, 5e-6 + 1.5e-9 * N
    r = breakeven_from_points(N, a, N, b, model="O(n)", se_a=0.02 * a, se_b=0.02 * b)
    assert measured_summary(r.measured) == (
        "measured: B is cheaper up to n = 1,000 and A from "
        "n = 30,000, so the costs cross between those sizes"
    )


def test_sides_without_common_sizes_or_points_are_not_checked() -> None:
    fa = fit_complexity(N, 10e-6 + 1e-9 * N)
    fb = fit_complexity(N * 2, 5e-6 + 1.5e-9 * N * 2)
    assert breakeven(fa, fb, n_boot=200).measured == ()
    calls = breakeven(
        per_call_fit(1e-6, 0.0, 1e4),
        per_call_fit(3e-6, 0.0, 1e4),
        2e-3,
        0.0,
        search_range=(1.0, 1e4),
        n_boot=200,
    )
    assert calls.measured == () and not calls.refuted and calls.n_star is not None
