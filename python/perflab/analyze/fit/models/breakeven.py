"""Break-even: where two total-cost curves cold + a + b·g(n) cross, with a bootstrap CI."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from scipy import optimize

from perflab.analyze.fit.models.classes import COMPLEXITY_MODELS, ComplexityCandidate
from perflab.analyze.fit.models.complexity import ComplexityFit, fit_complexity
from perflab.analyze.fit.models.core import LARGE_DOF, ArrayLike, wald
from perflab.analyze.fit.models.measured import (
    MeasuredOrder,
    cheaper_side,
    measured_orders,
    measured_summary,
    refutation_text,
)
from perflab.analyze.fit.models.words import fmt_count, sig_needed
from perflab.model.estimate import LEVEL, Estimate


@dataclass(frozen=True, eq=False)
class BreakEven:
    """Where two total-cost curves cold + a + b·g(n) cross, if the measurements agree.

    Attributes:
        n_star: The crossing size n* with its parametric-bootstrap CI at ``level``
            (``ci_low`` 0 when some draws have the "beyond" side cheaper everywhere,
            ``ci_high`` inf when some never cross; no SE); None when the curves do not
            cross within ``search_range``, or when the measurements refute the fitted
            curves (``refuted``). In JSON: the flat ``n_star``, ``ci_low``, ``ci_high``.
        cheaper_beyond: Label of the cheaper side for n > n* (for every n
            when there is no crossing); None when the curves coincide or the
            fits are refuted.
        cheaper_below: Label of the cheaper side for n < n*.
        crossings: Every crossing of the fitted curves, ascending; n_star is
            the last. Kept when refuted (n_star is then None), for the record.
        labels: (label of A, label of B).
        fit_a: Cost fit of A.
        fit_b: Cost fit of B.
        cold_a: One-off cost added to A, unit of cost.
        cold_b: One-off cost added to B, unit of cost.
        search_range: (low, high) sizes searched for crossings.
        level: Confidence level.
        warnings: Extrapolation, multiple crossings, open-ended CI, sides
            without a fitting class, …
        measured: The measured order at each size both sides measured.
        refuted: True when at some measured size the measurements clearly
            favour the side the fitted curves put behind: then no break-even
            is claimed.
    """

    n_star: Estimate | None
    cheaper_beyond: str | None
    cheaper_below: str | None
    crossings: tuple[float, ...]
    labels: tuple[str, str]
    fit_a: ComplexityFit
    fit_b: ComplexityFit
    cold_a: float
    cold_b: float
    search_range: tuple[float, float]
    level: float
    warnings: tuple[str, ...]
    measured: tuple[MeasuredOrder, ...] = ()
    refuted: bool = False

    def cost_a(self, n: float | ArrayLike) -> np.ndarray:
        """Total cost of A at size n: cold_a + a + b·g(n)."""
        return self.cold_a + self.fit_a.predict(n)

    def cost_b(self, n: float | ArrayLike) -> np.ndarray:
        """Total cost of B at size n: cold_b + a + b·g(n)."""
        return self.cold_b + self.fit_b.predict(n)

    def sentence(self) -> str:
        """E.g. "B is cheaper beyond n ≈ 31,000 (95% CI 22,000–45,000)"."""
        if self.refuted:
            return (
                f"no break-even claimed: the fitted curves contradict the measurements "
                f"({refutation_text(self.measured, self.labels, self.fit_a.unit)}); "
                f"{measured_summary(self.measured)}"
            )
        if self.cheaper_beyond is None:
            return f"{self.labels[0]} and {self.labels[1]} cost the same at every n searched"
        if self.n_star is None:
            lo, hi = self.search_range
            return (
                f"{self.cheaper_beyond} is cheaper at every n from {fmt_count(lo)} to "
                f"{fmt_count(hi)}: there is no break-even"
            )
        n = self.n_star
        sig = sig_needed([n.value, n.ci_low, n.ci_high])
        return (
            f"{self.cheaper_beyond} is cheaper beyond n ≈ {fmt_count(n.value, sig)} "
            f"({n.level:.0%} CI {_ci_text(n.ci_low, n.ci_high, sig)})"
        )

    def to_dict(self) -> dict[str, object]:
        """JSON-ready summary (``n_star`` flat, as ``n_star``, ``ci_low``, ``ci_high``:
        null when there is no crossing)."""
        n = self.n_star
        return {
            "n_star": None if n is None else n.value,
            "ci_low": None if n is None else n.ci_low,
            "ci_high": None if n is None else n.ci_high,
            "cheaper_beyond": self.cheaper_beyond,
            "cheaper_below": self.cheaper_below,
            "crossings": list(self.crossings),
            "refuted": self.refuted,
            "measured": [o.to_dict() for o in self.measured],
            "labels": list(self.labels),
            "model_a": self.fit_a.model,
            "model_b": self.fit_b.model,
            "cold_a": self.cold_a,
            "cold_b": self.cold_b,
            "level": self.level,
            "sentence": self.sentence(),
            "warnings": list(self.warnings),
        }


def _ci_text(lo: float, hi: float, sig: int) -> str:
    """'22,000–45,000', with open ends spelled out."""
    low = "below 1" if lo < 1 else fmt_count(lo, sig)
    high = "no crossing" if not math.isfinite(hi) else fmt_count(hi, sig)
    return f"{low}–{high}"


def breakeven(
    fit_a: ComplexityFit,
    fit_b: ComplexityFit,
    cold_a: float = 0.0,
    cold_b: float = 0.0,
    *,
    cold_a_se: float = 0.0,
    cold_b_se: float = 0.0,
    labels: tuple[str, str] = ("A", "B"),
    search_range: tuple[float, float] | None = None,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = LEVEL,
) -> BreakEven:
    """The size n* where total costs cold + a + b·g(n) of A and B cross.

    "Cold + n·warm" curves are the O(n) case: a per-call cost fitted over n
    in a warm process plus the one-off cold cost (first call minus warm
    call). Crossings are found on a log-spaced grid of 4,001 sizes over
    ``search_range`` and refined by Brent's method; with several, n* is the
    last (beyond it one side stays cheaper). The CI is a parametric bootstrap
    (Efron & Tibshirani 1993, §6.5): (a, b) of each side drawn from
    N(θ̂, Cov θ̂), cold costs from N(cold, se²), n* recomputed per draw and
    percentiles taken; draws whose curves no longer cross count as n* = inf
    (the crossing moved past the range) or 0 (moved below it).

    Before anything is claimed, every size both fits measured is checked
    (:func:`~perflab.analyze.fit.models.measured.measured_orders`): if the
    measured total costs clearly (beyond the CI of their difference; without
    SEs, by more than 20%) favour the side the fitted curves put behind, the
    fits do not describe the data, no n* is given (``refuted``), and the
    sentence reports the measured order instead. Cost O(n_boot · 4,001).

    Args:
        fit_a: Cost fit of A (fit_complexity).
        fit_b: Cost fit of B.
        cold_a: One-off cost of A, unit of cost (s), ≥ 0.
        cold_b: One-off cost of B.
        cold_a_se: Standard error of cold_a, 0 when exact.
        cold_b_se: Standard error of cold_b.
        labels: Names of A and B used in the result and sentence.
        search_range: (low, high) sizes to search; default
            (min(1, smallest n), 1e6 × largest n).
        n_boot: Bootstrap draws.
        seed: Seed of the bootstrap's numpy Generator (results are repeatable).
        level: Confidence level.

    Returns:
        A BreakEven; check ``refuted`` and ``warnings``.

    Raises:
        ValueError: NaN or negative cold costs or SEs, a bad search range, or
            n_boot < 100.
    """
    _check_breakeven_args(cold_a, cold_b, cold_a_se, cold_b_se, n_boot)
    lo, hi = _search_range(search_range, fit_a, fit_b)
    sides = (_Side(fit_a, cold_a, cold_a_se), _Side(fit_b, cold_b, cold_b_se))
    grid = np.geomspace(lo, hi, 4001)
    diff = sides[0].point(grid) - sides[1].point(grid)
    crossings = _crossings(diff, grid, sides)
    measured = measured_orders(
        fit_a,
        fit_b,
        (cold_a, cold_b),
        (cold_a_se, cold_b_se),
        labels,
        lambda n: sides[0].point(n) - sides[1].point(n),
        level,
    )
    result = BreakEven(
        None,
        None,
        None,
        tuple(crossings),
        labels,
        fit_a,
        fit_b,
        cold_a,
        cold_b,
        (lo, hi),
        level,
        (),
        measured,
    )
    if any(o.refutes for o in measured):
        result = replace(result, refuted=True)
    else:
        result = _claim(result, sides, grid, diff, n_boot, seed)
    return replace(result, warnings=_breakeven_warnings(result))


def _claim(
    result: BreakEven,
    sides: tuple[_Side, _Side],
    grid: np.ndarray,
    diff: np.ndarray,
    n_boot: int,
    seed: int,
) -> BreakEven:
    """The result with n*, its bootstrap CI and the cheaper sides filled in."""
    winner = cheaper_side(diff[-1], result.labels)
    if not result.crossings:
        return replace(result, cheaper_beyond=winner, cheaper_below=winner)
    low, high = _bootstrap_ci(sides, grid, diff, n_boot, seed, result.level)
    return replace(
        result,
        n_star=Estimate(result.crossings[-1], low, high, result.level),
        cheaper_beyond=winner,
        cheaper_below=cheaper_side(diff[0], result.labels),
    )


def breakeven_from_points(
    n_a: ArrayLike,
    cost_a: ArrayLike,
    n_b: ArrayLike,
    cost_b: ArrayLike,
    cold_a: float = 0.0,
    cold_b: float = 0.0,
    *,
    model: str | None = None,
    se_a: ArrayLike | None = None,
    se_b: ArrayLike | None = None,
    **kwargs: object,
) -> BreakEven:
    """Fit both cost sweeps with fit_complexity, then call breakeven.

    Args:
        n_a: Sizes measured for A, shape (k,), > 0.
        cost_a: Warm cost of A at each size, shape (k,), unit of cost (s).
        n_b: Sizes measured for B, shape (m,).
        cost_b: Warm cost of B at each size, shape (m,).
        cold_a: One-off cost of A (first call minus warm call), s.
        cold_b: One-off cost of B, s.
        model: Force one growth class for both (e.g. "O(n)" for
            "cold + n·warm"); chosen by AICc per side when None.
        se_a: Standard error of each of A's costs (see fit_complexity);
            None: relative errors.
        se_b: Standard error of each of B's costs.
        **kwargs: Passed to breakeven (labels, cold_a_se, n_boot, seed, …).

    Returns:
        A BreakEven.

    Raises:
        ValueError: As fit_complexity and breakeven.
    """
    models = None if model is None else [model]
    fit_a = fit_complexity(n_a, cost_a, se_a, models=models)
    fit_b = fit_complexity(n_b, cost_b, se_b, models=models)
    return breakeven(fit_a, fit_b, cold_a, cold_b, **kwargs)  # type: ignore[arg-type]


def _check_breakeven_args(
    cold_a: float, cold_b: float, se_a: float, se_b: float, n_boot: int
) -> None:
    """Raise ValueError for NaN/negative cold costs or SEs and too few draws."""
    for name, v in (
        ("cold_a", cold_a),
        ("cold_b", cold_b),
        ("cold_a_se", se_a),
        ("cold_b_se", se_b),
    ):
        if not (math.isfinite(v) and v >= 0):
            raise ValueError(f"{name} must be a finite number ≥ 0 (seconds), got {v!r}.")
    if n_boot < 100:
        raise ValueError(f"n_boot must be ≥ 100 for a usable CI, got {n_boot}.")


def _search_range(
    given: tuple[float, float] | None, fit_a: ComplexityFit, fit_b: ComplexityFit
) -> tuple[float, float]:
    """``given``, or (min(1, smallest n), 1e6 × largest n) over both fits; ValueError if bad."""
    lo, hi = given or (
        min(1.0, fit_a.n_range[0], fit_b.n_range[0]),
        1e6 * max(fit_a.n_range[1], fit_b.n_range[1]),
    )
    if not (0 < lo < hi and math.isfinite(hi)):
        raise ValueError(f"search_range must satisfy 0 < low < high < inf, got {(lo, hi)}.")
    return lo, hi


@dataclass(frozen=True, eq=False)
class _Side:
    """One side's total-cost curve and how to draw from its uncertainty."""

    fit: ComplexityFit
    cold: float
    cold_se: float

    def point(self, n: np.ndarray) -> np.ndarray:
        """Total cost at the fitted coefficients; shape of n."""
        return self.cold + self.fit.predict(n)

    def draws(self, rng: np.random.Generator, k: int) -> np.ndarray:
        """k draws of (a + cold, b), shape (k, 2)."""
        best = self.fit.best
        theta = rng.multivariate_normal(
            [best.a.value, best.b.value], best.covariance, size=k, method="svd"
        )
        theta[:, 0] += self.cold + self.cold_se * rng.standard_normal(k)
        return theta

    def total(self, theta: np.ndarray, n: np.ndarray) -> np.ndarray:
        """Total cost for draws theta (k, 2) at n of shape (k, m) or (k,)."""
        g = COMPLEXITY_MODELS[self.fit.model](n)
        shape = (-1,) + (1,) * (n.ndim - 1)
        return theta[:, 0].reshape(shape) + theta[:, 1].reshape(shape) * g


def _crossings(diff: np.ndarray, grid: np.ndarray, sides: tuple[_Side, _Side]) -> list[float]:
    """Every sign change of diff on the grid, refined by Brent's method in log n."""
    sign = np.sign(diff)
    idx = np.nonzero(sign[:-1] * sign[1:] < 0)[0]

    def f(log_n: float) -> float:
        n = np.array([math.exp(log_n)])
        return float(sides[0].point(n)[0] - sides[1].point(n)[0])

    exact = [float(grid[i]) for i in np.nonzero(sign == 0)[0] if 0 < i < grid.size - 1]
    found = [math.exp(optimize.brentq(f, math.log(grid[i]), math.log(grid[i + 1]))) for i in idx]
    return sorted(found + exact)


def _bootstrap_ci(
    sides: tuple[_Side, _Side],
    grid: np.ndarray,
    diff: np.ndarray,
    n_boot: int,
    seed: int,
    level: float,
) -> tuple[float, float]:
    """Percentile CI of the last crossing over parametric draws; see breakeven."""
    rng = np.random.default_rng(seed)
    ta, tb = sides[0].draws(rng, n_boot), sides[1].draws(rng, n_boot)
    d = sides[0].total(ta, grid[None, :]) - sides[1].total(tb, grid[None, :])
    n_star = _last_crossing(d, grid, sides, ta, tb)
    missing = np.isnan(n_star)
    beyond_sign = np.sign(diff[-1])
    n_star[missing & (np.sign(d[:, 0]) == beyond_sign)] = 0.0
    n_star[np.isnan(n_star)] = math.inf
    q = np.quantile(n_star, [0.5 - level / 2, 0.5 + level / 2], method="inverted_cdf")
    return float(q[0]), float(q[1])


def _last_crossing(
    d: np.ndarray,
    grid: np.ndarray,
    sides: tuple[_Side, _Side],
    ta: np.ndarray,
    tb: np.ndarray,
) -> np.ndarray:
    """Per draw, the last sign change of d (k, m) refined by 60 bisection steps; NaN if none."""
    change = np.sign(d[:, :-1]) * np.sign(d[:, 1:]) <= 0
    has = change.any(axis=1)
    last = grid.size - 2 - np.argmax(change[:, ::-1], axis=1)
    lo, hi = np.log(grid[last]), np.log(grid[last + 1])
    sign_lo = np.sign(d[np.arange(d.shape[0]), last])
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        m = np.exp(mid)
        same = np.sign(sides[0].total(ta, m) - sides[1].total(tb, m)) == sign_lo
        lo, hi = np.where(same, mid, lo), np.where(same, hi, mid)
    return np.where(has, np.exp(0.5 * (lo + hi)), np.nan)


def _breakeven_warnings(r: BreakEven) -> tuple[str, ...]:
    """Sides without a fitting class, extrapolation, several crossings, open-ended CIs."""
    out = [
        _side_warning(label, fit)
        for label, fit in zip(r.labels, (r.fit_a, r.fit_b))
        if fit.verdict != "fits"
    ]
    if len(r.crossings) > 1 and not r.refuted:
        listed = ", ".join(fmt_count(c) for c in r.crossings)
        out.append(f"the curves cross {len(r.crossings)} times (n ≈ {listed}); n* is the last one.")
    low = max(r.fit_a.n_range[0], r.fit_b.n_range[0])
    high = min(r.fit_a.n_range[1], r.fit_b.n_range[1])
    n = r.n_star
    if n is not None and not low <= n.value <= high:
        out.append(
            f"n* ≈ {fmt_count(n.value)} lies outside the sizes both benchmarks measured "
            f"({fmt_count(low)}–{fmt_count(high)}): it is an extrapolation; measure near "
            f"n ≈ {fmt_count(n.value)} to confirm."
        )
    if n is not None and (n.ci_low == 0.0 or not math.isfinite(n.ci_high)):
        out.append(
            "in part of the bootstrap the curves do not cross at all, so the CI is open-ended; "
            "measure more sizes."
        )
    return tuple(out)


def _side_warning(label: str, fit: ComplexityFit) -> str:
    """Why one side's cost curve is shaky: no class fits, or classes tied."""
    if fit.verdict == "none":
        return (
            f"{label}: no growth class fits its costs ({fit.why_none}), so its curve, and "
            "any crossing, describe the points only roughly."
        )
    return (
        f"{label}: the data cannot tell {' from '.join(fit.tied)} apart; the crossing "
        f"assumes {fit.model}."
    )


# ---------------------------------------------------------------------------
# one call per side: cold + n·warm


def calls_search_range(warm_a: float, warm_b: float, cold_a: float, cold_b: float) -> float:
    """Calls to search and draw: 100× the straight-line crossing of cold + n·warm, ≥ 1,000.

    Args:
        warm_a / warm_b: time per warm call of A and B, s.
        cold_a / cold_b: one-off cost of A and B, s.

    Returns:
        The upper end of the search range, a power of 10 (calls).
    """
    slope = warm_a - warm_b
    guess = abs((cold_b - cold_a) / slope) if slope else 0.0
    return float(10 ** math.ceil(math.log10(max(1e3, 100 * guess))))


def per_call_fit(warm: float, warm_se: float, high: float, level: float = LEVEL) -> ComplexityFit:
    """cost(n calls) = n·warm as an O(n) ComplexityFit with a = 0 (one point, not fitted).

    The one-off cost is added by breakeven as ``cold``; ``warm_se`` comes from
    the median's bootstrap CI, so the interval is a normal one (a large dof).

    Args:
        warm: time per warm call, s, > 0.
        warm_se: its standard error, s (0 when unknown).
        high: the largest number of calls searched.
        level: confidence level.

    Returns:
        A ComplexityFit of class "O(n)" over n = 1 … high.
    """
    zero = Estimate(0.0, 0.0, 0.0, level, 0.0)
    slope = wald(warm, warm_se, level, LARGE_DOF)
    cand = ComplexityCandidate("O(n)", zero, slope, np.diag([0.0, warm_se**2]), 0.0, 0.0, LARGE_DOF)
    return ComplexityFit(
        cand, None, math.inf, "none", (cand,), np.zeros(1), math.nan, 1, (1.0, high), level, ()
    )
