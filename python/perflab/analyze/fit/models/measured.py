"""What the measurements themselves say about which of two sides costs less at each size.

A break-even read off two fitted curves is only as good as the curves. Before
perflab says "B is cheaper beyond n ≈ 65,000", it checks every size that both
sides measured: where the difference of the measured total costs is clear,
the fitted curves must put the same side ahead. A size where they do not
refutes the crossing, and the measured order is reported instead (e.g. "A is
cheaper up to n = 10,000 and B from n = 100,000").

A difference is clear when the CI of the difference at the fit's level
excludes 0 (both sides' SEs known, e.g. perflab run input), or, when a side's
costs came without SEs (a CSV with n,cost), when the two costs differ by more
than 20% of the larger: the share beyond which the complexity fit says a
class misses a point (choice.MISS_SHARE).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
from scipy import special

from perflab.analyze.fit.models.choice import MISS_SHARE
from perflab.analyze.fit.models.complexity import ComplexityFit
from perflab.analyze.fit.models.words import fmt_count, fmt_percent, fmt_value


@dataclass(frozen=True)
class MeasuredOrder:
    """Both sides' measured total cost at one size both measured.

    Attributes:
        n: The size.
        cost_a: A's measured cost plus its one-off cost, unit of cost.
        cost_b: B's likewise.
        diff_se: Standard error of cost_a − cost_b (both sides' SEs and the
            one-off costs' SEs); NaN when a side's SEs are unknown.
        cheaper: Label of the side that is clearly cheaper (see the module
            docstring); None when the difference is not clear.
        fitted_cheaper: Label of the side the fitted curves put ahead at n
            (None when they are equal there).
    """

    n: float
    cost_a: float
    cost_b: float
    diff_se: float
    cheaper: str | None
    fitted_cheaper: str | None

    @property
    def refutes(self) -> bool:
        """True when the measurements clearly favour the side the fitted curves put behind."""
        return self.cheaper is not None and self.cheaper != self.fitted_cheaper

    def to_dict(self) -> dict[str, object]:
        """JSON-ready: n, cost_a, cost_b, diff_se, cheaper, fitted_cheaper."""
        return {
            "n": self.n,
            "cost_a": self.cost_a,
            "cost_b": self.cost_b,
            "diff_se": self.diff_se,
            "cheaper": self.cheaper,
            "fitted_cheaper": self.fitted_cheaper,
        }


def measured_orders(
    fit_a: ComplexityFit,
    fit_b: ComplexityFit,
    colds: tuple[float, float],
    cold_ses: tuple[float, float],
    labels: tuple[str, str],
    fitted_diff: Callable[[np.ndarray], np.ndarray],
    level: float,
) -> tuple[MeasuredOrder, ...]:
    """The measured order at every size both fits have data for, ascending. O(k log k).

    Args:
        fit_a / fit_b: The fits, carrying their points (n, cost, cost_se).
        colds: One-off costs (A, B) added to every measured cost.
        cold_ses: Their standard errors.
        labels: (label of A, label of B).
        fitted_diff: Fitted total cost of A minus B at sizes of shape (m,).
        level: Confidence level of the difference's interval (normal quantile).

    Returns:
        One MeasuredOrder per common size; empty when the fits carry no
        points (e.g. per-call fits) or share no size.
    """
    a, b = _by_size(fit_a), _by_size(fit_b)
    common = sorted(set(a) & set(b))
    if not common:
        return ()
    z = float(special.ndtri(0.5 + level / 2))
    fitted = fitted_diff(np.asarray(common, dtype=float))
    out = []
    for n, f in zip(common, fitted):
        (ya, sa), (yb, sb) = a[n], b[n]
        cost_a, cost_b = colds[0] + ya, colds[1] + yb
        se = math.sqrt(sa**2 + sb**2 + cold_ses[0] ** 2 + cold_ses[1] ** 2)
        diff = cost_a - cost_b
        clear = (
            abs(diff) > z * se
            if math.isfinite(se)
            else abs(diff) > MISS_SHARE * max(cost_a, cost_b)
        )
        out.append(
            MeasuredOrder(
                n,
                cost_a,
                cost_b,
                se,
                cheaper_side(diff, labels) if clear else None,
                cheaper_side(float(f), labels),
            )
        )
    return tuple(out)


def _by_size(fit: ComplexityFit) -> dict[float, tuple[float, float]]:
    """Size → (mean cost, its SE) over the fit's points (repeated sizes pooled)."""
    groups: dict[float, list[int]] = {}
    for i, n in enumerate(fit.n):
        groups.setdefault(float(n), []).append(i)
    out = {}
    for n, idx in groups.items():
        se = fit.cost_se[idx]
        out[n] = (float(np.mean(fit.cost[idx])), float(np.sqrt(np.sum(se**2)) / len(idx)))
    return out


def cheaper_side(diff: float, labels: tuple[str, str]) -> str | None:
    """Label of the cheaper side given cost_a − cost_b."""
    return labels[1] if diff > 0 else labels[0] if diff < 0 else None


def refutation_text(
    orders: Sequence[MeasuredOrder], labels: tuple[str, str], unit: str = "s"
) -> str:
    """'at n = 100,000 the measurements show B cheaper (2.90 ms vs 3.25 ms for A)'.

    Args:
        orders: From measured_orders; at least one must refute the fits.
        labels: (label of A, label of B).
        unit: Unit of cost.
    """
    first = next(o for o in orders if o.refutes)
    mine, other, name = (
        (first.cost_a, first.cost_b, labels[1])
        if first.cheaper == labels[0]
        else (first.cost_b, first.cost_a, labels[0])
    )
    how = (
        "beyond the CI of the difference"
        if math.isfinite(first.diff_se)
        else f"more than {fmt_percent(MISS_SHARE)} apart"
    )
    return (
        f"at n = {fmt_count(first.n, 3)} the measurements show {first.cheaper} cheaper "
        f"({fmt_value(mine, unit)} vs {fmt_value(other, unit)} for {name}, {how})"
    )


def measured_summary(orders: Sequence[MeasuredOrder]) -> str:
    """What the clear measured orders say, in words: who is cheaper where, and where it flips."""
    clear = [o for o in orders if o.cheaper is not None]
    if not clear:
        return "the measurements do not tell the two apart at any size both measured"
    sides = [o.cheaper for o in clear]
    flips = sum(1 for x, y in pairwise(sides) if x != y)
    if flips == 0:
        return (
            f"{sides[0]} is measurably cheaper at every size where the difference is clear "
            f"(n = {fmt_count(clear[0].n, 3)} to {fmt_count(clear[-1].n, 3)})"
        )
    if flips == 1:
        i = next(i for i in range(len(sides) - 1) if sides[i] != sides[i + 1])
        return (
            f"measured: {sides[i]} is cheaper up to n = {fmt_count(clear[i].n, 3)} and "
            f"{sides[i + 1]} from n = {fmt_count(clear[i + 1].n, 3)}, so the costs cross "
            "between those sizes"
        )
    return "the measured order changes more than once; measure more sizes and more precisely"
