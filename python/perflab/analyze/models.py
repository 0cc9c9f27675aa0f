"""Scaling and cost models: USL, complexity classes, break-even.

Pure functions on numpy arrays; nothing here reads files or prints.

* USL: X(N) = γN / (1 + α(N−1) + βN(N−1)) (Gunther 2007), fitted by bounded
  nonlinear least squares as R ``usl`` ≥ 2.0 does (Möding), with standard
  errors from the Jacobian, cov = s²·(JᵀJ)⁻¹. Gunther's older quadratic
  transform (R ``usl`` 1.x "default") is available as ``method="quadratic"``.
* Complexity: cost(n) = a + b·g(n) for g in 1, log n, n, n log n, n², n³
  (Google Benchmark's BigO plus a constant term), linear least squares per
  class, chosen by AICc (Hurvich & Tsai 1989; Burnham & Anderson 2002).
* Break-even: where two fitted cost curves (cold + a + b·g(n)) cross, with a
  parametric-bootstrap CI.

Units: N is a concurrency (threads, connections, users); X is a throughput in
whatever unit the caller measured (ops/s); n is an input size; costs are
seconds. Every interval is two-sided at ``level`` (default 95%).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import optimize, stats

__all__ = [
    "COMPLEXITY_MODELS",
    "BreakEven",
    "ComplexityCandidate",
    "ComplexityFit",
    "Estimate",
    "UslFit",
    "breakeven",
    "breakeven_from_points",
    "fit_complexity",
    "fit_usl",
    "littles_law_concurrency",
]

LEVEL = 0.95
ArrayLike = Sequence[float] | np.ndarray


# ---------------------------------------------------------------------------
# shared pieces


@dataclass(frozen=True)
class Estimate:
    """A fitted coefficient with its uncertainty.

    Attributes:
        value: Point estimate, in the coefficient's unit.
        std_error: Standard error (NaN when no degrees of freedom are left;
            0 for a coefficient held fixed).
        ci_low: Lower bound of the two-sided t interval at the fit's level.
        ci_high: Upper bound of that interval.
    """

    value: float
    std_error: float
    ci_low: float
    ci_high: float

    def contains(self, x: float) -> bool:
        """Whether ``x`` lies inside [ci_low, ci_high] (False when the CI is NaN)."""
        return bool(self.ci_low <= x <= self.ci_high)


def _t_quantile(level: float, dof: int) -> float:
    """Two-sided Student t quantile t_{(1+level)/2, dof}; NaN when dof < 1."""
    return float(stats.t.ppf(0.5 + level / 2.0, dof)) if dof >= 1 else math.nan


def _estimate(value: float, se: float, t: float, floor: float = -math.inf,
              ceiling: float = math.inf) -> Estimate:
    """Wald interval value ± t·se, clipped to the parameter's bounds [floor, ceiling]."""
    half = t * se
    return Estimate(float(value), float(se), float(max(floor, value - half)),
                    float(min(ceiling, value + half)))


def _fmt_percent(fraction: float) -> str:
    """A fraction as a percentage with two significant digits, never in e-notation."""
    pct = 100 * fraction
    return f"{pct:.2g}%" if pct < 10 else f"{pct:.0f}%"


def _as_positive_array(values: ArrayLike, name: str) -> np.ndarray:
    """1-D float array of finite, strictly positive values, or ValueError saying why."""
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D sequence of numbers, got shape {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise ValueError(
            f"{name} contains NaN or infinite values; drop or re-measure those points."
        )
    if np.any(arr <= 0):
        bad = arr[arr <= 0][0]
        raise ValueError(
            f"{name} must be > 0, got {bad:g}; remove points with zero or negative {name}."
        )
    return arr


def _paired(x: ArrayLike, y: ArrayLike, names: tuple[str, str]) -> tuple[np.ndarray, np.ndarray]:
    """Validate two positive arrays of equal length."""
    xa, ya = _as_positive_array(x, names[0]), _as_positive_array(y, names[1])
    if xa.size != ya.size:
        raise ValueError(
            f"{names[0]} has {xa.size} values but {names[1]} has {ya.size}; give one {names[1]} per {names[0]}."
        )
    return xa, ya


def _require_points(x: np.ndarray, needed: int, what: str) -> None:
    """Raise unless there are at least ``needed`` points at ``needed`` distinct x values."""
    if x.size < needed:
        raise ValueError(
            f"{what} has {needed} parameters but only {x.size} points were given; measure at least {needed} levels."
        )
    if np.unique(x).size < needed:
        raise ValueError(
            f"{what} needs at least {needed} distinct x values, got {np.unique(x).size}; measure more levels."
        )


def _r_squared(y: np.ndarray, residuals: np.ndarray, weights: np.ndarray | None = None) -> float:
    """Coefficient of determination 1 − SSR/SST (weighted when weights are given)."""
    w = np.ones_like(y) if weights is None else weights
    mean = np.sum(w * y) / np.sum(w)
    sst = float(np.sum(w * (y - mean) ** 2))
    return 1.0 - float(np.sum(w * residuals**2)) / sst if sst > 0 else math.nan


def _fmt_n(x: float, sig: int = 2) -> str:
    """A count rounded to ``sig`` significant figures with thousands separators: 31,000."""
    if not math.isfinite(x):
        return "∞"
    if x < 10:
        return f"{x:.{sig}g}"
    digits = sig - 1 - math.floor(math.log10(abs(x)))
    return f"{round(x, digits):,.0f}"


def _sig_needed(values: Sequence[float]) -> int:
    """Fewest significant figures (2–4) that keep distinct finite values distinct in print."""
    finite = sorted({v for v in values if math.isfinite(v) and v >= 1})
    for sig in (2, 3):
        if len({_fmt_n(v, sig) for v in finite}) == len(finite):
            return sig
    return 4


# ---------------------------------------------------------------------------
# Little's law


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


# ---------------------------------------------------------------------------
# USL


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
        half = _t_quantile(self.level, self.dof) * se
        fit = self.predict(n)
        return np.maximum(fit - half, 0.0), fit + half

    def reading(self) -> str:
        """A plain-words interpretation, e.g. "contention ≈ 2.8% of work is serialized; …"."""
        head = "" if self.converged else "the fit did not converge, so treat this as a guess: "
        text = f"contention ≈ {_fmt_percent(self.alpha.value)} of work is serialized; "
        if math.isfinite(self.peak_load):
            tail = f"coherency cost dominates past N ≈ {_fmt_n(self.peak_load)}"
        elif math.isfinite(self.amdahl_limit):
            tail = (
                f"no coherency cost measured, so X levels off towards γ/α ≈ {self.amdahl_limit:.4g}"
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
                f"{name}_se": est.std_error,
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
        }


def fit_usl(
    n: ArrayLike,
    x: ArrayLike,
    *,
    gamma: float | None = None,
    method: Literal["nls", "quadratic"] = "nls",
    level: float = LEVEL,
    max_nfev: int | None = None,
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

    Returns:
        A UslFit; check ``converged`` and ``warnings``.

    Raises:
        ValueError: Mismatched lengths, NaN, non-positive N or X, fewer points
            (or distinct N) than free parameters, a non-positive ``gamma``, or
            "quadratic" without a point at N = 1 and no ``gamma``.
    """
    n_arr, x_arr = _paired(n, x, ("N", "X"))
    if gamma is not None and not (math.isfinite(gamma) and gamma > 0):
        raise ValueError(
            f"gamma must be a finite number > 0, got {gamma!r}; omit it to fit γ from the data."
        )
    if method == "quadratic":
        return _fit_usl_quadratic(n_arr, x_arr, gamma, level)
    if method != "nls":
        raise ValueError(f"unknown USL method {method!r}; use 'nls' or 'quadratic'.")
    _require_points(n_arr, 3 if gamma is None else 2, "the USL")
    return _fit_usl_nls(n_arr, x_arr, gamma, level, max_nfev)


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
    cov[:k, :k] = _gram_inverse(jac) * s2
    return cov


def _gram_inverse(design: np.ndarray) -> np.ndarray:
    """(XᵀX)⁻¹ with columns equilibrated first: USL columns differ by ~N², far past pinv's rcond."""
    norms = np.linalg.norm(design, axis=0)
    scale = np.where(norms > 0, 1.0 / np.where(norms > 0, norms, 1.0), 0.0)
    scaled = design * scale
    return np.linalg.pinv(scaled.T @ scaled) * np.outer(scale, scale)


def _fit_usl_quadratic(n: np.ndarray, x: np.ndarray, gamma: float | None, level: float) -> UslFit:
    """Gunther's quadratic transform (GCaP §5.2.3), through the origin."""
    g = gamma if gamma is not None else _x_at_one(n, x)
    _require_points(n, 2, "the quadratic USL transform")
    u = n - 1.0
    design, y = np.column_stack([u**2, u]), n * g / x - 1.0
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    resid = y - design @ coef
    dof = n.size - 2
    s2 = float(resid @ resid) / dof if dof > 0 else math.nan
    to_ab = np.array([[-1.0, 1.0], [1.0, 0.0]])  # (α, β) = (b − a, a)
    cov = np.zeros((3, 3))
    cov[:2, :2] = to_ab @ (_gram_inverse(design) * s2) @ to_ab.T
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
    t = _t_quantile(level, dof)
    se = np.sqrt(np.maximum(np.diag(cov), 0.0))
    est = (
        _estimate(alpha, se[0], t, 0.0, 1.0),
        _estimate(beta, se[1], t, 0.0),
        _estimate(gamma, se[2], t, 0.0),
    )
    peak = _peak_load(alpha, beta)
    limit = gamma / alpha if alpha > 0 else math.inf
    x_peak = float(_usl(np.array(peak), alpha, beta, gamma)) if math.isfinite(peak) else limit
    fit = UslFit(
        *est,
        peak,
        x_peak,
        limit,
        _r_squared(x, resid),
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
            f"no points past the knee N ≈ 1/α ≈ {_fmt_n(knee)} (max N = {top:g}): the data is nearly linear, "
            "so α and β are poorly determined; measure at higher load."
        )
    if math.isfinite(fit.peak_load) and top < fit.peak_load:
        out.append(
            f"no points past the peak N* ≈ {_fmt_n(fit.peak_load)} (max N = {top:g}): N* and X(N*) are "
            f"extrapolated; measure beyond N ≈ {_fmt_n(fit.peak_load)} to confirm."
        )
    return out


# ---------------------------------------------------------------------------
# complexity


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
        half = _t_quantile(level, self.dof) * se
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
            "a_se": self.a.std_error,
            "a_ci_low": self.a.ci_low,
            "a_ci_high": self.a.ci_high,
            "b": self.b.value,
            "b_se": self.b.std_error,
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
    n_arr, y = _paired(n, cost, ("n", "cost"))
    w = np.ones_like(y) if weights is None else _as_positive_array(weights, "weights")
    if w.size != y.size:
        raise ValueError(
            f"weights has {w.size} values for {y.size} points; give one weight per point."
        )
    _require_points(n_arr, 3, "the complexity fit")
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
    cov_scaled = _gram_inverse(design * sw[:, None]) * (rss / dof)
    coef, cov = _unscale(coef, cov_scaled, 1.0 if p == 1 else float(np.max(np.abs(g))))
    t = _t_quantile(level, dof)
    a, b = (_estimate(coef[i], math.sqrt(max(cov[i, i], 0.0)), t) for i in (0, 1))
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
        _r_squared(y, resid, w),
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


# ---------------------------------------------------------------------------
# break-even


@dataclass(frozen=True, eq=False)
class BreakEven:
    """Where two total-cost curves cold + a + b·g(n) cross.

    Attributes:
        n_star: The crossing size n*, or None when the curves do not cross
            within ``search_range``.
        ci_low: Lower end of the parametric-bootstrap CI of n* (0 when some
            draws have the "beyond" side cheaper everywhere), or None.
        ci_high: Upper end (inf when some draws never cross), or None.
        cheaper_beyond: Label of the cheaper side for n > n* (for every n
            when there is no crossing); None when the curves coincide.
        cheaper_below: Label of the cheaper side for n < n*.
        crossings: Every crossing found, ascending; n_star is the last.
        labels: (label of A, label of B).
        fit_a: Cost fit of A.
        fit_b: Cost fit of B.
        cold_a: One-off cost added to A, unit of cost.
        cold_b: One-off cost added to B, unit of cost.
        search_range: (low, high) sizes searched for crossings.
        level: Confidence level.
        warnings: Extrapolation, multiple crossings, open-ended CI, …
    """

    n_star: float | None
    ci_low: float | None
    ci_high: float | None
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

    def cost_a(self, n: float | ArrayLike) -> np.ndarray:
        """Total cost of A at size n: cold_a + a + b·g(n)."""
        return self.cold_a + self.fit_a.predict(n)

    def cost_b(self, n: float | ArrayLike) -> np.ndarray:
        """Total cost of B at size n: cold_b + a + b·g(n)."""
        return self.cold_b + self.fit_b.predict(n)

    def sentence(self) -> str:
        """E.g. "B is cheaper beyond n ≈ 31,000 (95% CI 22,000–45,000)"."""
        if self.cheaper_beyond is None:
            return f"{self.labels[0]} and {self.labels[1]} cost the same at every n searched"
        if self.n_star is None:
            lo, hi = self.search_range
            return f"{self.cheaper_beyond} is cheaper at every n from {_fmt_n(lo)} to {hi:.3g}: there is no break-even"
        sig = _sig_needed([self.n_star, self.ci_low or 0.0, self.ci_high or 0.0])
        ci = (
            f" ({self.level:.0%} CI {_ci_text(self.ci_low, self.ci_high, sig)})"
            if self.ci_low is not None
            else ""
        )
        return f"{self.cheaper_beyond} is cheaper beyond n ≈ {_fmt_n(self.n_star, sig)}{ci}"

    def to_dict(self) -> dict[str, object]:
        """JSON-ready summary."""
        return {
            "n_star": self.n_star,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "cheaper_beyond": self.cheaper_beyond,
            "cheaper_below": self.cheaper_below,
            "crossings": list(self.crossings),
            "labels": list(self.labels),
            "model_a": self.fit_a.model,
            "model_b": self.fit_b.model,
            "cold_a": self.cold_a,
            "cold_b": self.cold_b,
            "level": self.level,
            "sentence": self.sentence(),
            "warnings": list(self.warnings),
        }


def _ci_text(lo: float | None, hi: float | None, sig: int) -> str:
    """'22,000–45,000', with open ends spelled out."""
    low = "below 1" if lo is None or lo < 1 else _fmt_n(lo, sig)
    high = "no crossing" if hi is None or not math.isfinite(hi) else _fmt_n(hi, sig)
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
    ``search_range`` and refined by bisection; with several, n* is the last
    (beyond it one side stays cheaper). The CI is a parametric bootstrap
    (Efron & Tibshirani 1993, §6.5): (a, b) of each side drawn from
    N(θ̂, Cov θ̂), cold costs from N(cold, se²), n* recomputed per draw and
    percentiles taken; draws whose curves no longer cross count as n* = inf
    (the crossing moved past the range) or 0 (moved below it). Cost
    O(n_boot · 4,001).

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
        A BreakEven.

    Raises:
        ValueError: NaN or negative cold costs or SEs, a bad search range, or
            n_boot < 100.
    """
    _check_breakeven_args(cold_a, cold_b, cold_a_se, cold_b_se, n_boot)
    lo, hi = search_range or _default_range(fit_a, fit_b)
    if not (0 < lo < hi and math.isfinite(hi)):
        raise ValueError(f"search_range must satisfy 0 < low < high < inf, got {(lo, hi)}.")
    grid = np.geomspace(lo, hi, 4001)
    sides = (_Side(fit_a, cold_a, cold_a_se), _Side(fit_b, cold_b, cold_b_se))
    diff = sides[0].point(grid) - sides[1].point(grid)
    crossings = _crossings(diff, grid, sides)
    winner = _cheaper(diff[-1], labels)
    below = _cheaper(diff[0], labels) if crossings else winner
    ci = _bootstrap_ci(sides, grid, diff, n_boot, seed, level) if crossings else (None, None)
    n_star = crossings[-1] if crossings else None
    result = BreakEven(
        n_star,
        *ci,
        winner,
        below,
        tuple(crossings),
        labels,
        fit_a,
        fit_b,
        cold_a,
        cold_b,
        (lo, hi),
        level,
        (),
    )
    return BreakEven(**{**result.__dict__, "warnings": _breakeven_warnings(result)})


def breakeven_from_points(
    n_a: ArrayLike,
    cost_a: ArrayLike,
    n_b: ArrayLike,
    cost_b: ArrayLike,
    cold_a: float = 0.0,
    cold_b: float = 0.0,
    *,
    model: str | None = None,
    weights_a: ArrayLike | None = None,
    weights_b: ArrayLike | None = None,
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
        weights_a: Optional weights for A's points (see fit_complexity).
        weights_b: Optional weights for B's points.
        **kwargs: Passed to breakeven (labels, cold_a_se, n_boot, seed, …).

    Returns:
        A BreakEven.

    Raises:
        ValueError: As fit_complexity and breakeven.
    """
    models = None if model is None else [model]
    fit_a = fit_complexity(n_a, cost_a, weights_a, models=models)
    fit_b = fit_complexity(n_b, cost_b, weights_b, models=models)
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


def _default_range(fit_a: ComplexityFit, fit_b: ComplexityFit) -> tuple[float, float]:
    """(min(1, smallest n), 1e6 × largest n) over both fits."""
    low = min(1.0, fit_a.n_range[0], fit_b.n_range[0])
    return low, 1e6 * max(fit_a.n_range[1], fit_b.n_range[1])


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


def _cheaper(diff: float, labels: tuple[str, str]) -> str | None:
    """Label of the cheaper side given cost_a − cost_b."""
    return labels[1] if diff > 0 else labels[0] if diff < 0 else None


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
    """Extrapolation, several crossings and open-ended CIs, in plain words."""
    out = []
    if len(r.crossings) > 1:
        listed = ", ".join(_fmt_n(c) for c in r.crossings)
        out.append(f"the curves cross {len(r.crossings)} times (n ≈ {listed}); n* is the last one.")
    low = max(r.fit_a.n_range[0], r.fit_b.n_range[0])
    high = min(r.fit_a.n_range[1], r.fit_b.n_range[1])
    if r.n_star is not None and not low <= r.n_star <= high:
        out.append(
            f"n* ≈ {_fmt_n(r.n_star)} lies outside the sizes both benchmarks measured ({_fmt_n(low)}–{_fmt_n(high)}): "
            f"it is an extrapolation; measure near n ≈ {_fmt_n(r.n_star)} to confirm."
        )
    if r.ci_high is not None and (r.ci_low == 0.0 or not math.isfinite(r.ci_high)):
        out.append(
            "in part of the bootstrap the curves do not cross at all, so the CI is open-ended; measure more sizes."
        )
    return tuple(out)
