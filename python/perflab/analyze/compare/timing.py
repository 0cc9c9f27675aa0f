"""Run benchmarks compared: paired per-process ratios of timed samples with bootstrap
CIs, and the within-run drift check (the arithmetic behind ``perflab compare`` for
``run`` results; the suite around it is :mod:`perflab.analyze.compare.suite`)."""

from __future__ import annotations

import math
import zlib

import numpy as np

from perflab.analyze import stats
from perflab.analyze.decisions import (
    FAILED,
    expanded_ratio_ci,
    mann_whitney_p,
)
from perflab.analyze.paired import benchmark_ratio
from perflab.analyze.run.summary import median_estimate, timing_groups
from perflab.model import Benchmark
from perflab.model.comparison import (
    DEFAULT_THRESHOLD,
    Row,
    Side,
)

#: Share of benchmarks moving the same way above which the move looks machine-wide.
MACHINE_WIDE_SHARE = 0.8
#: p-value below which a move between the halves of a run counts as drift.
DRIFT_P = 0.01
#: Share of a side's benchmarks that drifted above which the whole run is called drifting.
DRIFTING_RUN_SHARE = 0.2


# --------------------------------------------------------------------------- engines


def row_rng(seed: int, key: str) -> np.random.Generator:
    """A generator per row, so a row's CI doesn't change when other benchmarks do."""
    return np.random.default_rng([seed, zlib.crc32(key.encode())])


def _unit_groups(bench: Benchmark) -> tuple[list[np.ndarray], int]:
    """Per-unit value arrays (seconds) and the sample count, python or command kind."""
    if bench.kind == "command":
        walls = [r.wall_ns * 1e-9 for r in bench.runs if r.ok and not r.warmup]
        return [np.array([w]) for w in walls], len(walls)
    groups = timing_groups(bench)
    return groups, sum(g.size for g in groups)


def compare_groups(
    row: Row,
    groups_a: list[np.ndarray],
    groups_b: list[np.ndarray],
    confidence: float,
    resamples: int,
    rng: np.random.Generator,
) -> Row:
    """Fill ``row`` from per-process values of A and B (the python and command engines).

    Ratio of pooled medians B/A, hierarchical bootstrap replicates widened
    for the number of processes, Mann–Whitney U on per-process medians.
    Cost: O(resamples · P · max samples per process).

    Args:
        row: the row to fill (id, kind, metric set).
        groups_a / groups_b: P arrays of seconds per op, one per process (non-empty).
    """
    median_a, median_b = stats.pooled_median(groups_a), stats.pooled_median(groups_b)
    reps_a = stats.bootstrap_medians(groups_a, resamples, rng)
    reps_b = stats.bootstrap_medians(groups_b, resamples, rng)
    row.a = _side(median_a, reps_a, groups_a, confidence)
    row.b = _side(median_b, reps_b, groups_b, confidence)
    if median_a <= 0 or median_b <= 0:
        row.verdict, row.primary = FAILED, False
        row.notes.append("a median of zero: no ratio can be formed")
        return row
    n = min(len(groups_a), len(groups_b))
    if n < 2:
        row.notes.append(
            "one process on a side: processes are the unit of replication, so "
            "no CI can be formed; measure with more processes"
        )
    with np.errstate(divide="ignore", invalid="ignore"):
        row.ratio, row.log_replicates = expanded_ratio_ci(
            median_b / median_a, reps_b / reps_a, n, confidence
        )
    row.p_value = mann_whitney_p([np.median(g) for g in groups_a], [np.median(g) for g in groups_b])
    return row


def _side(median: float, reps: np.ndarray, groups: list[np.ndarray], confidence: float) -> Side:
    return Side(
        stats.percentile_ci(reps, median, confidence), len(groups), int(sum(g.size for g in groups))
    )


def compare_timed(
    a: Benchmark,
    b: Benchmark,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    threshold: float = DEFAULT_THRESHOLD,
    paired: bool = False,
) -> Row:
    """Compare one python or command benchmark in A and B (see :func:`compare_groups`).

    Also checks each side for drift within its run (see :func:`within_run_drift`).

    Returns:
        A row; its verdict is "failed" when a side has no usable data.
    """
    row = Row(a.id, a.kind, "time", "s", test_key=a.id)
    groups_a, _ = _unit_groups(a)
    groups_b, _ = _unit_groups(b)
    missing = [
        f"{side}: {bench.error or 'no successful samples'}"
        for side, bench, groups in (("A", a, groups_a), ("B", b, groups_b))
        if not groups
    ]
    if missing:
        row.verdict, row.primary, row.notes = FAILED, False, missing
        return row
    for side, groups in (("A", groups_a), ("B", groups_b)):
        change, p_value = within_run_drift(groups)
        if abs(change) > threshold and p_value < DRIFT_P:
            row.drift[side] = change
            row.notes.append(
                f"{side} drifted {change:+.1%} from the first to the second half "
                "of its processes: the machine changed during the run"
            )
    rng = row_rng(seed, a.id)
    if a.kind == "python":
        return compare_processes(row, a, b, confidence, resamples, rng, paired)
    return compare_groups(row, groups_a, groups_b, confidence, resamples, rng)


def compare_processes(
    row: Row,
    a: Benchmark,
    b: Benchmark,
    confidence: float,
    resamples: int,
    rng: np.random.Generator,
    paired: bool = False,
) -> Row:
    """Fill ``row`` for a python benchmark (both sides with usable samples): each side's
    median and CI as ``perflab run`` computes them (:func:`median_estimate`), B/A and
    its CI from the two random-effects locations (see the module docstring), the
    Mann–Whitney U p on per-process medians. With fewer than 2 processes (or no spread)
    on a side, the ratio comes from :func:`compare_groups`' bootstrap. With ``paired``
    (A and B measured together in one run: ``run --compare-to REF``) B/A is the paired
    ratio (:func:`perflab.analyze.paired.benchmark_ratio`), its log-replicates t draws
    with the units' degrees of freedom, and ``row.pairs`` says how many pairs.
    O(N + resamples).
    """
    groups_a, groups_b = timing_groups(a), timing_groups(b)
    loc_a, loc_b = stats.process_location(groups_a), stats.process_location(groups_b)
    pair = benchmark_ratio(a, b, confidence) if paired else None
    if pair is not None:
        row.ratio, row.pairs = pair.ratio, pair.pairs
        se_log = pair.ratio.se / pair.ratio.value
        row.log_replicates = math.log(pair.ratio.value) + se_log * rng.standard_t(
            max(pair.units - 1, 1), resamples
        )
        row.p_value = mann_whitney_p(
            [np.median(g) for g in groups_a], [np.median(g) for g in groups_b]
        )
    elif loc_a is None or loc_b is None:
        compare_groups(row, groups_a, groups_b, confidence, resamples, rng)
    else:
        ratio = loc_b / loc_a
        row.ratio = ratio.ci(confidence)
        row.log_replicates = math.log(ratio.value) + ratio.se_log * rng.standard_t(
            ratio.df, resamples
        )
        row.p_value = mann_whitney_p(
            [np.median(g) for g in groups_a], [np.median(g) for g in groups_b]
        )
    for side, bench, groups in (("a", a, groups_a), ("b", b, groups_b)):
        est = median_estimate(bench, confidence, resamples)
        if est is not None:
            setattr(row, side, Side(est, len(groups), int(sum(g.size for g in groups))))
    return row


def within_run_drift(groups: list[np.ndarray]) -> tuple[float, float]:
    """How much a benchmark's time moved during its run, and whether that is beyond noise.

    Processes are taken in the order they ran (the order of the results file);
    the pooled median of the second half is compared with the first half's, and
    a Mann–Whitney U test on their per-process medians says whether the move
    is more than process-to-process noise. A machine that changes during a run
    (other programs' load, frequency, thermals) changes between runs too, and
    CIs computed inside one run don't cover that. O(N log N).

    Args:
        groups: per-process values in run order, P arrays.

    Returns:
        (second half / first half − 1, p-value); (0, NaN) for fewer than 4 processes.
    """
    if len(groups) < 4:
        return 0.0, math.nan
    half = len(groups) // 2
    early, late = groups[:half], groups[half:]
    change = stats.pooled_median(late) / stats.pooled_median(early) - 1
    return change, mann_whitney_p([np.median(g) for g in early], [np.median(g) for g in late])
