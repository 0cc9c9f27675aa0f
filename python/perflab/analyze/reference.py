"""The machine-speed reference: how fast the machine ran during a run, and times with it divided out.

Why: on a shared or virtual machine the speed of the CPU changes with other tenants'
load (a sibling hyperthread, the host's scheduler, frequency), over seconds and over
hours. Within a run this shows as process-to-process spread, which the run's CI
includes; but the *average* speed during one run differs from the next run's, and
every benchmark of a run shares that factor, so no CI computed from one run's
benchmarks can see it (benchmarks/repeat.py measured an 11% SD between runs on a
2-core VM shared with other jobs, against CIs of ±5–10%).

Method: every worker process of ``perflab run`` times a fixed pure-Python loop
(:func:`perflab.measure.worker.reference_workload`, ≈ 0.2 ms) between its samples,
never inside one: before each of its first three samples and then whenever its
reference timings so far took at most 5% of the sampled time, so the reference costs
at most ≈ 5% of a process's time. Process i's reference r_i is the median of its
timings; its speed-normalized figure is m_i / r_i, its median time per op divided by
r_i (unitless: the op's cost in reference loops). The run's normalized figure is the
geometric mean of the m_i / r_i with the same random-effects t-interval as the
median itself (:func:`perflab.analyze.stats.process_location`: P − 1 degrees of
freedom from the spread of the P process figures). A slowdown that hits the
benchmark and the reference alike cancels in each process's quotient, so the
normalized figure of a repeat run on the same machine and interpreter agrees with the
first run's CI where the seconds do not. It cancels only what both share: a
benchmark that suffers more from contention than the loop does (memory- or
cache-bound code) keeps part of the swing, which its CI then shows as spread.

The idea is a reference workload run beside the benchmark on the same machine at
the same time, as in duet benchmarking (Bulej et al. 2020, "Duet Benchmarking:
Improving Measurement Accuracy in the Cloud", Empirical Software Engineering 25),
which runs the two concurrently and pairs their results; perflab interleaves the
reference in time inside each worker process instead (randomized interleaving as
in Abedi & Brecht 2017), which needs no second core. benchmarks/repeat.py measures
the repeat-run agreement of both figures.

The normalized figure compares runs on one machine and one interpreter build: the
reference loop's cost relative to a benchmark differs between CPUs and Python
versions, so it is not a portable unit (unlike seconds, it is not comparable across
machines).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from perflab.analyze import stats


def reference_median_s(reference_ns: Sequence[int]) -> float | None:
    """One process's reference time: the median of its reference timings, s (None: none
    timed, or a non-positive median)."""
    if not reference_ns:
        return None
    value = float(np.median(np.asarray(reference_ns, dtype=float))) * 1e-9
    return value if value > 0 else None


def reference_location(reference_ns: Sequence[Sequence[int]]) -> stats.LogLocation | None:
    """The run's reference time, s: the geometric mean of the processes' reference
    medians with the SE of its log (see :func:`perflab.analyze.stats.process_location`).

    Args:
        reference_ns: per process, its reference timings, ns (processes without any are
            skipped).

    Returns:
        The location, or None with fewer than 2 processes with timings (or no spread).
    """
    groups = [np.asarray(r, dtype=float) * 1e-9 for r in reference_ns if len(r)]
    return stats.process_location(groups)


def reference_spread(reference_ns: Sequence[Sequence[int]]) -> float:
    """How much the machine's speed differed between the processes of a run: the SD of
    the logs of the processes' reference medians (≈ a relative SD); nan with fewer than
    2 processes with timings."""
    groups = [np.asarray(r, dtype=float) for r in reference_ns if len(r)]
    return stats.process_spread(groups) if len(groups) >= 2 else math.nan


def normalized_location(pairs: Sequence[tuple[np.ndarray, Sequence[int]]]
                        ) -> stats.LogLocation | None:
    """The speed-normalized median: the geometric mean over processes of (the process's
    median time per op ÷ its reference time), with the random-effects SE of its log
    (P − 1 df). Unitless: the op's cost in reference loops. O(N).

    Args:
        pairs: per process, (its times per op in seconds, shape (n,); its reference
            timings in ns). Processes without reference timings are left out.

    Returns:
        The location, or None when fewer than 2 processes have both (or their
        quotients do not differ at all).

    Raises:
        ValueError: on an empty array of times.
    """
    groups = []
    for values, reference in pairs:
        r = reference_median_s(reference)
        if r is not None:
            groups.append(np.asarray(values, dtype=float) / r)
    return stats.process_location(groups)
