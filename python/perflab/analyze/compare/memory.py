"""Memory compared like time: allocations, RSS peak and growth of one benchmark in A and B.

``perflab compare`` (and ``run --compare-to``, the pytest plugin's gate) gives every
benchmark with memory figures on both sides one row per figure (metric names are
:data:`perflab.model.comparison.MEMORY_METRICS`):

* ``run`` (every process that ran the allocation pass, the first 3 by default):
  ``allocated/op`` and ``allocs/op`` (bytes and blocks asked of Python's allocators per
  op in all, freed or not: BenchmarkDotNet's "Allocated"), ``alloc peak/op`` (the peak
  traced growth during a call);
* ``run --memory``: ``RSS peak`` (each worker's high-water mark), ``RSS growth/1k ops``
  and ``heap growth/1k ops`` (:mod:`perflab.analyze.memory`'s per-process growths);
* ``cmd``: ``max RSS`` (each run's peak from ``wait4``), and with ``--memory``
  ``tree RSS peak`` (the command and its descendants summed);
* ``http --watch``: ``server RSS peak`` per step (steps matched as the time rows match
  them: :func:`perflab.analyze.compare.http.steps_by_label`), the highest summed RSS of
  the watched processes over the step (:func:`perflab.analyze.watch.server_figures`).
  Each side is one run, one reading: no CI can be formed, so the rule below is applied
  to the two values themselves (B/A and B − A as points), as the http time rows' CIs
  leave out run-to-run variation; its floor is larger (:data:`FLOORS`), because the
  peak is the highest of readings taken every 100 ms, not the kernel's high-water mark.

The unit of replication is the process (run) or the run (cmd), as for times. Method,
the same as the time rows' (:func:`perflab.analyze.compare.timing.compare_groups`): each
side's median over its units with a bootstrap CI, B/A with the bootstrap replicates'
percentile CI widened for the smaller side's units (Hesterberg's expanded percentile,
:func:`perflab.analyze.decisions.expanded_ratio_ci`), the difference B − A with its CI
from the same replicates (widened alike), Mann–Whitney U on the units' values.

**Verdict** (the noise threshold is stated in the table's title): a figure whose CI of B/A
lies above 1 + t and whose CI of B − A lies above the metric's absolute floor
(:data:`FLOORS`) is **more**; below 1 − t and −floor, **less**; a CI of B/A within 1 ± t,
or of B − A within ± floor, is **same**; else **inconclusive**. The floor keeps a change of
a few bytes (one small int) or a few pages from reading as a change of memory. A growth
row (``… growth/1k ops``, whose value is near 0 in a process that keeps nothing, so a
ratio means little) is judged on B − A alone, against the floor of the leak rule spread
over the side's ops (:data:`perflab.analyze.memory.LEAK_MIN_BYTES` of RSS,
:data:`perflab.analyze.memory.HEAP_MIN_BYTES` of heap, per 1,000 ops). Memory does not
depend on the machine's speed, so these verdicts are never held when it moved.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from perflab.analyze import memory, stats
from perflab.analyze.decisions import (
    INCONCLUSIVE,
    SAME,
    expanded_ratio_ci,
    expansion_factor,
    mann_whitney_p,
    verdict,
)
from perflab.model import Benchmark
from perflab.model.comparison import FASTER, LESS, MEMORY_METRICS, MORE, SLOWER, Row, Side
from perflab.model.estimate import Estimate

#: Floor of ``server RSS peak`` (http ``--watch``), bytes: 1 MiB. The watched timeline is
#: read every 100 ms, so a step's peak is its highest reading (a spike between two
#: readings is missed), from one run per side: a few allocator steps of a server must
#: not read as a change.
SERVER_RSS_FLOOR_BYTES = 1024 * 1024.0
#: The note of a ``server RSS peak`` row.
ONE_READING = "one run, one reading per side: no CI"
#: Absolute floor of each ratio metric: a CI of B − A within ± this is "same", and a
#: change must exceed it to be "more" or "less" (bytes or blocks). 16 B is one small
#: Python object's slot; 64 KiB of RSS is 16 pages, the allocators' settling steps
#: (:data:`perflab.analyze.memory.LEAK_MIN_BYTES`).
FLOORS = {
    "allocated/op": 16.0,
    "allocs/op": 0.5,
    "alloc peak/op": 16.0,
    "RSS peak": 64 * 1024.0,
    "max RSS": 64 * 1024.0,
    "tree RSS peak": 64 * 1024.0,
    "server RSS peak": SERVER_RSS_FLOOR_BYTES,
}
#: The metrics judged on B − A alone (near 0 when nothing is kept: no ratio).
GROWTH_METRICS = ("RSS growth/1k ops", "heap growth/1k ops")


def _per_op(bench: Benchmark, field: str) -> list[float]:
    ops = max(bench.ops_per_call, 1)
    return [
        float(v) / ops
        for p in bench.processes
        if not p.error and (v := getattr(p, field)) is not None
    ]


def _peaks(bench: Benchmark) -> list[float]:
    return [float(p.rss_peak_bytes) for p in memory.rss_processes(bench) if p.rss_peak_bytes]


def _runs(field: str) -> Callable[[Benchmark], list[float]]:
    def read(bench: Benchmark) -> list[float]:
        values = [getattr(r, field) for r in bench.runs if r.ok and not r.warmup]
        return [float(v) for v in values if v]  # 0: the kernel gave no reading

    return read


#: metric → the per-unit values of a benchmark, by kind.
READERS: dict[str, dict[str, Callable[[Benchmark], list[float]]]] = {
    "python": {
        "allocated/op": lambda b: _per_op(b, "alloc_total_bytes"),
        "allocs/op": lambda b: _per_op(b, "alloc_total_blocks"),
        "alloc peak/op": lambda b: _per_op(b, "alloc_peak_bytes"),
        "RSS peak": _peaks,
        "RSS growth/1k ops": memory.rss_growth_per_1k_ops,
        "heap growth/1k ops": memory.heap_growth_per_1k_ops,
    },
    "command": {"max RSS": _runs("max_rss_bytes"), "tree RSS peak": _runs("tree_rss_peak_bytes")},
}


def growth_floor(bench: Benchmark, metric: str) -> float:
    """The leak rule's floor of ``bench`` per 1,000 ops, bytes: its least growth over a
    process's timed samples (RSS) or heap pass (heap) spread over the median process's
    ops; inf when no process says how many calls it made."""
    ops = max(bench.ops_per_call, 1)
    if metric == "RSS growth/1k ops":
        calls = [float(p.rss_calls or 0) for p in memory.rss_processes(bench)]
        least = memory.LEAK_MIN_BYTES
    else:
        calls = [h["calls"][-1] - h["calls"][0] for h in memory.heap_passes(bench)]
        least = memory.HEAP_MIN_BYTES
    spread = float(np.median(calls)) * ops if calls else 0.0
    return least / spread * 1000 if spread > 0 else math.inf


def memory_rows(
    a: Benchmark,
    b: Benchmark,
    threshold: float,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> list[Row]:
    """One row per memory figure both sides of one benchmark have, verdicts included
    (the rule is the module's). O(metrics · resamples · units).

    Args:
        a / b: the benchmark in the baseline and the candidate file (same kind).
        threshold: the noise threshold t of B/A, e.g. 0.02.
        confidence: CI level.
        resamples: bootstrap replicates per row.
        seed: bootstrap seed (each row derives its own stream from its id and metric).

    Returns:
        Rows (never primary) in the order of :data:`READERS`; [] when the kinds differ
        or no figure is on both sides.
    """
    from perflab.analyze.compare.timing import row_rng

    if a.kind != b.kind:
        return []
    if a.kind == "http":
        return http_memory_rows(a, b, threshold, confidence)
    rows = []
    for metric, read in READERS.get(a.kind, {}).items():
        values_a, values_b = read(a), read(b)
        if not values_a or not values_b:
            continue
        if metric in GROWTH_METRICS:
            floor = max(growth_floor(a, metric), growth_floor(b, metric))
        else:
            floor = FLOORS[metric]
        row = Row(
            a.id,
            a.kind,
            metric,
            MEMORY_METRICS[metric],
            test_key=f"{a.id} {metric}",
            primary=False,
        )
        rng = row_rng(seed, f"{a.id} {metric}")
        rows.append(judge(row, values_a, values_b, threshold, floor, confidence, resamples, rng))
    return rows


def http_memory_rows(
    a: Benchmark, b: Benchmark, threshold: float, confidence: float = 0.95
) -> list[Row]:
    """``server RSS peak`` rows of two http benchmarks, one per step both sides have and
    both watched (``--watch``), in A's step order; verdicts by the module's rule on the
    two values (one run per side: no CI). [] when no step was watched on both sides."""
    from perflab.analyze.compare.http import steps_by_label
    from perflab.analyze.watch import server_figures

    steps_b = steps_by_label(b)
    rows = []
    for label, step_a in steps_by_label(a).items():
        step_b = steps_b.get(label)
        if step_b is None:
            continue
        server_a, server_b = server_figures(step_a), server_figures(step_b)
        if server_a is None or server_b is None:
            continue
        metric = "server RSS peak"
        row = Row(
            f"{a.id} {label}",
            a.kind,
            metric,
            MEMORY_METRICS[metric],
            test_key=f"{a.id} {label} {metric}",
            primary=False,
            notes=[ONE_READING],
        )
        values = (float(server_a.rss_peak_bytes), float(server_b.rss_peak_bytes))
        rows.append(judge_points(row, *values, threshold, FLOORS[metric], confidence))
    return rows


def judge_points(
    row: Row, value_a: float, value_b: float, threshold: float, floor: float, confidence: float
) -> Row:
    """Fill ``row`` (a memory metric) from one value per side: B/A and B − A as points
    (their CI is the point: nothing tells how a repeat would differ) and the module's
    verdict on them; a side at zero gives no ratio (B − A alone)."""
    row.a = Side(Estimate(value_a, math.nan, math.nan, confidence), 1, 1)
    row.b = Side(Estimate(value_b, math.nan, math.nan, confidence), 1, 1)
    diff = value_b - value_a
    row.difference = Estimate(diff, diff, diff, confidence)
    if value_a > 0 and value_b > 0:
        ratio = value_b / value_a
        row.ratio = Estimate(ratio, ratio, ratio, confidence)
    row.verdict = memory_verdict(row, threshold, floor)
    return row


def judge(
    row: Row,
    values_a: Sequence[float],
    values_b: Sequence[float],
    threshold: float,
    floor: float,
    confidence: float,
    resamples: int,
    rng: np.random.Generator,
) -> Row:
    """Fill ``row`` (a memory metric) from the per-unit values of A and B: sides, B/A and
    B − A with their CIs, the p-value and the verdict (the module's rule; a growth metric
    on B − A alone). ``floor``: the metric's absolute floor, in its unit."""
    groups_a = [np.array([v]) for v in values_a]
    groups_b = [np.array([v]) for v in values_b]
    med_a, med_b = stats.pooled_median(groups_a), stats.pooled_median(groups_b)
    reps_a = stats.bootstrap_medians(groups_a, resamples, rng)
    reps_b = stats.bootstrap_medians(groups_b, resamples, rng)
    row.a = Side(stats.percentile_ci(reps_a, med_a, confidence), len(values_a), len(values_a))
    row.b = Side(stats.percentile_ci(reps_b, med_b, confidence), len(values_b), len(values_b))
    n = min(len(values_a), len(values_b))
    factor = expansion_factor(n, confidence)
    diff = med_b - med_a
    if math.isfinite(factor):
        spread = diff + factor * (reps_b - reps_a - diff)
        row.difference = stats.percentile_ci(spread, diff, confidence)
    else:
        row.difference = Estimate(diff, -math.inf, math.inf, confidence)
        row.notes.append(
            "one unit on a side: processes (runs) are the unit of replication, so no CI "
            "can be formed; measure with more"
        )
    if row.metric in GROWTH_METRICS:
        pass  # near 0 in a process that keeps nothing: no ratio, B − A alone
    elif med_a > 0 and med_b > 0:
        with np.errstate(divide="ignore", invalid="ignore"):
            row.ratio, _ = expanded_ratio_ci(med_b / med_a, reps_b / reps_a, n, confidence)
    elif med_a == med_b == 0:
        row.ratio = Estimate(1.0, 1.0, 1.0, confidence) if math.isfinite(factor) else None
    row.p_value = mann_whitney_p(values_a, values_b)
    row.verdict = memory_verdict(row, threshold, floor)
    return row


def memory_verdict(row: Row, threshold: float, floor: float) -> str:
    """more, less, same or inconclusive for a filled memory row (the module's rule)."""
    by_diff = _against_floor(row.difference, floor)
    if row.metric in GROWTH_METRICS or row.ratio is None:
        return by_diff  # a growth, or a side at zero: B − A alone
    by_ratio = {SLOWER: MORE, FASTER: LESS}.get(
        v := verdict(row.ratio.ci_low, row.ratio.ci_high, threshold), v
    )
    if SAME in (by_diff, by_ratio):
        return SAME
    return by_diff if by_diff == by_ratio else INCONCLUSIVE


def _against_floor(diff: Estimate | None, floor: float) -> str:
    """The verdict of a CI of B − A against ± ``floor``: beyond it more or less, within
    it same; inconclusive when it straddles it or either is unknown."""
    if diff is None or not (math.isfinite(diff.ci_low) and math.isfinite(diff.ci_high)):
        return INCONCLUSIVE
    if not math.isfinite(floor):
        return INCONCLUSIVE
    if diff.ci_low > floor:
        return MORE
    if diff.ci_high < -floor:
        return LESS
    if -floor <= diff.ci_low and diff.ci_high <= floor:
        return SAME
    return INCONCLUSIVE
