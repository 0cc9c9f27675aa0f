"""The Universal Scalability Law X(N) = γN / (1 + α(N−1) + βN(N−1)) and Little's law."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
from scipy import optimize

from perflab.analyze.fit.models.core import (
    ArrayLike,
    gram_inverse,
    paired,
    r_squared,
    require_points,
    t_quantile,
    wald,
)
from perflab.analyze.fit.models.words import fmt_count, fmt_percent, fmt_value
from perflab.model.estimate import LEVEL, Estimate

#: The words that open the warning (and the chart's note) of a degenerate fit.
NOT_USL = "these points do not show USL behaviour"
#: α this close to its upper bound 1 counts as at the bound.
ALPHA_BOUND = 1.0 - 1e-6
#: R² at or below this: the curve explains too little of X.
R2_USL = 0.5
#: A point the curve misses by more than this share of its X (at least the median X).
MISS_USL = 0.20


def littles_law_concurrency(
    throughput_per_s: float | ArrayLike, mean_latency_s: float | ArrayLike
) -> np.ndarray | float:
    """Mean concurrency N = X·R (Little 1961). O(n).

    Args:
        throughput_per_s: Achieved throughput X, requests per second; scalar or
            shape (k,).
        mean_latency_s: Mean time in system R, seconds; same shape as X.

    Returns:
        N, dimensionless (requests in flight on average); a float for scalar
        input, else an array of shape (k,).

    Raises:
        ValueError: On NaN/inf, negative values or mismatched shapes.
    """
    x, r = np.asarray(throughput_per_s, dtype=float), np.asarray(mean_latency_s, dtype=float)
    if x.shape != r.shape:
        raise ValueError(
            f"throughput has shape {x.shape} but latency has {r.shape}; pair them one to one."
        )
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(r))):
        raise ValueError(
            "throughput and latency must be finite; drop steps with no completed requests."
        )
    if np.any(x < 0) or np.any(r < 0):
        raise ValueError(
            "throughput and latency must be ≥ 0; check the units (per second, seconds)."
        )
    n = x * r
    return float(n) if n.ndim == 0 else n


def _usl(n: np.ndarray, alpha: float, beta: float, gamma: float) -> np.ndarray:
    """X(N) = γN / (1 + α(N−1) + βN(N−1))."""
    return gamma * n / (1.0 + alpha * (n - 1.0) + beta * n * (n - 1.0))


def _usl_gradient(n: np.ndarray, alpha: float, beta: float, gamma: float) -> np.ndarray:
    """∂X/∂(α, β, γ) at each N; shape (len(n), 3)."""
    d = 1.0 + alpha * (n - 1.0) + beta * n * (n - 1.0)
    common = -gamma * n * (n - 1.0) / d**2
    return np.column_stack([common, common * n, n / d])


@dataclass(frozen=True, eq=False)
class UslFit:
    """A Universal Scalability Law fit (Gunther 2007; Schwartz 2015).

    Attributes:
        alpha: Contention α (serial fraction), dimensionless, in [0, 1].
        beta: Coherency β (crosstalk per pair), dimensionless, ≥ 0.
        gamma: Single-unit throughput γ = X(1), in the unit of X.
        peak_load: N* = sqrt((1−α)/β), where X peaks; inf when β = 0.
        peak_throughput: X(N*), unit of X; γ/α when β = 0 (inf if α = 0 too).
        amdahl_limit: γ/α, the ceiling X approaches when β = 0; inf when α = 0.
        r_squared: 1 − SSR/SST on X.
        residuals: Observed − fitted X, shape (n_points,), unit of X.
        n_points: Number of (N, X) points fitted.
        dof: Residual degrees of freedom, n_points − free parameters.
        residual_std_error: s = sqrt(SSR/dof), unit of X.
        converged: False when the optimizer stopped without meeting its
            tolerances; the coefficients are then not to be trusted.
        method: "nls" (bounded nonlinear least squares) or "quadratic"
            (Gunther's transform; R usl 1.x).
        covariance: Covariance of (α, β, γ), shape (3, 3); rows of fixed
            parameters are 0.
        n_range: (min N, max N) of the data.
        level: Confidence level of every interval.
        warnings: Plain-words reasons the data may not support the model.
        degenerate: Why the points do not show USL behaviour (α at its
            bound 1, R² ≤ 0.5, residuals beyond ±20% of X, a CI band wider
            than the data); empty for a usable fit.
        unit: Unit of X for readings: "/s" for rates, "" when unknown.
    """

    alpha: Estimate
    beta: Estimate
    gamma: Estimate
    peak_load: float
    peak_throughput: float
    amdahl_limit: float
    r_squared: float
    residuals: np.ndarray
    n_points: int
    dof: int
    residual_std_error: float
    converged: bool
    method: str
    covariance: np.ndarray
    n_range: tuple[float, float]
    level: float
    warnings: tuple[str, ...]
    degenerate: tuple[str, ...] = ()
    unit: str = ""

    @property
    def usable(self) -> bool:
        """True when the fit converged and the points show USL behaviour."""
        return self.converged and not self.degenerate

    def predict(self, n: float | ArrayLike) -> np.ndarray:
        """Fitted throughput X(N) in the unit of X; shape of ``n``. O(len(n))."""
        return _usl(np.asarray(n, dtype=float), self.alpha.value, self.beta.value, self.gamma.value)

    def band(self, n: float | ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """Pointwise CI of the fitted curve by the delta method. O(len(n)).

        Args:
            n: Loads N, shape (k,).

        Returns:
            (low, high), each shape (k,), unit of X; low is clipped at 0.
        """
        n = np.atleast_1d(np.asarray(n, dtype=float))
        g = _usl_gradient(n, self.alpha.value, self.beta.value, self.gamma.value)
        se = np.sqrt(np.einsum("ij,jk,ik->i", g, self.covariance, g))
        half = t_quantile(self.level, self.dof) * se
        fit = self.predict(n)
        return np.maximum(fit - half, 0.0), fit + half

    def reading(self) -> str:
        """A plain-words interpretation, e.g. "contention ≈ 2.8% of work is serialized; …"."""
        if self.degenerate:
            return f"{NOT_USL} (see the warning), so α, β and N* mean nothing here"
        head = "" if self.converged else "the fit did not converge, so treat this as a guess: "
        text = f"contention ≈ {fmt_percent(self.alpha.value)} of work is serialized; "
        if math.isfinite(self.peak_load):
            tail = f"coherency cost dominates past N ≈ {fmt_count(self.peak_load)}"
        elif math.isfinite(self.amdahl_limit):
            tail = (
                "no coherency cost measured, so X levels off towards γ/α ≈ "
                f"{fmt_value(self.amdahl_limit, self.unit)}"
            )
        else:
            tail = "no coherency cost measured: scaling is linear over the data"
        return head + text + tail

    def to_dict(self) -> dict[str, float | int | bool | str | list[str] | list[float]]:
        """Flat, JSON-ready summary; keys alpha, beta, gamma, peak_load, peak_throughput, …"""
        out: dict[str, float | int | bool | str | list[str] | list[float]] = {}
        for name in ("alpha", "beta", "gamma"):
            est: Estimate = getattr(self, name)
            out |= {
                name: est.value,
                f"{name}_se": est.se,
                f"{name}_ci_low": est.ci_low,
                f"{name}_ci_high": est.ci_high,
            }
        return out | {
            "peak_load": self.peak_load,
            "peak_throughput": self.peak_throughput,
            "amdahl_limit": self.amdahl_limit,
            "r_squared": self.r_squared,
            "residuals": self.residuals.tolist(),
            "n_points": self.n_points,
            "converged": self.converged,
            "method": self.method,
            "level": self.level,
            "reading": self.reading(),
            "warnings": list(self.warnings),
            "degenerate": list(self.degenerate),
        }


def fit_usl(
    n: ArrayLike,
    x: ArrayLike,
    *,
    gamma: float | None = None,
    method: Literal["nls", "quadratic"] = "nls",
    level: float = LEVEL,
    max_nfev: int | None = None,
    unit: str = "",
) -> UslFit:
    """Fit the Universal Scalability Law X(N) = γN / (1 + α(N−1) + βN(N−1)).

    ``method="nls"`` (default) is bounded nonlinear least squares
    (scipy trust-region reflective) with α ∈ [0, 1], β ≥ 0, γ ≥ 0, started
    from γ₀ = max X/N, α₀ = 0.01, β₀ = 1e−4 — the fit of R ``usl`` ≥ 2.0
    (Möding; ``usl.solve.nls``), whose coefficients and standard errors it
    reproduces. Standard errors come from the Jacobian at the optimum,
    cov = s²·(JᵀJ)⁻¹ with s² = SSR/(n−p), and CIs are t intervals with n−p
    degrees of freedom (α and β clipped at 0). Passing ``gamma`` holds γ
    fixed (e.g. at a trusted X(1)) and fits α, β only.

    ``method="quadratic"`` is Gunther's transform (Gunther 2007, §5.2.3;
    R ``usl`` 1.x default): with C = X/γ and γ = X(1), y = N/C − 1 is
    regressed on (N−1)² and (N−1) through the origin. It needs a point at
    N = 1 (or ``gamma``) and weighs points differently from ``"nls"``.

    Cost: O(iterations · n) for "nls", O(n) for "quadratic".

    Args:
        n: Loads N (threads, connections, users), shape (k,), > 0.
        x: Throughput at each load, shape (k,), > 0, any rate unit.
        gamma: Hold γ at this value instead of fitting it.
        method: "nls" or "quadratic", see above.
        level: Confidence level of the intervals.
        max_nfev: Cap on function evaluations for "nls" (None: scipy default).
        unit: Unit of X for the reading: "/s" (a rate) or "" (a bare number).

    Points that do not show USL behaviour are named, not fitted silently:
    α at its upper bound 1 (X does not grow with N), R² ≤ 0.5, a point the
    curve misses by more than 20% of its X (or of the median X, if larger),
    or a CI band wider than the highest
    X measured (it spans the chart) put the reasons in ``degenerate`` and a
    warning "these points do not show USL behaviour: …"; the reading then
    interprets nothing.

    Returns:
        A UslFit; check ``usable``, ``degenerate`` and ``warnings``.

    Raises:
        ValueError: Mismatched lengths, NaN, non-positive N or X, fewer points
            (or distinct N) than free parameters, a non-positive ``gamma``, or
            "quadratic" without a point at N = 1 and no ``gamma``.
    """
    n_arr, x_arr = paired(n, x, ("N", "X"))
    if gamma is not None and not (math.isfinite(gamma) and gamma > 0):
        raise ValueError(
            f"gamma must be a finite number > 0, got {gamma!r}; omit it to fit γ from the data."
        )
    if method == "quadratic":
        fit = _fit_usl_quadratic(n_arr, x_arr, gamma, level)
    elif method == "nls":
        require_points(n_arr, 3 if gamma is None else 2, "the USL")
        fit = _fit_usl_nls(n_arr, x_arr, gamma, level, max_nfev)
    else:
        raise ValueError(f"unknown USL method {method!r}; use 'nls' or 'quadratic'.")
    reasons = _degenerate(fit, n_arr, x_arr)
    warnings = (
        fit.warnings
        if not reasons
        else (
            (
                f"{NOT_USL}: {'; '.join(reasons)}. Read nothing into α, β or N*: measure loads where "
                "X still changes with N, or check the sweep."
            ),
            *fit.warnings,
        )
    )
    return replace(fit, degenerate=reasons, warnings=warnings, unit=unit)


def _fit_usl_nls(
    n: np.ndarray, x: np.ndarray, gamma: float | None, level: float, max_nfev: int | None
) -> UslFit:
    """Bounded least squares for (α, β[, γ]); see fit_usl."""
    free_gamma = gamma is None
    start = [0.01, 1e-4] + ([float(np.max(x / n))] if free_gamma else [])
    upper = [1.0, np.inf] + ([np.inf] if free_gamma else [])

    def params(p: np.ndarray) -> tuple[float, float, float]:
        return float(p[0]), float(p[1]), float(p[2]) if free_gamma else float(gamma)  # type: ignore[arg-type]

    def jac(p: np.ndarray) -> np.ndarray:
        return _usl_gradient(n, *params(p))[:, : len(start)]

    res = optimize.least_squares(
        lambda p: _usl(n, *params(p)) - x,
        start,
        jac=jac,
        bounds=([0.0] * len(start), upper),
        x_scale="jac",
        xtol=1e-12,
        ftol=1e-12,
        gtol=1e-12,
        max_nfev=max_nfev,
    )
    cov = _jacobian_covariance(jac(res.x), res.fun)
    note = None if res.status > 0 else f"the least-squares fit did not converge ({res.message})"
    return _usl_result(n, x, params(res.x), (cov, len(start)), "nls", level, note)


def _jacobian_covariance(jac: np.ndarray, resid: np.ndarray) -> np.ndarray:
    """cov = s²·(JᵀJ)⁻¹ as in R's nls, padded to 3×3 (zeros) when γ is fixed."""
    k = jac.shape[1]
    dof = resid.size - k
    s2 = float(resid @ resid) / dof if dof > 0 else math.nan
    cov = np.zeros((3, 3))
    cov[:k, :k] = gram_inverse(jac) * s2
    return cov


def _fit_usl_quadratic(n: np.ndarray, x: np.ndarray, gamma: float | None, level: float) -> UslFit:
    """Gunther's quadratic transform (GCaP §5.2.3), through the origin."""
    g = gamma if gamma is not None else _x_at_one(n, x)
    require_points(n, 2, "the quadratic USL transform")
    u = n - 1.0
    design, y = np.column_stack([u**2, u]), n * g / x - 1.0
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    resid = y - design @ coef
    dof = n.size - 2
    s2 = float(resid @ resid) / dof if dof > 0 else math.nan
    to_ab = np.array([[-1.0, 1.0], [1.0, 0.0]])  # (α, β) = (b − a, a)
    cov = np.zeros((3, 3))
    cov[:2, :2] = to_ab @ (gram_inverse(design) * s2) @ to_ab.T
    alpha, beta = float(coef[1] - coef[0]), float(coef[0])
    return _usl_result(n, x, (alpha, beta, float(g)), (cov, 2), "quadratic", level, None)


def _x_at_one(n: np.ndarray, x: np.ndarray) -> float:
    """Mean X at N = 1, the normalisation of the quadratic method."""
    at_one = x[n == 1.0]
    if at_one.size == 0:
        raise ValueError(
            "method='quadratic' normalises by X(1) but no point has N = 1; pass gamma=X(1) or use method='nls'."
        )
    return float(np.mean(at_one))


def _usl_result(
    n: np.ndarray,
    x: np.ndarray,
    p: tuple[float, float, float],
    cov_free: tuple[np.ndarray, int],
    method: str,
    level: float,
    note: str | None,
) -> UslFit:
    """Assemble a UslFit (derived quantities and warnings) from coefficients.

    ``cov_free`` is the 3×3 covariance and the number of free parameters.
    """
    alpha, beta, gamma = _snap_to_zero(p, float(n.max()))
    cov, free = cov_free
    resid = x - _usl(n, alpha, beta, gamma)
    dof = n.size - free
    se = np.sqrt(np.maximum(np.diag(cov), 0.0))
    est = (
        wald(alpha, se[0], level, dof, 0.0, 1.0),
        wald(beta, se[1], level, dof, 0.0),
        wald(gamma, se[2], level, dof, 0.0),
    )
    peak = _peak_load(alpha, beta)
    limit = gamma / alpha if alpha > 0 else math.inf
    x_peak = float(_usl(np.array(peak), alpha, beta, gamma)) if math.isfinite(peak) else limit
    fit = UslFit(
        *est,
        peak,
        x_peak,
        limit,
        r_squared(x, resid),
        resid,
        n.size,
        dof,
        math.sqrt(float(resid @ resid) / dof) if dof > 0 else math.nan,
        note is None,
        method,
        cov,
        (float(n.min()), float(n.max())),
        level,
        (),
    )
    return _with_warnings(fit, _usl_warnings(fit, note))


def _snap_to_zero(p: tuple[float, float, float], top: float) -> tuple[float, float, float]:
    """Set α or β to 0 when its term changes X(max N) by < 1e−9 (optimizer noise at the bound)."""
    alpha, beta, gamma = p
    alpha = 0.0 if abs(alpha) * (top - 1.0) < 1e-9 else alpha
    beta = 0.0 if abs(beta) * top * (top - 1.0) < 1e-9 * (1.0 + alpha * (top - 1.0)) else beta
    return alpha, beta, gamma


def _peak_load(alpha: float, beta: float) -> float:
    """N* = sqrt((1−α)/β), at least 1; inf when β = 0."""
    if beta <= 0:
        return math.inf
    return max(1.0, math.sqrt(max(0.0, 1.0 - alpha) / beta))


def _with_warnings(fit: UslFit, warnings: tuple[str, ...]) -> UslFit:
    """A copy of ``fit`` carrying ``warnings``."""
    return UslFit(**{**fit.__dict__, "warnings": warnings})


def _usl_warnings(fit: UslFit, note: str | None) -> tuple[str, ...]:
    """Plain-words reasons the data may not support the USL fit."""
    out = (
        []
        if note is None
        else [f"{note}; the coefficients are not trustworthy: add load levels or drop outliers."]
    )
    if fit.n_points < 4:
        out.append(
            f"only {fit.n_points} points: a USL fit needs at least 4 to leave room for error; measure more load levels."
        )
    if fit.dof < 1:
        out.append(
            "no degrees of freedom left, so no standard errors or CIs; measure more load levels."
        )
    out += _usl_range_warnings(fit)
    if fit.dof >= 1 and fit.beta.ci_low <= 0.0:
        out.append(
            f"β's {fit.level:.0%} CI includes 0: the data cannot tell coherency cost from none, "
            "so the peak N* may be much larger or absent."
        )
    return tuple(out)


def _usl_range_warnings(fit: UslFit) -> list[str]:
    """Warnings about data that stops before the knee (1/α) or the peak (N*)."""
    top, out = fit.n_range[1], []
    knee = 1.0 / fit.alpha.value if fit.alpha.value > 0 else math.inf
    if math.isfinite(knee) and top < knee and top < fit.peak_load:
        out.append(
            f"no points past the knee N ≈ 1/α ≈ {fmt_count(knee)} (max N = {fmt_count(top, 3)}): the data is nearly linear, "
            "so α and β are poorly determined; measure at higher load."
        )
    if math.isfinite(fit.peak_load) and top < fit.peak_load:
        out.append(
            f"no points past the peak N* ≈ {fmt_count(fit.peak_load)} (max N = {fmt_count(top, 3)}): N* and X(N*) are "
            f"extrapolated; measure beyond N ≈ {fmt_count(fit.peak_load)} to confirm."
        )
    return out


def _degenerate(fit: UslFit, n: np.ndarray, x: np.ndarray) -> tuple[str, ...]:
    """Plain-words reasons the points do not show USL behaviour (see fit_usl); () if they do."""
    out = []
    if fit.alpha.value >= ALPHA_BOUND:
        out.append("α is at its bound 1: X does not grow with N")
    if fit.r_squared <= R2_USL:
        out.append(f"R² = {fit.r_squared:.2f} ≤ {R2_USL}")
    # a miss counts against the larger of the point's X and the median X, so
    # that the small X of the first loads (specsdm91's N = 1: 65 of 1,853)
    # does not make a good fit "degenerate"
    share = fit.residuals / np.maximum(x, np.median(x))
    worst = int(np.argmax(np.abs(share)))
    if abs(share[worst]) > MISS_USL:
        sign = "+" if share[worst] > 0 else "−"
        out.append(
            f"the curve misses N = {fmt_count(n[worst], 3)} by {sign}"
            f"{fmt_percent(abs(share[worst]))} of X (beyond ±{fmt_percent(MISS_USL)})"
        )
    if fit.dof >= 1:
        low, high = fit.band(np.linspace(float(n.min()), float(n.max()), 200))
        if float(np.nanmax(high - low)) >= float(x.max()):
            out.append(
                f"the {fit.level:.0%} CI band of the curve is wider than the highest X "
                "measured: it spans the chart"
            )
    return tuple(out)
