"""The paired ratio: B/A from samples of A and B measured side by side.

Shared VMs and CI runners switch between speed states (Python about 2× slower in the
slow one, for 0.2–3 ms at a time), so the medians of A and B measured at different
moments differ by whatever share of each run the machine spent slow. Two samples taken
back to back (or at the same moment on two CPUs) mostly meet the machine in the same
state, so the ratio of the two is far steadier than either timing ("Duet benchmarking",
Bulej et al., ICPE 2020; tango-bench's paired benchmarking; Google Benchmark's random
interleaving). This module turns such pairs into a ratio with a confidence interval.

Method, for pairs (A_i, B_i) in each of P worker processes:
    1. each pair's log ratio log(B_i/A_i): the machine's state, common to both, cancels;
    2. each process's median of its log ratios (robust to the pairs a state switch
       split, in which one side ran slow and the other fast);
    3. the random-effects location over processes, each process weighted by how
       precise its median is (its pairs' robust spread and count) plus the
       between-process variance, with the Hartung–Knapp interval and P − 1 degrees
       of freedom (:func:`weighted_location`): a process of a few pairs that a loaded
       machine threw off weighs little. The process-to-process spread (memory layout,
       hash seed) is part of the interval, as for a median; when it dominates the
       weights even out to the unweighted random-effects interval a run's medians use
       (:func:`perflab.analyze.stats.process_location`). Lock-step processes whose
       sides swapped CPUs average their two CPU slots' medians (:func:`unit_log_ratio`).
With a single series (one process, or ``perflab cmd``'s runs, which form one sequence
in time) the series is cut into consecutive batches that stand in for processes
(the method of batch means: Law & Kelton, "Simulation Modeling and Analysis", §9.5.3;
consecutive pairs are correlated, batch medians much less so).

The verdict is :func:`perflab.analyze.decisions.verdict` on the interval, against the
same noise threshold t as every other verdict: faster/slower when the whole CI lies
outside [1 − t, 1 + t], same when inside, inconclusive otherwise (a CI that contains
1 is never slower nor faster).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from perflab.analyze import stats
from perflab.model import Benchmark
from perflab.model.comparison import INCONCLUSIVE
from perflab.model.estimate import Estimate

#: a single series is cut into this many batches at most (its "processes")
BATCHES = 8
#: ... of at least this many pairs each (fewer pairs: fewer batches, at least 2)
MIN_BATCH_PAIRS = 3


@dataclass(frozen=True)
class PairedRatio:
    """The paired ratio B/A with its CI, and what it was computed from.

    Attributes:
        ratio: B/A (unitless) with its CI at the requested level and the SE of the
            ratio (delta method); below 1: B is faster.
        pairs: pairs that entered it.
        units: processes (or batches of one series) it was combined over.
        batched: True when ``units`` are batches of a single series, not processes.
        unit_ratios: each unit's median pair ratio B/A, shape (units,).
        spread: SD of the logs of ``unit_ratios`` (≈ relative SD; 0 when equal).
    """

    ratio: Estimate
    pairs: int
    units: int
    batched: bool
    unit_ratios: list[float] = field(default_factory=list)
    spread: float = math.nan

    def to_dict(self) -> dict[str, Any]:
        """JSON form: ``ratio`` as [value, CI low, CI high] like every ratio in results
        files, the counts, and the per-unit ratios."""
        return {
            "ratio": [self.ratio.value, self.ratio.ci_low, self.ratio.ci_high],
            "pairs": self.pairs,
            "units": self.units,
            "batched": self.batched,
            "unit_ratios": list(self.unit_ratios),
            "spread": self.spread,
        }


def pair_log_ratios(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> np.ndarray:
    """log(B_i/A_i) of each pair. O(n).

    Args:
        a, b: the two sides' timings of the same pairs, shape (n,) each, > 0, same unit.

    Returns:
        Shape (n,); pairs with a non-positive or non-finite side are dropped.

    Raises:
        ValueError: the two sides differ in length.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"pairs need as many A as B timings ({a.size} vs {b.size})")
    good = (a > 0) & (b > 0) & np.isfinite(a) & np.isfinite(b)
    return np.log(b[good]) - np.log(a[good])


def unit_log_ratio(log_ratios: np.ndarray, slots: np.ndarray | None = None) -> float:
    """One process's (or batch's) log ratio: the median of its pair log ratios; with
    ``slots`` (lock-step pairs whose sides swapped CPUs, :class:`perflab.engines.run.
    pairing.CpuSwap`: A on one CPU in slot 0, on the other in slot 1), the mean of the
    two slots' medians, so a CPU slower than the other for the whole process cancels
    exactly ((r + c) + (r − c)) / 2 = r, where the median of the two mixed would fall
    anywhere between them. O(n).

    Args:
        log_ratios: shape (n,), n ≥ 1.
        slots: shape (n,), each pair's slot (0 or 1), or None.
    """
    if slots is None or len(set(slots.tolist())) < 2:
        return float(np.median(log_ratios))
    return float(np.mean([np.median(log_ratios[slots == k]) for k in np.unique(slots)]))


def batches(log_ratios: np.ndarray) -> list[np.ndarray]:
    """A single series of pair log ratios cut into consecutive batches: up to
    :data:`BATCHES`, of at least :data:`MIN_BATCH_PAIRS` pairs each when there are enough
    pairs, else one pair each (at least 2 batches need 2 pairs). O(n).

    Returns:
        The batches, in order; [] with fewer than 2 pairs.
    """
    n = len(log_ratios)
    if n < 2:
        return []
    count = min(BATCHES, n // MIN_BATCH_PAIRS) if n >= 2 * MIN_BATCH_PAIRS else n
    return [part for part in np.array_split(np.asarray(log_ratios, float), count) if part.size]


def paired_ratio(
    processes: Sequence[tuple[Any, ...]],
    confidence: float = 0.95,
) -> PairedRatio | None:
    """The paired ratio B/A of timings measured in pairs (see the module docstring).

    Args:
        processes: one (a, b) per worker process, the A and B timings of its pairs in
            order (pair i is (a[i], b[i])), each of shape (n_p,), > 0, in one unit; or
            (a, b, slots) for lock-step pairs that swapped CPUs: ``slots`` of shape
            (n_p,), each pair's CPU slot (0 or 1; :func:`unit_log_ratio`).
            A single entry (one process, or one series of runs) is cut into batches.
        confidence: CI level.

    Returns:
        The PairedRatio, or None when fewer than 2 pairs are usable.

    Raises:
        ValueError: a process whose two sides differ in length.
    """
    series = []
    for entry in processes:
        a, b = np.asarray(entry[0], float), np.asarray(entry[1], float)
        lr = pair_log_ratios(a, b)
        slots = None
        if len(entry) > 2 and entry[2] is not None:
            good = (a > 0) & (b > 0) & np.isfinite(a) & np.isfinite(b)
            slots = np.asarray(entry[2])[good]
        if lr.size:
            series.append((lr, slots))
    total = sum(lr.size for lr, _ in series)
    if total < 2:
        return None
    batched = len(series) < 2
    if batched:
        lr, slots = series[0]
        cut = np.cumsum([len(x) for x in batches(lr)])[:-1]
        parts = np.split(lr, cut)
        slot_parts = np.split(slots, cut) if slots is not None else [None] * len(parts)
    else:
        parts = [lr for lr, _ in series]
        slot_parts = [slots for _, slots in series]
    units = np.array([unit_log_ratio(x, k) for x, k in zip(parts, slot_parts)])
    scales = np.array([unit_scale(x, k) for x, k in zip(parts, slot_parts)])
    counts = np.array([x.size for x in parts], dtype=float)
    location = weighted_location(units, scales, counts)
    if location is None:  # no within-unit spread to weigh by: the units count alike
        location = stats.process_location([np.exp([u]) for u in units])
    unit_ratios = [float(r) for r in np.exp(units)]
    if location is not None:
        estimate = location.ci(confidence)
        spread = float(np.std(units, ddof=1))
    else:  # every unit's median the same: no spread to estimate; the CI is that point
        value = float(np.exp(np.mean(units)))
        estimate, spread = Estimate(value, value, value, confidence, 0.0), 0.0
    return PairedRatio(estimate, total, len(units), batched, unit_ratios, spread)


def unit_scale(log_ratios: np.ndarray, slots: np.ndarray | None = None) -> float:
    """The robust SD of one unit's pair log ratios: 1.4826 × the MAD around the unit's
    median (around each slot's median, with ``slots``); 0 for a single pair. O(n)."""
    centred = np.asarray(log_ratios, float).copy()
    if slots is not None and len(set(slots.tolist())) > 1:
        for k in np.unique(slots):
            centred[slots == k] -= np.median(centred[slots == k])
    else:
        centred -= np.median(centred)
    return float(1.4826 * np.median(np.abs(centred))) if centred.size > 1 else 0.0


def weighted_location(
    logs: np.ndarray, scales: np.ndarray, counts: np.ndarray
) -> stats.LogLocation | None:
    """The random-effects location of P ≥ 2 units' log ratios, each weighted by how
    precise its median is, with the Hartung–Knapp–Sidik–Jonkman interval.

    A unit's median of n pair log ratios of robust SD σ has variance v ≈ (π/2)·σ²/n
    (the median's asymptotic variance under a normal core). σ is floored at the median
    σ of the units, so a unit whose few pairs happened to agree gains no weight from
    luck. Between-unit variance τ² by DerSimonian–Laird; weights w = 1/(v + τ²); the
    location μ = Σ w·y / Σ w; its variance Σ w·(y − μ)² / ((P − 1)·Σ w), at least
    1/Σ w, with P − 1 degrees of freedom (IntHout, Ioannidis & Borm, BMC Med Res
    Methodol 14:25, 2014; the floor: Jackson et al., Stat Med 36, 2017). When the
    units differ by more than their own noise (memory layout), τ² dominates and the
    weights even out: the unweighted random-effects interval the run's medians use.
    When they do not, a unit of 3 pairs that a loaded machine threw far off weighs
    as little as its 3 pairs merit, where equal weights let it move the ratio by tens
    of percent (seen under load on this 2-core VM: 1.76× for identical code).

    Args:
        logs: each unit's log ratio, shape (P,).
        scales: each unit's robust SD of its pair log ratios, shape (P,).
        counts: each unit's pairs, shape (P,), ≥ 1.

    Returns:
        The location (value = exp μ), or None with fewer than 2 units or no spread
        within the units to weigh by (the median σ is 0).
    """
    P = logs.size
    if P < 2:
        return None
    floor = float(np.median(scales))
    if not floor > 0:
        return None
    v = (math.pi / 2) * np.maximum(scales, floor) ** 2 / counts
    w0 = 1 / v
    mean0 = float(np.sum(w0 * logs) / np.sum(w0))
    q = float(np.sum(w0 * (logs - mean0) ** 2))
    c = float(np.sum(w0) - np.sum(w0**2) / np.sum(w0))
    tau2 = max(0.0, (q - (P - 1)) / c) if c > 0 else 0.0
    w = 1 / (v + tau2)
    mu = float(np.sum(w * logs) / np.sum(w))
    var = max(
        float(np.sum(w * (logs - mu) ** 2)) / ((P - 1) * float(np.sum(w))), 1 / float(np.sum(w))
    )
    return stats.LogLocation(math.exp(mu), math.sqrt(var), P - 1)


#: a pair's CI this much narrower than the precision target and the threshold settles
#: it even when it straddles the threshold: the ratio sits on the threshold's edge, and
#: more pairs would only confirm that (the budget would be spent for nothing)
EDGE_RESOLUTION = 0.25


def settles(ratio: PairedRatio | None, threshold: float, precision: float) -> bool:
    """Whether a pair may stop measuring: its paired ratio's CI settles the verdict.

    The target is the verdict, not the precision alone (a sequential design, as
    tango-bench's paired benchmarking and sequential tests stop on their decision):
    the CI's relative half-width is at most ``precision`` **and** the CI lies wholly
    outside [1 − t, 1 + t] (slower/faster) or wholly inside it (same). A CI that
    reaches the precision while it straddles 1 ± t would give "inconclusive": more
    processes narrow it (a stray process's weight falls as 1/P, and the t quantile
    with it), so the pair goes on, until the budget or the process cap stops it. Only a
    CI narrower than ``EDGE_RESOLUTION`` × min(precision, t) stops while straddling:
    the ratio then sits on the threshold itself (e.g. 1.020 ± 0.2%), which no budget
    resolves.

    Looking at the CI after every process does not inflate false verdicts the way
    repeated tests of "ratio = 1" do: a false "slower" needs the whole CI beyond
    1 + t while the truth is 1, not merely a CI that misses 1.

    Args:
        ratio: the pair's current paired ratio (None: fewer than 2 pairs).
        threshold: the verdict's relative noise threshold t (0.02 = 2%); NaN (chosen
            after the run, ``--threshold auto``): the precision alone decides.
        precision: the target relative CI half-width (0.01 = 1%).

    Returns:
        True when the pair may stop; False without a ratio.
    """
    if ratio is None:
        return False
    half = ratio.ratio.relative_half_width
    if not half <= precision:
        return False
    if math.isnan(threshold) or half <= EDGE_RESOLUTION * min(precision, threshold):
        return True
    return paired_verdict(ratio, threshold) != INCONCLUSIVE


def unpaired_ratio(
    a: Sequence[Sequence[float] | np.ndarray],
    b: Sequence[Sequence[float] | np.ndarray],
    confidence: float = 0.95,
) -> Estimate | None:
    """B/A from separately measured runs, for contrast with :func:`paired_ratio`: the
    ratio of the two random-effects locations of the process medians (as a run compares
    two benchmarks it did not pair), CI by the delta method and Welch–Satterthwaite df.

    Args:
        a, b: per-process timings of each side (P_a and P_b arrays, ≥ 2 each, > 0).

    Returns:
        The ratio B/A with its CI, or None when either side has fewer than 2 processes
        or no spread between them.
    """
    la, lb = stats.process_location(a), stats.process_location(b)
    if la is None or lb is None:
        return None
    return (lb / la).ci(confidence)


def paired_verdict(ratio: PairedRatio | None, threshold: float) -> str:
    """The verdict of B against A from the paired ratio's CI against the noise threshold
    t (:func:`perflab.analyze.decisions.verdict`); "failed" without a ratio."""
    from perflab.analyze.decisions import FAILED, verdict

    if ratio is None:
        return FAILED
    return verdict(ratio.ratio.ci_low, ratio.ratio.ci_high, threshold)


def process_pairs(a: Benchmark, b: Benchmark) -> list[tuple[Any, ...]]:
    """The pairs of ``a`` (side A) and ``b`` (side B) measured together, one (a, b, slots)
    per worker process that measured both: seconds per op of sample i of each side, both
    unflagged (a flagged sample drops its pair). A process record says which benchmark
    it was paired with (``Process.pair``); the two records of one worker process share
    its ``index``, and their samples are aligned: sample i of each is pair i. O(N).

    Returns:
        One (a, b, slots) per paired process, in run order, a and b of shape (n_p,);
        slots: each kept pair's CPU slot (pair index mod 2) for lock-step processes
        whose sides swapped CPUs (``pair["cpus"]``), else None; [] when the two were
        never measured together.
    """
    partners = {
        p.index: p
        for p in b.processes
        if p.pair is not None and p.pair.get("side") == "b" and p.pair.get("with") == a.id
    }
    out = []
    for pa in a.processes:
        pb = partners.get(pa.index)
        if (
            pa.pair is None
            or pa.pair.get("side") != "a"
            or pa.pair.get("with") != b.id
            or pb is None
        ):
            continue
        kept = [
            (i, sa, sb)
            for i, (sa, sb) in enumerate(zip(pa.samples, pb.samples))
            if not sa.flagged and not sb.flagged
        ]
        if kept:
            out.append(
                (
                    np.array([sa.wall_ns / sa.iterations for _, sa, _ in kept])
                    * 1e-9
                    / a.ops_per_call,
                    np.array([sb.wall_ns / sb.iterations for _, _, sb in kept])
                    * 1e-9
                    / b.ops_per_call,
                    np.array([i % 2 for i, _, _ in kept]) if pa.pair.get("cpus") else None,
                )
            )
    return out


def benchmark_ratio(a: Benchmark, b: Benchmark, confidence: float = 0.95) -> PairedRatio | None:
    """The paired ratio B/A of two benchmarks measured together (:func:`process_pairs`),
    or None when they have fewer than 2 usable pairs."""
    pairs = process_pairs(a, b)
    return paired_ratio(pairs, confidence) if pairs else None
