"""Complexity classes: cost(n) = a + b·g(n) for g in 1, log n, n, n log n, n², n³."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from perflab.analyze.models.core import (
    LEVEL,
    ArrayLike,
    Estimate,
    gram_inverse,
    paired,
    positive_array,
    r_squared,
    require_points,
    t_quantile,
    wald,
)


def _log(n: np.ndarray) -> np.ndarray:
    return np.log(n)


COMPLEXITY_MODELS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "O(1)": np.ones_like,
    "O(log n)": _log,
    "O(n)": lambda n: n,
    "O(n log n)": lambda n: n * np.log(n),
    "O(n^2)": lambda n: n**2,
    "O(n^3)": lambda n: n**3,
}
"""Growth terms g(n) of cost(n) = a + b·g(n); "O(1)" fits a alone (b ≡ 0)."""


@dataclass(frozen=True, eq=False)
class ComplexityCandidate:
    """One growth class fitted to the data.

    Attributes:
        model: Name, a key of COMPLEXITY_MODELS.
        a: Constant term, unit of cost (s).
        b: Coefficient of g(n), unit of cost per unit of g; 0 ± 0 for "O(1)".
        covariance: Covariance of (a, b), shape (2, 2).
        rss: (Weighted) residual sum of squares, unit of cost².
        score: Information criterion value (AICc, or AIC when n is too small).
        dof: Residual degrees of freedom.
    """

    model: str
    a: Estimate
    b: Estimate
    covariance: np.ndarray
    rss: float
    score: float
    dof: int

    def predict(self, n: float | ArrayLike) -> np.ndarray:
        """cost(n) = a + b·g(n), unit of cost; shape of ``n``."""
        n_arr = np.asarray(n, dtype=float)
        return self.a.value + self.b.value * COMPLEXITY_MODELS[self.model](n_arr)

    def band(self, n: float | ArrayLike, level: float = LEVEL) -> tuple[np.ndarray, np.ndarray]:
        """Pointwise CI of the fitted mean cost by the delta method; each shape (k,)."""
        n_arr = np.atleast_1d(np.asarray(n, dtype=float))
        basis = np.column_stack([np.ones_like(n_arr), COMPLEXITY_MODELS[self.model](n_arr)])
        se = np.sqrt(np.einsum("ij,jk,ik->i", basis, self.covariance, basis))
        half = t_quantile(level, self.dof) * se
        fit = self.predict(n_arr)
        return fit - half, fit + half


@dataclass(frozen=True, eq=False)
class ComplexityFit:
    """The growth class chosen for cost(n) = a + b·g(n), with the runner-up.

    Attributes:
        best: The chosen candidate (lowest score).
        runner_up: The second-best candidate, or None with a single class.
        delta: runner_up.score − best.score (ΔAICc); < 2 means "hard to
            tell apart", > 10 "clearly worse" (Burnham & Anderson 2002).
        criterion: "AICc", or "AIC" when too few points for AICc.
        candidates: Every class fitted, best first.
        residuals: Observed − fitted cost of the best class, shape (k,), s.
        r_squared: (Weighted) R² of the best class.
        n_points: Number of points.
        n_range: (min n, max n) of the data.
        level: Confidence level of the intervals.
        warnings: Plain-words reasons to doubt the choice.
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
    warnings: tuple[str, ...]

    @property
    def model(self) -> str:
        """Name of the chosen class, e.g. "O(n log n)"."""
        return self.best.model

    @property
    def a(self) -> Estimate:
        """Constant term of the chosen class, unit of cost."""
        return self.best.a

    @property
    def b(self) -> Estimate:
        """Growth coefficient of the chosen class."""
        return self.best.b

    def predict(self, n: float | ArrayLike) -> np.ndarray:
        """Fitted cost a + b·g(n) of the chosen class; shape of ``n``. O(len(n))."""
        return self.best.predict(n)

    def band(self, n: float | ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """Pointwise CI (low, high) of the fitted cost at ``level``, each shape (k,)."""
        return self.best.band(n, self.level)

    def reading(self) -> str:
        """Plain words: "cost grows as O(n): 1.2e-06 s per unit (…); next best O(n log n), ΔAICc = 14"."""
        text = f"cost grows as {self.model}: a = {self.a.value:.3g}, b = {self.b.value:.3g}"
        if self.runner_up is None:
            return text
        return text + f"; next best {self.runner_up.model}, Δ{self.criterion} = {self.delta:.1f}"

    def to_dict(self) -> dict[str, object]:
        """Flat, JSON-ready summary of the choice and its coefficients."""
        return {
            "model": self.model,
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
            "warnings": list(self.warnings),
        }


def fit_complexity(
    n: ArrayLike,
    cost: ArrayLike,
    weights: ArrayLike | None = None,
    *,
    models: Sequence[str] | None = None,
    level: float = LEVEL,
) -> ComplexityFit:
    """Choose the growth class of cost(n) = a + b·g(n) by AICc.

    Each class is a (weighted) linear least-squares fit with a constant term,
    unlike Google Benchmark's BigO which fits b·g(n) alone. Classes are
    ranked by AICc = k·ln(RSS/k) + 2K + 2K(K+1)/(k−K−1), with k points and
    K = p + 1 parameters (p coefficients plus the error variance). AICc,
    not AIC or BIC, because sweeps have few sizes (5–15) where AIC
    over-fits (Hurvich & Tsai 1989) and because we want the best predictor
    rather than assume the true class is in the set, which BIC does
    (Burnham & Anderson 2002). With k < 5 points AICc is undefined for the
    2-coefficient classes and plain AIC is used, with a warning.
    CIs are t intervals from cov = s²·(XᵀWX)⁻¹. O(k) per class.

    Args:
        n: Input sizes, shape (k,), > 0.
        cost: Cost at each size, shape (k,), > 0 (seconds, bytes, …).
        weights: Optional relative weights, shape (k,), > 0, e.g. 1/SE² of
            each cost; needed when noise grows with cost.
        models: Classes to consider (keys of COMPLEXITY_MODELS); all by default.
        level: Confidence level of the intervals.

    Returns:
        A ComplexityFit.

    Raises:
        ValueError: Fewer than 3 points or distinct sizes, mismatched lengths,
            NaN, non-positive n, cost or weights, or an unknown class name.
    """
    n_arr, y = paired(n, cost, ("n", "cost"))
    w = np.ones_like(y) if weights is None else positive_array(weights, "weights")
    if w.size != y.size:
        raise ValueError(
            f"weights has {w.size} values for {y.size} points; give one weight per point."
        )
    require_points(n_arr, 3, "the complexity fit")
    names = _check_models(models)
    use_aicc = all(n_arr.size - (2 if m == "O(1)" else 3) - 1 > 0 for m in names)
    cands = sorted(
        (_fit_class(m, n_arr, y, w, level, use_aicc) for m in names), key=lambda c: c.score
    )
    return _complexity_result(cands, n_arr, y, w, level, "AICc" if use_aicc else "AIC")


def _check_models(models: Sequence[str] | None) -> list[str]:
    """Validated class names, all of COMPLEXITY_MODELS by default."""
    names = list(COMPLEXITY_MODELS) if models is None else list(models)
    unknown = [m for m in names if m not in COMPLEXITY_MODELS]
    if unknown or not names:
        raise ValueError(
            f"unknown complexity model(s) {unknown}; choose from {list(COMPLEXITY_MODELS)}."
        )
    return names


def _fit_class(
    model: str, n: np.ndarray, y: np.ndarray, w: np.ndarray, level: float, aicc: bool
) -> ComplexityCandidate:
    """Weighted least squares of y on [1, g(n)] (or [1] for O(1)); see fit_complexity."""
    g = COMPLEXITY_MODELS[model](n)
    cols = [np.ones_like(n)] if model == "O(1)" else [np.ones_like(n), g / np.max(np.abs(g))]
    design = np.column_stack(cols)
    sw = np.sqrt(w)
    coef, *_ = np.linalg.lstsq(design * sw[:, None], y * sw, rcond=None)
    resid = y - design @ coef
    rss, p = float(np.sum(w * resid**2)), design.shape[1]
    dof = n.size - p
    cov_scaled = gram_inverse(design * sw[:, None]) * (rss / dof)
    coef, cov = _unscale(coef, cov_scaled, 1.0 if p == 1 else float(np.max(np.abs(g))))
    a, b = (wald(coef[i], math.sqrt(max(cov[i, i], 0.0)), level, dof) for i in (0, 1))
    return ComplexityCandidate(model, a, b, cov, rss, _information(rss, n.size, p + 1, aicc), dof)


def _unscale(coef: np.ndarray, cov: np.ndarray, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Undo the g(n)/scale column scaling; pad O(1) to (a, 0) and a 2×2 covariance."""
    full, full_cov = np.zeros(2), np.zeros((2, 2))
    k = coef.size
    full[:k], full_cov[:k, :k] = coef, cov
    s = np.array([1.0, 1.0 / scale])
    return full * s, full_cov * np.outer(s, s)


def _information(rss: float, k: int, params: int, aicc: bool) -> float:
    """AIC = k·ln(RSS/k) + 2K, plus 2K(K+1)/(k−K−1) for AICc (Gaussian errors)."""
    rss = max(rss, 1e-300)
    aic = k * math.log(rss / k) + 2 * params
    return aic + 2 * params * (params + 1) / (k - params - 1) if aicc else aic


def _complexity_result(
    cands: list[ComplexityCandidate],
    n: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    level: float,
    criterion: str,
) -> ComplexityFit:
    """Assemble a ComplexityFit with its warnings from ranked candidates."""
    best = cands[0]
    runner = cands[1] if len(cands) > 1 else None
    delta = runner.score - best.score if runner else math.inf
    resid = y - best.predict(n)
    fit = ComplexityFit(
        best,
        runner,
        delta,
        criterion,
        tuple(cands),
        resid,
        r_squared(y, resid, w),
        n.size,
        (float(n.min()), float(n.max())),
        level,
        (),
    )
    return ComplexityFit(**{**fit.__dict__, "warnings": _complexity_warnings(fit)})


def _complexity_warnings(fit: ComplexityFit) -> tuple[str, ...]:
    """Plain-words reasons to doubt the chosen class."""
    out = []
    if fit.criterion == "AIC":
        out.append(
            f"only {fit.n_points} points: too few for AICc, so plain AIC chose the class; measure more sizes."
        )
    if fit.runner_up is not None and fit.delta < 2:
        out.append(
            f"{fit.model} and {fit.runner_up.model} fit about equally well (Δ{fit.criterion} = {fit.delta:.1f} < 2); "
            "widen the range of n to tell them apart."
        )
    if fit.n_range[1] / fit.n_range[0] < 10:
        out.append(
            "n spans less than a factor of 10, so growth classes are hard to tell apart; widen the sweep."
        )
    if fit.b.value < 0:
        out.append(
            f"the fitted {fit.model} coefficient b is negative: cost falls as n grows; check the measurements."
        )
    return tuple(out)

