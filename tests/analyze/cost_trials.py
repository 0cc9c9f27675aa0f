"""Synthetic cost sweeps with realistic noise, and how the complexity fit reads them.

The study behind perflab's complexity verdicts (issues 11 §3 and 28 §1): for each
true growth class from O(1) to O(n²), seeded trials of 4–8 sizes, lognormal noise
of 2–10% per point, optionally one outlier point (its cost ×/÷ 1.35–2.0, its SE, when
known, 1–5× a normal point's: a noisy point or one hit by a speed switch), and costs
spanning 1–6 decades (O(log n) spans what it can: under 1.5 decades). Each trial's
outcome is "right" (the true class chosen, named among classes the fit says it
cannot tell apart, or, when no class fits, among those the log-log slope names),
"none" (no class fits and the slope's range leaves the truth out) or "wrong" (a
wrong class chosen, or a tie that leaves the truth out).
tests/analyze/test_complexity_choice.py holds right ≥ 95% and no wrong per class;
benchmarks/fit_confusion.py prints the confusion matrix into BENCHMARKS.md.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

from perflab.analyze.fit.models import COMPLEXITY_MODELS, fit_complexity

#: The true classes of the study.
TRUE_CLASSES = ("O(1)", "O(log n)", "O(n)", "O(n log n)", "O(n^2)")
#: Largest size the generator uses (O(log n) cannot reach its cost span below it).
N_CAP = 1e12
#: Processes behind each synthetic SE: the SE is itself estimated (χ² with this many dof).
SE_DOF = 20
#: Sizes per trial, low (inclusive) and high (exclusive).
SIZES = (4, 9)


@dataclass(frozen=True)
class Trial:
    """One synthetic sweep.

    Attributes:
        true: The class the costs were drawn from.
        n: Sizes, shape (k,), integers ≥ 10.
        cost: Costs, shape (k,), seconds.
        se: Standard error of each cost (an estimate, as perflab run gives), or None.
        noise: Relative noise σ of each cost.
        decades: log10(max cost / min cost) of the noise-free curve.
        outlier: Index of the outlier point, or None.
    """

    true: str
    n: np.ndarray
    cost: np.ndarray
    se: np.ndarray | None
    noise: float
    decades: float
    outlier: int | None = None


def draw(true: str, rng: np.random.Generator, known_se: bool, outlier: bool = False) -> Trial:
    """One trial of class ``true``: 4–8 sizes, 2–10% lognormal noise, 1–6 decades of cost,
    and with ``outlier`` one point ×/÷ 1.35–2.0 (its SE 1–5× a normal one's)."""
    while True:
        k = int(rng.integers(*SIZES))
        noise = float(rng.uniform(0.02, 0.10))
        n, mu = _curve(true, k, rng)
        if np.unique(n).size == k:
            break
    cost = mu * np.exp(noise * rng.standard_normal(k))
    se = noise * mu * np.sqrt(rng.chisquare(SE_DOF, k) / SE_DOF) if known_se else None
    at = None
    if outlier:
        at = int(rng.integers(k))
        cost[at] *= math.exp(rng.choice([-1, 1]) * rng.uniform(math.log(1.35), math.log(2.0)))
        if se is not None:
            se[at] *= rng.uniform(1, 5)
    return Trial(true, n, cost, se, noise, float(math.log10(mu.max() / mu.min())), at)


def _curve(true: str, k: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Sizes and noise-free costs a + b·g(n) (a: 0–50% of the smallest cost)."""
    n_min = 10 ** rng.uniform(1, 3)
    if true == "O(1)":
        n = np.round(np.geomspace(n_min, n_min * 10 ** rng.uniform(1, 6), k))
        return n, np.full(k, 10 ** rng.uniform(-8, -3))
    g = COMPLEXITY_MODELS[true]
    share, decades = rng.uniform(0, 0.5), rng.uniform(1, 6)
    g_min = float(g(np.array([n_min]))[0])
    target = (10**decades - share) / (1 - share) * g_min  # g(n_max) for that span
    n_max = _solve(g, target, n_min)
    n = np.round(np.geomspace(n_min, n_max, k))
    c0 = 10 ** rng.uniform(-8, -4)
    b = (1 - share) * c0 / g_min
    return n, share * c0 + b * g(n)


def _solve(g, target: float, low: float) -> float:
    """The n ≤ N_CAP where g(n) = target, by bisection in log n (N_CAP if out of reach)."""
    lo, hi = math.log(low), math.log(N_CAP)
    if g(np.array([N_CAP]))[0] < target:
        return N_CAP
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if g(np.array([math.exp(mid)]))[0] < target else (lo, mid)
    return math.exp(hi)


def outcome(
    true: str, verdict: str, model: str, tied: tuple[str, ...], named: tuple[str, ...] = ()
) -> str:
    """ "right", "none" or "wrong" for one fit of a trial of class ``true``.

    ``named``: the classes the log-log slope names, which count when no class fits.
    """
    if verdict == "none":
        return "right" if true in named else "none"
    if verdict == "fits":
        return "right" if model == true else "wrong"
    return "right" if true in tied else "wrong"


def reading(trial: Trial) -> tuple[str, str]:
    """(outcome, confusion-matrix column) of fitting ``trial``: a class, "tied …" or "none"."""
    fit = fit_complexity(trial.n, trial.cost, trial.se)
    named = fit.slope.classes if fit.slope is not None else ()
    result = outcome(trial.true, fit.verdict, fit.model, fit.tied, named)
    if fit.verdict == "fits":
        return result, fit.model
    if fit.verdict == "none":
        return result, "no class fits, slope names truth" if result == "right" else "no class fits"
    return result, "tied, truth named" if result == "right" else "tied, truth missing"


def study(trials: int, known_se: bool, seed: int = 0, outlier: bool = False) -> dict[str, Counter]:
    """Per true class: Counter of confusion-matrix columns plus "right"/"none"/"wrong" totals.

    Args:
        trials: Trials per class.
        known_se: Give each cost its (estimated) SE, as perflab run input has;
            False: costs alone, as a CSV with n,cost.
        seed: Seed of the trials (class i uses the stream (seed, i)).
        outlier: One outlier point per trial.
    """
    out: dict[str, Counter] = {}
    for i, true in enumerate(TRUE_CLASSES):
        rng = np.random.default_rng([seed, i, int(known_se), int(outlier)])
        counts: Counter = Counter()
        for _ in range(trials):
            result, column = reading(draw(true, rng, known_se, outlier))
            counts[column] += 1
            counts[result] += 1
        out[true] = counts
    return out
