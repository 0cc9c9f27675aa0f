"""The shared core of the model fits: input checks, least-squares helpers, Wald intervals.

Used by :mod:`.usl`, :mod:`.complexity` and :mod:`.breakeven`; nothing here
fits a model by itself.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import special

from perflab.model.estimate import Estimate

#: Degrees of freedom that make a t interval a normal one (an SE from a bootstrap).
LARGE_DOF = 10**6
ArrayLike = Sequence[float] | np.ndarray


def t_quantile(level: float, dof: int) -> float:
    """Two-sided Student t quantile t_{(1+level)/2, dof}; NaN when dof < 1."""
    return float(special.stdtrit(dof, 0.5 + level / 2.0)) if dof >= 1 else math.nan


def wald(
    value: float,
    se: float,
    level: float,
    dof: int,
    floor: float = -math.inf,
    ceiling: float = math.inf,
) -> Estimate:
    """Wald t interval value ± t_{dof}·se at ``level``, clipped to the bounds [floor, ceiling].

    ``dof`` = LARGE_DOF gives the normal interval; dof < 1 (or an unknown se) gives a NaN
    interval, never the bounds (max(0, nan) is 0: "α 0 – 1.00" was printed for a 3-point
    fit with no degrees of freedom left).
    """
    half = t_quantile(level, dof) * se
    if not math.isfinite(half):
        return Estimate(float(value), math.nan, math.nan, level, float(se))
    return Estimate(
        float(value),
        float(max(floor, value - half)),
        float(min(ceiling, value + half)),
        level,
        float(se),
    )


def positive_array(values: ArrayLike, name: str) -> np.ndarray:
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


def paired(x: ArrayLike, y: ArrayLike, names: tuple[str, str]) -> tuple[np.ndarray, np.ndarray]:
    """Validate two positive arrays of equal length."""
    xa, ya = positive_array(x, names[0]), positive_array(y, names[1])
    if xa.size != ya.size:
        raise ValueError(
            f"{names[0]} has {xa.size} values but {names[1]} has {ya.size}; give one {names[1]} per {names[0]}."
        )
    return xa, ya


def require_points(x: np.ndarray, needed: int, what: str) -> None:
    """Raise unless there are at least ``needed`` points at ``needed`` distinct x values."""
    if x.size < needed:
        raise ValueError(
            f"{what} has {needed} parameters but only {x.size} points were given; measure at least {needed} levels."
        )
    if np.unique(x).size < needed:
        raise ValueError(
            f"{what} needs at least {needed} distinct x values, got {np.unique(x).size}; measure more levels."
        )


def r_squared(y: np.ndarray, residuals: np.ndarray, weights: np.ndarray | None = None) -> float:
    """Coefficient of determination 1 − SSR/SST (weighted when weights are given)."""
    w = np.ones_like(y) if weights is None else weights
    mean = np.sum(w * y) / np.sum(w)
    sst = float(np.sum(w * (y - mean) ** 2))
    return 1.0 - float(np.sum(w * residuals**2)) / sst if sst > 0 else math.nan


def gram_inverse(design: np.ndarray) -> np.ndarray:
    """(XᵀX)⁻¹ with columns equilibrated first: USL columns differ by ~N², far past pinv's rcond."""
    norms = np.linalg.norm(design, axis=0)
    scale = np.where(norms > 0, 1.0 / np.where(norms > 0, norms, 1.0), 0.0)
    scaled = design * scale
    return np.linalg.pinv(scaled.T @ scaled) * np.outer(scale, scale)
