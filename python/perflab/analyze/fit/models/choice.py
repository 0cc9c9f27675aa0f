"""Which growth class the data support: one, several that cannot be told apart, or none.

The information criterion alone (AICc) is not a decision: with five points
its small-sample penalty makes O(1) "win" against costs that rise a
thousandfold, and two classes a hair apart in AICc are picked as if one were
right. So the choice is made by tests that say what the data contradict:

1. **Growth.** O(1) is nested in every a + b·g(n); a growth class
   establishes growth (or a fall) when it beats O(1) by an F test on the weighted
   residuals, p < 1% (the partial F test of nested least-squares models,
   e.g. Draper & Smith 1998, "Applied Regression Analysis", §6; with known
   SEs the Δχ² test, the residuals' dispersion max(1, χ²/dof) dividing it as
   in quasi-likelihood, McCullagh & Nelder 1989, §9.2). The best of the
   growth classes is tested, so 1% bounds the false alarm over the five
   classes at 5% (Bonferroni). With known SEs, costs that rise (or fall) at
   every step and end beyond their CIs contradict O(1) as well. Growth at
   1%–5% leaves O(1) *tied* with that class; above 5%, O(1) fits.
2. **Contradiction.** A growth class with b ≤ 0 (cost falling as n grows)
   is contradicted; so is O(1) once growth is established. Contradicted
   classes are never chosen.
3. **Ties.** Growth classes have the same number of parameters; another
   class is ruled out only when its residuals are worse than the best's by
   the F test's 1% quantile, F = (RSSᵢ − RSS₁)/(RSS₁/(k−2)) (with known SEs:
   Δχ²/dispersion above χ²₁'s 1% quantile, 6.63). Classes not ruled out are
   reported together: "O(n) or O(n log n)".
4. **Adequacy.** The chosen class must describe the points: if it misses one
   by more than 20% of its cost (and, where the SE is known, by more than
   3 SE), or its weighted R² is below 0.9, the verdict is "no class fits",
   with the closest classes named.

The thresholds were checked on synthetic sweeps (4–8 points, 2–10% noise,
costs spanning 1–6 decades, O(1) to O(n²), with and without one outlier
point): benchmarks/fit_confusion.py prints the confusion matrix,
tests/analyze/test_complexity_choice.py holds it to ≥ 95% right (the truth
chosen, tied, or named by the slope when no class fits) per class.

Issue 28 added, so that no class the data contradict is chosen or shown as
best: the log-log slope (:mod:`.slope`) as evidence of growth and of classes
too slow for the data; costs two of which lie apart beyond their CIs; growth
established only when it survives leaving out any one point; a class that wins
with one point left out tied with the chosen one; O(1), when it stands, tied
with the growth classes the slope admits (never "best" for costs that may
rise); and a miss beyond a point's 99% CI plus 10% of its cost as "no class
fits". Then, so that the seeded study reads no wrong class as best and no tie
without the truth (tests/analyze/test_fit_never_wrong.py holds the trials that
once did): with 4 or 5 points and no SEs the F test alone does not establish
growth (the slope decides); a pair of costs apart beyond their CIs counts only in
the slope's direction and when no pair goes the other way beyond them; and a
class that some one point left out makes best, or (5 points or more) leaves
not ruled out, is tied with the chosen one unless all the points rule it out at
:data:`P_FIRM`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import special

from perflab.analyze.fit.models.classes import (
    COMPLEXITY_MODELS,
    TERMS,
    ComplexityCandidate,
    fit_class,
    information,
)
from perflab.analyze.fit.models.core import r_squared
from perflab.analyze.fit.models.slope import Slope, loglog_slope
from perflab.analyze.fit.models.words import fmt_count, fmt_number, fmt_percent, fmt_value

Verdict = Literal["fits", "tied", "none"]

#: Growth is established (O(1) contradicted) when a growth class beats O(1) at this level.
P_GROWTH = 0.01
#: Growth between P_GROWTH and this level leaves O(1) tied with that class.
P_MAYBE = 0.05
#: A growth class is ruled out when it is worse than the best at this level.
P_TIE = 0.01
#: A class that one point left out brings back (:func:`_unstable`) stays ruled out only
#: when all the points rule it out at this level.
P_FIRM = 0.001
#: Without SEs, a class that misses a point by more than this share of its cost does
#: not describe it.
MISS_SHARE = 0.20
#: With SEs, a class misses a point when the miss is beyond the point's 99% CI
#: (this many SEs) plus MISS_TOL of its cost (the model a + b·g(n) is itself an
#: approximation of real code).
MISS_SE = 2.576
MISS_TOL = 0.10
#: Up to this many points without SEs, the classes the log-log slope admits are
#: tied with the chosen one (:mod:`.slope`): four or five points whose noise is
#: unknown cannot tell classes apart by their residuals.
FEW_SIZES = 5
#: A growth class with a weighted R² below this describes too little of the variation.
R2_FLOOR = 0.9
#: Coverage of the CIs compared in the monotone-rise check.
_Z95 = 1.959964


@dataclass(frozen=True)
class Choice:
    """The decision over fitted classes (see the module docstring for the rules).

    Attributes:
        verdict: "fits", "tied" or "none".
        ranked: Every candidate, the chosen (or closest) first, then the other
            candidates the data allow by score, then the contradicted ones.
        tied: Classes the data cannot tell apart, the chosen first.
        contradicted: Class → plain-words reason the data rule it out.
        why_none: Why no class fits ("" unless verdict is "none").
        r_squared: Weighted R² of the first class (0 for O(1)).
        p_growth: p-value of the growth test (NaN when not made).
        notes: Further plain-words warnings (a class missing points beyond
            their CIs though within 20%, costs scattering around O(1)).
        slope: The log-log slope of the costs and the classes it admits
            (:mod:`.slope`), or None with fewer than 3 points.
    """

    verdict: Verdict
    ranked: tuple[ComplexityCandidate, ...]
    tied: tuple[str, ...]
    contradicted: dict[str, str]
    why_none: str
    r_squared: float
    p_growth: float
    notes: tuple[str, ...]
    slope: Slope | None = None


def choose(
    cands: list[ComplexityCandidate],
    n: np.ndarray,
    y: np.ndarray,
    se: np.ndarray | None,
    unit: str = "s",
) -> Choice:
    """Decide which of the fitted classes the data support. O(k · classes).

    Args:
        cands: One fitted candidate per class considered (classes.fit_class),
            weighted by 1/se² (or 1/cost² when ``se`` is None).
        n: Sizes, shape (k,).
        y: Costs, shape (k,), unit of cost.
        se: Standard error of each cost, shape (k,), or None when unknown.
        unit: Unit of cost, for the words.

    Returns:
        The Choice.
    """
    k = n.size
    const = next((c for c in cands if c.model == "O(1)"), None)
    growth = [c for c in cands if c.model != "O(1)"]
    slope = loglog_slope(n, y, se, [c.model for c in cands])
    contradicted = {
        c.model: (
            f"its growth term b·g(n) comes out negative "
            f"({fmt_value(c.b.value, unit)} per unit): cost would fall as n "
            "grows"
        )
        for c in growth
        if c.b.value <= 0
    }
    for c in growth:
        if c.model in slope.too_slow and c.model not in contradicted:
            contradicted[c.model] = (
                f"the costs {slope.words().split(':')[0]}, faster than "
                f"{TERMS[c.model]} can make them rise"
            )
    p_growth = math.nan
    if const is not None and growth:
        top = min(growth, key=lambda c: c.rss)
        p_growth = _p_nested(const, top, k, se is not None)
        why = _growth(n, y, se, unit, p_growth, top, slope)
        if why and all(
            _growth(
                n[m],
                y[m],
                None if se is None else se[m],
                unit,
                *_growth_tests(n[m], y[m], se, m, growth),
                p_level=P_MAYBE,
            )
            for m in _leave_one_out(n.size)
        ):
            contradicted["O(1)"] = why
    allowed = sorted((c for c in cands if c.model not in contradicted), key=lambda c: c.score)
    if const is not None and "O(1)" not in contradicted:
        allowed = [const] + [c for c in allowed if c is not const]
    ruled_out = sorted((c for c in cands if c.model in contradicted), key=lambda c: c.score)
    if not allowed:
        ranked = tuple(ruled_out)
        why = "; ".join(f"{m}: {r}" for m, r in contradicted.items())
        return Choice(
            "none",
            ranked,
            (ranked[0].model,),
            contradicted,
            f"the data contradict every class ({why})",
            _r2(ranked[0], n, y, se),
            p_growth,
            (),
            slope,
        )
    tied = _tied(allowed[0], allowed, const, k, se is not None, slope)
    if allowed[0] is not const:
        tied += _unstable(allowed[0], [c for c in allowed if c is not const], n, y, se, tied)
    if allowed[0] is const and len(tied) > 1:
        # O(1) tied with growth: the closest is the tied class of lowest plain AIC
        # (AICc's small-sample penalty would make the constant "closest" to costs
        # rising 300×)
        def aic(c: ComplexityCandidate) -> float:
            return information(c.rss, k, 2 if c is const else 3, False)

        allowed.sort(key=lambda c: (c.model not in tied, aic(c) if c.model in tied else 0))
        tied = (allowed[0].model, *(m for m in tied if m != allowed[0].model))
    tied = (tied[0], *sorted(tied[1:], key=list(COMPLEXITY_MODELS).index))
    ranked = tuple(allowed + ruled_out)
    first = ranked[0]
    r2 = _r2(first, n, y, se)
    why_none, notes = _adequacy(first, ranked, n, y, se, r2)
    if why_none:
        return Choice(
            "none", ranked, (first.model,), contradicted, why_none, r2, p_growth, notes, slope
        )
    verdict: Verdict = "tied" if len(tied) > 1 else "fits"
    return Choice(verdict, ranked, tied, contradicted, why_none, r2, p_growth, notes, slope)


def _growth(
    n: np.ndarray,
    y: np.ndarray,
    se: np.ndarray | None,
    unit: str,
    p_growth: float,
    top: ComplexityCandidate,
    slope: Slope,
    p_level: float = P_GROWTH,
) -> str:
    """Plain words of the evidence that the cost is not constant, or "" when there is none.

    Evidence: costs beyond their CIs (a monotone rise, or a pair apart beyond
    chance at ``p_level``), the best growth class beating O(1) at ``p_level``, or
    the log-log slope's CI (at 1 − ``p_level``) excluding 0.
    """
    trend = _monotone_beyond_ci(n, y, se, unit) or _pair_beyond_ci(
        n, y, se, unit, p_level, slope.value
    )
    if trend:
        return trend
    if slope.level != 1 - p_level:
        slope = loglog_slope(n, y, se, list(slope.exponents), 1 - p_level)
    if slope.grows or slope.ci_high < 0:
        return f"the costs {slope.words(False)}"
    if se is None and n.size <= FEW_SIZES:
        return ""  # few sizes, noise unknown: the slope decides, and its CI holds 0
    if p_growth < p_level:
        change = "grow" if top.b.value > 0 else "fall"
        return (
            f"the costs {change} with n: {top.model} fits significantly better than a "
            f"constant (p = {p_text(p_growth)})"
        )
    return ""


def _leave_one_out(k: int) -> list[np.ndarray]:
    """Masks leaving out each point in turn (none below 4 points: too few would remain)."""
    return [np.arange(k) != i for i in range(k)] if k >= 4 else []


def _growth_tests(
    n: np.ndarray,
    y: np.ndarray,
    se_all: np.ndarray | None,
    mask: np.ndarray,
    growth: list[ComplexityCandidate],
) -> tuple[float, ComplexityCandidate, Slope]:
    """(p_growth, best growth class, slope) of the points in ``mask``: one point left out.

    Growth must be evident with any single point left out: one outlier (a point
    hit by a speed switch) does not make a constant cost grow.
    """
    se = None if se_all is None else se_all[mask]
    w = _weights(y, se)
    const = fit_class("O(1)", n, y, w, 0.95, False)
    fits = [fit_class(c.model, n, y, w, 0.95, False) for c in growth]
    top = min(fits, key=lambda c: c.rss)
    p = _p_nested(const, top, n.size, se is not None)
    return p, top, loglog_slope(n, y, se, [c.model for c in growth], 1 - P_MAYBE)


def _unstable(
    first: ComplexityCandidate,
    allowed: list[ComplexityCandidate],
    n: np.ndarray,
    y: np.ndarray,
    se: np.ndarray | None,
    tied: tuple[str, ...],
) -> tuple[str, ...]:
    """Allowed classes that one point decides against (k ≥ 4): those that become the
    best fit when some point is left out, and (k ≥ 5) those the residuals do not rule
    out against that subset's best.

    One point must not decide the class: a class that wins without some point, or
    that only the point's presence rules out, is tied with the chosen one (an outlier
    point, one sample hit by a speed switch, bends a + b·g(n) towards a wrong class).
    With 4 points a subset of 3 leaves 1 degree of freedom, too few for the residual
    test: only the best counts there. A class all the points rule out at
    :data:`P_FIRM` stays out (a subset that lost the decisive point says little).
    """
    if n.size < 4:
        return ()
    whole = {c.model: c for c in allowed}
    out: list[str] = []
    for m in _leave_one_out(n.size):
        w = _weights(y[m], None if se is None else se[m])
        fits = [fit_class(c.model, n[m], y[m], w, 0.95, False) for c in allowed]
        best = min(fits, key=lambda c: c.rss)
        kept = [best] + (
            [c for c in fits if c is not best and not _ruled_out(c, best, se is not None)]
            if n.size >= 5
            else []
        )
        for c in kept:
            if c.model == first.model or c.model in tied or c.model in out:
                continue
            if not _ruled_out(whole[c.model], first, se is not None, P_FIRM):
                out.append(c.model)
    return tuple(out)


def _r2(first: ComplexityCandidate, n: np.ndarray, y: np.ndarray, se: np.ndarray | None) -> float:
    """Weighted R² of ``first`` (0 for O(1), by definition)."""
    return 0.0 if first.model == "O(1)" else r_squared(y, y - first.predict(n), _weights(y, se))


def _weights(y: np.ndarray, se: np.ndarray | None) -> np.ndarray:
    """1/se², or 1/cost² (relative errors) when the SEs are unknown."""
    return 1.0 / (se**2 if se is not None else y**2)


def _dispersion(best: ComplexityCandidate) -> float:
    """max(1, χ²/dof): how much more the residuals scatter than the known SEs allow."""
    return max(1.0, best.rss / best.dof) if best.dof > 0 else 1.0


def _p_nested(small: ComplexityCandidate, big: ComplexityCandidate, k: int, known: bool) -> float:
    """p-value that ``big`` (one more coefficient) improves on ``small`` only by chance.

    Partial F test (unknown SEs) or Δχ² over the dispersion (known SEs).
    """
    gain = max(small.rss - big.rss, 0.0)
    if known:
        return float(special.chdtrc(1, gain / _dispersion(big)))
    if big.dof < 1 or big.rss <= 0:
        return 0.0 if gain > 0 else 1.0
    return float(special.fdtrc(1, big.dof, gain / (big.rss / big.dof)))


def _ruled_out(
    other: ComplexityCandidate, best: ComplexityCandidate, known: bool, p_level: float = P_TIE
) -> bool:
    """Whether ``other`` (same number of coefficients) is worse than ``best`` beyond
    chance, at ``p_level``."""
    gain = max(other.rss - best.rss, 0.0)
    if known:
        return gain / _dispersion(best) > special.chdtri(1, p_level)
    if best.dof < 1:
        return False
    if best.rss <= 0:
        return gain > 0
    return gain / (best.rss / best.dof) > special.fdtri(1, best.dof, 1 - p_level)


def _tied(
    first: ComplexityCandidate,
    allowed: list[ComplexityCandidate],
    const: ComplexityCandidate | None,
    k: int,
    known: bool,
    slope: Slope,
) -> tuple[str, ...]:
    """The classes the data cannot tell from ``first`` (``first`` included).

    O(1) is tied with the growth classes that beat it at P_MAYBE and with those
    whose exponent the log-log slope's CI holds (a constant cannot be told from
    them); a growth class with the others its residuals do not rule out, and, up
    to FEW_SIZES points without SEs, with every class the slope names.
    """
    if first.model == "O(1)":
        maybe = [
            c
            for c in allowed[1:]
            if _p_nested(first, c, k, known) < P_MAYBE or c.model in slope.admitted
        ]
        return (first.model, *(c.model for c in maybe))
    others = [c for c in allowed if c is not first and c is not const]
    tied = [c.model for c in others if not _ruled_out(c, first, known)]
    if k <= FEW_SIZES and not known:
        tied += [c.model for c in others if c.model in slope.classes and c.model not in tied]
    return (first.model, *tied)


def _monotone_beyond_ci(n: np.ndarray, y: np.ndarray, se: np.ndarray | None, unit: str) -> str:
    """Plain words when the costs rise (or fall) at every step and end beyond their CIs; else ""."""
    if se is None or n.size < 3:
        return ""
    order = np.argsort(n)
    ys, ss = y[order], se[order]
    steps = np.diff(ys)
    if not (np.all(steps > 0) or np.all(steps < 0)):
        return ""
    lo_first, hi_first = ys[0] - _Z95 * ss[0], ys[0] + _Z95 * ss[0]
    lo_last, hi_last = ys[-1] - _Z95 * ss[-1], ys[-1] + _Z95 * ss[-1]
    if not (lo_last > hi_first or hi_last < lo_first):
        return ""
    verb = "rise" if steps[0] > 0 else "fall"
    return (
        f"the costs {verb} at every step, from {fmt_value(ys[0], unit)} at n = "
        f"{fmt_count(n[order][0], 3)} to {fmt_value(ys[-1], unit)} at n = "
        f"{fmt_count(n[order][-1], 3)}, beyond their 95% CIs"
    )


def _pair_beyond_ci(
    n: np.ndarray,
    y: np.ndarray,
    se: np.ndarray | None,
    unit: str,
    p_level: float = P_GROWTH,
    trend: float = math.nan,
) -> str:
    """Plain words when two costs differ beyond their CIs in one direction (so the cost
    rises, or falls, and is not constant); else "".

    The widest-apart pair is tested: |y_i − y_j| > z·√(se_i² + se_j²), z the
    normal quantile at ``p_level`` two-sided, Bonferroni-corrected over the
    k(k−1)/2 pairs. When some pair rises and another falls beyond that, the costs
    scatter more than their SEs allow (the SEs are estimates too), which says
    nothing about growth: no evidence; nor is a pair whose direction goes against
    ``trend`` (the log-log slope, when given: a fall between two middle points of
    costs that rise overall).
    """
    if se is None or n.size < 2:
        return ""
    pairs = n.size * (n.size - 1) / 2
    z = float(special.ndtri(1 - p_level / (2 * pairs)))
    # gap[i, j]: cost at the larger of n_i, n_j minus at the smaller, in SEs (> 0: a rise)
    later = np.sign(n[None, :] - n[:, None])
    gap = later * (y[None, :] - y[:, None]) / np.sqrt(se[:, None] ** 2 + se[None, :] ** 2)
    rises, falls = gap.max() > z, (-gap).max() > z
    if rises == falls:  # neither, or both: scatter beyond the SEs is no direction
        return ""
    if math.isfinite(trend) and (trend > 0) != rises:
        return ""  # against the costs' overall direction
    i, j = np.unravel_index(int(np.argmax(gap if rises else -gap)), gap.shape)
    lo, hi = (i, j) if n[i] < n[j] else (j, i)
    verb = "rise" if rises else "fall"
    return (
        f"the costs {verb} from {fmt_value(y[lo], unit)} at n = {fmt_count(n[lo], 3)} to "
        f"{fmt_value(y[hi], unit)} at n = {fmt_count(n[hi], 3)}, {abs(gap[i, j]):.1f} standard "
        "errors apart: more than their CIs allow for a constant cost"
    )


def _adequacy(
    first: ComplexityCandidate,
    ranked: tuple[ComplexityCandidate, ...],
    n: np.ndarray,
    y: np.ndarray,
    se: np.ndarray | None,
    r2: float,
) -> tuple[str, tuple[str, ...]]:
    """(why no class fits or "", further notes) for the chosen class."""
    share = (y - first.predict(n)) / y
    if se is None:
        missed = np.nonzero(np.abs(share) > MISS_SHARE)[0]
    else:
        allowance = MISS_SE * se + MISS_TOL * y
        missed = np.nonzero(np.abs(y - first.predict(n)) > allowance)[0]
    worst = int(np.argmax(np.abs(share)))
    notes: list[str] = []
    if first.model == "O(1)":
        if abs(share[worst]) > MISS_SHARE:
            notes.append(
                f"the costs scatter around their mean by up to {_signed(share[worst])} "
                f"(n = {fmt_count(n[worst], 3)}) with no clear growth; measure more "
                "precisely to be sure there is none."
            )
        return "", tuple(notes)
    reasons = []
    if missed.size:
        i = missed[np.argmax(np.abs(share[missed]))]
        reasons.append(f"misses n = {fmt_count(n[i], 3)} by {_signed(share[i])}")
    if r2 < R2_FLOOR:
        reasons.append(f"weighted R² = {r2:.2f} < {R2_FLOOR}")
    if reasons:
        others = [c.model for c in ranked[1:3]]
        nxt = f"; next {' and '.join(others)}" if others else ""
        return f"{first.model}, the closest, {' and '.join(reasons)}{nxt}", ()
    if se is not None and first.dof > 0 and special.chdtrc(first.dof, first.rss) < 0.001:
        notes.append(
            f"{first.model} misses some points by more than their CIs allow (χ² = "
            f"{fmt_number(first.rss)} on {first.dof} degrees of freedom), though by at "
            f"most {fmt_percent(abs(share[worst]))}: the cost is not exactly a + b·g(n)."
        )
    return "", tuple(notes)


def _signed(share: float) -> str:
    """+36% / −12%."""
    return f"{'+' if share > 0 else '−'}{fmt_percent(abs(share))}"


def p_text(p: float) -> str:
    """p-values as people write them: 0.004, < 0.001."""
    return "< 0.001" if p < 0.001 else f"{p:.2g}"
