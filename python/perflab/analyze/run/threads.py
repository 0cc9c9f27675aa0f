"""Threads mode folded across processes: latency percentiles, fairness between threads.

A threads-mode worker (:mod:`perflab.engines.run.threads`) records per process the
operations each thread completed and per-op latency percentiles; this module
folds a benchmark's processes into the figures the threads table shows.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from perflab.model import Benchmark

#: How threads mode samples latency (:class:`perflab.engines.run.threads.Crew` runs it, the
#: threads table's footnote describes it; both read these): each thread times one call
#: between batches of untimed calls, and a batch doubles until it lasts LATENCY_BATCH_NS,
#: so the timed call's two clock reads and append (~100–400 ns) stay under 1% of the work.
LATENCY_BATCH_NS = 40_000
#: the largest batch, calls
MAX_BATCH = 1 << 20


def jain_index(ops: Sequence[float]) -> float:
    """Jain's fairness index (Σx)² / (n·Σx²) (Jain, Chiu & Hawe 1984, DEC-TR-301). O(n).

    Args:
        ops: work done by each of n threads, shape (n,), ≥ 0.

    Returns:
        1.0 when every thread did the same work, 1/n when one thread did it
        all; NaN when nobody did any.

    Raises:
        ValueError: on empty input.
    """
    if not ops:
        raise ValueError("jain_index needs the work of at least one thread")
    squares = sum(x * x for x in ops)
    return sum(ops) ** 2 / (len(ops) * squares) if squares else math.nan


@dataclass(frozen=True)
class ThreadFigures:
    """What threads mode measured for one benchmark, folded across its processes.

    Each figure is the median over processes of the per-process value.

    Attributes:
        threads: the thread count N.
        latency_ns: per-op latency percentiles, ns (p50, p90, p99, p99.9, max, mean).
        min_max: ops of the slowest thread / ops of the fastest (1 = equal).
        jain: Jain's fairness index of ops per thread (1 = equal, 1/N = one did all).
        gil_enabled: False when every process ran without the GIL; None if unknown.
    """

    threads: int
    latency_ns: dict[str, float]
    min_max: float
    jain: float
    gil_enabled: bool | None


def thread_figures(bench: Benchmark) -> ThreadFigures | None:
    """Fold the processes of a threads-mode :class:`perflab.model.Benchmark`; None when
    it has no threads data (not threads mode, or every process failed first)."""
    procs = [p for p in bench.processes if p.thread_ops and sum(p.thread_ops)]
    if bench.threads is None or not procs:
        return None
    keys = sorted({k for p in procs for k in p.latency_ns})
    latency = {
        k: statistics.median([p.latency_ns[k] for p in procs if k in p.latency_ns]) for k in keys
    }
    flags = {p.gil_enabled for p in procs}
    return ThreadFigures(
        bench.threads,
        latency,
        statistics.median(min(p.thread_ops) / max(p.thread_ops) for p in procs),
        statistics.median(jain_index(p.thread_ops) for p in procs),
        None if None in flags else any(flags),
    )
