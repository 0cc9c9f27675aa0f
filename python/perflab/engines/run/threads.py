"""Threads mode: one benchmark called concurrently from N threads of one worker (JMH @Threads).

:mod:`perflab.engines.run.worker` hands over here when the plan has ``threads``,
after the cold call (single-threaded, as in the normal mode). Then:

    timer cost (an empty callable through the same timed loop, one thread) →
    N threads released together by a barrier, each calling the function in
    untimed batches with one timed call between batches (latency sampling, as
    JMH's SampleTime mode) → warmup windows until throughput stops
    drifting (bounded) → timed windows until the process's time slice is
    spent → stop and join → ops per thread and latency percentiles →
    allocation pass (single-threaded).

Each timed window becomes a standard ``sample`` event: ``n`` = operations all
threads completed in the window, ``wall`` = the window's length and ``cpu`` =
the process CPU time of every thread in it. The usual statistics then give
time per op = 1 / total throughput, with CPU time beside wall time (a thread
that spins while it waits shows up as CPU without throughput). A ``threads``
event carries what a sample cannot: ops per thread (fairness), per-op latency
percentiles, and whether the GIL was enabled (``sys._is_gil_enabled``).

Windows are contiguous, so no operation is counted twice or lost between
them; an operation counts in the batch, and so the window, in which it
completed. Each window is bracketed by the clock cross-check of
:mod:`perflab.engines.integrity`, as every normal-mode sample is.

This module imports only the standard library (and the worker's shared sampling
pieces, :mod:`perflab.engines.run.sampling`): workers must start fast. How the
processes of a benchmark fold into figures (fairness, latency) is analysis:
:mod:`perflab.analyze.run.threads`.
"""

from __future__ import annotations

import functools
import itertools
import math
import statistics
import sys
import threading
import time
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from perflab.analyze.run.threads import LATENCY_BATCH_NS as BATCH_NS
from perflab.analyze.run.threads import MAX_BATCH
from perflab.engines.run import sampling
from perflab.engines.run.empty import empty_like
from perflab.engines.run.sampling import allocations, emit_done

_perf_ns = time.perf_counter_ns
_cpu_ns = time.process_time_ns

#: Shortest timed window, ns. Under the GIL a thread keeps the interpreter for
#: up to the switch interval (5 ms); windows of several intervals keep one
#: window's throughput from hinging on who held the GIL at its edges.
MIN_WINDOW_NS = 10_000_000
#: How long the timer-cost probe runs the empty callable, s.
TIMER_PROBE_S = 0.01
#: Warmup stops when the median time per op of the last WARMUP_WINDOWS windows
#: is within WARMUP_TOLERANCE of the windows before; wider than the normal
#: mode's 2% because thread scheduling makes windows noisier.
WARMUP_WINDOWS = 3
WARMUP_TOLERANCE = 0.05
PERCENTILES = (("p50", 0.50), ("p90", 0.90), ("p99", 0.99), ("p99.9", 0.999))


def gil_enabled() -> bool:
    """Whether the GIL is enabled right now.

    ``sys._is_gil_enabled()`` exists from Python 3.13; a free-threaded build
    can still turn the GIL back on at run time (e.g. when it imports an
    extension that does not support free threading), so the worker asks
    while the threads run rather than trusting the build. Before 3.13 the GIL
    is always on.
    """
    check = getattr(sys, "_is_gil_enabled", None)
    return True if check is None else bool(check())


def latency_percentiles(values: Sequence[int]) -> dict[str, float]:
    """Nearest-rank percentiles p50, p90, p99, p99.9 plus max and mean. O(n log n).

    Args:
        values: per-op latencies, ns, shape (n,).

    Returns:
        {"p50", "p90", "p99", "p99.9", "max", "mean"} → ns; empty for no values.
    """
    if not values:
        return {}
    ordered = sorted(values)
    n = len(ordered)
    out = {name: float(ordered[max(0, math.ceil(q * n) - 1)]) for name, q in PERCENTILES}
    return out | {"max": float(ordered[-1]), "mean": sum(ordered) / n}


class Crew:
    """N threads calling ``call`` in a loop: untimed batches, one timed call between them.

    Timing every call would add two ``perf_counter_ns`` reads and an append
    (~100–400 ns) to each op and distort fast operations several-fold. So each
    thread runs a batch of ``k`` untimed calls, then one timed call whose
    duration goes to the thread's ``array('q')`` (8 bytes a sample, no objects
    kept); ``k`` doubles until a batch lasts ``BATCH_NS``, which puts the
    timer's cost under 1% of throughput (JMH's SampleTime mode samples the
    same way). Ops are counted per batch in ``counts`` and read by the
    coordinating thread at window edges; a batch of at most ~``BATCH_NS``
    bounds the counting granularity to well under 1% of a window.

    Args:
        call: the benchmark, bound to its arguments.
        threads: how many threads, ≥ 1.
    """

    def __init__(self, call: Callable[[], Any], threads: int) -> None:
        self.running = [True]
        self.counts = [0] * threads
        self.latencies = [array("q") for _ in range(threads)]
        self.errors: list[BaseException] = []
        self._barrier = threading.Barrier(threads + 1)
        self._threads = [
            threading.Thread(
                target=self._body, args=(call, i), daemon=True, name=f"perflab-bench-{i}"
            )
            for i in range(threads)
        ]

    def start(self) -> None:
        """Start every thread and release them together (barrier with this thread)."""
        for thread in self._threads:
            thread.start()
        self._barrier.wait()

    def ops(self) -> tuple[int, ...]:
        """Operations completed so far by each thread."""
        return tuple(self.counts)

    def sampled(self) -> tuple[int, ...]:
        """Latency samples taken so far by each thread."""
        return tuple(len(lat) for lat in self.latencies)

    def stop(self) -> None:
        """Ask every thread to stop after its current call and wait for them.

        Raises:
            The first exception a thread's call raised.
        """
        self.running[0] = False
        for thread in self._threads:
            thread.join()
        if self.errors:
            raise self.errors[0]

    def _body(self, call: Callable[[], Any], index: int) -> None:
        append, perf, running = self.latencies[index].append, _perf_ns, self.running
        counts, repeat, k = self.counts, itertools.repeat, 1
        self._barrier.wait()
        try:
            while running[0]:
                t0 = perf()
                call()
                t1 = perf()
                append(t1 - t0)
                for _ in repeat(None, k):
                    call()
                counts[index] += k + 1
                if k < MAX_BATCH and perf() - t1 < BATCH_NS:
                    k *= 2
        except BaseException as exc:  # noqa: BLE001 - reported by stop(), in the main thread
            self.errors.append(exc)
            running[0] = False


@dataclass(frozen=True)
class Mark:
    """A snapshot at a window edge: ops and latency samples per thread, clocks, GC counters."""

    ops: tuple[int, ...]
    sampled: tuple[int, ...]
    wall_ns: int
    cpu_ns: int
    gc: int
    gc_ns: int

    @classmethod
    def take(cls, crew: Crew, gcmon: Any) -> Mark:
        """Read the ops first and the wall clock right after, so both describe one instant."""
        ops, sampled = crew.ops(), crew.sampled()
        return cls(ops, sampled, _perf_ns(), _cpu_ns(), gcmon.count, gcmon.ns)

    def window(self, end: Mark) -> dict[str, int]:
        """The ``sample`` event fields of the window from this mark to ``end``."""
        return {
            "n": sum(end.ops) - sum(self.ops),
            "wall": end.wall_ns - self.wall_ns,
            "cpu": end.cpu_ns - self.cpu_ns,
            "gc": end.gc - self.gc,
            "gc_ns": end.gc_ns - self.gc_ns,
        }


def next_mark(crew: Crew, gcmon: Any, start: Mark, length_ns: int) -> Mark:
    """Sleep until ``length_ns`` after ``start`` and mark; longer while no op has completed.

    A window without a completed op would have no time per op, so it is
    extended (a call slower than the window, or all threads blocked); the
    worker's timeout bounds a call that never returns.
    """
    deadline = start.wall_ns + length_ns
    while True:
        time.sleep(max(0, deadline - _perf_ns()) / 1e9)
        end = Mark.take(crew, gcmon)
        if sum(end.ops) > sum(start.ops) or not crew.running[0]:
            return end
        deadline = end.wall_ns + length_ns


def warm(
    crew: Crew, gcmon: Any, start: Mark, length_ns: int, max_s: float
) -> tuple[Mark, int, bool]:
    """Warmup windows until the time per op stops drifting, or ``max_s`` passed.

    Returns:
        (mark at the end of warmup, windows run, converged?).
    """
    deadline = start.wall_ns + max_s * 1e9
    per_op: list[float] = []
    mark = start
    k = WARMUP_WINDOWS
    while crew.running[0]:
        end = next_mark(crew, gcmon, mark, length_ns)
        fields = mark.window(end)
        per_op.append(fields["wall"] / max(fields["n"], 1))
        mark = end
        if len(per_op) >= 2 * k:
            last, prev = statistics.median(per_op[-k:]), statistics.median(per_op[-2 * k : -k])
            if abs(last - prev) <= WARMUP_TOLERANCE * last:
                return mark, len(per_op), True
        if mark.wall_ns >= deadline:
            break
    return mark, len(per_op), False


def window_ns(plan: dict[str, Any]) -> int:
    """Length of one timed window: the calibration target, at least MIN_WINDOW_NS, and
    short enough for ``min_samples`` windows in the process's time slice when possible."""
    share = plan["sample_seconds"] * 1e9 / max(plan["min_samples"], 1)
    return int(max(plan["sample_target_ns"], min(MIN_WINDOW_NS, share), 1e6))


def timer_cost(empty: Callable[[], Any], gcmon: Any) -> float:
    """ns per op of the timed loop around an empty callable, one thread.

    This is the loop's own cost per op, batches and latency sampling
    included; it is included in time/op, not subtracted.
    """
    crew = Crew(empty, 1)
    crew.start()
    first = Mark.take(crew, gcmon)
    time.sleep(TIMER_PROBE_S)
    fields = first.window(Mark.take(crew, gcmon))
    crew.stop()
    return fields["wall"] / max(fields["n"], 1)


def run_windows(
    crew: Crew, gcmon: Any, plan: dict[str, Any], emit: Callable[..., None]
) -> tuple[Mark, Mark]:
    """Warmup, then timed windows emitted as ``sample`` events.

    Returns:
        (mark at the start of the first timed window, mark at the end of the last).
    """
    length = window_ns(plan)
    mark, count, converged = warm(crew, gcmon, Mark.take(crew, gcmon), length, plan["warmup_max_s"])
    emit("calibrated", iterations=max(1, round((sum(mark.ops)) / max(count, 1))))
    emit("warmup", samples=count, converged=converged)
    first, deadline, samples = mark, mark.wall_ns + plan["sample_seconds"] * 1e9, 0
    monitor = sampling.MONITOR
    monitor.ready()
    monitor.start()
    while (
        crew.running[0]
        and samples < plan["max_samples"]
        and (samples < plan["min_samples"] or mark.wall_ns < deadline)
    ):
        end = next_mark(crew, gcmon, mark, length)
        skew, flag = monitor.stop()
        monitor.start()
        fields = mark.window(end)
        if fields["n"]:
            emit("sample", **fields, skew=skew, flag=flag)
            samples += 1
        mark = end
    return first, mark


def measure(
    call: Callable[[], Any],
    func: Callable[..., Any],
    args: tuple[Any, ...],
    params: dict[str, Any],
    gcmon: Any,
    plan: dict[str, Any],
    emit: Callable[..., None],
    steal0: int | None,
) -> None:
    """Threads mode for one worker process, after its cold call; emits every event to ``done``.

    Args:
        call: the benchmark bound to its setup result and params.
        func / args / params: the unbound function and its arguments (for the
            empty callable of the same shape that measures the timer cost).
        gcmon: the worker's GC monitor (``count``, ``ns``).
        plan: the worker plan; ``threads`` is the thread count.
        emit: the event writer.
        steal0: machine steal time at the process start, ns, or None.

    Raises:
        ValueError: ``threads`` is not a positive integer.
        Whatever the benchmark raises in any thread (after the windows
        measured so far were emitted).
    """
    threads = plan["threads"]
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        raise ValueError(
            f"threads={threads!r}: thread counts must be whole numbers ≥ 1, "
            "e.g. @perflab.bench(threads=[1, 2, 4, 8])"
        )
    empty = empty_like(func)
    probe = functools.partial(empty, *args, **params) if (args or params) else empty
    emit("overhead", ns_per_op=timer_cost(probe, gcmon))
    crew = Crew(call, threads)
    crew.start()
    try:
        first, last = run_windows(crew, gcmon, plan, emit)
        span = sampling.MONITOR.span()
        gil = gil_enabled()
    finally:
        crew.stop()
    emit("threads", threads=threads, gil_enabled=gil, **_spread(crew, first, last))
    if plan.get("allocations", True):
        emit("alloc", **allocations(call))
    emit_done(emit, steal0, span)


def _spread(crew: Crew, first: Mark, last: Mark) -> dict[str, Any]:
    """Ops per thread and pooled latency percentiles over the timed windows."""
    pooled = array("q")
    for lat, lo, hi in zip(crew.latencies, first.sampled, last.sampled):
        pooled.extend(lat[lo:hi])
    return {
        "ops": [hi - lo for lo, hi in zip(first.ops, last.ops)],
        "latency_ns": latency_percentiles(pooled),
    }
