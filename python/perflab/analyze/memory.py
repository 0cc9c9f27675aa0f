"""Memory of ``perflab run --memory``: each benchmark's resident set, and whether it leaks.

Each worker process reads its resident set (RSS) from /proc when its first and its last
timed sample end (between samples, outside the timed loop), with the calls in between;
perflab reads its peak and a timeline every 10 ms from outside
(:mod:`perflab.engines.memory`). Per benchmark this module gives the medians over
processes of RSS at start, peak and end, and the **growth per 1,000 ops**: per process,
(RSS at the last sample − RSS at the first) ÷ the ops in between × 1,000, with the
distribution-free CI of its median across processes (the order statistics that the sign
test inverts; Hollander, Wolfe & Chicken, "Nonparametric Statistical Methods", 3rd ed.,
§3.6). The process is the unit of replication, as for times.

**Leak rule.** A benchmark is flagged as growing when both hold:

* the CI's lower end is above zero (at 95%: nearly every process grew; with 10
  processes, at least 9), and
* the median process grew by at least :data:`LEAK_MIN_BYTES` over its timed samples.

The second condition is there because RSS moves in whole pages and the allocators
grow in steps (pymalloc arenas of 1 MiB, glibc's heap top): a benchmark that never
holds more memory can still touch a few more pages in every process as its free
lists settle. A leak of a few bytes per call needs more calls to show: raise
``--process-time``. benchmarks/memory.py measures how often non-leaking workloads
are flagged (the target is under 5%).

**The Python heap.** Each worker also runs a heap pass after timing
(:mod:`perflab.engines.run.heap`): the bytes tracemalloc counts as still held, from a
baseline to the end of the pass, both after a full collection. Its growth per 1,000
ops, median over processes with the same CI, is exact to the byte for what calls keep,
where RSS moves in pages (a container resized during the pass counts whole once, so a
leak can read high, never low), so it shows a slow leak in far fewer calls. It sees
only what Python's allocators hand out (not a C library's own ``malloc``), and a cache
that keeps filling grows it as a leak does. The heap is flagged as growing when its
CI's lower end is above zero and the median process's heap grew by at least
:data:`HEAP_MIN_BYTES` over its pass (a call that keeps nothing reads exactly 0 bytes:
the floor only keeps a one-off allocation, e.g. a lazily built table, from reading as
growth).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from perflab.model import Benchmark, Process

#: least median growth over a process's timed samples for a leak flag, bytes (64 KiB:
#: 16 pages, more than the allocators' settling steps measured in benchmarks/memory.py)
LEAK_MIN_BYTES = 64 * 1024
#: least median growth of the Python heap over a process's heap pass for its flag, bytes
HEAP_MIN_BYTES = 1024


@dataclass(frozen=True)
class MemorySummary:
    """One benchmark's memory under ``--memory``.

    Attributes:
        id: the benchmark id.
        processes: processes with both readings (growth needs two).
        rss_start_bytes / rss_end_bytes: medians over processes of the RSS at the
            first and the last timed sample, bytes.
        rss_peak_bytes: median over processes of each one's peak RSS (the kernel's
            high-water mark over the process's life: import, setup, warmup and the
            tracemalloc pass included), bytes.
        growth_per_1k_ops_bytes: (median, low, high) of the per-process growth per
            1,000 ops over the timed samples, bytes; CI level ``confidence``.
        growth_bytes: median per-process growth over the timed samples, bytes.
        confidence: level of the CI actually reached (the order statistics give a
            level at or above the one asked for; with 5 processes or fewer, the range
            of all of them, at 1 − 2^(1−n)).
        leaking: True when the leak rule (see the module) flags it.
        heap_per_1k_ops_bytes: (median, low, high) of the per-process growth of the
            Python heap per 1,000 ops over the heap pass, bytes (CI level
            ``heap_confidence``); None when no process ran the pass (older files).
        heap_processes: processes with a heap pass.
        heap_confidence: level of that CI actually reached.
        heap_growing: True when the heap rule (see the module) flags it.
    """

    id: str
    processes: int
    rss_start_bytes: float
    rss_end_bytes: float
    rss_peak_bytes: float
    growth_per_1k_ops_bytes: tuple[float, float, float]
    growth_bytes: float
    confidence: float
    leaking: bool
    heap_per_1k_ops_bytes: tuple[float, float, float] | None = None
    heap_processes: int = 0
    heap_confidence: float = math.nan
    heap_growing: bool = False


def median_ci(
    values: Sequence[float], confidence: float = 0.95
) -> tuple[float, float, float, float]:
    """Median of ``values`` with its distribution-free CI from order statistics.

    The CI is [x₍ₖ₎, x₍ₙ₋ₖ₊₁₎] with the largest k for which the Binomial(n, ½) tail
    P(X < k) ≤ (1 − confidence) / 2; exact for any continuous distribution, and
    conservative for discrete ones (RSS moves in pages). Deterministic: no resampling.

    Args:
        values: n ≥ 1 numbers.
        confidence: the level asked for, e.g. 0.95.

    Returns:
        (median, low, high, level reached); with too few values for that level,
        (median, min, max, 1 − 2^(1−n)).

    Raises:
        ValueError: on no values.
    """
    from scipy import stats  # here: importing scipy.stats costs ~1 s of every CLI start

    x = np.sort(np.asarray(values, dtype=float))
    n = x.size
    if n == 0:
        raise ValueError("median_ci needs at least one value")
    alpha = (1 - confidence) / 2
    k = int(stats.binom.ppf(alpha, n, 0.5))  # P(X ≤ k) ≥ alpha
    while k > 0 and stats.binom.cdf(k - 1, n, 0.5) > alpha:
        k -= 1
    if k < 1:
        return float(np.median(x)), float(x[0]), float(x[-1]), 1 - 2.0 ** (1 - n)
    level = 1 - 2 * float(stats.binom.cdf(k - 1, n, 0.5))
    return float(np.median(x)), float(x[k - 1]), float(x[n - k]), level


def summarize(bench: Benchmark, confidence: float = 0.95) -> MemorySummary | None:
    """The memory summary of ``bench``, or None when no process has both readings (not
    run with --memory, threads mode, or every process failed)."""
    procs = rss_processes(bench)
    if not procs:
        return None
    growth = [float(p.rss_end_bytes - p.rss_start_bytes) for p in procs]  # type: ignore[operator]
    per_1k = rss_growth_per_1k_ops(bench)
    median, low, high, level = median_ci(per_1k, confidence)
    peaks = [p.rss_peak_bytes for p in procs if p.rss_peak_bytes]
    grew = float(np.median(growth))
    passes = heap_passes(bench)
    heap = heap_growth_per_1k_ops(bench)
    heap_ci = median_ci(heap, confidence) if heap else None
    heap_grew = (
        float(np.median([h["traced_bytes"][-1] - h["traced_bytes"][0] for h in passes]))
        if passes
        else 0.0
    )
    return MemorySummary(
        bench.id,
        len(procs),
        float(np.median([p.rss_start_bytes for p in procs])),
        float(np.median([p.rss_end_bytes for p in procs])),
        float(np.median(peaks)) if peaks else math.nan,
        (median, low, high),
        grew,
        level,
        leaking=low > 0 and grew >= LEAK_MIN_BYTES,
        heap_per_1k_ops_bytes=(heap_ci[0], heap_ci[1], heap_ci[2]) if heap_ci else None,
        heap_processes=len(heap),
        heap_confidence=heap_ci[3] if heap_ci else math.nan,
        heap_growing=bool(heap_ci) and heap_ci[1] > 0 and heap_grew >= HEAP_MIN_BYTES,
    )


def peak_rss_bytes(bench: Benchmark) -> float | None:
    """The highest RSS peak of ``bench``'s worker processes, bytes (the kernel's
    high-water mark of each, read with ``--memory`` or ``--max-rss``), failed processes
    included (a worker killed for its memory still had that peak); None when no process
    has a reading. The gate of ``run --max-rss`` judges this figure: a limit holds for
    every process, not for the median one."""
    peaks = [p.rss_peak_bytes for p in bench.processes if p.rss_peak_bytes]
    return float(max(peaks)) if peaks else None


def rss_processes(bench: Benchmark) -> list[Process]:
    """The processes of ``bench`` with both RSS readings of ``--memory`` and calls between."""
    return [
        p
        for p in bench.processes
        if not p.error
        and p.rss_start_bytes is not None
        and p.rss_end_bytes is not None
        and p.rss_calls
    ]


def rss_growth_per_1k_ops(bench: Benchmark) -> list[float]:
    """Per process of :func:`rss_processes`: (RSS at the last timed sample − at the first)
    ÷ the ops in between × 1,000, bytes; [] without ``--memory`` readings."""
    ops = max(bench.ops_per_call, 1)
    return [
        (p.rss_end_bytes - p.rss_start_bytes) / (p.rss_calls * ops) * 1000  # type: ignore[operator]
        for p in rss_processes(bench)
    ]


def heap_passes(bench: Benchmark) -> list[dict[str, list[float]]]:
    """The heap passes of ``bench``'s processes that give a growth per call."""
    return [
        h
        for p in bench.processes
        if not p.error and (h := p.heap) is not None and heap_growth_per_call(h) is not None
    ]


def heap_growth_per_1k_ops(bench: Benchmark) -> list[float]:
    """Per heap pass: the Python heap's growth per 1,000 ops, bytes; [] without passes."""
    ops = max(bench.ops_per_call, 1)
    return [(heap_growth_per_call(h) or 0.0) * 1000 / ops for h in heap_passes(bench)]


def heap_growth_per_call(heap: dict[str, list[float]] | None) -> float | None:
    """Growth of the Python heap per call over a heap pass, bytes: (traced bytes at the
    last reading − at the first) ÷ the calls in between (both readings follow a full
    collection; :func:`perflab.engines.run.heap.heap_timeline`). None without a pass or
    with fewer than two readings."""
    if not heap:
        return None
    calls, traced = heap.get("calls") or [], heap.get("traced_bytes") or []
    if len(calls) < 2 or len(traced) != len(calls) or calls[-1] <= calls[0]:
        return None
    return (traced[-1] - traced[0]) / (calls[-1] - calls[0])


def summaries(benches: Sequence[Benchmark], confidence: float = 0.95) -> list[MemorySummary]:
    """:func:`summarize` of each benchmark that has memory readings, in order."""
    return [s for b in benches if (s := summarize(b, confidence)) is not None]
