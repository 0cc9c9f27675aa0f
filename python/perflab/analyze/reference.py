"""The machine-speed reference: how fast the machine ran during a run, and times with it
divided out.

Why: on a shared or virtual machine a process is slowed in two ways that change from
minute to minute with other programs' load: it waits for a core (its wall time includes
time another program held the CPU), and while it runs, the CPU runs it slower (a busy
sibling hyperthread, the host's other tenants, shared caches). Within a run this shows
as process-to-process spread, which the run's CI includes; but the *average* during one
run differs from the next run's, and every benchmark of a run shares that factor, so no
CI computed from one run's benchmarks can see it.

Method: every worker process of ``perflab run`` times a fixed pure-Python loop
(:func:`perflab.engines.run.worker.reference_workload`, ≈ 0.1–0.2 ms) between its samples,
never inside one: before each of its first three samples and then whenever its
reference timings so far took at most 5% of the sampled time, so the reference costs
at most ≈ 5% of a process's time. Being short, the loop is rarely interrupted by the
scheduler, so its time tracks the speed of the CPU while the process runs. Process i's
reference r_i is the median of its timings; its speed-normalized figure is c_i / r_i,
the median **CPU time** per op of its samples divided by r_i (unitless: the op's cost
in reference loops). CPU time leaves out the waits for a core; dividing by r_i takes out
the CPU's speed. The run's figure is the geometric mean of the c_i / r_i with the same
random-effects t-interval as the median itself
(:func:`perflab.analyze.stats.process_location`: P − 1 degrees of freedom from the
spread of the P process figures).

Measured (benchmarks/repeat.py, 20 runs of 5 classic workloads on a 2-core VM, load
average 0.3–1.2): the VM runs Python at two speeds about 2× apart, and the share of
time in the slow one changed from run to run (25–76%); the seconds medians varied by
8–13% (SD of the logs), CPU time per op by as much (the slow mode is a slower CPU,
not waits), CPU time ÷ reference by 3–6%, and the first run's CI held 84–100% of the
later runs' figures. Under other programs' load (load average 8) the seconds varied by
26–34% and CPU time ÷ reference again by 3–6%. The seconds CI widened by the
reference's variance between processes (the other way to use it) grew to ±60% — it held
every later run, and told nothing. Three other uses of the same timings were tried on
the same files (benchmarks/repeat_alternatives.py: each sample ÷ the reference timed
just before it; only samples between two fast-mode timings; CPU time regressed on the
reference across processes and predicted at the fast mode): none held the later runs in
both a quiet and a busy series, so the per-process quotient stays.

It cancels only what the code and the loop share. Code that waits (I/O, sleep, locks)
has CPU time below its wall time that is not its cost per op: it gets no figure
(:func:`waits`). Code that suffers more from a busy machine than the loop (memory-bound
code) keeps part of the swing, which its CI then shows as spread.
The figure compares runs of CPU-bound code on one machine and one interpreter build:
the loop's cost relative to a benchmark differs between CPUs and Python versions, so it
is not a portable unit (unlike seconds, it is not comparable across machines).

The idea is a reference workload run beside the benchmark on the same machine at the
same time, as in duet benchmarking (Bulej et al. 2020, "Duet Benchmarking: Improving
Measurement Accuracy in the Cloud", Empirical Software Engineering 25), which runs the
two concurrently and pairs their results; perflab interleaves the reference in time
inside each worker process instead (randomized interleaving as in Abedi & Brecht
2017), which needs no second core.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from perflab.analyze import stats
from perflab.model import Benchmark
from perflab.model.estimate import Estimate

#: Code waits (I/O, sleep, locks) rather than computes when even the WAIT_QUANTILE of its
#: samples' CPU/wall is below this: its CPU time is not its cost per op, so it gets no
#: speed-normalized figure. Far below the busy-machine warning's 0.95: CPU-bound code
#: preempted on a busy machine still shows 0.4–0.7 in most samples (load 8 on 2 cores)
#: and ≈ 1 in those that got a whole core; a sleep shows ≈ 0.
WAITING_CPU_WALL = 0.5
WAIT_QUANTILE = 0.90


def waits(samples: Sequence[Any]) -> bool:
    """True when code spent its samples waiting rather than computing: the
    :data:`WAIT_QUANTILE` of the samples' CPU/wall is below :data:`WAITING_CPU_WALL`
    (False without samples). O(N).

    Args:
        samples: objects with ``cpu_ns`` and ``wall_ns`` (:class:`perflab.model.Sample`).
    """
    ratios = np.array([s.cpu_ns / s.wall_ns for s in samples if s.wall_ns > 0])
    return bool(ratios.size) and float(np.quantile(ratios, WAIT_QUANTILE)) < WAITING_CPU_WALL


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


def normalized_location(
    pairs: Sequence[tuple[np.ndarray, Sequence[int]]],
) -> stats.LogLocation | None:
    """The speed-normalized median: the geometric mean over processes of (the process's
    median time per op ÷ its reference time), with the random-effects SE of its log
    (P − 1 df). Unitless: the op's cost in reference loops. O(N).

    Args:
        pairs: per process, (its times per op in seconds, shape (n,): CPU seconds for
            ``Summary.cpu_vs_reference``; its reference timings in ns). Processes without
            reference timings are left out.

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


def cpu_reference_pairs(bench: Benchmark) -> list[tuple[np.ndarray, list[int]]]:
    """Per process with unflagged samples: (its CPU seconds per op, shape (n,); its reference
    timings, ns), the input of :func:`normalized_location`; none when the code
    :func:`waits` (its CPU time is not its cost per op: a 0.5 s sleep read "0.294
    (0.15–0.578)"). O(N)."""
    if waits([s for p in bench.processes for s in p.samples if not s.flagged]):
        return []
    per_call = bench.ops_per_call
    return [
        (
            np.asarray([s.cpu_ns / s.iterations / per_call * 1e-9 for s in good]),
            list(proc.reference_ns),
        )
        for proc in bench.processes
        if (good := [s for s in proc.samples if not s.flagged])
    ]


def machine_reference(benches: Sequence[Benchmark]) -> stats.LogLocation | None:
    """The machine's speed during a whole run: the reference timings of every process of
    every benchmark in ``benches`` (all of one results file), as one location, s, with
    the SE of its log (:func:`reference_location`). O(N).

    Returns:
        The location, or None with fewer than 2 processes with timings.
    """
    return reference_location(
        [list(p.reference_ns) for b in benches for p in b.processes if p.reference_ns]
    )


def figures(bench: Benchmark, confidence: float = 0.95) -> tuple[float, float, Estimate | None]:
    """A benchmark's reference figures, from each process's unflagged samples and its
    reference timings. O(N).

    Returns:
        (reference time in s: the geometric mean of the processes' reference medians, their
        median with one process or no spread, nan when none was timed; the spread between
        processes, :func:`reference_spread`; CPU time per op ÷ reference time with its CI at
        ``confidence``, :func:`normalized_location`, or None — also for code that
        :func:`waits`).
    """
    timings = [
        list(p.reference_ns) for p in bench.processes if any(not s.flagged for s in p.samples)
    ]
    where = reference_location(timings)
    if where is not None:
        reference_s = where.value
    else:
        medians = [m for m in map(reference_median_s, timings) if m is not None]
        reference_s = float(np.median(medians)) if medians else math.nan
    normalized = normalized_location(cpu_reference_pairs(bench))
    return (
        reference_s,
        reference_spread(timings),
        normalized.ci(confidence) if normalized is not None else None,
    )
