"""How fast the cost grows, read from the slope of log cost on log n: the few-sizes rule.

With four or five sizes, a + b·g(n) fits of six classes cannot be told apart by
an information criterion, and one noisy point can make O(1) "win" against costs
that rise 35×. The slope of log cost on log n answers a simpler question the
data can answer: cost ∝ n^s, s = ? A pure class c·g(n) has the exponent

    e(g) = ln(g(n_max) / g(n_min)) / ln(n_max / n_min)

over the measured sizes: 0 for O(1), 1 for O(n), 2 for O(n²), and for O(log n)
and O(n log n) a little above 0 and 1 (the exact value depends on the sizes).
A constant term a > 0 flattens the curve, so the measured slope sits at or
below the exponent of the true class.

Rule (stated in docs/fit.md):

1. Fit ln cost = c + s·ln n by least squares, each point weighted by its
   relative precision (cost/SE)² when the SEs are known, equally otherwise.
   The CI of s is a t interval on k − 2 degrees of freedom from the residuals
   (with known SEs: the SEs scaled by the dispersion max(1, χ²/(k − 2)), a
   normal interval when the points agree with their SEs) at level
   :data:`LEVEL_SLOPE` (99%, the level at which perflab's complexity fit
   declares growth).
2. The classes the slope admits are those whose exponent lies inside the CI;
   a CI that holds no exponent lies between two classes, and both are named
   ("between O(n) and O(n²)"). A class whose exponent is below the CI's low
   end by more than :data:`SLACK` cannot make the costs rise that fast with a
   non-negative constant term: the data contradict it. A CI that excludes 0
   contradicts O(1).

Reference: the log-log slope is the empirical order of growth (Sedgewick &
Wayne, "Algorithms", 4th ed., §1.4, the doubling ratio lg(T(2N)/T(N))); the
interval is the ordinary regression-slope interval (Draper & Smith 1998,
"Applied Regression Analysis", §1.4).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from scipy import special

from perflab.analyze.fit.models.classes import COMPLEXITY_MODELS

#: Confidence level of the slope's interval.
LEVEL_SLOPE = 0.99
#: A class whose exponent is this far below the slope's CI is contradicted (the
#: measured slope of a + b·g(n) can exceed e(g) only through a negative a).
SLACK = 0.05
#: A single point off the others' line at this level (Bonferroni over the points) is
#: left out of the slope and named.
P_OUTLIER = 0.01


@dataclass(frozen=True)
class Slope:
    """The empirical order of growth: cost ∝ n^value over the measured sizes.

    Attributes:
        value: Fitted slope of ln cost on ln n (unitless exponent).
        ci_low / ci_high: Its CI at ``level``; ±inf with no degrees of freedom.
        level: Confidence level of the CI.
        k: Number of points.
        exponents: Class → its exponent e(g) over the measured sizes (O(1): 0).
        admitted: Classes whose exponent lies inside the CI, slowest first.
        between: (slower, faster) classes around a CI that holds no exponent,
            else None; either side may be None at the ends of the scale.
        too_slow: Classes whose exponent is below ci_low − SLACK: a curve
            a + b·g(n) with a ≥ 0 cannot rise that fast.
        left_out: The size of the one point left out as off the others'
            line, or None (then ``left_out_offset`` is NaN).
        left_out_offset: That point's cost ÷ the others' line at its size − 1.
    """

    value: float
    ci_low: float
    ci_high: float
    level: float
    k: int
    exponents: dict[str, float]
    admitted: tuple[str, ...]
    between: tuple[str | None, str | None] | None
    too_slow: tuple[str, ...]
    left_out: float | None = None
    left_out_offset: float = math.nan

    @property
    def grows(self) -> bool:
        """True when the CI lies above 0: the cost measurably rises with n."""
        return self.ci_low > 0

    @property
    def classes(self) -> tuple[str, ...]:
        """The classes this slope names: the admitted ones, or the pair around the CI."""
        if self.admitted:
            return self.admitted
        return tuple(c for c in (self.between or ()) if c is not None)

    def words(self, classes: bool = True) -> str:
        """'grows roughly as n^1.0 (99% CI 0.8–1.2): O(n) or O(n log n)'.

        Args:
            classes: Name the classes the slope admits (or lies between).
        """
        dash = " to " if self.ci_low < 0 else "–"
        ci = f"{self.level:.0%} CI {_exp(self.ci_low)}{dash}{_exp(self.ci_high)}"
        if not math.isfinite(self.ci_low):
            ci = "no CI: too few points"
        if self.ci_low <= 0 <= self.ci_high and "O(1)" in self.admitted:
            verb = "may grow (or not)"
        elif self.ci_high < 0:
            verb = "falls"
        else:
            verb = "grows"
        head = f"{verb} roughly as n^{_exp(self.value)} ({ci})"
        if self.left_out is not None:
            off = self.left_out_offset
            how = f"{off + 1:.2g}× the" if off > 1 else f"{off:+.0%} off the"
            head += f" leaving out n = {self.left_out:,.6g}, {how} others' line"
        if not classes:
            return head
        if self.admitted:
            return f"{head}: {_listed(self.admitted)}"
        if self.between:
            slower, faster = self.between
            if slower and faster:
                return f"{head}: between {slower} and {faster}"
            if faster:
                return f"{head}: slower than any class, even {faster}"
            return f"{head}: faster than {slower}"
        return head


def _exp(x: float) -> str:
    """An exponent with one decimal (two below 0.1 in size), "−" for negatives."""
    if not math.isfinite(x):
        return "∞" if x > 0 else "−∞"
    text = f"{x:.2f}" if 0 < abs(x) < 0.1 else f"{x:.1f}"
    return text.replace("-", "−")


def _listed(names: tuple[str, ...]) -> str:
    """'O(n)', 'O(n) or O(n log n)', 'O(1), O(log n) or O(n)'."""
    if len(names) == 1:
        return names[0]
    return ", ".join(names[:-1]) + f" or {names[-1]}"


def class_exponent(model: str, n: np.ndarray) -> float:
    """e(g) = ln(g(n_max)/g(n_min)) / ln(n_max/n_min): the slope of a pure class, unitless.

    Args:
        model: A key of COMPLEXITY_MODELS.
        n: Sizes, shape (k,), > 0, at least two distinct (n > 1 for the log classes).
    """
    if model == "O(1)":
        return 0.0
    lo, hi = float(np.min(n)), float(np.max(n))
    g = COMPLEXITY_MODELS[model](np.array([lo, hi]))
    if g[0] <= 0:
        return math.inf
    return float(math.log(g[1] / g[0]) / math.log(hi / lo))


def loglog_slope(
    n: np.ndarray,
    cost: np.ndarray,
    se: np.ndarray | None = None,
    models: tuple[str, ...] | list[str] | None = None,
    level: float = LEVEL_SLOPE,
) -> Slope:
    """The slope of ln cost on ln n with its CI, and the classes it admits. O(k).

    Args:
        n: Sizes, shape (k,), > 0, at least 3 distinct.
        cost: Costs, shape (k,), > 0.
        se: Standard error of each cost, shape (k,), > 0, or None (unknown).
        models: Classes to place on the scale (keys of COMPLEXITY_MODELS); all by default.
        level: Confidence level of the CI.

    Returns:
        A Slope (see the module docstring for the rule).

    Raises:
        ValueError: Fewer than 3 points, fewer than 2 distinct sizes, or a
            non-positive n, cost or se.
    """
    n = np.asarray(n, dtype=float)
    y = np.asarray(cost, dtype=float)
    if n.size < 3 or np.unique(n).size < 2:
        raise ValueError("the slope of log cost on log n needs 3 points at 2 or more sizes")
    if np.any(n <= 0) or np.any(y <= 0) or (se is not None and np.any(np.asarray(se) <= 0)):
        raise ValueError("sizes, costs and their SEs must be > 0 for the log-log slope")
    x, ly = np.log(n), np.log(y)
    w = np.ones_like(x) if se is None else (y / np.asarray(se, dtype=float)) ** 2
    full = _line(x, ly, w, se is not None, level)
    keep = np.ones(n.size, bool)
    outlier = _outlier(x, ly, w, se is not None, full)
    if outlier is not None:
        keep[outlier] = False
        fit = _line(x[keep], ly[keep], w[keep], se is not None, level)
        value, half = fit[0], fit[1]
        offset = math.exp(ly[outlier] - (fit[2] + value * (x[outlier] - fit[3]))) - 1
    else:
        value, half, offset = full[0], full[1], math.nan
    out = placed(value, value - half, value + half, level, n[keep], models)
    if outlier is None:
        return out
    return replace(out, k=int(n.size), left_out=float(n[outlier]), left_out_offset=offset)


def _line(
    x: np.ndarray, ly: np.ndarray, w: np.ndarray, known: bool, level: float
) -> tuple[float, float, float, float, float]:
    """Weighted line ly = c + s·(x − x̄): (s, CI half-width, c, x̄, χ²)."""
    xm, ym = np.sum(w * x) / np.sum(w), np.sum(w * ly) / np.sum(w)
    sxx = float(np.sum(w * (x - xm) ** 2))
    s = float(np.sum(w * (x - xm) * (ly - ym)) / sxx)
    chi2 = float(np.sum(w * (ly - (ym + s * (x - xm))) ** 2))
    dof = x.size - 2
    p = 0.5 + level / 2
    if not known:
        half = float(special.stdtrit(dof, p)) * math.sqrt(chi2 / dof / sxx) if dof else math.inf
    elif dof and chi2 / dof > 1:
        half = float(special.stdtrit(dof, p)) * math.sqrt(chi2 / dof / sxx)
    else:
        half = float(special.ndtri(p)) * math.sqrt(1 / sxx)
    return s, half, float(ym), float(xm), chi2


def _outlier(
    x: np.ndarray, ly: np.ndarray, w: np.ndarray, known: bool, full: tuple[float, ...]
) -> int | None:
    """The one point off the line of the others beyond chance, or None (k ≥ 4 only).

    The point whose removal lowers χ² most is tested: its drop against the F(1, k − 3)
    quantile (unknown SEs; the externally studentized residual) or against χ²₁ scaled
    by the rest's dispersion (known SEs), at :data:`P_OUTLIER` Bonferroni-corrected
    over the k points (Cook & Weisberg 1982, "Residuals and Influence in Regression", §2.2).
    The smallest or largest size qualifies only when it breaks the order of the costs
    (the smallest costlier than the next, for rising costs): otherwise being off the
    line is what a constant term or a steeper class does to a curve.
    """
    k = x.size
    if k < 4 or np.unique(x).size < 4:
        return None
    drops = []
    for i in range(k):
        keep = np.arange(k) != i
        chi2 = _line(x[keep], ly[keep], w[keep], known, 0.5)[4]
        drops.append((full[4] - chi2, chi2, i))
    drop, rest, i = max(drops)
    order = np.argsort(x)
    if i in (order[0], order[-1]):
        # an end point off the line may be the curve's bend (a constant term, a
        # steeper class): left out only when it breaks the order of the costs
        j = order[1] if i == order[0] else order[-2]
        rising = ly[order[-1]] > ly[order[0]]
        breaks = (ly[i] > ly[j]) == rising if i == order[0] else (ly[i] < ly[j]) == rising
        if not breaks:
            return None
    dof = k - 3
    p = 1 - P_OUTLIER / k
    if known:
        return i if drop > float(special.chdtri(1, 1 - p)) * max(1.0, rest / dof) else None
    if rest <= 0:
        return i if drop > 0 else None
    return i if drop / (rest / dof) > float(special.fdtri(1, dof, p)) else None


def placed(
    value: float,
    low: float,
    high: float,
    level: float,
    n: np.ndarray,
    models: tuple[str, ...] | list[str] | None = None,
) -> Slope:
    """A Slope with the classes placed on the exponent scale of the sizes ``n`` (rule 2)."""
    names = list(COMPLEXITY_MODELS) if models is None else list(models)
    exps = {m: class_exponent(m, n) for m in names}
    order = sorted(names, key=lambda m: exps[m])
    admitted = tuple(m for m in order if low <= exps[m] <= high)
    between = None
    if not admitted:
        slower = [m for m in order if exps[m] < low]
        faster = [m for m in order if exps[m] > high]
        between = (slower[-1] if slower else None, faster[0] if faster else None)
    too_slow = tuple(m for m in order if exps[m] < low - SLACK)
    return Slope(value, low, high, level, int(n.size), exps, admitted, between, too_slow)
