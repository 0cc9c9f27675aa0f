"""The growth classes of cost(n) = a + b·g(n), and the weighted least-squares fit of one class.

Shared by :mod:`.choice` (which class the data support) and
:mod:`.complexity` (the fit users see).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from perflab.analyze.fit.models.core import ArrayLike, gram_inverse, t_quantile, wald
from perflab.analyze.fit.models.words import fmt_value
from perflab.model.estimate import LEVEL, Estimate


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

#: How the growth term reads in a formula: 366 ns + 20.9 ns × n log n.
TERMS = {"O(log n)": "log n", "O(n)": "n", "O(n log n)": "n log n", "O(n^2)": "n²", "O(n^3)": "n³"}


@dataclass(frozen=True, eq=False)
class ComplexityCandidate:
    """One growth class fitted to the data.

    Attributes:
        model: Name, a key of COMPLEXITY_MODELS.
        a: Constant term, unit of cost (s).
        b: Coefficient of g(n), unit of cost per unit of g; 0 ± 0 for "O(1)".
        covariance: Covariance of (a, b), shape (2, 2).
        rss: Weighted residual sum of squares Σ wᵢ(costᵢ − fitᵢ)²: χ² when
            the weights are 1/SE², a sum of squared relative errors otherwise.
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

    def formula(self, unit: str = "s") -> str:
        """The fitted curve in words: "366 ns + 20.9 ns × n"; "671 ns" for O(1)."""
        if self.model == "O(1)":
            return fmt_value(self.a.value, unit)
        return (
            f"{fmt_value(self.a.value, unit)} + {fmt_value(self.b.value, unit)} × "
            f"{TERMS[self.model]}"
        )


def fit_class(
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
    coef, cov = unscale(coef, cov_scaled, 1.0 if p == 1 else float(np.max(np.abs(g))))
    a, b = (wald(coef[i], math.sqrt(max(cov[i, i], 0.0)), level, dof) for i in (0, 1))
    return ComplexityCandidate(model, a, b, cov, rss, information(rss, n.size, p + 1, aicc), dof)


def unscale(coef: np.ndarray, cov: np.ndarray, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Undo the g(n)/scale column scaling; pad O(1) to (a, 0) and a 2×2 covariance."""
    full, full_cov = np.zeros(2), np.zeros((2, 2))
    k = coef.size
    full[:k], full_cov[:k, :k] = coef, cov
    s = np.array([1.0, 1.0 / scale])
    return full * s, full_cov * np.outer(s, s)


def information(rss: float, k: int, params: int, aicc: bool) -> float:
    """AIC = k·ln(RSS/k) + 2K, plus 2K(K+1)/(k−K−1) for AICc (Gaussian errors)."""
    rss = max(rss, 1e-300)
    aic = k * math.log(rss / k) + 2 * params
    return aic + 2 * params * (params + 1) / (k - params - 1) if aicc else aic
