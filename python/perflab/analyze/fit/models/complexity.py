"""Complexity classes: cost(n) = a + b·g(n) for g in 1, log n, n, n log n, n², n³.

Each class is fitted by weighted linear least squares (:mod:`.classes`);
which class the data support — one, several that cannot be told apart, or
none — is decided by :mod:`.choice`; this module assembles the fit users see
(:class:`ComplexityFit`: the verdict, its reading and warnings).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from perflab.analyze.fit.models.choice import Choice, Verdict, choose, p_text
from perflab.analyze.fit.models.classes import COMPLEXITY_MODELS, ComplexityCandidate, fit_class
from perflab.analyze.fit.models.core import ArrayLike, paired, positive_array, require_points
from perflab.analyze.fit.models.slope import Slope
from perflab.model.estimate import LEVEL, Estimate


@dataclass(frozen=True, eq=False)
class ComplexityFit:
    """The growth class the data support for cost(n) = a + b·g(n), and how firmly.

    Attributes:
        best: The chosen candidate; when ``verdict`` is "none", the closest.
        runner_up: The next candidate in the ranking, or None with one class.
        delta: runner_up.score − best.score (ΔAICc); how much worse the
            runner-up's information criterion is. It can be negative: the
            choice is made by tests, not by the criterion (a class the data
            contradict may score better); the reading then leaves it out.
        criterion: "AICc", or "AIC" when too few points for AICc.
        candidates: Every class fitted, the chosen first, classes the data
            contradict last.
        residuals: Observed − fitted cost of the best class, shape (k,), s.
        r_squared: Weighted R² of the best class (0 for O(1), by definition).
        n_points: Number of points.
        n_range: (min n, max n) of the data.
        level: Confidence level of the intervals.
        warnings: Plain-words reasons to doubt the choice.
        verdict: "fits" (one class, the others ruled out), "tied" (the data
            cannot tell ``tied`` apart) or "none" (no class describes the
            points; ``best`` is only the closest).
        tied: The classes the data cannot tell apart, ``best`` first; just
            ``best`` when the verdict is "fits".
        contradicted: Class → plain-words reason the data rule it out (e.g.
            O(1) when the costs rise beyond their CIs).
        why_none: Why no class fits ("" unless verdict is "none").
        p_growth: p-value of the test that the best growth class beats O(1)
            only by chance (NaN when O(1) or no growth class was considered).
        n: The sizes fitted, shape (k,).
        cost: The costs fitted, shape (k,), unit of cost.
        cost_se: Standard error of each cost, shape (k,), as given; NaN
            when the input had none.
        se_known: True when ``cost_se`` came with the input.
        unit: Unit of cost ("s", or "" when unknown), for readings.
        slope: The log-log slope of the costs with its CI and the classes it
            admits (:mod:`perflab.analyze.fit.models.slope`), the few-sizes rule.
    """

    best: ComplexityCandidate
    runner_up: ComplexityCandidate | None
    delta: float
    criterion: str
    candidates: tuple[ComplexityCandidate, ...]
    residuals: np.ndarray
    r_squared: float
    n_points: int
    n_range: tuple[float, float]
    level: float
    warnings: tuple[str, ...] = ()
    verdict: Verdict = "fits"
    tied: tuple[str, ...] = ()
    contradicted: dict[str, str] = field(default_factory=dict)
    why_none: str = ""
    p_growth: float = math.nan
    n: np.ndarray = field(default_factory=lambda: np.zeros(0))
    cost: np.ndarray = field(default_factory=lambda: np.zeros(0))
    cost_se: np.ndarray = field(default_factory=lambda: np.zeros(0))
    se_known: bool = False
    unit: str = "s"
    slope: Slope | None = None

    @property
    def model(self) -> str:
        """Name of the chosen (or closest) class, e.g. "O(n log n)"."""
        return self.best.model

    @property
    def a(self) -> Estimate:
        """Constant term of the chosen class, unit of cost."""
        return self.best.a

    @property
    def b(self) -> Estimate:
        """Growth coefficient of the chosen class."""
        return self.best.b

    @property
    def confident(self) -> bool:
        """True when one class fits and the data rule the others out."""
        return self.verdict == "fits"

    def predict(self, n: float | ArrayLike) -> np.ndarray:
        """Fitted cost a + b·g(n) of the chosen class; shape of ``n``. O(len(n))."""
        return self.best.predict(n)

    def band(self, n: float | ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """Pointwise CI (low, high) of the fitted cost at ``level``, each shape (k,)."""
        return self.best.band(n, self.level)

    def reading(self) -> str:
        """Plain words, e.g. "cost grows as O(n): 366 ns + 20.9 ns × n; next best …".

        The slope rule's sentence follows ("; overall the cost grows roughly as
        n^1.0 (99% CI 0.8–1.2): O(n) or O(n log n)") when the verdict is not "fits"
        or there are few sizes; a ΔAIC is quoted only when positive (the runner-up
        scores worse), with what it means.
        """
        if self.verdict == "none":
            text = f"no class fits these points: {self.why_none}"
        elif self.verdict == "tied":
            text = _tied_reading(self)
        elif self.model == "O(1)":
            text = f"cost does not grow measurably with n: {self.best.formula(self.unit)} (O(1))"
            if math.isfinite(self.p_growth):
                text += f"; no growth class fits significantly better (p = {p_text(self.p_growth)})"
        else:
            text = f"cost grows as {self.model}: {self.best.formula(self.unit)}"
            if self.runner_up is not None:
                text += f"; next best {self.runner_up.model}, ruled out by the data"
                if self.delta > 0:
                    text += (
                        f" (Δ{self.criterion} = +{self.delta:.1f}: its score is that much worse)"
                    )
        if self.slope is not None and (self.verdict != "fits" or self.slope.k <= 5):
            text += f"; overall the cost {self.slope.words(self.verdict == 'none')}"
        return text

    def to_dict(self) -> dict[str, object]:
        """Flat, JSON-ready summary of the choice and its coefficients."""
        return {
            "model": self.model,
            "verdict": self.verdict,
            "tied": list(self.tied),
            "contradicted": dict(self.contradicted),
            "p_growth": self.p_growth,
            "a": self.a.value,
            "a_se": self.a.se,
            "a_ci_low": self.a.ci_low,
            "a_ci_high": self.a.ci_high,
            "b": self.b.value,
            "b_se": self.b.se,
            "b_ci_low": self.b.ci_low,
            "b_ci_high": self.b.ci_high,
            "criterion": self.criterion,
            "runner_up": None if self.runner_up is None else self.runner_up.model,
            "delta": self.delta,
            "r_squared": self.r_squared,
            "level": self.level,
            "reading": self.reading(),
            "slope": None if self.slope is None else self.slope.value,
            "slope_ci_low": None if self.slope is None else self.slope.ci_low,
            "slope_ci_high": None if self.slope is None else self.slope.ci_high,
            "slope_classes": [] if self.slope is None else list(self.slope.classes),
            "warnings": list(self.warnings),
        }


def _or(names: object) -> str:
    """'A', 'A or B', 'A, B or C'."""
    items = list(names)  # type: ignore[call-overload]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" or {items[-1]}"


def _tied_reading(fit: ComplexityFit) -> str:
    """'cost grows as O(n) or O(n log n): the data cannot tell them apart …'."""
    names = sorted(fit.tied, key=list(COMPLEXITY_MODELS).index)
    listed = _or(names)
    if "O(1)" in names:
        return (
            f"cost may not grow with n (O(1)) or may grow as "
            f"{_or(n for n in names if n != 'O(1)')}: the growth is not clear at the 1% level "
            f"(closest {fit.model}: {fit.best.formula(fit.unit)}); measure more sizes, a "
            "wider range of n or more precisely"
        )
    return (
        f"cost grows as {listed}: the data cannot tell them apart (closest "
        f"{fit.model}: {fit.best.formula(fit.unit)})"
    )


def fit_complexity(
    n: ArrayLike,
    cost: ArrayLike,
    se: ArrayLike | None = None,
    *,
    models: Sequence[str] | None = None,
    level: float = LEVEL,
    unit: str = "s",
) -> ComplexityFit:
    """Fit cost(n) = a + b·g(n) for each growth class and decide which the data support.

    Each class is a weighted linear least-squares fit with a constant term
    (unlike Google Benchmark's BigO, which fits b·g(n) alone). Every point is
    weighted by its own precision, so that costs spanning orders of
    magnitude are not dominated by the largest n: by 1/SE² when each cost's
    standard error is known (``se``; for perflab run input, from the
    bootstrap CI of each median), else by 1/cost², i.e. least squares on
    relative errors, the variance function of timings whose noise is a
    constant share of the cost (Carroll & Ruppert 1988, "Transformation and
    Weighting in Regression", ch. 2-3). CIs are t intervals from
    cov = s²·(XᵀWX)⁻¹.

    Classes are scored by AICc = k·ln(RSS/k) + 2K + 2K(K+1)/(k−K−1), with k
    points and K = p + 1 parameters (Hurvich & Tsai 1989; Burnham & Anderson
    2002), plain AIC with fewer than 5 points; the choice itself is made by
    the tests of :func:`perflab.analyze.fit.models.choice.choose`: O(1) only
    while no growth is established, a class only when the data do not
    contradict it, ties reported as ties, and "no class fits" when the best
    class misses points by more than 20% (beyond 3 SE where known) or has a
    weighted R² below 0.9. O(k) per class.

    Args:
        n: Input sizes, shape (k,), > 0.
        cost: Cost at each size, shape (k,), > 0 (seconds, bytes, …).
        se: Standard error of each cost, shape (k,), > 0, same unit; None
            when unknown (relative errors are then assumed).
        models: Classes to consider (keys of COMPLEXITY_MODELS); all by default.
        level: Confidence level of the intervals.
        unit: Unit of cost for the reading: "s" (times), "" (a bare number).

    Returns:
        A ComplexityFit; read ``verdict`` before ``model``.

    Raises:
        ValueError: Fewer than 3 points or distinct sizes, mismatched lengths,
            NaN, non-positive n, cost or se, or an unknown class name.
    """
    n_arr, y = paired(n, cost, ("n", "cost"))
    se_arr = None if se is None else positive_array(se, "se")
    if se_arr is not None and se_arr.size != y.size:
        raise ValueError(
            f"se has {se_arr.size} values for {y.size} points; give one standard error per point."
        )
    require_points(n_arr, 3, "the complexity fit")
    names = _check_models(models)
    w = 1.0 / (se_arr**2 if se_arr is not None else y**2)
    use_aicc = all(n_arr.size - (2 if m == "O(1)" else 3) - 1 > 0 for m in names)
    cands = [fit_class(m, n_arr, y, w, level, use_aicc) for m in names]
    choice = choose(cands, n_arr, y, se_arr, unit)
    best = choice.ranked[0]
    runner = choice.ranked[1] if len(choice.ranked) > 1 else None
    resid = y - best.predict(n_arr)
    fit = ComplexityFit(
        best=best,
        runner_up=runner,
        delta=runner.score - best.score if runner else math.inf,
        criterion="AICc" if use_aicc else "AIC",
        candidates=choice.ranked,
        residuals=resid,
        r_squared=choice.r_squared,
        n_points=n_arr.size,
        n_range=(float(n_arr.min()), float(n_arr.max())),
        level=level,
        verdict=choice.verdict,
        tied=choice.tied,
        contradicted=choice.contradicted,
        why_none=choice.why_none,
        p_growth=choice.p_growth,
        n=n_arr,
        cost=y,
        cost_se=se_arr if se_arr is not None else np.full(y.size, math.nan),
        se_known=se_arr is not None,
        unit=unit,
        slope=choice.slope,
    )
    return ComplexityFit(**{**fit.__dict__, "warnings": _complexity_warnings(fit, choice)})


def _check_models(models: Sequence[str] | None) -> list[str]:
    """Validated class names, all of COMPLEXITY_MODELS by default."""
    names = list(COMPLEXITY_MODELS) if models is None else list(models)
    unknown = [m for m in names if m not in COMPLEXITY_MODELS]
    if unknown or not names:
        raise ValueError(
            f"unknown complexity model(s) {unknown}; choose from {list(COMPLEXITY_MODELS)}."
        )
    return names


def _complexity_warnings(fit: ComplexityFit, choice: Choice) -> tuple[str, ...]:
    """Plain-words reasons to doubt the chosen class (the verdict itself is in the reading)."""
    out = []
    if fit.criterion == "AIC":
        out.append(
            f"only {fit.n_points} points: too few for AICc, so plain AIC scored the classes; measure more sizes."
        )
    if fit.verdict == "tied":
        listed = ", ".join(fit.tied[:-1]) + f" and {fit.tied[-1]}"
        out.append(
            f"{listed} fit about equally well; widen the range of n or measure more precisely "
            "to tell them apart."
        )
    if fit.n_range[1] / fit.n_range[0] < 10:
        out.append(
            "n spans less than a factor of 10, so growth classes are hard to tell apart; widen the sweep."
        )
    if fit.b.value < 0:
        out.append(
            f"the fitted {fit.model} coefficient b is negative: cost falls as n grows; check the measurements."
        )
    out += list(choice.notes)
    return tuple(out)
