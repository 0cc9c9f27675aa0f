"""The machine's speed states, from a fixed loop timed back to back: how much time the
machine spends slow, how long a state lasts, and what that means for comparing timings.

Why: shared VMs and CI runners run Python at two speeds (about 2× apart on some hosts,
10–30% on others), switching every 0.2–3 ms; the share of time spent slow moves between
runs made minutes apart, so two separately measured medians disagree, while two timings
taken next to each other share the state and their ratio is several times tighter.
``perflab doctor`` times a ≈ 50 µs loop back to back for about a second (alone, and on two
CPUs at once) and these functions turn the timings into figures and advice.

Method (deterministic; every step is a pure function of the series):
    1. **waits out**: a timing whose thread CPU time is below :data:`RUNNING_SHARE` of its
       wall time was preempted (it waited for a core): it is dropped, the series closes up;
    2. **two levels or one**: a two-component Gaussian mixture is fitted to the log
       timings by EM, started from Otsu's split (the threshold that maximizes the
       between-class variance of the sorted logs; Otsu 1979). The series has two speed
       states when the components are distinct modes, Ashman's D =
       √2·|μ₁ − μ₂| / √(σ₁² + σ₂²) ≥ :data:`MIN_SEPARATION` (Ashman, Bird & Zepf 1994:
       D > 2 is a clean separation), and the smaller one holds at least
       :data:`MIN_STATE_SHARE` of the timings; otherwise there is one state. Log timings
       because a state multiplies the loop's time;
    3. **threshold**: the point between the two means where a timing is equally likely
       in either component (the Bayes boundary); above it a timing is slow;
    4. **interruptions out**: a single timing on the other side of the threshold between
       two of one state is relabelled to their state (a width-3 majority filter: an
       interrupt or a page fault lengthens one timing, a speed state lasts several; states
       shorter than two timings, ≈ 0.1 ms, are below what the probe resolves);
    5. **figures**: slow share = time in slow timings ÷ all timed time; a state's length =
       the summed wall time of a run of consecutive timings in one state, its mean = time
       in the state ÷ runs of it (edge runs included, so with long states it is a lower
       bound); lag-1 autocorrelation of the log timings winsorized at the 1st/99th
       percentiles; the spread of the ratio of two adjacent timings (non-overlapping
       consecutive pairs) as the MAD of their logs scaled by 1.4826 (≈ a relative SD,
       robust to the interrupt tail and to the few pairs that straddle a switch: what a
       median of paired ratios faces); the spread of single timings as the SD of the
       two-state mixture, √(p(1 − p)·ln²(slow/fast) + s²), with p the slow share of the
       timings and s the same robust spread of each log timing around its state's median
       (a MAD alone would not see a minority state: with 30% slow timings it measures
       only the fast state's noise).

Two CPUs: two processes time the same loop at the same moments (started together, each
pinned to its own CPU); timings are paired by time (each timing of the first with the one
of the second whose interval holds its midpoint). The same-state share is the share of
pairs in which both were in the same state, beside what independent states would give by
chance (p₁p₂ + (1 − p₁)(1 − p₂), from each CPU's slow share over the pairs), and their
agreement beyond chance is Cohen's (1960) κ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from perflab.analyze.stats import mad
from perflab.model.doctor import Check, PairFigures, SpeedStates, StateFigures

#: A timing whose thread CPU time is below this share of its wall time waited for a core.
RUNNING_SHARE = 0.9
#: Ashman's D at or above which the mixture's components are two distinct modes.
MIN_SEPARATION = 2.0
#: The smaller state must hold at least this share of the timings to count.
MIN_STATE_SHARE = 0.01
#: Fewest timings the figures are computed from.
MIN_TIMINGS = 50
#: EM: at most this many iterations; stop when the mean log-likelihood gains less.
EM_ITERATIONS = 300
EM_TOLERANCE = 1e-10
#: Variance floor of a component, (log units)²: 0.1% relative; keeps exact repeats finite.
VARIANCE_FLOOR = 1e-6
#: Advice: states that matter (slow share inside this band) and pairing that helps
#: (adjacent spread at most this share of the single spread).
MATTERS_SHARE = (0.02, 0.98)
PAIRING_HELPS = 0.7
#: Two CPUs share states when their agreement beyond chance (Cohen's κ) reaches this:
#: "moderate" agreement and up (Landis & Koch 1977: 0.41–0.60 moderate).
SHARED_KAPPA = 0.4
#: Above this chance agreement (nearly every timing in one state) κ can't tell.
CHANCE_TOO_HIGH = 0.95
#: One state with single timings spread below this: separate runs compare (the default
#: --threshold is 2%).
QUIET_SPREAD = 0.02


def otsu_threshold(values: np.ndarray) -> float:
    """Otsu's (1979) threshold of 1-D data: the split of the sorted values maximizing the
    between-class variance w₀w₁(μ₀ − μ₁)², at the midpoint of the two values around it.
    O(n log n).

    Raises:
        ValueError: fewer than 2 distinct values.
    """
    x = np.sort(np.asarray(values, dtype=float))
    if x.size < 2 or x[0] == x[-1]:
        raise ValueError("Otsu's threshold needs at least 2 distinct values")
    n = x.size
    k = np.arange(1, n)
    head = np.cumsum(x)[:-1]
    mean0, mean1 = head / k, (x.sum() - head) / (n - k)
    between = (k / n) * (1 - k / n) * (mean0 - mean1) ** 2
    between[x[1:] == x[:-1]] = -1.0  # only split between distinct values
    i = int(np.argmax(between))
    return float((x[i] + x[i + 1]) / 2)


@dataclass
class Mixture:
    """Two Gaussian components (component 0 has the lower mean) over a uniform background.

    Attributes:
        weights / means / variances: per Gaussian component, shape (2,).
        background: weight of the uniform component over [low, high] (the tail of
            interrupted timings), so that it does not widen the slow component.
        low / high: the data's range.
    """

    weights: np.ndarray
    means: np.ndarray
    variances: np.ndarray
    background: float = 0.0
    low: float = 0.0
    high: float = 1.0

    @property
    def separation(self) -> float:
        """Ashman's D = √2·|μ₁ − μ₀| / √(σ₀² + σ₁²)."""
        return float(
            math.sqrt(2) * abs(self.means[1] - self.means[0]) / math.sqrt(self.variances.sum())
        )

    def log_densities(self, x: np.ndarray) -> np.ndarray:
        """log(weight × density) of each component at x: shape (3, n), the background last."""
        v = self.variances[:, None]
        gauss = (
            np.log(np.maximum(self.weights, 1e-300))[:, None]
            - 0.5 * np.log(2 * math.pi * v)
            - (x[None, :] - self.means[:, None]) ** 2 / (2 * v)
        )
        flat = math.log(max(self.background, 1e-300)) - math.log(max(self.high - self.low, 1e-12))
        return np.vstack([gauss, np.full((1, x.size), flat)])

    def boundary(self) -> float:
        """Where a value is equally likely in either Gaussian, between the two means
        (the midpoint of the means when no crossing lies between them)."""
        grid = np.linspace(self.means[0], self.means[1], 4001)
        d = self.log_densities(grid)
        crossed = np.nonzero(d[0] <= d[1])[0]
        if crossed.size == 0 or crossed[0] == 0:
            return float((self.means[0] + self.means[1]) / 2)
        return float(grid[crossed[0]])


def fit_mixture(values: np.ndarray) -> Mixture | None:
    """Fit two Gaussians over a uniform background to 1-D data by EM (Dempster, Laird &
    Rubin 1977; the uniform "noise" component of Banfield & Raftery 1993), the Gaussians
    started from the two sides of :func:`otsu_threshold` with the background at 1%.
    Deterministic. O(n · iterations).

    Returns:
        The mixture, or None when the data hold fewer than 2 distinct values.
    """
    x = np.asarray(values, dtype=float)
    try:
        cut = otsu_threshold(x)
    except ValueError:
        return None
    low = x <= cut
    share = 0.99 * low.mean()
    mix = Mixture(
        np.array([share, 0.99 - share]),
        np.array([x[low].mean(), x[~low].mean()]),
        np.maximum([x[low].var(), x[~low].var()], VARIANCE_FLOOR),
        0.01,
        float(x.min()),
        float(x.max()),
    )
    previous = -math.inf
    for _ in range(EM_ITERATIONS):
        dens = mix.log_densities(x)
        total = np.logaddexp.reduce(dens, axis=0)
        resp = np.exp(dens - total)
        mass = np.maximum(resp.sum(axis=1), 1e-12)
        means = (resp[:2] @ x) / mass[:2]
        variances = (resp[:2] * (x[None, :] - means[:, None]) ** 2).sum(axis=1) / mass[:2]
        mix = Mixture(
            mass[:2] / x.size,
            means,
            np.maximum(variances, VARIANCE_FLOOR),
            float(mass[2] / x.size),
            mix.low,
            mix.high,
        )
        likelihood = float(total.mean())
        if likelihood - previous < EM_TOLERANCE:
            break
        previous = likelihood
    order = np.argsort(mix.means)
    return Mixture(
        mix.weights[order],
        mix.means[order],
        mix.variances[order],
        mix.background,
        mix.low,
        mix.high,
    )


def classify(log_ns: np.ndarray) -> tuple[np.ndarray, float | None, float | None]:
    """Each timing's state: steps 2–4 of the module's method.

    Args:
        log_ns: natural logs of the timings, in time order, shape (n,).

    Returns:
        (slow: bool mask, shape (n,); the threshold as a log, None with one state;
        Ashman's D of the mixture, None when it could not be fitted).
    """
    mix = fit_mixture(log_ns)
    slow = np.zeros(log_ns.size, dtype=bool)
    if mix is None:
        return slow, None, None
    separation = mix.separation
    if separation < MIN_SEPARATION or mix.weights.min() < MIN_STATE_SHARE:
        return slow, None, separation
    threshold = mix.boundary()
    slow = log_ns > threshold
    lone = (slow[:-2] == slow[2:]) & (slow[1:-1] != slow[:-2])
    slow[1:-1][lone] = slow[:-2][lone]
    if not slow.any() or slow.all():
        return np.zeros(log_ns.size, dtype=bool), None, separation
    return slow, threshold, separation


def robust_spread(log_values: np.ndarray) -> float:
    """1.4826 × the MAD of log values (≈ the relative SD of the values, robust to a tail);
    nan when empty."""
    return mad(log_values) if np.size(log_values) else math.nan


def single_spread(log_ns: np.ndarray, slow: np.ndarray) -> float:
    """The relative SD of single timings in two states: √(p(1 − p)·Δ² + s²), p the slow
    share of the timings, Δ the difference of the states' median logs, s the robust
    spread (:func:`robust_spread`) of each log around its state's median; with one state
    (``slow`` all False) just s. Shapes (n,)."""
    centred = log_ns.copy()
    gap, p = 0.0, float(slow.mean())
    for mask in (slow, ~slow):
        if mask.any():
            centred[mask] -= np.median(log_ns[mask])
    if 0 < p < 1:
        gap = float(np.median(log_ns[slow]) - np.median(log_ns[~slow]))
    return float(math.sqrt(p * (1 - p) * gap**2 + robust_spread(centred) ** 2))


def lag1_autocorrelation(log_values: np.ndarray) -> float:
    """Pearson correlation of consecutive values, winsorized at the 1st/99th percentiles
    (one preemption would otherwise dominate); nan with fewer than 3 values or none
    varying."""
    x = np.asarray(log_values, dtype=float)
    if x.size < 3:
        return math.nan
    x = np.clip(x, *np.percentile(x, [1, 99]))
    a, b = x[:-1] - x[:-1].mean(), x[1:] - x[1:].mean()
    denominator = math.sqrt(float((a * a).sum() * (b * b).sum()))
    return float((a * b).sum() / denominator) if denominator > 0 else math.nan


def _runs(slow: np.ndarray, wall_ns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(state of each run of equal labels, its summed wall time in ns)."""
    starts = np.concatenate([[0], np.nonzero(slow[1:] != slow[:-1])[0] + 1])
    return slow[starts], np.add.reduceat(wall_ns, starts)


def _finite(value: float) -> float | None:
    """None for NaN (JSON has no NaN; the figure is undefined)."""
    return None if math.isnan(value) else value


def _mean_ms(lengths_ns: np.ndarray) -> float | None:
    return float(lengths_ns.mean()) * 1e-6 if lengths_ns.size else None


def series_figures(wall_ns: np.ndarray, cpu_ns: np.ndarray | None = None) -> StateFigures:
    """Every figure of one back-to-back series (the module's method).

    Args:
        wall_ns: wall time of each timing in time order, ns, shape (n,).
        cpu_ns: thread CPU time of each, ns, shape (n,) (None: none waited).

    Returns:
        The figures.

    Raises:
        ValueError: fewer than :data:`MIN_TIMINGS` timings left, or a non-positive one.
    """
    wall = np.asarray(wall_ns, dtype=float)
    keep = running(wall, cpu_ns)
    wall = wall[keep]
    if wall.size < MIN_TIMINGS:
        raise ValueError(
            f"{wall.size} timings ran undisturbed; at least {MIN_TIMINGS} are needed "
            "to see speed states"
        )
    if (wall <= 0).any():
        raise ValueError("a timing is not positive")
    logs = np.log(wall)
    slow, threshold, separation = classify(logs)
    states, lengths = _runs(slow, wall)
    pairs = logs[1 : 2 * (logs.size // 2) : 2] - logs[0 : 2 * (logs.size // 2) : 2]
    two = threshold is not None
    return StateFigures(
        timings=int(wall.size),
        dropped=int((~keep).sum()),
        median_ns=float(np.median(wall)),
        states=2 if two else 1,
        threshold_ns=float(math.exp(threshold)) if two else None,
        fast_ns=float(np.median(wall[~slow])),
        slow_ns=float(np.median(wall[slow])) if two else None,
        separation=separation,
        slow_share=float(wall[slow].sum() / wall.sum()),
        switches=int(states.size - 1),
        mean_state_ms=float(lengths.mean()) * 1e-6,
        mean_slow_ms=_mean_ms(lengths[states]),
        mean_fast_ms=_mean_ms(lengths[~states]),
        lag1_autocorrelation=_finite(lag1_autocorrelation(logs)),
        single_spread=single_spread(logs, slow),
        adjacent_spread=robust_spread(pairs),
    )


def running(wall_ns: np.ndarray, cpu_ns: np.ndarray | None) -> np.ndarray:
    """Mask of the timings that ran undisturbed: thread CPU time ≥ :data:`RUNNING_SHARE`
    of wall time (all of them without CPU times). Shapes (n,)."""
    wall = np.asarray(wall_ns, dtype=float)
    if cpu_ns is None:
        return np.ones(wall.size, dtype=bool)
    return np.asarray(cpu_ns, dtype=float) >= RUNNING_SHARE * wall


def simultaneous(
    start_a: np.ndarray, wall_a: np.ndarray, start_b: np.ndarray, wall_b: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Pair timings of two series taken at the same moments: each timing of A with the
    timing of B whose interval [start, start + wall) holds A's midpoint. Starts on one
    clock (CLOCK_MONOTONIC, ns), each series in time order. O((n + m) log m).

    Returns:
        (indices into A, indices into B), equal length.
    """
    sa, wa = np.asarray(start_a, dtype=float), np.asarray(wall_a, dtype=float)
    sb, wb = np.asarray(start_b, dtype=float), np.asarray(wall_b, dtype=float)
    mid = sa + wa / 2
    j = np.searchsorted(sb, mid, side="right") - 1
    ok = (j >= 0) & (mid < sb[np.maximum(j, 0)] + wb[np.maximum(j, 0)])
    return np.nonzero(ok)[0], j[ok]


@dataclass
class Series:
    """One back-to-back series of loop timings (all ns, shape (n,), in time order)."""

    start_ns: np.ndarray
    wall_ns: np.ndarray
    cpu_ns: np.ndarray


def pair_figures(a: Series, b: Series, cpus: list[int]) -> PairFigures:
    """The two-CPU figures of two series timed at the same moments (module docstring).

    Raises:
        ValueError: a series has too few undisturbed timings (:func:`series_figures`), or
            the two have fewer than :data:`MIN_TIMINGS` simultaneous ones.
    """
    each = [series_figures(s.wall_ns, s.cpu_ns) for s in (a, b)]
    labels = []
    kept = []
    for s in (a, b):
        keep = running(s.wall_ns, s.cpu_ns)
        logs = np.log(np.asarray(s.wall_ns, dtype=float)[keep])
        labels.append(classify(logs)[0])
        kept.append(np.nonzero(keep)[0])
    ia, ib = simultaneous(a.start_ns, a.wall_ns, b.start_ns, b.wall_ns)
    # keep pairs where both timings ran undisturbed; map to positions among kept ones
    pos_a, pos_b = np.searchsorted(kept[0], ia), np.searchsorted(kept[1], ib)
    both = (pos_a < kept[0].size) & (pos_b < kept[1].size)
    both &= (kept[0][np.minimum(pos_a, kept[0].size - 1)] == ia) & (
        kept[1][np.minimum(pos_b, kept[1].size - 1)] == ib
    )
    pos_a, pos_b, ia, ib = pos_a[both], pos_b[both], ia[both], ib[both]
    if ia.size < MIN_TIMINGS:
        raise ValueError(
            f"only {ia.size} timings of the two CPUs overlapped; at least {MIN_TIMINGS} are needed"
        )
    sa, sb = labels[0][pos_a], labels[1][pos_b]
    pa, pb = sa.mean(), sb.mean()
    same, chance = float((sa == sb).mean()), float(pa * pb + (1 - pa) * (1 - pb))
    ratio = np.log(np.asarray(a.wall_ns, dtype=float)[ia] / np.asarray(b.wall_ns, dtype=float)[ib])
    return PairFigures(
        cpus=list(cpus),
        pairs=int(ia.size),
        same_state_share=same,
        chance_same_share=chance,
        kappa=(same - chance) / (1 - chance) if chance < 1 else None,
        side_by_side_spread=robust_spread(ratio),
        each=each,
    )


def percent(spread: float) -> str:
    """A spread in percent: one decimal below 10% ("0.6%"), none above ("18%")."""
    return f"{spread:.1%}" if spread < 0.1 else f"{spread:.0%}"


def advice(alone: StateFigures, two: PairFigures | None) -> str:
    """What the figures mean for measuring on this machine, in plain words (one or two
    sentences quoting the figures)."""
    single, adjacent = alone.single_spread, alone.adjacent_spread
    spreads = f"single timings spread {percent(single)}, adjacent pairs {percent(adjacent)}"
    paired = "compare paired (perflab run groups, --compare-to REF), not across runs"
    states = alone.states == 2 and MATTERS_SHARE[0] <= alone.slow_share <= MATTERS_SHARE[1]
    helps = adjacent <= PAIRING_HELPS * single
    if states:
        head = (
            f"two speed states ({alone.slow_ns / alone.fast_ns:.2f}× apart, "
            f"{alone.slow_share:.0%} of the time slow, a state lasts "
            f"{alone.mean_state_ms:.2g} ms on average)"
        )
        words = (
            f"{head}; {spreads}: {paired}"
            if helps
            else f"{head}, but they switch faster than two adjacent timings: {spreads}; "
            "compare paired with short samples, and give separate runs a wide --threshold"
        )
    elif single <= QUIET_SPREAD:
        words = (
            f"one speed state; {spreads}: separate runs compare within their CIs "
            "(pairing narrows a ratio's CI further)"
        )
    elif helps:
        words = (
            f"one speed state, but the speed drifts (lag-1 autocorrelation "
            f"{alone.lag1_autocorrelation or 0:.2f}); {spreads}: {paired}"
        )
    else:
        words = (
            f"one speed state; {spreads}: the noise is timing to timing, not states; "
            "separate runs compare within their CIs"
        )
    if (
        two is not None
        and states
        and two.kappa is not None
        and two.chance_same_share <= CHANCE_TOO_HIGH
    ):
        if two.kappa >= SHARED_KAPPA:
            words += (
                f". Two CPUs see the same state {two.same_state_share:.0%} of the time "
                f"(chance {two.chance_same_share:.0%}): side-by-side (lock-step) pairs "
                f"spread {percent(two.side_by_side_spread)}"
            )
        else:
            words += (
                f". Two CPUs see the same state {two.same_state_share:.0%} of the time, "
                f"no more than chance ({two.chance_same_share:.0%}): pair in one process "
                "(alternating), not side by side"
            )
    return words


def check(found: SpeedStates | None, missing: str = "") -> Check:
    """``perflab doctor``'s ``speed_states`` verdict: warn when the machine switches
    between speed states that pairing cancels (separately measured runs then disagree);
    n/a when the probe did not run (``missing`` says why)."""
    if found is None:
        return Check("speed_states", "n/a", f"not available: {missing or 'not measured'}")
    alone = found.alone
    matters = alone.states == 2 and MATTERS_SHARE[0] <= alone.slow_share <= MATTERS_SHARE[1]
    if matters or alone.single_spread > QUIET_SPREAD:
        return Check(
            "speed_states",
            "warn",
            found.advice,
            "judge changes by paired measurements (perflab run groups with a baseline, "
            "--compare-to REF); a results file measured earlier is only a rough baseline",
        )
    return Check("speed_states", "ok", found.advice)
