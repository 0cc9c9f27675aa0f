"""The worker: one fresh process measuring one benchmark case.

Started by :mod:`perflab.engines.run.runner` as ``python -m perflab.engines.run.worker``;
reads its plan as JSON on stdin and streams JSON-line events on a dedicated
pipe (fd given in the plan), so whatever the benchmark prints can't corrupt
the protocol and samples measured before a hang or crash are not lost.

Sequence in each process (pyperf and JMH use the same outline):
    import → layout randomization (:mod:`perflab.engines.layout`) → benchmark file
    import → setup (untimed) → first call (the cold time) → metrics →
    calibration (first process of a case only) → warmup until the timings stop
    drifting (bounded) → loop overhead with an empty callable → samples →
    allocation pass with tracemalloc (separate, after timing) → with --memory, the
    heap pass (:mod:`perflab.engines.run.heap`).

This module imports only the standard library so that start-up stays fast.
"""

from __future__ import annotations

import functools
import gc
import itertools
import json
import os
import statistics
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from perflab.engines.layout import heap_padding
from perflab.engines.run import aio, pairing, sampling
from perflab.engines.run.counters import SampleCounters
from perflab.engines.run.empty import empty_like
from perflab.engines.run.sampling import GcMonitor, allocations, emit_done, steal_ns

_perf_ns = time.perf_counter_ns
_cpu_ns = time.process_time_ns
#: the small objects of the process's layout randomization, alive until it exits
_HEAP_PADDING: list[Any] = []


class Emitter:
    """Writes one JSON object per line to the event pipe."""

    def __init__(self, fd: int) -> None:
        self._out = os.fdopen(fd, "w", buffering=1)

    def __call__(self, event: str, **fields: Any) -> None:
        self._out.write(json.dumps({"event": event, **fields}) + "\n")


class PhaseError(Exception):
    """A benchmark raised during ``phase``; carries the original exception."""

    def __init__(self, phase: str, exc: BaseException) -> None:
        super().__init__(phase)
        self.phase = phase
        self.exc = exc


def time_loop(call: Callable[[], Any], n: int, gcmon: GcMonitor) -> tuple[int, int, int, int]:
    """Time ``n`` back-to-back calls. Returns (wall_ns, cpu_ns, gc_count, gc_ns).

    The CPU-clock reads sit outside the wall bracket so their cost (a system
    call) never inflates the wall time.
    """
    loop = itertools.repeat(None, n)
    gc0, gcns0 = gcmon.count, gcmon.ns
    c0 = _cpu_ns()
    t0 = _perf_ns()
    for _ in loop:
        call()
    t1 = _perf_ns()
    c1 = _cpu_ns()
    return t1 - t0, c1 - c0, gcmon.count - gc0, gcmon.ns - gcns0


def calibrate(
    call: Callable[[], Any], target_ns: float, gcmon: GcMonitor, max_iterations: int = 1 << 40
) -> int:
    """Smallest-ish iteration count whose sample lasts at least ``target_ns``.

    Grows n geometrically (at most ×10 a step, extrapolating from the last
    sample), as pyperf's and criterion's calibrations do, then confirms.
    """
    n = 1
    while n < max_iterations:
        wall = time_loop(call, n, gcmon)[0]
        if wall >= target_ns:
            return n
        guess = int(n * target_ns * 1.2 / max(wall, 1)) + 1
        n = min(max(guess, n * 2), n * 10, max_iterations)
    return max_iterations


#: timings of each side :func:`balance` takes the median of (at most), and the time it
#: may spend on them, ns (at least one round is timed)
BALANCE_ROUNDS = 9
BALANCE_NS = 20_000_000
#: a side whose calls per sample are off the balanced count by more than this factor
#: is given the balanced count
BALANCE_TOLERANCE = 1.5


class _Side:
    """One lock-step side for :func:`balance`: its call and calls per sample."""

    def __init__(self, call: Callable[[], Any], iterations: int) -> None:
        self.name, self.call, self.iterations = "", call, iterations


def balance(
    sides: Sequence[Any],
    target_ns: float,
    gcmon: GcMonitor,
    tolerance: float = BALANCE_TOLERANCE,
) -> None:
    """Give the sides of a pair samples of about the same duration (the target).

    A calibration is one timing per step: on a loaded machine one preempted timing
    stops it early (1 call where 3 make the target), and the calls per sample then
    persist in every later process of the case (the runner passes them on). Two sides
    whose samples last 35 µs and 210 µs are not exposed alike to the machine: the long
    one is preempted and straddles speed switches far more often, which biases their
    paired ratio (identical code read 6–11× in a quarter of the processes of an A/A run
    on this loaded 2-core VM). So both sides' current samples are timed alternately
    (up to :data:`BALANCE_ROUNDS` rounds or :data:`BALANCE_NS`), each side's time per
    call is its fastest (preemption only ever lengthens a timing, and on a loaded
    machine it lengthens long samples most: with the median, a side of 14 calls whose
    samples were preempted read 1 ms a call and was cut to 1 call while the other kept
    13), and a side whose calls per sample are off target / (time per call) by more
    than :data:`BALANCE_TOLERANCE` gets that count (at least 1).

    The paired worker balances A and B together; each process of a lock-step pair
    balances its own side with ``tolerance`` 1 (always the balanced count: the two
    processes cannot compare counts, and two sides within 1.5× of the target each
    could still be 2 and 4 calls, 2× apart, as seen here; with the same target and
    similar calls they get the same count).

    Args:
        sides: the sides (``name``, ``call``, calibrated or known ``iterations``, which
            is updated), e.g. the paired worker's A and B.
        target_ns: the paired sample's target duration, ns.
        gcmon: the worker's GC monitor.
        tolerance: the factor by which a side's count may be off the balanced count
            and stay (≥ 1).
    """
    per_call: dict[str, list[float]] = {s.name: [] for s in sides}
    deadline = time.perf_counter_ns() + BALANCE_NS
    for k in range(BALANCE_ROUNDS):
        for side in sides if k % 2 == 0 else list(sides)[::-1]:
            wall = time_loop(side.call, side.iterations, gcmon)[0]
            per_call[side.name].append(wall / side.iterations)
        if time.perf_counter_ns() > deadline:
            break
    for side in sides:
        want = max(1, round(target_ns / max(min(per_call[side.name]), 1.0)))
        if not want / tolerance <= side.iterations <= want * tolerance:
            side.iterations = want


#: a warmup window need not span more than this, ns: with long samples it holds fewer
#: of them (down to 2), since a call of tens of ms has warmed the caches and the
#: interpreter's specializations long before five calls
WARMUP_WINDOW_NS = 25_000_000


def warmup(
    call: Callable[[], Any],
    n: int,
    gcmon: GcMonitor,
    max_s: float,
    window: int = 5,
    tolerance: float = 0.02,
) -> tuple[int, bool]:
    """Run samples until the median of the last window is within ``tolerance`` of the
    window before it (the timings stopped drifting), or ``max_s`` passed. A window is
    ``window`` samples, fewer (at least 2) when that many would span more than
    :data:`WARMUP_WINDOW_NS`.

    Returns:
        (warmup samples run, converged?).
    """
    deadline = _perf_ns() + max_s * 1e9
    walls: list[int] = []
    while True:
        walls.append(time_loop(call, n, gcmon)[0])
        k = max(2, min(window, int(WARMUP_WINDOW_NS / max(statistics.median(walls), 1)) + 1))
        if len(walls) >= 2 * k:
            last = statistics.median(walls[-k:])
            prev = statistics.median(walls[-2 * k : -k])
            if abs(last - prev) <= tolerance * last:
                return len(walls), True
        if _perf_ns() >= deadline:
            return len(walls), False


def loop_overhead(
    func: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    n: int,
    gcmon: GcMonitor,
    samples: int = 7,
    empty: Callable[..., Any] | None = None,
) -> float:
    """Median ns per op of the harness loop around an empty callable of the same shape
    (``empty``, or :func:`empty_like` of ``func``)."""
    empty_fn = empty or empty_like(func)
    empty = functools.partial(empty_fn, *args, **kwargs) if (args or kwargs) else empty_fn
    walls = sorted(time_loop(empty, n, gcmon)[0] for _ in range(samples))
    return walls[samples // 2] / n


#: iterations of :func:`reference_workload` per timing (≈ 0.1 ms unloaded on a 2.8 GHz
#: Xeon, Python 3.11)
REFERENCE_LOOPS = 1000
#: the reference is timed before a sample only while its timings so far took at most this
#: share of the sampled wall time (it is never timed inside a sample)
REFERENCE_SHARE = 0.05
#: ... and always before the first REFERENCE_MIN samples of a process
REFERENCE_MIN = 3


def reference_workload(loops: int = REFERENCE_LOOPS) -> int:
    """The machine-speed reference: a fixed pure-Python loop of integer arithmetic, dict
    stores and list appends (the interpreter's common work), the same in every run and
    every process. Timed between samples, it shows how fast this process's CPU ran Python
    while the samples were taken; :mod:`perflab.analyze.reference` divides it out.

    Returns:
        A checksum (so the work cannot be skipped).
    """
    total = 0
    table: dict[int, int] = {}
    items = []
    for i in range(loops):
        total += (i * 7) % 13
        table[i & 127] = total
        items.append(total)
    return total + len(items) + len(table)


def time_reference() -> int:
    """Wall time of one :func:`reference_workload`, ns. (Its ≈ 2× swings on perflab's own
    VM are the host running the VM at two speeds — benchmarks/repeat.py reports them, and
    a tight loop of it outside perflab shows them too: what the reference is there to
    see, not a disturbance by the preceding sample.)"""
    t0 = _perf_ns()
    reference_workload()
    return _perf_ns() - t0


def _phase(name: str, fn: Callable[[], Any]) -> Any:
    """Run ``fn``; wrap anything it raises as PhaseError(name), ``sys.exit()`` included
    (SystemExit is not an Exception, and would otherwise end the worker silently)."""
    try:
        return fn()
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the benchmark may raise anything
        raise PhaseError(name, exc) from exc


def measure(plan: dict[str, Any], emit: Emitter) -> None:
    """Measure the case described by ``plan`` and emit events. Raises PhaseError."""
    from perflab.engines.run.suite import call_setup, load_file

    steal0 = steal_ns()
    _HEAP_PADDING.extend(heap_padding(plan.get("layout", {}).get("heap_objects", 0)))
    if plan.get("redirect"):  # a lock-step baseline: its checkout's folders, not ours
        from_root, to_root = plan["redirect"]
        sys.path[:] = [pairing.redirect(p, from_root, to_root) for p in sys.path]
    bench_file = load_file(plan["file"])
    spec = bench_file.benches[plan["index"]]
    params = plan["params"]
    args = _phase("setup", lambda: call_setup(spec, params))
    measure_call(spec.func, args, params, plan, emit, bench_file.metrics_for(spec), steal0)


def measure_call(
    func: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    plan: dict[str, Any],
    emit: Callable[..., None],
    metrics: Sequence[Any] = (),
    steal0: int | None = None,
) -> None:
    """Measure ``func(*args, **kwargs)`` in this process: the worker's whole sequence
    from the first call (cold time) to the ``done`` event.

    The one measuring sequence of perflab's Python harness: :func:`measure` calls it in a
    fresh worker, the pytest plugin and the Python API call it in their own process.

    Args:
        func, args, kwargs: the callable and its bound arguments.
        plan: ``iterations`` (None: calibrate to ``sample_target_ns``), ``warmup_max_s``,
            ``sample_seconds``, ``min_samples``, ``max_samples``, ``allocations``,
            ``threads`` (see :meth:`perflab.engines.run.runner.Runner._plan`); optional
            ``warmup_samples`` (a fixed warmup count instead of warmup until stable),
            ``before_sample`` (a callable run untimed before each sample, returning the
            zero-argument call that sample times: pedantic setups) and ``reference``
            (True: time :func:`reference_workload` between samples, ``reference`` events).
        emit: ``emit(event, **fields)`` (an :class:`Emitter`, or any callable).
        metrics: :class:`perflab.engines.run.suite.MetricSpec` applied to the first result.
        steal0: CPU steal time at the start, ns (None: read it now).

    Raises:
        PhaseError: the benchmark raised; ``phase`` says where.
    """
    steal0 = steal_ns() if steal0 is None else steal0
    loop, empty = None, None
    if aio.is_async(func):  # every call runs to completion on one loop (engines/run/aio.py)
        if plan.get("threads") is not None:
            raise PhaseError(
                "threads",
                ValueError(
                    "threads mode runs plain functions; an async def benchmark shares one event "
                    "loop per process: drop threads=, or run the coroutines with asyncio.gather"
                ),
            )
        loop = _phase("event loop", lambda: aio.new_loop(plan.get("event_loop", "asyncio")))
        func, empty = aio.on_loop(func, loop, empty_like)
    call = functools.partial(func, *args, **kwargs) if (args or kwargs) else func
    if plan.get("count"):  # --count instructions: counted, not timed (engines/run/counting.py)
        try:
            return _count_call(func, args, kwargs, plan, emit, metrics, empty)
        finally:
            if loop is not None:
                loop.close()
    gcmon = GcMonitor()
    gc.callbacks.append(gcmon)
    try:
        _measure_call(call, func, args, kwargs, plan, emit, metrics, steal0, gcmon, empty)
    finally:
        gc.callbacks.remove(gcmon)
        if loop is not None:
            loop.close()


def _count_call(
    func: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    plan: dict[str, Any],
    emit: Callable[..., None],
    metric_specs: Any,
    empty: Callable[..., Any] | None,
) -> None:
    """The counted sequence (:func:`perflab.engines.run.counting.count_function`) instead
    of the timed one: the cold call is counted, not timed (``cold`` carries ``ns=None``).
    (A fresh counted worker runs :mod:`perflab.engines.run.counted_worker` instead, which
    loads less before its samples; this is the in-process harness's path.)"""
    from perflab.engines.run.counting import count_function

    if plan.get("threads") is not None:
        raise PhaseError(
            "count", ValueError("threads mode is timed: drop threads= or --count instructions")
        )
    emit("start", pid=os.getpid())
    result = _phase("counting", lambda: count_function(func, args, kwargs, plan, emit, empty))
    emit("cold", ns=None, metrics=_metrics(metric_specs, result))
    emit("done")


def _measure_call(
    call: Callable[[], Any],
    func: Callable[..., Any],
    args: tuple[Any, ...],
    params: dict[str, Any],
    plan: dict[str, Any],
    emit: Callable[..., None],
    metric_specs: Any,
    steal0: int | None,
    gcmon: GcMonitor,
    empty: Callable[..., Any] | None,
) -> None:
    """The body of :func:`measure_call` (``call`` is func bound to its arguments;
    ``empty``: the loop overhead's empty callable, None for one like ``func``)."""
    emit("start", pid=os.getpid())
    t0 = _perf_ns()
    result = _phase("first call", call)
    cold = _perf_ns() - t0
    metrics = _metrics(metric_specs, result)
    del result
    emit("cold", ns=cold, metrics=metrics)
    if plan.get("threads") is not None:  # threads mode: N threads, fixed time per process
        from perflab.engines.run import threads

        return _phase(
            "threads", lambda: threads.measure(call, func, args, params, gcmon, plan, emit, steal0)
        )
    n = plan.get("iterations") or _phase(
        "calibration", lambda: calibrate(call, plan["sample_target_ns"], gcmon)
    )
    if plan.get("barrier_fds"):  # lock-step: both sides' samples aim at the same length
        side = _Side(call, n)
        _phase("calibration", lambda: balance((side,), plan["sample_target_ns"], gcmon, 1.0))
        n = side.iterations
    emit("calibrated", iterations=n)
    if plan.get("warmup_samples") is not None:
        for _ in range(plan["warmup_samples"]):
            _phase("warmup", lambda: time_loop(_next_call(call, plan), n, gcmon))
        emit("warmup", samples=plan["warmup_samples"], converged=True)
    else:
        count, converged = _phase("warmup", lambda: warmup(call, n, gcmon, plan["warmup_max_s"]))
        emit("warmup", samples=count, converged=converged)
    emit("overhead", ns_per_op=loop_overhead(func, args, params, n, gcmon, empty=empty))
    span = _phase("sampling", lambda: _sample(call, n, gcmon, plan, emit))
    if plan.get("allocations", True):
        emit("alloc", **_phase("allocation pass", lambda: allocations(_next_call(call, plan))))
    spans = (
        {}
        if plan.get("before_sample")
        else _phase("span pass", lambda: sampling.spans_per_call(call))
    )
    if spans:
        emit("spans", metrics=spans)
    if plan.get("memory_interval_s"):  # run --memory: the Python heap over calls
        from perflab.engines.run.heap import heap_timeline, pass_seconds

        emit(
            "heap",
            **_phase(
                "heap pass", lambda: heap_timeline(call, pass_seconds(plan["sample_seconds"]))
            ),
        )
    emit_done(emit, steal0, span)


def _metrics(metric_specs: Any, result: Any) -> dict[str, float]:
    """The benchmark's extra metrics of its first call's ``result`` (None: not applicable).
    Raises PhaseError when a metric function raises."""
    metrics = {}
    for m in metric_specs:
        value = _phase(f"metric {m.name!r}", functools.partial(m.func, result))
        if value is not None:
            metrics[m.name] = float(value)
    return metrics


def _next_call(call: Callable[[], Any], plan: dict[str, Any]) -> Callable[[], Any]:
    """The call the next sample times: ``call``, or a fresh one from the plan's
    ``before_sample`` hook (run here, untimed)."""
    hook = plan.get("before_sample")
    return call if hook is None else hook()


class Reference:
    """Times the machine-speed reference between samples: before each of the first
    :data:`REFERENCE_MIN` samples, then whenever its timings so far took at most
    :data:`REFERENCE_SHARE` of the sampled wall time (never inside a sample); each timing
    is a ``reference`` event.

    Args:
        emit: ``emit(event, **fields)``.
        on: time it (False: :meth:`between` does nothing).
    """

    def __init__(self, emit: Callable[..., None], on: bool) -> None:
        self.emit, self.on = emit, on
        self.samples, self.sampled_ns, self.reference_ns = 0, 0, 0
        if on:  # warm the reference up (the adaptive interpreter specializes it)
            for _ in range(REFERENCE_MIN):
                reference_workload()

    def between(self) -> None:
        """Before a sample: time the reference when it is due."""
        due = self.samples < REFERENCE_MIN or self.reference_ns <= REFERENCE_SHARE * self.sampled_ns
        if self.on and due:
            ns = time_reference()
            self.reference_ns += ns
            self.emit("reference", ns=ns)
        self.samples += 1

    def sampled(self, timing: pairing.Timing) -> pairing.Timing:
        """Count a sample's wall time (its timing, returned as it is)."""
        self.sampled_ns += timing[0]
        return timing


def _sample(
    call: Callable[[], Any], n: int, gcmon: GcMonitor, plan: dict[str, Any], emit: Emitter
) -> tuple[int | None, str | None]:
    """Timed samples until the process's time slice is spent (and a minimum count is met);
    with the plan's ``barrier_fds``, in lock-step with the other process of a pair
    (:func:`perflab.engines.run.pairing.sample_lockstep`).

    Each sample is bracketed by the clock cross-check (:mod:`perflab.engines.integrity`)
    and, outside that, by the thread's counters (:mod:`perflab.engines.run.counters`); its
    skew, flag and counter values travel with the sample event (the counters' names once,
    in a ``counters`` event before the first sample).

    Returns:
        The cross-check over the whole sampling phase: (skew ns, flag).
    """
    monitor = sampling.MONITOR
    monitor.ready()
    reference = Reference(emit, bool(plan.get("reference")))
    limits = pairing.Limits(plan["sample_seconds"], plan["min_samples"], plan["max_samples"])
    counters = SampleCounters()  # this thread's, opened where the samples run
    emit("counters", **counters.event())
    if plan.get("barrier_fds"):  # one side of a lock-step pair
        read_fd, write_fd = plan["barrier_fds"]
        barrier = pairing.PipeBarrier(read_fd, write_fd, plan.get("barrier_timeout_s", 60.0))
        pairing.sample_lockstep(
            lambda: reference.sampled(time_loop(_next_call(call, plan), n, gcmon)),
            n,
            barrier,
            limits,
            emit,
            monitor,
            reference.between,
            counters,
            plan.get("swap_cpus"),
        )
        return monitor.span()
    rss = _own_rss if plan.get("memory_interval_s") else None
    deadline, count = limits.deadline(), 0
    while limits.more(count, deadline):
        reference.between()
        timed = _next_call(call, plan)
        counters.start()
        monitor.start()
        timing = reference.sampled(time_loop(timed, n, gcmon))
        check = monitor.stop()
        counted = counters.stop()
        pairing.emit_sample(
            emit,
            n,
            timing,
            check,
            counters=counted,
            **({"rss_bytes": rss()} if rss else {}),
        )
        count += 1
    return monitor.span()


def _own_rss() -> int | None:
    """``run --memory``: this process's resident bytes now, from /proc (a read between
    samples, outside the timed loop; the timeline is sampled by perflab from outside)."""
    from perflab.engines import memory

    reading = memory.read(os.getpid())
    return None if reading is None else reading[1]


def error_fields(phase: str, exc: BaseException) -> dict[str, str]:
    """The fields of the ``error`` event for ``exc`` raised in ``phase``."""
    return {
        "phase": phase,
        "type": type(exc).__name__,
        "message": str(exc),
        "traceback": "".join(traceback.format_exception(exc)),
    }


def reporting(emit: Emitter, work: Callable[[], None]) -> int:
    """Run a worker's ``work``; a failure becomes one ``error`` event (a PhaseError's
    phase, else "load"). Returns the worker's exit code: 0, or 3 on a benchmark error."""
    try:
        work()
    except PhaseError as err:
        emit("error", **error_fields(err.phase, err.exc))
        return 3
    except Exception as exc:  # noqa: BLE001 - report, don't crash silently
        emit("error", **error_fields("load", exc))
        return 3
    return 0


def main() -> int:
    """Entry point: read the plan on stdin, measure, report. Exit 0, or 3 on a benchmark error."""
    plan = json.loads(sys.stdin.read())
    emit = Emitter(plan["fd"])
    return reporting(emit, lambda: measure(plan, emit))


if __name__ == "__main__":
    sys.exit(main())
